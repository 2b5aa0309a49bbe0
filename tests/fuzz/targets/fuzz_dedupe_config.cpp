// dedupe's and dedupe-redis's validate (ABI 1.3): first byte picks the component.
#include "dedupe_settings.hpp"
#include "plugin_config_input.hpp"
#include "redis_settings.hpp"

using namespace exactly;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  bool rocks = data[0] & 1;
  auto cfg = fuzz::config_from(data + 1, size - 1,
                               rocks ? fuzz::Pairs{{"id.json", "/messageId"}, {"state.dir", "st"}}
                                     : fuzz::Pairs{{"id.json", "/messageId"},
                                                   {"shards", "127.0.0.1:6379"},
                                                   {"retention.max.age", "3600000"}});
  fuzz::expect_only_config_errors([&] {
    if (rocks) dedupe::Settings::parse(cfg);
    else dedupe::RedisSettings::parse(cfg);
    return sdk::Status::ok();
  });
  return 0;
}
