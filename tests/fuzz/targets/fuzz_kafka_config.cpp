// The kafka source's and sink's validate (ABI 1.3): first byte picks the component.
#include "kafka_settings.hpp"
#include "plugin_config_input.hpp"

using namespace exactly;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  bool source = data[0] & 1;
  auto cfg = fuzz::config_from(data + 1, size - 1,
                               source ? fuzz::Pairs{{"bootstrap.servers", "127.0.0.1:9092"},
                                                    {"group.id", "g"}, {"topics", "t"}}
                                      : fuzz::Pairs{{"bootstrap.servers", "127.0.0.1:9092"},
                                                    {"topic", "t"}});
  fuzz::expect_only_config_errors([&] { return source ? kafka::validate_source(cfg) : kafka::validate_sink(cfg); });
  return 0;
}
