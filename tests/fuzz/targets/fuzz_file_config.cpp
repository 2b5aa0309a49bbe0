// The file source's and sink's validate (ABI 1.3): first byte picks the component.
#include "file_settings.hpp"
#include "plugin_config_input.hpp"

using namespace exactly;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  bool source = data[0] & 1;
  auto cfg = fuzz::config_from(data + 1, size - 1, {{"path", "x.jsonl"}});
  fuzz::expect_only_config_errors([&] {
    if (source) file::SourceSettings::parse(cfg);
    else file::SinkSettings::parse(cfg);
    return sdk::Status::ok();
  });
  return 0;
}
