#!/usr/bin/env bash
# Runs `exactly run` again and again on fresh topics and checks that every partition is
# consumed: the check for the librdkafka 2.0.2 fetch-start race (plugins/kafka/
# kafka_source.cpp, on_assign), which the harness loops in
# tests/plugins/kafka/kafka_fetch_start_test.cpp rarely hit. Each round: a fresh input
# and output topic (4 partitions), a new group, a kafka -> dedupe -> kafka pipeline with
# the stall check off, 200,000 records produced at 100,000/s while it starts; the round
# passes when the pipeline has read them all within 20 s.
#
#   tests/tools/fetch-start-loop.sh [--rounds 20] [--build build-bench]
#
# Broker: $EXACTLY_KAFKA_BOOTSTRAP, else one started (and stopped) here. Prints one line
# per round and "stalled rounds: N of M"; exits 1 when N > 0. The work dir of a stalled
# round (its log has librdkafka's topic/consumer debug lines) is kept and printed.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
rounds=20 build="$root/build-bench"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --build) build="$(cd "$2" && pwd)"; shift 2 ;;
    *) echo "fetch-start-loop.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
tool="$root/tests/tools/kafka-tool.sh"
work="$(mktemp -d /tmp/exactly-fetch-start.XXXXXX)"
cmake --build "$build" --target exactly exactly_plugin_kafka exactly_plugin_dedupe bench_paced_produce >/dev/null
B="${EXACTLY_KAFKA_BOOTSTRAP:-}"
if [[ -z "$B" ]]; then
  B="$("$root/tests/tools/kafka-broker.sh" start --dir "$work/kafka" | tail -n1)"
  trap '"$root/tests/tools/kafka-broker.sh" stop --dir "$work/kafka" --clean >/dev/null 2>&1 || true' EXIT
fi
stalled=0
for ((i = 1; i <= rounds; i++)); do
  tag="fsl-$i-$$" d="$work/r$i" port=$((19700 + RANDOM % 200))
  mkdir -p "$d"
  "$tool" create-topic --bootstrap "$B" --topic "$tag-in" --partitions 4 >/dev/null
  "$tool" create-topic --bootstrap "$B" --topic "$tag-out" --partitions 4 >/dev/null
  cat >"$d/pipeline.yaml" <<EOF
metrics: { listen: 127.0.0.1:$port }
pipelines:
  - name: loop
    delivery: exactly_once
    commit: { interval: 100ms }
    source: { plugin: kafka, config: { bootstrap.servers: "$B", group.id: $tag-g, topics: [$tag-in], fetch.stall.timeout: 0, rdkafka: { debug: "topic,consumer" } } }
    transforms:
      - plugin: dedupe
        config: { id: { json: /messageId }, state.dir: "$d/dedupe", changelog.topic: $tag-cl }
    sink: { plugin: kafka, config: { bootstrap.servers: "$B", topic: $tag-out, partitioning: input, state.dir: "$d/sink" } }
EOF
  "$build/exactly" run --no-watch --log-level debug "$d/pipeline.yaml" >"$d/log.txt" 2>&1 &
  pid=$!
  "$build/bench_paced_produce" --bootstrap "$B" --topic "$tag-in" --count 200000 --rate 100000 \
    --dup-ratio 0 >"$d/produce.json" 2>"$d/produce.err"
  n=0
  for ((t = 0; t < 40; t++)); do
    n=$(curl -s "127.0.0.1:$port/metrics" | awk '/^exactly_records_in_total/ { print $2 }')
    [[ "${n:-0}" == 200000 ]] && break
    sleep 0.5
  done
  curl -s "127.0.0.1:$port/metrics" >"$d/metrics.txt" || true
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [[ "${n:-0}" == 200000 ]]; then
    echo "round $i: all 200000 read"
    for t in "$tag-in" "$tag-out" "$tag-cl"; do "$tool" delete-topic --bootstrap "$B" --topic "$t" >/dev/null 2>&1 || true; done
    rm -rf "$d"
  else
    stalled=$((stalled + 1))
    echo "round $i: only ${n:-0} of 200000 read; kept $d"
  fi
done
echo "stalled rounds: $stalled of $rounds"
[[ $stalled -eq 0 ]]
