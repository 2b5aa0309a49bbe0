// The kafka source and sink against a broker that only speaks SASL_SSL (its own broker:
// `kafka-broker.sh start --sasl-ssl`, a throwaway CA made with openssl and keytool,
// SCRAM-SHA-512). The password reaches the pipeline through ${ENV} interpolation and must
// never be printed: not by run, validate or plugins, not in the metrics, not in the
// error of a refused login, not even with librdkafka's security debug log switched on.
//
// One test, one broker: ctest runs every test in its own process, and the JVM start is
// most of the cost.

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "kafka_env.hpp"
#include "metrics_scrape.hpp"
#include "secure_broker.hpp"
#include "test_util.hpp"

using namespace exactly::test;

namespace {

using Clock = std::chrono::steady_clock;

SecureBroker& broker() { return secure_broker(); }
RunResult tool(const std::string& args) { return secure_tool(args); }

struct Topics {
  std::string in, out, group, changelog;
  fs::path dir;
};

// kafka -> dedupe (with its changelog topic) -> kafka, exactly_once; every client logs in
// with the password from $EXACTLY_TEST_KAFKA_PASSWORD. `extra` goes into both rdkafka maps;
// `ca` replaces the broker's CA.
std::string pipeline_yaml(const Topics& s, const std::string& extra = "", fs::path ca = {}) {
  auto& b = broker();
  if (ca.empty()) ca = b.ca();
  std::string security =
      "        rdkafka:\n"
      "          security.protocol: SASL_SSL\n"
      "          sasl.mechanism: SCRAM-SHA-512\n"
      "          sasl.username: exactly\n"
      "          sasl.password: ${EXACTLY_TEST_KAFKA_PASSWORD}\n"
      "          ssl.ca.location: " + ca.string() + "\n" + extra;
  return "metrics: { listen: 127.0.0.1:0 }\n"
         "pipelines:\n"
         "  - name: secure-copy\n"
         "    delivery: exactly_once\n"
         "    commit: { interval: 300ms }\n"
         "    source:\n      plugin: kafka\n      config:\n"
         "        bootstrap.servers: " + b.bootstrap + "\n        group.id: " + s.group + "\n"
         "        topics: [" + s.in + "]\n        stop.when.idle: 4s\n"
         "        state.dir: " + (s.dir / "state").string() + "\n" + security +
         "    transforms:\n      - plugin: dedupe\n        config:\n"
         "          id.json: /messageId\n          state.dir: " + (s.dir / "dedupe").string() +
         "\n          changelog.topic: " + s.changelog + "\n"
         "    sink:\n      plugin: kafka\n      config:\n"
         "        bootstrap.servers: " + b.bootstrap + "\n        topic: " + s.out + "\n"
         "        partitioning: input\n        state.dir: " + (s.dir / "state").string() + "\n" +
         security;
}

}  // namespace

