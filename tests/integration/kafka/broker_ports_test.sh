#!/usr/bin/env bash
# kafka-broker.sh keeps a stopped cluster's ports its own: a cluster started while a node
# of another is stopped (the broker-failure tests stop one for a minute while other tests
# start clusters beside them) takes other ports, and the stopped node starts again on its
# own. Before, the new cluster took the free ports and the stopped cluster's clients
# reached the wrong cluster (see port_reserved in tests/tools/kafka-broker.sh).
set -euo pipefail
tool="$1/tests/tools/kafka-broker.sh"
work="$(mktemp -d /tmp/exactly-ports-test.XXXXXX)"
cleanup() {
  "$tool" stop --clean --dir "$work/a" >/dev/null 2>&1 || true
  "$tool" stop --clean --dir "$work/b" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
a="$("$tool" start --heap 512m --dir "$work/a" | tail -n1)"
"$tool" stop-node 1 --dir "$work/a" >/dev/null
b="$("$tool" start --heap 512m --dir "$work/b" | tail -n1)"
if [[ "$a" == "$b" ]]; then
  echo "FAIL: a cluster started while another's node was stopped took its port ($a)"
  exit 1
fi
if ! "$tool" start-node 1 --dir "$work/a" >/dev/null; then
  echo "FAIL: the stopped node could not start again on its port ($a)"
  exit 1
fi
echo "ok: $a stayed the stopped cluster's; the other started at $b"
