// A URL libcurl cannot parse is refused where other settings are (validate, create, and
// `exactly validate` with file and line): before, it passed and then failed every record
// at run time ("bad url"), sending the whole input to the dead-letter sink.
#include <gtest/gtest.h>

#include "http_sink_fixture.hpp"

using namespace exactly::test;
using namespace http_test;

namespace {

TEST(HttpUrlConfig, AUrlLibcurlCannotParseIsRefusedAtTheUrlKey) {
  const std::vector<std::string> bad = {
      "http://[::1/x",               // unclosed IPv6 bracket
      "http://127.0.0.1:99999/x",    // port out of range
      "http://exa mple.com/{/id}",   // a space in the host
      "http://127.0.0.1:80a/x",      // port not a number
  };
  for (const auto& url : bad) {
    auto st = exactly::testing::validate(lib(), EX_KIND_SINK, "http", {{"url", url}});
    EXPECT_EQ(st.code(), EX_ERR_CONFIG) << url << ": " << st.message();
    EXPECT_EQ(st.key(), "url") << url << ": " << st.message();
    EXPECT_NE(st.message().find("libcurl cannot parse it"), std::string::npos) << st.message();
    SinkHarness s(lib(), "http", {{"url", url}});
    EXPECT_FALSE(s.ok()) << url;
    EXPECT_EQ(s.create_status().key(), "url") << url;
  }
  // Fields stand for values that are percent-encoded when sent: they never make a URL bad.
  const std::vector<std::string> good = {
      "http://[::1]:8080/a/{/id}", "https://user:pw@example.com/x?q={key}&t={header:tenant}",
      "http://127.0.0.1:1/{/a}{/b}", "http://{/host}/x"};
  for (const auto& url : good) {
    auto st = exactly::testing::validate(lib(), EX_KIND_SINK, "http", {{"url", url}});
    EXPECT_TRUE(st.is_ok()) << url << ": " << st.message();
  }
}

TEST(HttpUrlConfig, ExactlyValidateNamesTheFileAndLineOfAnUnparsableUrl) {
  fs::path dir = temp_dir("http-url-validate");
  write_file(dir / "p.yaml",
             "pipelines:\n"
             "  - name: p\n"
             "    delivery: at_least_once\n"
             "    source: { plugin: generator, config: { count: 5 } }\n"
             "    sink:\n      plugin: http\n      config:\n"
             "        url: \"http://[::1/x/{/seq}\"\n");
  auto r = run(exactly_bin() + " validate " + (dir / "p.yaml").string(), dir);
  EXPECT_NE(r.exit_code, 0);
  const std::string all = r.out + r.err;
  EXPECT_NE(all.find("p.yaml:8"), std::string::npos) << all;
  EXPECT_NE(all.find("url"), std::string::npos) << all;
  EXPECT_NE(all.find("libcurl cannot parse it"), std::string::npos) << all;
}

}  // namespace
