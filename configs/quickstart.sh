#!/usr/bin/env bash
# Builds exactly and runs configs/quickstart.yaml on the embedded (in-process) Kafka:
# generator -> topic "events" -> dedupe -> topic "events-unique". No services needed.
# Safe to run again: each run starts from an empty embedded broker and empty state.
set -euo pipefail
# The host refuses plugins that others can write (docs/operations.md): build them
# owner-writable whatever the caller's umask.
umask 022
cd "$(dirname "$0")/.."
tests/tools/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target exactly exactly_plugin_generator exactly_plugin_kafka \
  exactly_plugin_dedupe exactly_plugin_file exactly_plugin_filter
# The embedded broker lives in the process, so yesterday's dedupe state must go too.
rm -rf /tmp/exactly-quickstart
echo "== exactly run configs/quickstart.yaml"
./build/exactly run --no-watch configs/quickstart.yaml
