#include "stage_line.hpp"

#include <map>
#include <mutex>

namespace exactly::dedupe {

void say_once_per_stage(const sdk::Host& host, const char* what, const std::string& text) {
  static std::mutex mu;
  static std::map<std::string, std::string> said;  // pipeline/stage/what -> last text
  const std::string key = std::string(host.pipeline()) + "/" + host.component_id() + "/" + what;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto& last = said[key];
    if (last == text) return;
    last = text;
  }
  host.info(text);
}

}  // namespace exactly::dedupe
