#!/usr/bin/env bash
# kafka -> HTTP records/s: exactly's http sink beside a hand-written consumer
# (hand_consumer.py: confluent-kafka + aiohttp from Debian, batch / send / commit) in the
# same run, on the same topic, against the same local server (bench_http_server, answers
# at once or after DELAY_MS), each at max.in.flight (the peer: concurrent requests)
# 1 / 64 / 256. Measured at the server: (requests - 1) / (last arrival - first arrival).
# (No packaged peer installs here: docs/benchmarks.md says what was tried.)
#
#   tests/bench/http/run_peer_bench.sh        # N=20000 PARTITIONS=4 DELAY_MS=0 INFLIGHT="1 64 256"
#   EXACTLY_KAFKA_BOOTSTRAP=host:port tests/bench/http/run_peer_bench.sh   # a running broker
# BUILD_DIR (default build) must hold a built exactly, plugins and bench_http_server.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
build="${BUILD_DIR:-$root/build}"
n="${N:-20000}"
partitions="${PARTITIONS:-4}"
delay_ms="${DELAY_MS:-0}"
inflight="${INFLIGHT:-1 64 256}"
tool="$root/tests/tools/kafka-tool.sh"
work=$(mktemp -d /tmp/exactly-http-peer.XXXXXX)
server_pid="" own_broker=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  [ -n "$own_broker" ] && "$root/tests/tools/kafka-broker.sh" stop --dir "$own_broker" --clean >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

if [ -z "${EXACTLY_KAFKA_BOOTSTRAP:-}" ]; then
  own_broker="$work/broker"
  EXACTLY_KAFKA_BOOTSTRAP=$("$root/tests/tools/kafka-broker.sh" start --dir "$own_broker" | tail -1)
fi
bootstrap="$EXACTLY_KAFKA_BOOTSTRAP"
topic="http-peer-$$"
"$tool" create-topic --bootstrap "$bootstrap" --topic "$topic" --partitions "$partitions" >/dev/null
"$tool" produce --bootstrap "$bootstrap" --topic "$topic" --count "$n" --partitions "$partitions" \
  --dup-ratio 0 --seed 7 >/dev/null

start_server() {
  rm -f "$work/port"
  "$build/bench_http_server" --port-file "$work/port" --delay-ms "$delay_ms" &
  server_pid=$!
  for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
  port=$(cat "$work/port")
}
stats() { curl -s "http://127.0.0.1:$port/stats"; }
report() {  # report <peer> <in flight>
  python3 - "$(stats)" "$n" "$1" "$2" <<'PY'
import json, sys
s = json.loads(sys.argv[1]); n = int(sys.argv[2])
span = s["last"] - s["first"]
rate = (s["count"] - 1) / span if span > 0 else float("nan")
print(f"| {sys.argv[3]} | {sys.argv[4]} | {s['count']} | {rate:.0f} |")
if s["count"] < n: print(f"   (server saw {s['count']} of {n})")
PY
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
}

run_exactly() {  # max.in.flight
  start_server
  cat >"$work/p.yaml" <<YAML
pipelines:
  - name: bench
    delivery: at_least_once
    source:
      plugin: kafka
      config: { bootstrap.servers: "$bootstrap", group.id: exactly-$1-$$, topics: [$topic] }
    sink:
      plugin: http
      config: { url: "http://127.0.0.1:$port/r/{/seq}", idempotency.key: /messageId, max.in.flight: $1 }
YAML
  "$build/exactly" run --no-watch "$work/p.yaml" >"$work/exactly.log" 2>&1 &
  local pid=$!
  for _ in $(seq 6000); do
    [ "$(stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])')" -ge "$n" ] && break
    sleep 0.1
  done
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  report "exactly http sink" "$1"
}

run_hand() {  # in flight
  start_server
  # Debian's interpreter: the packages are installed for it (install-deps.sh).
  timeout 600 /usr/bin/python3 "$root/tests/bench/http/hand_consumer.py" --bootstrap "$bootstrap" \
    --topic "$topic" --group "hand-$1-$$" --url "http://127.0.0.1:$port/r" --in-flight "$1" \
    --count "$n" >"$work/hand.log" 2>&1 || echo "   (hand consumer: $(tail -n 2 "$work/hand.log"))"
  report "hand-written consumer (confluent-kafka + aiohttp)" "$1"
}

echo "records: $n on $partitions partitions, server delay ${delay_ms} ms"
echo "| peer | in flight | requests | records/s at server |"
echo "|---|---|---|---|"
for f in $inflight; do
  run_exactly "$f"
  run_hand "$f"
done
