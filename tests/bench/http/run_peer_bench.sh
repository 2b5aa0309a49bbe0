#!/usr/bin/env bash
# kafka -> HTTP records/s, exactly's http sink beside the peer a user would otherwise
# pick, in the same run, on the same topic, against the same local server (answers at
# once, or after DELAY_MS). Peer: Kafka Connect (standalone, 3.9.1) with Apache Camel's
# HTTP sink connector (org.apache.camel.kafkaconnector:camel-http-sink-kafka-connector
# 4.14.0 from Maven Central, copied by Maven into ${EXACTLY_CACHE:-~/.cache/exactly}/connect-http).
# exactly runs at max.in.flight 1 / 64 / 256; Camel's HTTP producer sends one request at
# a time per task, so its only concurrency knob is tasks.max (1 and the partition count).
# Throughput is measured at the server: (requests - 1) / (last arrival - first arrival).
#
#   tests/bench/http/run_peer_bench.sh                 # N=20000 PARTITIONS=4 DELAY_MS=0
#   EXACTLY_KAFKA_BOOTSTRAP=host:port ... run_peer_bench.sh   # use a running broker
# BUILD_DIR (default build) must hold a built exactly, plugins and bench_http_server.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
here="$root/tests/bench/http"
build="${BUILD_DIR:-$root/build}"
n="${N:-20000}"
partitions="${PARTITIONS:-4}"
delay_ms="${DELAY_MS:-0}"
inflight="${INFLIGHT:-1 64 256}"
cache="${EXACTLY_CACHE:-$HOME/.cache/exactly}"
tool="$root/tests/tools/kafka-tool.sh"
work=$(mktemp -d /tmp/exactly-http-peer.XXXXXX)
server_pid="" connect_pid="" own_broker=""
log() { echo "[peer-bench] $*" >&2; }
die() { log "$*"; exit 1; }
cleanup() {
  [ -n "$connect_pid" ] && kill "$connect_pid" 2>/dev/null
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  [ -n "$own_broker" ] && "$root/tests/tools/kafka-broker.sh" stop --dir "$own_broker" --clean >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# The peer's jars, copied again only when connect-http/pom.xml changed.
target="$cache/connect-http"
stamp="$(sha256sum "$here/connect-http/pom.xml" | cut -c1-16)"
mkdir -p "$target"
if [[ "$(cat "$target/libs.stamp" 2>/dev/null)" != "$stamp" ]]; then
  copy() {
    rm -rf "$target/libs.tmp"
    (cd "$target" && mvn -B -q "$@" -f "$here/connect-http/pom.xml" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$target/libs.tmp")
  }
  log "copying Kafka Connect + the Camel HTTP sink connector into $target/libs"
  copy -o >"$target/build.log" 2>&1 || copy >>"$target/build.log" 2>&1 ||
    { tail -n 30 "$target/build.log" >&2; die "maven copy of the connect-http jars failed"; }
  rm -rf "$target/libs" && mv "$target/libs.tmp" "$target/libs"
  echo "$stamp" >"$target/libs.stamp"
fi

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
count_at_server() { curl -s "http://127.0.0.1:$port/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])'; }
wait_for_all() {  # until the server saw n requests (or 10 min)
  for _ in $(seq 6000); do [ "$(count_at_server)" -ge "$n" ] && return 0; sleep 0.1; done
  return 1
}
report() {  # report <peer> <concurrency>
  python3 - "$(curl -s "http://127.0.0.1:$port/stats")" "$n" "$1" "$2" <<'PY'
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
      config:
        bootstrap.servers: $bootstrap
        group.id: exactly-$1-$$
        topics: [$topic]
    sink:
      plugin: http
      config:
        url: http://127.0.0.1:$port/r/{/seq}
        idempotency.key: /messageId
        max.in.flight: $1
YAML
  "$build/exactly" run --no-watch "$work/p.yaml" >"$work/exactly.log" 2>&1 &
  local pid=$!
  wait_for_all || log "exactly max.in.flight $1: not all requests arrived (see $work/exactly.log)"
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  report "exactly http sink" "max.in.flight $1"
}

run_connect() {  # tasks.max
  start_server
  cat >"$work/worker.properties" <<PROPS
bootstrap.servers=$bootstrap
key.converter=org.apache.kafka.connect.converters.ByteArrayConverter
value.converter=org.apache.kafka.connect.storage.StringConverter
offset.storage.file.filename=$work/connect.offsets
consumer.auto.offset.reset=earliest
offset.flush.interval.ms=1000
PROPS
  cat >"$work/sink.properties" <<PROPS
name=http-peer-$1-$$
connector.class=org.apache.camel.kafkaconnector.httpsink.CamelHttpsinkSinkConnector
tasks.max=$1
topics=$topic
camel.kamelet.http-sink.url=http://127.0.0.1:$port/r
camel.kamelet.http-sink.method=POST
PROPS
  java -Xmx1g -Dlog4j.configuration="file:$here/connect-http/log4j.properties" \
    -cp "$target/libs/*" org.apache.kafka.connect.cli.ConnectStandalone \
    "$work/worker.properties" "$work/sink.properties" >"$work/connect-$1.log" 2>&1 &
  connect_pid=$!
  wait_for_all || log "connect tasks.max $1: not all requests arrived (log: $(tail -n 5 "$work/connect-$1.log"))"
  kill -TERM "$connect_pid"; wait "$connect_pid" 2>/dev/null || true; connect_pid=""
  report "Kafka Connect + Camel http-sink" "tasks.max $1"
}

echo "records: $n on $partitions partitions, server delay ${delay_ms} ms"
echo "| peer | concurrency | requests | records/s at server |"
echo "|---|---|---|---|"
for f in $inflight; do run_exactly "$f"; done
for t in 1 "$partitions"; do run_connect "$t"; done
