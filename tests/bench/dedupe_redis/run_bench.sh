#!/usr/bin/env bash
# The dedupe-redis benchmark in one run: three private redis-servers, the stage with 1
# and 3 shards beside the RocksDB stage (bench_dedupe_redis), then redis-benchmark
# sending the same command shape (EVALSHA of the claim script, one batch of --batch
# new ids per call, one client) to one server. Extra arguments go to bench_dedupe_redis.
#   tests/bench/dedupe_redis/run_bench.sh                 # --records 1000000
#   BUILD_DIR=build tests/bench/dedupe_redis/run_bench.sh --records 300000
#   tests/bench/dedupe_redis/run_bench.sh --tls           # also over TLS: three more
#       servers that take only TLS (redis-server.sh --tls), the stage's runs repeated
#       through them, with the ratio to plaintext from the same invocation
# Servers run with hash-max-listpack-entries 512 (see plugins/dedupe/README.md:
# bucket.slices is chosen so a hash holds ~250 ids and stays a listpack).
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
build="${BUILD_DIR:-$root/build-bench}"
if [ "$build" != "$root/build" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" --target bench_dedupe_redis exactly_plugin_dedupe >/dev/null
records=1000000
batch=1024
tls=0
args=()
for a in "$@"; do
  if [ "$a" = --tls ]; then tls=1; else args+=("$a"); fi
done
set -- "${args[@]}"
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    --records) records="${args[$((i + 1))]}" ;;
    --batch) batch="${args[$((i + 1))]}" ;;
  esac
done
work=$(mktemp -d /tmp/exactly-bench-redis.XXXXXX)
servers=()
cleanup() {
  for d in "$work"/redis-*; do [ -d "$d" ] && "$root/tests/tools/redis-server.sh" stop --dir "$d" --clean; done
  rm -rf "$work"
}
trap cleanup EXIT
for s in a b c; do
  servers+=("$("$root/tests/tools/redis-server.sh" start --dir "$work/redis-$s" \
    --arg "--hash-max-listpack-entries 512" | tail -n1)")
done
shards=$(IFS=,; echo "${servers[*]}")
tls_args=()
if [ $tls -eq 1 ]; then
  tls_servers=()
  : >"$work/ca-bundle.pem"  # each server has a CA of its own: the stage trusts all three
  for s in ta tb tc; do
    tls_servers+=("$("$root/tests/tools/redis-server.sh" start --dir "$work/redis-$s" --tls \
      --arg "--hash-max-listpack-entries 512" | tail -n1)")
    cat "$work/redis-$s/tls/ca.pem" >>"$work/ca-bundle.pem"
  done
  tls_args=(--tls-shards "$(IFS=,; echo "${tls_servers[*]}")" --tls-ca "$work/ca-bundle.pem"
            --tls-cli "--tls --cacert $work/ca-bundle.pem")
fi
slices=$(( records / 250 > 0 ? records / 250 : 1 ))
echo "== redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), servers ${servers[*]}, bucket.slices $slices"
"$build/bench_dedupe_redis" --records "$records" --shards "$shards" --slices "$slices" \
  --script-out "$work/claim.lua" "${tls_args[@]}" "$@"

# redis-benchmark on the same shape: EVALSHA sha 0 prefix slot consult expire claim 10
# layout (two slots consulted: the default bucket.span; the layout text the stage keeps
# beside its claims) then per id: slice, field (12 random digits; -r must fit an int),
# value (14 bytes).
a="${servers[0]}"; host="${a%:*}"; port="${a##*:}"
redis-cli -h "$host" -p "$port" flushall >/dev/null
sha=$(redis-cli -h "$host" -p "$port" script load "$(cat "$work/claim.lua")")
expire=$(( ($(date +%s) + 86400) * 1000 ))
cmd=(EVALSHA "$sha" 0 "bench:" 2 2 "$expire" claim 10 "bucket.span=3600000 bucket.slices=$slices")
for ((k = 0; k < batch; k++)); do cmd+=("$(( k % slices ))" "__rand_int__" "vvvvvvvvvvvvvv"); done
calls=$(( records / batch ))
out=$(redis-benchmark -h "$host" -p "$port" -c 1 -n "$calls" -r 1000000000 -q "${cmd[@]}" 2>&1 | tr '\r' '\n' | grep -E 'requests per second' | tail -1)
rps=$(echo "$out" | sed -E 's/.*: ([0-9.]+) requests per second.*/\1/')
echo "redis-benchmark EVALSHA x $batch ids: $rps calls/s = $(awk -v r="$rps" -v b="$batch" 'BEGIN { printf "%.0f", r * b }') ids/s"
