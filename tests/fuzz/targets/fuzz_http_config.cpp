// The http sink's validate (ABI 1.3): URL template, field references, rate classes.
#include "http_settings.hpp"
#include "plugin_config_input.hpp"

using namespace exactly;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto cfg = fuzz::config_from(data, size, {{"url", "http://127.0.0.1/x/{/id}"}});
  fuzz::expect_only_config_errors([&] {
    http::Settings::check(cfg);
    return sdk::Status::ok();
  });
  return 0;
}
