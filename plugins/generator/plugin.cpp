#include <exactly/sdk.hpp>

#include "generator_source.hpp"

namespace {

using exactly::sdk::field;

const char* const kKeyModes[] = {"id", "none", nullptr};

const ex_config_field kFields[] = {
    field("count", EX_CFG_INT, "records to generate in total; 0 = unbounded", "1000000"),
    field("rate", EX_CFG_INT, "records per second; 0 = as fast as possible", "0"),
    field("seed", EX_CFG_INT, "same seed, same records at the same positions", "0"),
    field("duplicate.ratio", EX_CFG_DOUBLE,
          "share of records that repeat an earlier record's id and value exactly", "0.006"),
    field("partitions", EX_CFG_INT, "partitions generator-0..N-1; record i goes to i % N", "1"),
    field("payload.bytes", EX_CFG_SIZE, "length of the payload string in each value", "100"),
    field("batch.size", EX_CFG_INT, "records per poll at most", "1024"),
    field("key", EX_CFG_STRING, "record key: id = the messageId text, none = no key", "id",
          kKeyModes),
};

}  // namespace

EXACTLY_PLUGIN("generator", "0.1.0",
               exactly::sdk::source<exactly::generator::GeneratorSource>(
                   "generator", "Synthetic JSON events with reproducible duplicates", kFields))
