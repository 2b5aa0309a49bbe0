// `exactly run` whose metrics.listen cannot be bound stops before any pipeline starts,
// naming the file, line and key and the operating system's reason (it used to guess
// "address in use or not local?", also for an address the host could not parse).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test_util.hpp"

using namespace exactly::test;

namespace {

const std::string kPlugins = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

// A socket listening on 127.0.0.1 at a port the kernel chose; closed on scope exit.
struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 1) != 0) return;
    socklen_t n = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
    port = ntohs(a.sin_port);
  }
  ~Listener() { ::close(fd); }
};

exactly::test::RunResult run_with_listen(const fs::path& dir, const std::string& listen) {
  write_file(dir / "p.yaml",
             "plugin.path: [" + kPlugins + "]\nmetrics.listen: \"" + listen + "\"\n"
             "pipelines:\n  - name: t\n"
             "    source: { plugin: counter, config: { count: 10 } }\n"
             "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n");
  return run(exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
}

TEST(MetricsListenError, APortInUseIsNamedWithTheSystemsReason) {
  Listener taken;
  ASSERT_GT(taken.port, 0);
  auto dir = temp_dir("metrics-listen-in-use");
  auto r = run_with_listen(dir, "127.0.0.1:" + std::to_string(taken.port));
  // 1, not 2: the unit's RestartPreventExitStatus=2 would never retry a port busy at boot.
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("p.yaml:2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("metrics.listen"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Address already in use"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out.txt")) << "a pipeline ran without its metrics";
}

TEST(MetricsListenError, AnAddressThisMachineDoesNotHaveIsNamedWithTheSystemsReason) {
  auto dir = temp_dir("metrics-listen-foreign");
  // TEST-NET-1 (RFC 5737): never an address of this machine.
  auto r = run_with_listen(dir, "192.0.2.1:9");
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("metrics.listen"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Cannot assign requested address"), std::string::npos) << r.err;
}

}  // namespace
