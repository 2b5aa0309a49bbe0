// A fast path for the commonest id.json: a top-level string field ("/id") of a small,
// plain JSON object. simdjson's on-demand parser indexes the whole document before it
// looks anything up, and at ~150 bytes a record its fixed cost per document was 12% of
// the pipeline thread's samples in the EOS + dedupe benchmark (docs/benchmarks.md,
// "Memory the VM takes back"). This scanner answers only where simdjson is sure to
// answer the same: the whole value is one object of plain shape (valid UTF-8, no control
// characters or escapes where they would need a decision, balanced and closed), and the
// field's value is a string without escapes. Anything else is "unsure", and the caller
// asks simdjson, so every error, every escape and every other type keeps its old answer.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace exactly::dedupe {

// The field name a JSON pointer names when it is one top-level member ("/id" -> "id",
// with ~1 and ~0 decoded); nullopt for any other pointer (the fast path is then off).
std::optional<std::string> single_field_of(std::string_view pointer);

// The value of the first top-level member named `field` when it is a string without
// escapes, viewed in `doc`; nullopt when unsure (the caller then parses with simdjson).
std::optional<std::string_view> scan_string_field(std::string_view doc, std::string_view field);

}  // namespace exactly::dedupe
