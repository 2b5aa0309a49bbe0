#!/usr/bin/env bash
# Fails when docs/config-reference.md differs from what the plugins declare.
# Regenerate: build/exactly plugins --markdown > docs/config-reference.md
set -euo pipefail
exactly=$1 doc=$2
if ! diff -u "$doc" <("$exactly" plugins --markdown); then
  echo "FAIL: $doc is out of date; regenerate with: build/exactly plugins --markdown > docs/config-reference.md"
  exit 1
fi
# "Every key of every component": each plugin key in the JSON schema has its row (map
# keys such as http's headers and kafka's rdkafka were left out once).
missing=$("$exactly" plugins --json | python3 -c '
import json, sys
doc = open(sys.argv[1]).read()
for lib in json.load(sys.stdin)["libraries"]:
    for c in lib["components"]:
        for f in c["config"]:
            if "| `%s` |" % f["key"] not in doc:
                print("%s %s: %s" % (lib["name"], c["name"], f["key"]))
' "$doc")
if [ -n "$missing" ]; then
  echo "FAIL: keys without a row in $doc:"
  echo "$missing"
  exit 1
fi
echo "config reference matches the schemas"
