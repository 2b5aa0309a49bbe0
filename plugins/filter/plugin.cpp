#include <exactly/sdk.hpp>

#include "filter_transform.hpp"

namespace {

using exactly::sdk::field;
using exactly::sdk::required;

const char* const kOps[] = {"eq", "ne", "exists", "missing", "prefix", "regex", nullptr};
const char* const kActions[] = {"keep", "drop", nullptr};
const char* const kOnInvalid[] = {"reject", "drop", "keep", nullptr};

const ex_config_field kFields[] = {
    required("field", EX_CFG_STRING, "JSON pointer into the value, e.g. /type"),
    field("op", EX_CFG_STRING,
          "eq/ne compare with value (ne = not eq, so a missing field is ne); exists/missing; "
          "prefix; regex (RE2 syntax, unanchored search, linear time: no backreferences or "
          "lookaround)",
          "eq", kOps),
    field("value", EX_CFG_STRING, "operand of eq, ne, prefix and regex"),
    field("action", EX_CFG_STRING, "keep = pass matching records only; drop = drop them",
          "keep", kActions),
    field("on.invalid", EX_CFG_STRING,
          "value that is not JSON: reject (to the error policy), drop or keep", "reject",
          kOnInvalid),
};

}  // namespace

EXACTLY_PLUGIN("filter", "0.1.0",
               exactly::sdk::transform<exactly::filter::FilterTransform>(
                   "filter", "Keeps or drops records by a predicate on a JSON field", kFields))
