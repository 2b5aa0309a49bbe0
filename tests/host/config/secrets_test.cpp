// ${...} interpolation and secret masking through the real binary (issue "hardening"):
// values come from the environment or a file; a value read from a file or given under a
// secret-named key never appears in anything the host prints, including what plugins log
// through it and the errors they return.
#include <gtest/gtest.h>

#include "test_util.hpp"

using namespace exactly::test;

namespace {

const std::string kPlugins = std::string(EXACTLY_BUILD_DIR) + "/test-plugins";

std::string pipeline(const fs::path& dir, const std::string& count, const std::string& say) {
  return "plugin.path: [" + kPlugins + "]\npipelines:\n  - name: t\n"
         "    source: { plugin: counter, config: { count: " + count + ", batch.size: 10 } }\n"
         "    transforms: [ { plugin: say, config: { " + say + " } } ]\n"
         "    sink: { plugin: faulty, config: { path: " + (dir / "out.txt").string() + " } }\n";
}

size_t values_in(const fs::path& out) {
  size_t n = 0;
  for (auto& l : lines_of(read_file(out)))
    if (!l.empty() && l[0] != '#') ++n;
  return n;
}

}  // namespace

TEST(Interpolation, EnvironmentValuesDefaultsAndLiteralDollars) {
  auto dir = temp_dir("interp");
  write_file(dir / "p.yaml", pipeline(dir, "\"${EXACTLY_TEST_COUNT}\"", "message: \"$${not-a-ref} ${EXACTLY_TEST_UNSET:-fallback}\""));
  auto r = run("EXACTLY_TEST_COUNT=7 " + exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(values_in(dir / "out.txt"), 7u);
  EXPECT_NE(r.err.find("say: message=${not-a-ref} fallback"), std::string::npos) << r.err;
}

TEST(Interpolation, AnUnsetVariableIsAnErrorAtItsLine) {
  auto dir = temp_dir("interp");
  write_file(dir / "p.yaml", pipeline(dir, "\"${EXACTLY_TEST_NOT_SET}\"", "message: hi"));
  auto r = run(exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("p.yaml:4:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("key 'count': environment variable EXACTLY_TEST_NOT_SET is not set"), std::string::npos)
      << r.err;
  // An unreadable file, too.
  write_file(dir / "p.yaml", pipeline(dir, "5", "message: \"${file:" + (dir / "missing").string() + "}\""));
  r = run(exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("p.yaml:5:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cannot read " + (dir / "missing").string()), std::string::npos) << r.err;
  // A directory read as empty, reported later as a puzzling "must not be empty".
  write_file(dir / "p.yaml", pipeline(dir, "5", "message: \"${file:" + dir.string() + "}\""));
  r = run(exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir.string() + ": is a directory, not a file"), std::string::npos) << r.err;
  // A nested reference was kept as literal text ("out-${B}.jsonl").
  write_file(dir / "p.yaml", pipeline(dir, "5", "message: \"${EXACTLY_TEST_UNSET:-${HOME}}\""));
  r = run(exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("p.yaml:5:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("a default cannot hold another ${...} reference"), std::string::npos) << r.err;
}

// The kafka plugin's `rdkafka:` map holds librdkafka's own secret settings; each entry is
// masked by its own key (rdkafka.sasl.password, ...), whether written in block or flow
// style, and the other entries are printed as they are.
TEST(Secrets, EntriesOfAPassThroughMapAreMaskedByTheirOwnKey) {
  auto dir = temp_dir("secret-map");
  const std::string sasl = "sasl-pw-from-env", key = "key-pw-literal", store = "store-pw-literal";
  std::string yaml = pipeline(dir, "20", "message: hi");
  const std::string say = "config: { message: hi } } ]";
  ASSERT_NE(yaml.find(say), std::string::npos);
  yaml.replace(yaml.find(say), say.size(),
               "config: { message: hi, rdkafka: { security.protocol: SASL_SSL, "
               "sasl.password: \"${EXACTLY_TEST_SASL_PW}\", ssl.key.password: " + key +
               ", ssl: { keystore.password: " + store + " } } } } ]");
  write_file(dir / "p.yaml", yaml);
  auto r = run("EXACTLY_TEST_SASL_PW=" + sasl + " " + exactly_bin() + " run --no-watch " +
                   (dir / "p.yaml").string(),
               dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("say: rdkafka security.protocol=SASL_SSL"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("say: rdkafka sasl.password=****"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("say: rdkafka ssl.key.password=****"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("say: rdkafka ssl.keystore.password=****"), std::string::npos) << r.err;
  for (const auto& s : {sasl, key, store}) EXPECT_EQ((r.out + r.err).find(s), std::string::npos) << s;
}

TEST(Secrets, FileValuesAndSecretNamedKeysAreMaskedInLogsAndErrors) {
  auto dir = temp_dir("secret");
  const std::string from_file = "s3cr3t-from-a-file", literal = "hunter2-literal";
  write_file(dir / "secret.txt", from_file + "\n");
  write_file(dir / "p.yaml", pipeline(dir, "20", "message: \"${file:" + (dir / "secret.txt").string() +
                                                     "}\", password: " + literal));
  auto r = run(exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(values_in(dir / "out.txt"), 20u);  // the plugin got the values
  EXPECT_NE(r.err.find("say: message=**** password=****"), std::string::npos) << r.err;
  EXPECT_EQ((r.out + r.err).find(from_file), std::string::npos) << r.out << r.err;
  EXPECT_EQ((r.out + r.err).find(literal), std::string::npos) << r.out << r.err;

  // A plugin's config error quoting them (reported by run: validate does not create
  // plugin objects).
  write_file(dir / "p.yaml", pipeline(dir, "20", "message: \"${file:" + (dir / "secret.txt").string() +
                                                     "}\", password: " + literal + ", fail: true"));
  r = run(exactly_bin() + " run --no-watch " + (dir / "p.yaml").string(), dir);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("refusing '****' with password '****'"), std::string::npos) << r.err;
  EXPECT_EQ((r.out + r.err).find(from_file), std::string::npos) << r.out << r.err;
  EXPECT_EQ((r.out + r.err).find(literal), std::string::npos) << r.out << r.err;
}
