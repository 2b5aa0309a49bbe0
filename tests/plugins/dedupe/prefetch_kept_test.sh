#!/usr/bin/env bash
# The dedupe plugin's lookups and folds rely on prefetches (the tables are far larger
# than the caches), and a compiler can drop them without a word: GCC 12 took helpers
# whose only effect was __builtin_prefetch for pure functions and deleted every call, so
# until 2026-12-05 the record loop prefetched nothing while the docs said it did (found
# in a profile; the stage thread was 23-30% faster once they were back). This reads the
# built plugin and fails when a function that must prefetch has no prefetch instruction.
#   prefetch_kept_test.sh PATH/TO/exactly_dedupe.so
set -euo pipefail
so=$1
case "$(uname -m)" in
  x86_64) ;;
  *) echo "SKIP: prefetch instructions are only checked on x86-64 (this is $(uname -m))"; exit 77 ;;
esac
dis=$(mktemp)
trap 'rm -f "$dis"' EXIT
objdump -d --no-show-raw-insn -C "$so" >"$dis"
# function (as objdump prints it, a prefix of its name) -> why it must prefetch
checks=(
  "exactly::dedupe::DedupeTransform::process(|each record's claim-table slots and presence-filter blocks, a few records ahead"
  "exactly::dedupe::PartitionStore::start_fold()::{lambda()#1}::operator()|the fold thread's presence-filter adds"
  "exactly::dedupe::PartitionStore::finish_fold(|the presence-filter adds of a fold finished on the pipeline thread"
  "exactly::dedupe::write_claims_file(|the claims a claims file is written from"
  "exactly::dedupe::fold_claims(|the claims an SST fold writes"
)
fail=0
for c in "${checks[@]}"; do
  fn=${c%%|*} why=${c#*|}
  n=$(awk -v fn="$fn" '
    /^[0-9a-f]+ </ { inside = index($0, "<" fn) > 0; if (inside) seen = 1; next }
    inside && /prefetch/ { n++ }
    END { if (!seen) print "missing"; else print n + 0 }' "$dis")
  if [[ $n == missing ]]; then
    echo "FAIL: no function $fn in $so (renamed? update this test)"; fail=1
  elif [[ $n -eq 0 ]]; then
    echo "FAIL: $fn has no prefetch instruction: $why is not prefetched"; fail=1
  else
    echo "ok: $fn: $n prefetch instruction(s)"
  fi
done
exit $fail
