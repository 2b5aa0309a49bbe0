#include "process_age.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace exactly::kafka {

double process_age_seconds() {
  // Field 22 of /proc/self/stat is the start time in clock ticks since boot; the name in
  // field 2 may hold spaces and parentheses, so fields are counted from its last ')'.
  std::ifstream stat("/proc/self/stat");
  std::string line;
  if (!std::getline(stat, line)) return -1;
  const auto close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  unsigned long long start_ticks = 0;
  for (int n = 3; rest >> field; ++n)
    if (n == 22) {
      start_ticks = std::stoull(field);
      break;
    }
  std::ifstream up("/proc/uptime");
  double uptime = -1;
  if (!(up >> uptime) || start_ticks == 0) return -1;
  const long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0) return -1;
  return uptime - static_cast<double>(start_ticks) / static_cast<double>(hz);
}

}  // namespace exactly::kafka
