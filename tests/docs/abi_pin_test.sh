#!/usr/bin/env bash
# The plugin ABI header is pinned by hash, together with the ABI version it declares.
# Changing the header means: follow docs/abi-policy.md (bump EX_ABI_VERSION_MINOR for
# append-only growth, MAJOR otherwise), then update tests/docs/abi_header.sha256.
set -euo pipefail
root=$1
header=$root/sdk/include/exactly/plugin_abi.h
pin=$root/tests/docs/abi_header.sha256
actual=$(sha256sum "$header" | cut -d' ' -f1)
major=$(sed -n 's/^#define EX_ABI_VERSION_MAJOR \([0-9]*\)u.*/\1/p' "$header")
minor=$(sed -n 's/^#define EX_ABI_VERSION_MINOR \([0-9]*\)u.*/\1/p' "$header")
read -r want_hash want_version < "$pin"
if [ "$actual" != "$want_hash" ]; then
  if [ "$major.$minor" = "$want_version" ]; then
    echo "FAIL: plugin_abi.h changed but EX_ABI_VERSION is still $major.$minor."
    echo "Bump the version as docs/abi-policy.md says, then: echo \"$actual $major.$minor\" > tests/docs/abi_header.sha256"
  else
    echo "FAIL: plugin_abi.h changed (ABI now $major.$minor); after checking docs/abi-policy.md run:"
    echo "  echo \"$actual $major.$minor\" > tests/docs/abi_header.sha256"
  fi
  exit 1
fi
echo "ABI header matches its pin (ABI $major.$minor)"
