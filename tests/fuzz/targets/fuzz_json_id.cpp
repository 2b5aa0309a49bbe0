// id.json's fast path (plugins/dedupe/json_id_scan.hpp) against simdjson: a record value
// is any bytes a producer sends. Whatever the fast path answers, the extractor must say
// with it exactly what it says without it (the id's store key, or the same refusal);
// a difference aborts.
#include "id_extractor.hpp"

#include <cstdlib>
#include <string>

using namespace exactly::dedupe;

namespace {
bool extract(IdExtractor& x, const uint8_t* data, size_t size, std::string& key, std::string& reason) {
  ex_record r{};
  r.value = {data, size};
  r.timestamp_ms = -1;
  return x.extract(r, key, reason);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static IdExtractor with(IdSpec{IdSource::json, "", "/id", 128, true});
  static IdExtractor without(IdSpec{IdSource::json, "", "/id", 128, false});
  if (size == 0) return 0;
  std::string k1, r1, k2, r2;
  const bool a = extract(with, data, size, k1, r1);
  const bool b = extract(without, data, size, k2, r2);
  if (a != b || k1 != k2 || r1 != r2) std::abort();
  return 0;
}
