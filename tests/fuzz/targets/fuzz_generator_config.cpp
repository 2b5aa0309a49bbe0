// The generator source's validate (ABI 1.3).
#include "generator_source.hpp"
#include "plugin_config_input.hpp"

using namespace exactly;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto cfg = fuzz::config_from(data, size, {});
  fuzz::expect_only_config_errors([&] { return generator::GeneratorSource::validate(cfg); });
  return 0;
}
