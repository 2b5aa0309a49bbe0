#!/usr/bin/env bash
# Builds and runs bench_dedupe. Extra arguments go to the benchmark, e.g.
#   tests/bench/dedupe/run_bench.sh --keys 100000000
# BUILD_DIR (default build-bench) is a Release build of its own.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
build="${BUILD_DIR:-$root/build-bench}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target bench_dedupe exactly_plugin_dedupe
if [ $# -eq 0 ]; then
  set -- --keys 10000000 --dup 0.006 --batch 1024 --round 100000
fi
exec "$build/bench_dedupe" "$@"
