// The filter transform's validate (ABI 1.3): Rules::from, regex compilation included.
// Rules that compile then match the input's last line as a record's value (JSON or not),
// so the JSON parser and the regex engine meet hostile records too.
#include "plugin_config_input.hpp"
#include "predicate.hpp"

using namespace exactly;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto cfg = fuzz::config_from(data, size, {{"field", "/type"}, {"value", "a"}});
  std::shared_ptr<const filter::Rules> rules;
  fuzz::expect_only_config_errors([&] {
    rules = filter::Rules::from(cfg);
    return sdk::Status::ok();
  });
  if (rules) {
    // The text after the last line break is the record's value.
    size_t start = size;
    while (start > 0 && data[start - 1] != '\n') --start;
    filter::Matcher m;
    std::string why;
    ex_bytes value{data + start, size - start};
    (void)m.test(*rules, value, why);
  }
  return 0;
}
