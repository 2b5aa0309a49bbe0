#!/usr/bin/env bash
# Runs every fuzz target: first the kept crashers (tests/fuzz/crashers/<target>/, each must
# pass now), then fuzzing from the seed corpus (tests/fuzz/corpus/<target>/) for a bounded
# time. New inputs go to a scratch corpus, not the source tree; a crash leaves its input
# in the scratch dir and is printed: copy it to crashers/<target>/ with the fix.
#   run_fuzzers.sh BIN_DIR PLUGIN_DIR     ~24 s in all (EXACTLY_HEAVY=1: 25 min in all;
#                                         EXACTLY_FUZZ_SECONDS overrides the total)
#   run_fuzzers.sh --no-clang             reports the skip (exit 77)
set -uo pipefail
if [ "${1:-}" = "--no-clang" ]; then
  echo "SKIPPED: fuzz targets not built: no clang++ (tests/tools/install-deps.sh installs clang and libclang-rt-14-dev)"
  exit 77
fi
bin=$1 plugins=$2
src=$(cd "$(dirname "$0")" && pwd)
total=24
[ "${EXACTLY_HEAVY:-0}" = "1" ] && total=1500
total=${EXACTLY_FUZZ_SECONDS:-$total}
targets=(config_load kafka_config dedupe_config file_config filter_config generator_config http_config state_codecs json_id)
per=$(( total / ${#targets[@]} ))
[ "$per" -ge 1 ] || per=1
scratch=$(mktemp -d /tmp/exactly-fuzz.XXXXXX)
export EXACTLY_PLUGIN_PATH=$plugins
# Leaks are not what these targets look for (the plugins' libraries keep process-wide
# caches); address and undefined-behaviour errors and uncaught exceptions are.
opts=(-timeout=10 -rss_limit_mb=2048 -max_len=8192 -detect_leaks=0 -print_final_stats=1)
# -detect_leaks=0 stops libFuzzer's own leak checks, not the one LeakSanitizer makes at
# exit: that one reports what a plugin's libraries allocated for good before they were
# unloaded (libre2's statics, once the filter plugin links it) and failed the run.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
failed=()
for t in "${targets[@]}"; do
  exe=$bin/fuzz_$t
  [ -x "$exe" ] || { echo "FAIL: $exe missing"; failed+=("$t"); continue; }
  mkdir -p "$scratch/$t/corpus"
  if compgen -G "$src/crashers/$t/*" >/dev/null; then
    if ! "$exe" "${opts[@]}" "$src/crashers/$t"/* </dev/null >"$scratch/$t/crashers.log" 2>&1; then
      echo "FAIL: $t: a kept crasher fails again"; tail -40 "$scratch/$t/crashers.log"; failed+=("$t"); continue
    fi
  fi
  "$exe" "${opts[@]}" -max_total_time="$per" -artifact_prefix="$scratch/$t/" \
    "$scratch/$t/corpus" "$src/corpus/$t" </dev/null >"$scratch/$t/fuzz.log" 2>&1
  rc=$?
  stats=$(grep -E '^stat::number_of_executed_units' "$scratch/$t/fuzz.log" | awk '{print $2}')
  if [ $rc -ne 0 ]; then
    echo "FAIL: $t (exit $rc); input kept in $scratch/$t/:"; ls "$scratch/$t" | grep -E '^(crash|leak|timeout|oom)-' || true
    tail -60 "$scratch/$t/fuzz.log"
    failed+=("$t")
  else
    echo "ok  $t: ${stats:-?} inputs in ${per}s"
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz targets failing: ${failed[*]} (logs in $scratch)"
  exit 1
fi
rm -rf "$scratch"
