#!/usr/bin/env bash
# Fails when docs/config-reference.md differs from what the plugins declare.
# Regenerate: build/exactly plugins --markdown > docs/config-reference.md
set -euo pipefail
exactly=$1 doc=$2
if ! diff -u "$doc" <("$exactly" plugins --markdown); then
  echo "FAIL: $doc is out of date; regenerate with: build/exactly plugins --markdown > docs/config-reference.md"
  exit 1
fi
echo "config reference matches the schemas"
