#!/usr/bin/env bash
# Builds exactly and runs the whole test suite, including the real-Kafka integration
# and crash tests, on a fresh Debian machine. Safe to run again.
#   tests/run.sh               default suite (fast tests + one real crash cycle per claim)
#   EXACTLY_HEAVY=1 tests/run.sh   adds the heavy crash runs (>= 1M records, >= 20 kills)
set -euo pipefail
# The host refuses plugins that others can write (docs/operations.md): build them
# owner-writable whatever the caller's umask.
umask 022
cd "$(dirname "$0")/.."
root=$(pwd)

echo "== dependencies"
tests/tools/install-deps.sh --with-java
tests/tools/kafka-broker.sh fetch

echo "== kafka broker (KRaft, 127.0.0.1), starting beside the build"
kdir=$(mktemp -d /tmp/exactly-kafka-suite.XXXXXX)
broker_start=
cleanup() {
    # A build that fails while the broker is still starting: end the start first, so
    # that stop finds every node it launched.
    if [ -n "$broker_start" ]; then
        kill "$broker_start" 2>/dev/null || true
        wait "$broker_start" 2>/dev/null || true
    fi
    "$root/tests/tools/kafka-broker.sh" stop --dir "$kdir" --clean >/dev/null 2>&1 || true
    rm -f "$kdir.start.log"
}
trap cleanup EXIT
# Its start (a JVM, ~20-30 s on 2 cores) overlaps the build instead of following it;
# the build takes the cores, hence the long timeout.
tests/tools/kafka-broker.sh start --dir "$kdir" --timeout-s 600 >"$kdir.start.log" 2>&1 &
broker_start=$!

echo "== build"
# EXACTLY_FUZZ: the libFuzzer targets (tests/fuzz), built with clang beside the rest.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEXACTLY_FUZZ=ON >/dev/null
cmake --build build -j "$(nproc)"

echo "== kafka broker"
if ! wait "$broker_start"; then broker_start=; cat "$kdir.start.log" >&2; exit 1; fi
broker_start=
export EXACTLY_KAFKA_BOOTSTRAP=$(tail -n1 "$kdir.start.log")
export EXACTLY_KAFKA_DIR=$kdir
echo "broker at $EXACTLY_KAFKA_BOOTSTRAP"

echo "== tests"
args=(--test-dir build --output-on-failure --timeout 1800)
if [ "${EXACTLY_HEAVY:-0}" = "1" ]; then export EXACTLY_HEAVY=1; kafka_exclude='^$'; else kafka_exclude=heavy; fi
# The unit tests mostly wait (servers, timeouts, child processes: 133 CPU-seconds in a
# 234 s run two at a time), so twice as many run as there are cores.
ctest "${args[@]}" -LE 'kafka|heavy' -j "$(( $(nproc) * 2 ))"
# The broker tests mostly wait too (for kills, rebalances, session timeouts), so three
# run at once: each uses topics, groups and state dirs of its own and takes its ports
# under kafka-broker.sh's lock (60 tests: 3,062 test-seconds in 1,024 s with three, on
# 2026-12-03).
# EXACTLY_KAFKA_JOBS=1 runs them one at a time (e.g. to read one test's timing alone).
ctest "${args[@]}" -L kafka -LE "$kafka_exclude" -j "${EXACTLY_KAFKA_JOBS:-3}"
