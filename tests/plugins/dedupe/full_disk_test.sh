#!/usr/bin/env bash
# A dedupe state dir whose disk fills up, through the real binary and plugins: the rounds
# fail naming the store and the disk, the pipeline restarts, the host does not abort
# (RocksDB's own info-log writer asserted on the line after a failed write, and Debian's
# librocksdb keeps its assertions: the host died with SIGABRT). Once the disk has room
# again the same state dir finishes the input: every id once, none lost.
#
# The full disk is a 3 MiB tmpfs in a private mount namespace: root and unshare(1) are
# needed (as on CI); without them the test says so and is reported skipped (77).
#   full_disk_test.sh EXACTLY_BIN
set -euo pipefail
bin=$1
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null ||
   ! unshare -m --propagation private true 2>/dev/null; then
  echo "SKIP: needs root and a private mount namespace (unshare -m) for a small tmpfs"
  exit 77
fi
work=$(mktemp -d /tmp/exactly-tests-full-disk.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

pipeline() {  # STATE_DIR OUT
  cat <<Y
pipelines:
  - name: full
    delivery: exactly_once
    commit: { interval: 1s, max.records: 20000 }
    restart.backoff.max: 1s
    source: { plugin: generator, config: { count: 400000, partitions: 4, seed: 11, duplicate.ratio: 0.01 } }
    transforms:
      - plugin: dedupe
        config: { id: { json: /messageId }, state.dir: $1, rocksdb.write.buffer.size: 1MiB }
    sink: { plugin: file, config: { path: $2 } }
Y
}
mkdir -p "$work/dd" "$work/ref"
pipeline "$work/dd" "$work/out.jsonl" > "$work/full.yaml"
pipeline "$work/ref/dd" "$work/ref/out.jsonl" > "$work/ref.yaml"

# The reference: the same input with room to spare.
"$bin" run --no-watch "$work/ref.yaml" > "$work/ref.out" 2> "$work/ref.err" || fail "reference run: $(tail -5 "$work/ref.err")"

# In one mount namespace: run on the full disk for a while, stop, give the disk room, finish.
unshare -m --propagation private bash -s "$bin" "$work" <<'INNER' || fail "see above"
set -uo pipefail
bin=$1 work=$2
mount -t tmpfs -o size=3m tmpfs "$work/dd" || { echo "FAIL: cannot mount a tmpfs"; exit 1; }
"$bin" run --no-watch "$work/full.yaml" > "$work/full1.out" 2> "$work/full1.err" &
pid=$!
for _ in $(seq 1 100); do
  grep -q "restarting in" "$work/full1.err" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.2
done
sleep 3   # a few restarts and failed opens on the full disk
kill -TERM "$pid" 2>/dev/null
wait "$pid"; rc=$?
echo "on the full disk: exit $rc"
grep -v " INFO " "$work/full1.err" | cut -c1-300 | head -6
if [ "$rc" -ge 128 ] || grep -q "Assertion\|SIGABRT" "$work/full1.err"; then
  echo "FAIL: the host died on the full disk (exit $rc)"; exit 1
fi
grep -q "No space left on device" "$work/full1.err" || { echo "FAIL: no round failed on the full disk (is it full?)"; exit 1; }
grep -q "store $work/dd/generator-" "$work/full1.err" || { echo "FAIL: the failing store is not named"; exit 1; }
grep -q "restarting in" "$work/full1.err" || { echo "FAIL: the pipeline was not restarted"; exit 1; }
mount -o remount,size=512m "$work/dd" || { echo "FAIL: cannot grow the tmpfs"; exit 1; }
"$bin" run --no-watch "$work/full.yaml" > "$work/full2.out" 2> "$work/full2.err"; rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: the run with room again exited $rc"; tail -5 "$work/full2.err"; exit 1; }
INNER

python3 - "$work/ref/out.jsonl" "$work/out.jsonl" <<'PY' || fail "output differs from the reference"
import collections, json, sys
def ids(path):
    c = collections.Counter(json.loads(l)["messageId"] for l in open(path))
    return c
ref, got = ids(sys.argv[1]), ids(sys.argv[2])
dup = sum(n - 1 for n in got.values() if n > 1)
missing = len(set(ref) - set(got))
extra = len(set(got) - set(ref))
print(f"reference {len(ref)} ids; after the full disk {len(got)} ids, {dup} duplicated, {missing} missing, {extra} unknown")
sys.exit(0 if dup == 0 and missing == 0 and extra == 0 and max(ref.values()) == 1 else 1)
PY
echo PASS
