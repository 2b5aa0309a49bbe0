#!/usr/bin/env bash
# Builds a CMake example under examples/ (default: upper-case) the way a third-party
# plugin author would: against the SDK as installed by `cmake --install`, never against
# the source tree.
#
#   tests/examples/build_example.sh <exactly build dir> [work dir] [example]
#
# Installs the SDK into <work dir>/prefix from sdk/ on its own (as a plugin author without
# the host's dependencies does; <build dir> supplies nothing to it), configures and
# builds examples/<example> into <work dir>/build, and prints the built .so's path as the
# last line of stdout (everything else goes to stderr). <work dir> defaults to a new temp
# dir.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 3 ]]; then
  echo "usage: $0 <exactly build dir> [work dir] [example]" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
example=${3:-upper-case}
work_dir=${2:-$(mktemp -d "${TMPDIR:-/tmp}/exactly-example-XXXXXX")}
mkdir -p "$work_dir"
work_dir=$(cd "$work_dir" && pwd)
prefix=$work_dir/prefix
example_build=$work_dir/build

cmake -S "$source_dir/sdk" -B "$work_dir/sdk-build" >&2
cmake --install "$work_dir/sdk-build" --prefix "$prefix" >&2

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
# No package registry: the SDK must come from $prefix and nowhere else.
cmake -S "$source_dir/examples/$example" -B "$example_build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF >&2

sdk_dir=$(sed -n 's/^exactly_sdk_DIR:PATH=//p' "$example_build/CMakeCache.txt")
case "$sdk_dir" in
  "$prefix"/*) ;;
  *) echo "error: example found the SDK at '$sdk_dir', not under $prefix" >&2; exit 1 ;;
esac

cmake --build "$example_build" >&2

sos=("$example_build"/exactly_*.so)
if [[ ${#sos[@]} -ne 1 || ! -f "${sos[0]}" ]]; then
  echo "error: expected one exactly_*.so in $example_build, found: ${sos[*]}" >&2
  exit 1
fi
so=${sos[0]}
echo "$so"
