#!/usr/bin/env bash
# The out-of-tree example, built against the installed SDK, loaded by the real host:
# generator -> upper_case -> file, then every payload must be upper case.
set -euo pipefail
build_dir=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/exactly-example-run-XXXXXX")
so=$("$(dirname "$0")/build_example.sh" "$build_dir" "$work" | tail -n1)
mkdir -p "$work/plugins"
cp "$so" "$work/plugins/"
cat > "$work/p.yaml" <<YAML
plugin.path: [$work/plugins]
pipelines:
  - name: shout
    delivery: exactly_once
    source: { plugin: generator, config: { count: 500, seed: 3, duplicate.ratio: 0 } }
    transforms:
      - plugin: upper_case
        config: { field: /payload }
    sink: { plugin: file, config: { path: $work/out.jsonl } }
YAML
"$build_dir/exactly" run --no-watch "$work/p.yaml"
lines=$(wc -l < "$work/out.jsonl")
lower=$(grep -c '"payload":"[^"]*[a-z]' "$work/out.jsonl" || true)
echo "lines=$lines lower_case_payloads=$lower"
[ "$lines" -eq 500 ] || { echo "FAIL: expected 500 lines"; exit 1; }
[ "$lower" -eq 0 ] || { echo "FAIL: payloads not upper-cased"; exit 1; }
# The example really ran: its ids (lower-case hex in the input) are untouched.
grep -q '"messageId":"[0-9a-f-]*"' "$work/out.jsonl" || { echo "FAIL: ids changed"; exit 1; }
rm -rf "$work"
echo "example plugin loaded and applied by the host"
