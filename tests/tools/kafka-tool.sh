#!/usr/bin/env bash
# Runs the independent Java test tool (tests/tools/java/KafkaTool.java).
# Fetches the Kafka jars and (re)compiles the tool on demand, then runs it.
#
#   kafka-tool.sh <subcommand> --bootstrap HOST:PORT [options]
#   kafka-tool.sh build            # only fetch + compile
#
# Subcommands: wait, create-topic, delete-topic, produce, verify, marker-check, count,
# end-offsets, consume-group-offsets, reset-group-offsets, transactions, latency, hold-offsets (see
# tests/tools/README.md).
# Environment: EXACTLY_CACHE (cache root), KAFKA_TOOL_HEAP (default 2g),
#              KAFKA_BOOTSTRAP (default for --bootstrap).
set -euo pipefail
# shellcheck source=kafka-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/kafka-common.sh"

[[ $# -ge 1 ]] || { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" >&2; exit 2; }

classes="$(kt_build_tool)"
[[ "$1" == "build" ]] && { echo "$classes"; exit 0; }

exec java -Xmx"${KAFKA_TOOL_HEAP:-2g}" -XX:+UseParallelGC -Xss4m \
    -Dlog4j.configuration="file:$classes/log4j.properties" \
    -cp "$classes:$(kt_client_cp)" KafkaTool "$@"