TEST(KafkaSaslSsl, MovesRecordsEndToEndAndNeverPrintsThePassword) {
  auto& b = broker();
  ASSERT_FALSE(b.bootstrap.empty());
  const std::string& pw = b.password;
  const std::string env = "EXACTLY_TEST_KAFKA_PASSWORD=" + pw + " ";
  const int n = 3000;

  Topics s;
  s.in = unique_name("sasl-in");
  s.out = unique_name("sasl-out");
  s.group = unique_name("sasl-g");
  s.changelog = unique_name("sasl-changelog");
  s.dir = temp_dir("sasl-ssl");
  tool("create-topic --topic " + s.in + " --partitions 4");
  tool("create-topic --topic " + s.out + " --partitions 4");
  tool("produce --keyed --topic " + s.in + " --count " + std::to_string(n) +
       " --partitions 4 --dup-ratio 0.02 --seed 11");
  const fs::path yaml = s.dir / "p.yaml";
  write_file(yaml, pipeline_yaml(s));

  // validate and plugins --json
  auto v = run(env + exactly_bin() + " validate " + yaml.string(), s.dir);
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  auto p = run(env + exactly_bin() + " plugins --json", s.dir);
  EXPECT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("\"kafka\""), std::string::npos) << p.out.substr(0, 2000);

  // run, scraping the metrics while it runs (it ends by itself once the input is idle)
  const fs::path log = s.dir / "run.log";
  std::string metrics;
  int code = -1;
  {
    ::setenv("EXACTLY_TEST_KAFKA_PASSWORD", pw.c_str(), 1);
    Child c({exactly_bin(), "run", "--no-watch", yaml.string()}, log);
    ::unsetenv("EXACTLY_TEST_KAFKA_PASSWORD");
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    while (!c.exited(&code)) {
      if (Clock::now() > deadline) {
        c.kill(SIGKILL);
        code = c.wait();
        ADD_FAILURE() << "exactly run did not finish within 120 s";
        break;
      }
      if (int port = metrics_port(read_file(log)); port != 0) {
        std::string m = scrape(port);
        if (m.find("exactly_kafka_sink_records_total") != std::string::npos) metrics = m;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }
  const std::string out = read_file(log);
  EXPECT_EQ(code, 0) << out.substr(0, 6000);
  EXPECT_NE(out.find("transactional producer ready"), std::string::npos) << out.substr(0, 6000);
  EXPECT_NE(metrics.find("exactly_kafka_sink_records_total"), std::string::npos)
      << "no kafka sink metrics scraped:\n" << metrics.substr(0, 3000);

  // Every record arrived once (read_committed, the independent reader).
  auto check = tool("verify --input-topic " + s.in + " --output-topic " + s.out + " --mode dedupe");
  EXPECT_NE(check.out.find("\"missing\":0,\"duplicated\":0"), std::string::npos) << check.out;

  // A wrong password: a clear, immediate config error that names the pipeline and the
  // stage, with librdkafka's security and configuration debug log on.
  const std::string wrong = "wrong-pw-" + random_hex(20);
  Topics w = s;
  w.dir = temp_dir("sasl-wrong");
  w.group = unique_name("sasl-wrong-g");
  write_file(w.dir / "p.yaml", pipeline_yaml(w, "          debug: security,conf\n"));
  auto t0 = Clock::now();
  auto bad = run("EXACTLY_TEST_KAFKA_PASSWORD=" + wrong + " timeout 90 " + exactly_bin() +
                     " run --no-watch --log-level debug " + (w.dir / "p.yaml").string(),
                 w.dir);
  double took = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(bad.exit_code, 1) << bad.err.substr(0, 6000);
  EXPECT_LT(took, 25.0) << "a refused login must not wait out open.timeout (30 s)";
  EXPECT_NE(bad.err.find("pipeline:secure-copy"), std::string::npos) << bad.err.substr(0, 6000);
  // Named by the file, line and column of the sink's rdkafka settings.
  EXPECT_NE(bad.err.find("failed, not restarted (fix the configuration): " + (w.dir / "p.yaml").string() +
                         ":"),
            std::string::npos)
      << bad.err.substr(bad.err.size() > 6000 ? bad.err.size() - 6000 : 0);
  EXPECT_NE(bad.err.find("error: sink (kafka) open: key 'rdkafka': authentication to " + b.bootstrap +
                         " failed:"),
            std::string::npos)
      << bad.err.substr(bad.err.size() > 6000 ? bad.err.size() - 6000 : 0);
  EXPECT_NE(bad.err.find("check rdkafka sasl.mechanism, sasl.username and sasl.password"), std::string::npos);

  // A CA that did not sign the broker: refused at once too, pointing at ssl.ca.location.
  Topics t = w;
  t.dir = temp_dir("sasl-other-ca");
  auto ca = run("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=another-ca -keyout " +
                    (t.dir / "other.key").string() + " -out " + (t.dir / "other.pem").string(),
                t.dir);
  ASSERT_EQ(ca.exit_code, 0) << ca.err;
  write_file(t.dir / "p.yaml", pipeline_yaml(t, "", t.dir / "other.pem"));
  t0 = Clock::now();
  auto tls = run(env + "timeout 90 " + exactly_bin() + " run --no-watch " + (t.dir / "p.yaml").string(), t.dir);
  took = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(tls.exit_code, 1) << tls.err.substr(0, 6000);
  EXPECT_LT(took, 25.0) << "a refused certificate must not wait out open.timeout (30 s)";
  EXPECT_NE(tls.err.find("sink (kafka) open: key 'rdkafka': TLS connection to " + b.bootstrap + " failed:"),
            std::string::npos)
      << tls.err.substr(tls.err.size() > 6000 ? tls.err.size() - 6000 : 0);
  EXPECT_NE(tls.err.find("check rdkafka ssl.ca.location"), std::string::npos);

  // A plaintext client at the TLS listener: librdkafka only retries, and only its own
  // log line suspected the protocol; the sink's "cannot reach" now says so (QA).
  const fs::path pdir = temp_dir("sasl-plaintext");
  write_file(pdir / "p.yaml",
             "pipelines:\n"
             "  - name: plain-at-tls\n"
             "    source: { plugin: generator, config: { count: 10 } }\n"
             "    sink:\n      plugin: kafka\n      config:\n"
             "        bootstrap.servers: " + b.bootstrap + "\n        topic: " + s.out + "\n"
             "        open.timeout: 5s\n");
  auto plain = run("timeout 25 " + exactly_bin() + " run --no-watch " + (pdir / "p.yaml").string(), pdir);
  EXPECT_NE(plain.err.find("cannot reach " + b.bootstrap), std::string::npos)
      << plain.err.substr(plain.err.size() > 6000 ? plain.err.size() - 6000 : 0);
  EXPECT_NE(plain.err.find("librdkafka suspects rdkafka security.protocol"), std::string::npos)
      << plain.err.substr(plain.err.size() > 6000 ? plain.err.size() - 6000 : 0);

  // Nowhere.
  const std::vector<std::pair<std::string, std::string>> outputs = {
      {"validate", v.out + v.err}, {"plugins --json", p.out + p.err}, {"run", out},
      {"metrics", metrics},        {"wrong-password run", bad.out + bad.err},
      {"wrong-CA run", tls.out + tls.err}};
  for (const auto& [what, text] : outputs) {
    EXPECT_EQ(text.find(pw), std::string::npos) << "the password is in the output of " << what;
    EXPECT_EQ(text.find(wrong), std::string::npos) << "the wrong password is in the output of " << what;
  }
  // ... and the debug log did print the configuration, masked.
  EXPECT_NE(bad.err.find("sasl.password"), std::string::npos) << "no librdkafka conf dump to check";
}
