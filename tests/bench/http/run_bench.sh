#!/usr/bin/env bash
# Records/s of generator -> http sink -> a local server, through the real `exactly run`,
# at max.in.flight 1 / 64 / 256; against a server that answers at once and one that
# answers after DELAY_MS (a slow API, where in-flight requests matter most).
# Throughput is measured at the server: (requests - 1) / (last arrival - first arrival).
#   tests/bench/http/run_bench.sh            # N=50000 DELAY_MS=5 INFLIGHT="1 64 256"
#   SERVER=python tests/bench/http/run_bench.sh   # the asyncio server instead of the C++ one
# BUILD_DIR (default build) must hold a built exactly, plugins and bench_http_server.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
build="${BUILD_DIR:-$root/build}"
n="${N:-50000}"
delay_ms="${DELAY_MS:-5}"
inflight="${INFLIGHT:-1 64 256}"
work=$(mktemp -d /tmp/exactly-http-bench.XXXXXX)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

one() {  # one <delay_ms> <max.in.flight> <records>
  rm -f "$work/port"
  if [ "${SERVER:-cpp}" = python ]; then
    python3 "$root/tests/bench/http/fast_server.py" --port-file "$work/port" --delay-ms "$1" &
  else
    "$build/bench_http_server" --port-file "$work/port" --delay-ms "$1" &
  fi
  server_pid=$!
  for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
  port=$(cat "$work/port")
  cat >"$work/p.yaml" <<YAML
pipelines:
  - name: bench
    delivery: at_least_once
    source: { plugin: generator, config: { count: $3, duplicate.ratio: 0, batch.size: 1024 } }
    sink:
      plugin: http
      config:
        url: http://127.0.0.1:$port/r/{/seq}
        idempotency.key: /messageId
        max.in.flight: $2
YAML
  start=$(date +%s.%N)
  "$build/exactly" run --no-watch "$work/p.yaml" >"$work/host.log" 2>&1
  end=$(date +%s.%N)
  stats=$(curl -s "http://127.0.0.1:$port/stats")
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
  python3 - "$stats" "$3" "$1" "$2" "$start" "$end" <<'PY'
import json, sys
s = json.loads(sys.argv[1]); n = int(sys.argv[2])
span = s["last"] - s["first"]
rate = (s["count"] - 1) / span if span > 0 else float("nan")
wall = float(sys.argv[6]) - float(sys.argv[5])
print(f"| {sys.argv[3]:>5} ms | {sys.argv[4]:>5} | {s['count']:>7} | {rate:>10.0f} | {wall:>6.1f} s |")
if s["count"] < n: print(f"   (server saw {s['count']} of {n})")
PY
}

echo "server: ${SERVER:-cpp}"
echo "| server delay | max.in.flight | requests | records/s at server | wall (incl. start) |"
echo "|---|---|---|---|---|"
for d in 0 "$delay_ms"; do
  for f in $inflight; do
    # max.in.flight 1 against a slow server is slow by design: fewer records.
    count=$n
    if [ "$f" = 1 ] && [ "$d" != 0 ]; then count=$(( n / 25 )); fi
    one "$d" "$f" "$count"
  done
done
