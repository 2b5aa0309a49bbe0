// The filter transform's validate (ABI 1.3): Rules::from, regex compilation included.
#include "plugin_config_input.hpp"
#include "predicate.hpp"

using namespace exactly;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto cfg = fuzz::config_from(data, size, {{"field", "/type"}, {"value", "a"}});
  fuzz::expect_only_config_errors([&] {
    filter::Rules::from(cfg);
    return sdk::Status::ok();
  });
  return 0;
}
