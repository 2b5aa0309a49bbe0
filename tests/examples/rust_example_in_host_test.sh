#!/usr/bin/env bash
# The Rust example (examples/rust-mask), built with cargo (offline: it has no
# dependencies) and loaded by the real host.
#   1. `cargo test`: unit tests, and src/abi.rs checked against plugin_abi.h (a C program
#      generated from the header prints every struct's size/alignment, every member's
#      offset/size and every constant; they must equal the Rust definitions).
#   2. `cargo build --release` -> libmask.so, installed as exactly_mask.so.
#   3. generator -> mask(payload, seq) -> file beside generator -> file: the masked output
#      must equal the unmasked one with exactly those members replaced (last 4
#      characters of the payload kept); a file with a line that is not JSON goes to the
#      error policy (skip) while the others are masked.
#   4. keep.last: -1 must fail the pipeline with the key named.
# No cargo is a failure, not a skip: install it (tests/tools/install-deps.sh does).
set -euo pipefail
umask 022  # the host refuses plugins that others can write
build_dir=$(cd "$1" && pwd)
crate=$(cd "$(dirname "$0")/../../examples/rust-mask" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }

command -v cargo >/dev/null 2>&1 ||
  fail "cargo is not on PATH ($PATH); the Rust plugin example needs it: install cargo (Debian: apt-get install cargo, or rustup)"
cargo --version
rustc --version
export CARGO_TARGET_DIR=$build_dir/examples/rust-mask-target
export CC=${CC:-cc}
(cd "$crate" && cargo test --release --offline) || fail "cargo test (bindings vs plugin_abi.h, unit tests)"
(cd "$crate" && cargo build --release --offline) || fail "cargo build"
so=$CARGO_TARGET_DIR/release/libmask.so
[ -f "$so" ] || fail "$so was not built"

work=$(mktemp -d "${TMPDIR:-/tmp}/exactly-rust-example-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/plugins"
cp "$so" "$work/plugins/exactly_mask.so"
chmod 755 "$work/plugins/exactly_mask.so"

# Only the descriptor is exported, as the host's loader wants.
"$build_dir/exactly" plugins --plugin-path "$work/plugins" > "$work/plugins.out" 2>&1 ||
  { cat "$work/plugins.out"; fail "exactly plugins"; }
grep -A5 '^mask 0.1.0' "$work/plugins.out"
grep -Eq 'keep\.last +int +default 0' "$work/plugins.out" || fail "the schema is not declared through the descriptor"

printf '%s\n' '{"card":"4111111111111111","name":"ada"}' 'not json' '{"name":"bob"}' > "$work/cards.jsonl"
cat > "$work/p.yaml" <<YAML
plugin.path: [$work/plugins]
pipelines:
  - name: masked
    delivery: exactly_once
    source: { plugin: generator, config: { count: 500, seed: 3, duplicate.ratio: 0 } }
    transforms:
      - plugin: mask
        config: { fields: [payload, seq], replacement: XXXX, keep.last: 4 }
    sink: { plugin: file, config: { path: $work/masked.jsonl } }
  - name: clear
    delivery: exactly_once
    source: { plugin: generator, config: { count: 500, seed: 3, duplicate.ratio: 0 } }
    sink: { plugin: file, config: { path: $work/clear.jsonl } }
  - name: cards
    delivery: exactly_once
    errors: { policy: skip }
    source: { plugin: file, config: { path: $work/cards.jsonl } }
    transforms:
      - plugin: mask
        config: { fields: [card], keep.last: 4 }
    sink: { plugin: file, config: { path: $work/cards.out.jsonl } }
YAML
"$build_dir/exactly" run --no-watch "$work/p.yaml" > "$work/run.out" 2>&1 || { cat "$work/run.out"; fail "run failed"; }
cat "$work/run.out"

[ "$(wc -l < "$work/masked.jsonl")" -eq 500 ] || fail "expected 500 masked records"
# What the plugin must have done, done by sed to the unmasked output.
sed -E 's/"seq":[0-9]+/"seq":"XXXX"/; s/"payload":"[^"]*([^"]{4})"/"payload":"XXXX\1"/' \
  "$work/clear.jsonl" > "$work/expected.jsonl"
if ! cmp -s "$work/expected.jsonl" "$work/masked.jsonl"; then
  diff "$work/expected.jsonl" "$work/masked.jsonl" | head -5
  fail "masked output differs from the expected masking"
fi
grep -Eq 'mask_fields_masked_total +1000$' "$work/run.out" || fail "no mask_fields_masked_total = 1000 in the summary"
head -1 "$work/masked.jsonl"

printf '%s\n' '{"card":"***1111","name":"ada"}' '{"name":"bob"}' > "$work/cards.expected"
cmp -s "$work/cards.expected" "$work/cards.out.jsonl" || { cat "$work/cards.out.jsonl"; fail "cards pipeline output"; }
grep -Eq '^cards +finished +3 +2 +0 +1 ' "$work/run.out" || fail "the line that is not JSON was not rejected to the error policy"

cat > "$work/bad.yaml" <<YAML
plugin.path: [$work/plugins]
pipelines:
  - name: bad
    source: { plugin: generator, config: { count: 10 } }
    transforms:
      - plugin: mask
        config: { fields: [payload], keep.last: -1 }
    sink: { plugin: file, config: { path: $work/bad.jsonl } }
YAML
if "$build_dir/exactly" run --no-watch "$work/bad.yaml" > "$work/bad.out" 2>&1; then
  cat "$work/bad.out"; fail "keep.last: -1 was accepted"
fi
cat "$work/bad.out"
grep -q "bad.yaml:7:[0-9]*: error: transforms\[0\] (mask): key 'keep.last': must be from 0 to 1000, got -1" "$work/bad.out" \
  || fail "the config error does not name the key 'keep.last' at bad.yaml:7"
echo "Rust example plugin loaded and applied by the host"
