#!/usr/bin/env bash
# Dedupe changelog benchmark: restore rate, changelog size and failover time, against one
# real KRaft broker started here (tests/tools/kafka-broker.sh, its own dir in the work
# dir, stopped and removed at exit).
#
#   tests/bench/changelog/run_restore_bench.sh [--claims 10000000] [options]
#
# Phase 1, restore: N keyed records with distinct ids (--size bytes, unpaced) go into a
# 4-partition input topic; host A (`exactly run --no-watch`, kafka -> dedupe
# (id.json /messageId) -> kafka, exactly_once, partitioning: input, commit 1s, source
# stop.when.idle 5s) consumes all of it, writing N claims to the changelog
# exactly-<pipeline>-transforms-0-dedupe-changelog. Host B, same pipeline and group (it
# resumes at the end) but an EMPTY dedupe state.dir, restores all 4 partitions from the
# changelog and exits when idle. From B's "dedupe: restoring/restored partition" lines:
# restore claims/s = restored claims / seconds from the first restore's start to the last
# one's end (each partition restores in its own thread, in parallel); also per
# partition-second (sum of per-partition restore seconds); wall = B's start to its last
# restored line. Reference in the same run: an independent Java
# read_committed reader (ChangelogBench.java read) reading the changelog the same way
# (partition after partition, same fetch sizes): raw claims/s = N / its fetch seconds.
# Changelog bytes per id = sum of the changelog partitions' *.log segment files in the
# broker's log dir / N (also printed: key+value bytes / N as the reader saw them).
#
# Phase 2, failover (skip with --no-failover), once per value of --standby (default
# "0 1", the kafka source's standby.replicas): a paced producer (--rate, new ids) feeds
# the same input; host A<n> (fresh state dir) starts alone and restores all 4
# partitions, then host B<n> (fresh) joins and restores the 2 the range assignor gives
# it. With standbys, the run then waits until both hosts' dedupe_standby_lag gauges
# (from /metrics) are below 20 changelog positions. Once both commit steadily the host
# owning partition 0 is SIGKILLed (by ChangelogBench.java failover, which stamps the
# kill). Without a standby the survivor has never held the victim's partitions, so it
# restores them in full (N/4 claims each plus what arrived since); with one it takes
# them over from its warm copies. Between runs the survivor is stopped with SIGTERM. Failover time, per victim partition, from the kill until:
#   committed - the group's committed offset moves past its value at the kill (the
#               survivor's first transaction with those partitions committed), and
#   visible   - a read_committed reader of the output sees a record written after the
#               kill (also waits for the victim's open transaction to be aborted: the
#               survivor fences the victim's transactional id once the group shows it
#               gone, source fence.departed; with --no-fence the broker aborts it after
#               the sink's transaction.timeout).
# The session timeout (--session-timeout-ms, default 6000) bounds detection. Then the
# producer stops, the survivor drains and the whole output is checked against the input
# with kafka-tool.sh verify --mode dedupe (skip with --no-verify).
#
# Options: --claims N (10000000) --size B (40) --prefetch N (1000000; source
# queued.min.messages, 0 = the source's default, also 1000000) --rate R (20000 records/s in phase 2)
# --standby "0 1" --session-timeout-ms (6000) --heartbeat-ms (1000)
# --broker-min-session-ms N (the broker's group.min.session.timeout.ms; Kafka's default
# 6000 refuses a lower --session-timeout-ms) --txn-timeout-ms (10000, the sink's
# transaction.timeout) --no-fence (source fence.departed: false) --workdir DIR --keep (keep
# stores and broker data) --no-failover
# --no-verify.
# Binaries: BUILD_DIR (default build/) must hold exactly and plugins/ (build first with
#   cmake --build build -j2 --target exactly exactly_plugin_kafka exactly_plugin_dedupe exactly_plugin_generator
# ). KAFKA_HEAP (broker, 1g), KAFKA_TOOL_HEAP (verify, 6g).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
build="${BUILD_DIR:-$root/build}"
exe="$build/exactly"
tool="$root/tests/tools/kafka-tool.sh"
broker_sh="$root/tests/tools/kafka-broker.sh"
# shellcheck source=../../tools/kafka-common.sh
source "$root/tests/tools/kafka-common.sh"

claims=10000000 size=40 prefetch=1000000 rate=20000 session_ms=6000 hb_ms=1000 txn_ms=10000
work="" keep=0 failover=1 verify=1 fence=1 partitions=4 standbys="0 1" broker_props=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --claims) claims="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --prefetch) prefetch="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --session-timeout-ms) session_ms="$2"; shift 2 ;;
    --heartbeat-ms) hb_ms="$2"; shift 2 ;;
    --txn-timeout-ms) txn_ms="$2"; shift 2 ;;
    --broker-min-session-ms) broker_props+=(--prop "group.min.session.timeout.ms=$2"); shift 2 ;;
    --workdir) work="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --no-failover) failover=0; shift ;;
    --no-verify) verify=0; shift ;;
    --no-fence) fence=0; shift ;;
    --standby) standbys="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "run_restore_bench.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ "$claims" =~ ^[0-9]+$ && $claims -ge $partitions ]] || { echo "--claims must be a number >= $partitions" >&2; exit 2; }

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now_ms() { date +%s%3N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b - a) / 1000 }'; }   # ms -> s

[[ -x "$exe" && -f "$build/plugins/exactly_kafka.so" && -f "$build/plugins/exactly_dedupe.so" ]] ||
  die "no $exe or plugins in $build/plugins: build with cmake --build build -j2 --target exactly exactly_plugin_kafka exactly_plugin_dedupe exactly_plugin_generator"

# ---------------------------------------------------------------- setup
[[ -n "$work" ]] || work="$(mktemp -d /tmp/exactly-restore-bench.XXXXXX)"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
broker_dir="$work/kafka"
pids=()   # every process started here (hosts, producer): ended by pid at exit
cleanup() {
  local rc=$? p
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [[ -f "$broker_dir/cluster.env" ]]; then
    if [[ $keep -eq 1 ]]; then "$broker_sh" stop --dir "$broker_dir" >/dev/null 2>&1 || true
    else "$broker_sh" stop --dir "$broker_dir" --clean >/dev/null 2>&1 || true; fi
  fi
  [[ $keep -eq 1 ]] || rm -rf "$work"/host-*/dedupe "$work"/host-*/sink "$work/java"
  log "work dir (logs, YAML, results): $work"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

classes="$("$tool" build)"
mkdir -p "$work/java"
javac -nowarn -encoding UTF-8 --release 17 -cp "$(kt_client_cp)" -d "$work/java" "$here/ChangelogBench.java" ||
  die "javac of ChangelogBench.java failed"
bench_java() {
  java -Xmx1g -XX:+UseParallelGC -Dlog4j.configuration="file:$classes/log4j.properties" \
    -cp "$work/java:$(kt_client_cp)" ChangelogBench "$@"
}

log "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
B="$(KAFKA_HEAP="${KAFKA_HEAP:-1g}" "$broker_sh" start --dir "$broker_dir" "${broker_props[@]}" | tail -n1)"
log "broker $B (dir $broker_dir)"
data_dir="$broker_dir/node-1/data"

tag="$(date +%s)"
pipe="rb$tag"
in="rb-in-$tag" out="rb-out-$tag" group="rb-$tag"
"$tool" create-topic --bootstrap "$B" --topic "$in" --partitions "$partitions" >/dev/null
"$tool" create-topic --bootstrap "$B" --topic "$out" --partitions "$partitions" >/dev/null
metrics_port=$((19600 + RANDOM % 300))

write_yaml() {  # name idle(0|1) [standby.replicas] -> $work/name/pipeline.yaml
  local name="$1" idle="$2" d="$work/$1" extra=""
  mkdir -p "$d"
  [[ $idle -eq 1 ]] && extra="stop.when.idle: 5s, "
  [[ ${3:-0} -gt 0 ]] && extra="${extra}standby.replicas: $3, "
  [[ $fence -eq 0 ]] && extra="${extra}fence.departed: false, "
  local rk="session.timeout.ms: $session_ms, heartbeat.interval.ms: $hb_ms"
  [[ $prefetch -gt 0 ]] && rk="$rk, queued.min.messages: $prefetch"
  metrics_port=$((metrics_port + 1))
  cat >"$d/pipeline.yaml" <<EOF
metrics: { listen: 127.0.0.1:$metrics_port }
pipelines:
  - name: $pipe
    delivery: exactly_once
    commit: { interval: 1s }
    source: { plugin: kafka, config: { bootstrap.servers: "$B", group.id: $group, topics: [$in], ${extra}rdkafka: { $rk } } }
    transforms:
      - plugin: dedupe
        config: { id: { json: /messageId }, state.dir: "$d/dedupe" }
    sink: { plugin: kafka, config: { bootstrap.servers: "$B", topic: $out, partitioning: input, transaction.timeout: ${txn_ms}ms, state.dir: "$d/sink" } }
EOF
  echo "$metrics_port" >"$d/metrics.port"
}

start_host() {  # name -> $started (pid); in this shell, so that `wait` can reap it
  local d="$work/$1"
  "$exe" run --no-watch "$d/pipeline.yaml" >>"$d/log.txt" 2>&1 &
  started=$!
  pids+=("$started")
  echo "$started" >"$d/pid"
}

forget_pid() { local p n=(); for p in "${pids[@]}"; do [[ $p == "$1" ]] || n+=("$p"); done; pids=("${n[@]}"); }

# "<epoch ms> <partition> <claims> <seconds>" for each restored-partition line of a log.
restored_lines() {
  { grep -E "dedupe: restored partition '[^']+' \(id [0-9]+\): [0-9]+ claims in [0-9.]+ s" "$1" 2>/dev/null || true; } |
    while read -r ts rest; do
      local p c s
      p="$(sed -E "s/.*restored partition '([^']+)'.*/\1/" <<<"$rest")"
      c="$(sed -E 's/.*\): ([0-9]+) claims in.*/\1/' <<<"$rest")"
      s="$(sed -E 's/.* claims in ([0-9.]+) s.*/\1/' <<<"$rest")"
      echo "$(date -d "$ts" +%s%3N) $p $c $s"
    done
}

# Partitions (numbers) whose latest assigned/revoked line in the log says assigned.
owned_partitions() {
  { grep -E "\] (assigned|revoked) $in-[0-9]+" "$1" 2>/dev/null || true; } |
    sed -E "s/.*\] (assigned|revoked) $in-([0-9]+).*/\1 \2/" |
    awk '{ last[$2] = $1 } END { for (p in last) if (last[p] == "assigned") print p }' | sort -n
}

committed_json() { "$tool" consume-group-offsets --bootstrap "$B" --group "$group" --topic "$in"; }

wait_exit() {  # pid timeout-s -> $exit_rc (SIGKILL, 137, on timeout)
  local pid="$1" deadline=$((SECONDS + $2))
  exit_rc=0
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS > deadline)); then kill -KILL "$pid" 2>/dev/null || true; break; fi
    # A zombie child counts as gone.
    [[ "$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)" == Z ]] && break
    sleep 0.2
  done
  { wait "$pid"; } 2>/dev/null || exit_rc=$?   # (no "Killed" job notice for the victim)
  forget_pid "$pid"
}

# ---------------------------------------------------------------- phase 1: load, host A
log "producing $claims records ($size B, distinct ids, keyed) into $in"
t0=$(now_ms)
"$tool" produce --bootstrap "$B" --topic "$in" --count "$claims" --keyed --dup-ratio 0 \
  --size "$size" --seed 7 >"$work/produce.json" 2>"$work/produce.err" ||
  { tail -n 5 "$work/produce.err" >&2; die "produce failed"; }
log "produced in $(secs "$t0" "$(now_ms)") s: $(cat "$work/produce.json")"
[[ "$("$tool" end-offsets --bootstrap "$B" --topic "$in" | jq .total_end)" == "$claims" ]] || die "input does not hold $claims records"

write_yaml host-a 1
log "host A: consuming everything (exits 5 s after the input is drained)"
t0=$(now_ms)
start_host host-a
wait_exit "$started" $((claims / 20000 + 600))
a_s=$(secs "$t0" "$(now_ms)")
[[ $exit_rc -eq 0 ]] || { tail -n 20 "$work/host-a/log.txt" >&2; die "host A exited with $exit_rc"; }
committed=$(committed_json | jq .total)
log "host A done in $a_s s (incl. 5 s idle); group committed $committed"
[[ "$committed" == "$claims" ]] || die "group committed $committed of $claims"

# The changelog: its partition directories in the broker's log dir.
cl_dirs=("$data_dir"/exactly-"$pipe"-*-changelog-[0-9]*)
[[ -d "${cl_dirs[0]}" ]] || die "no changelog partition directories exactly-$pipe-*-changelog-N in $data_dir"
cl_topic="$(basename "${cl_dirs[0]}")"; cl_topic="${cl_topic%-*}"
cl_bytes=$(find "${cl_dirs[@]}" -name '*.log' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
cl_records=$("$tool" end-offsets --bootstrap "$B" --topic "$cl_topic" | jq .total_end)
bytes_per_id=$(awk -v b="$cl_bytes" -v n="$claims" 'BEGIN { printf "%.2f", b / n }')
log "changelog $cl_topic: ${#cl_dirs[@]} partitions, $cl_records offsets, $cl_bytes bytes of log segments = $bytes_per_id bytes/id"

log "raw read of the changelog (Java read_committed reader, partition after partition)"
bench_java read --bootstrap "$B" --topic "$cl_topic" >"$work/raw-read.json" || die "raw read failed"
raw_s=$(jq .seconds "$work/raw-read.json")
raw_rate=$(awk -v n="$claims" -v s="$raw_s" 'BEGIN { printf "%.0f", n / s }')
raw_kv_per_id=$(jq --argjson n "$claims" '.bytes / $n * 100 | round / 100' "$work/raw-read.json")
log "raw read: $(jq -c '{records, bytes, seconds}' "$work/raw-read.json") = $raw_rate claims/s"

# ---------------------------------------------------------------- phase 1: restore on host B
write_yaml host-b 1
log "host B: same group, empty state dir: restores $partitions partitions"
tb=$(now_ms)
start_host host-b; pb=$started
deadline=$((SECONDS + claims / 20000 + 600))
while kill -0 "$pb" 2>/dev/null && (($(restored_lines "$work/host-b/log.txt" | wc -l) < partitions)) && ((SECONDS < deadline)); do
  sleep 0.2
done
curl -s "http://127.0.0.1:$(cat "$work/host-b/metrics.port")/metrics" >"$work/host-b/metrics.txt" 2>/dev/null || true
wait_exit "$pb" 120
[[ $exit_rc -eq 0 ]] || { tail -n 20 "$work/host-b/log.txt" >&2; die "host B exited with $exit_rc"; }
restored_lines "$work/host-b/log.txt" >"$work/host-b/restored.txt"
[[ $(wc -l <"$work/host-b/restored.txt") -eq $partitions ]] ||
  { grep -i dedupe "$work/host-b/log.txt" | tail -n 20 >&2; die "host B logged $(wc -l <"$work/host-b/restored.txt") restored partitions, expected $partitions"; }
read -r r_claims r_secs r_last < <(awk '{ c += $3; s += $4; if ($1 > l) l = $1 } END { printf "%.0f %.3f %.0f\n", c, s, l }' "$work/host-b/restored.txt")
r_rate=$(awk -v c="$r_claims" -v s="$r_secs" 'BEGIN { printf "%.0f", c / s }')
r_wall=$(secs "$tb" "$r_last")
r_first_restoring=$(grep -m1 -E "dedupe: restoring partition" "$work/host-b/log.txt" | cut -d' ' -f1)
r_span=$(secs "$(date -d "$r_first_restoring" +%s%3N)" "$r_last")
r_rate_wall=$(awk -v c="$r_claims" -v s="$r_span" 'BEGIN { printf "%.0f", c / s }')
r_first_assign=$(grep -m1 -E "\] assigned $in-" "$work/host-b/log.txt" | cut -d' ' -f1)
r_join=$(secs "$tb" "$(date -d "$r_first_assign" +%s%3N)")
ratio=$(awk -v a="$r_rate_wall" -v b="$raw_rate" 'BEGIN { printf "%.2f", a / b }')
metric_claims=$(awk '/restored_claims_total/ && !/^#/ { s += $NF } END { print s + 0 }' "$work/host-b/metrics.txt" 2>/dev/null || echo "?")
log "host B restored $r_claims claims: $r_rate_wall claims/s over the $r_span s from the first restore's start to the last one's end (restores run in parallel, one thread each); $r_rate claims/s per partition-second ($r_secs s summed); wall $r_wall s from start (group join $r_join s); metric dedupe_restored_claims_total $metric_claims"
[[ "$r_claims" == "$claims" ]] || log "WARNING: host B restored $r_claims claims, expected $claims"

# ---------------------------------------------------------------- phase 2: failover
fo_line="" fo_detail=()
if [[ $failover -eq 1 ]]; then
  log "failover: producer at $rate records/s (new ids) into $in"
  "$tool" produce --bootstrap "$B" --topic "$in" --count $((rate * 1800)) --keyed --dup-ratio 0 \
    --size "$size" --seed 8 --rate "$rate" --progress-s 0 >"$work/produce2.json" 2>"$work/produce2.err" &
  pp=$!; pids+=("$pp")

  wait_restored() {  # name timeout-s: until every partition the host was assigned is restored
    local name="$1" deadline=$((SECONDS + $2)) a r
    while ((SECONDS < deadline)); do
      a=$(grep -cE "\] assigned $in-" "$work/$name/log.txt" 2>/dev/null || true)
      r=$(restored_lines "$work/$name/log.txt" | wc -l)
      ((a > 0 && r >= a)) && return 0
      kill -0 "$(cat "$work/$name/pid")" 2>/dev/null || { tail -n 20 "$work/$name/log.txt" >&2; die "$name exited"; }
      sleep 0.2
    done
    die "$name did not restore its partitions within $2 s"
  }
  # One failover measurement: fresh hosts A<n> (alone, then) B<n> with standby.replicas sb.
  failover_run() {  # n sb last(0|1)
    local n="$1" sb="$2" last="$3"
    write_yaml "host-a$n" 0 "$sb"
    write_yaml "host-b$n" 0 "$sb"
    ta2=$(now_ms)
    start_host "host-a$n"; pa2=$started
    wait_restored "host-a$n" $((claims / 20000 + 600))
    a2_restored=$(restored_lines "$work/host-a$n/log.txt" | awk '{ c += $3; s += $4 } END { printf "%d claims in %.2f s", c, s }')
    a2_restored="$a2_restored; wall $(secs "$ta2" "$(now_ms)") s from start"
    log "host A$n (alone, fresh dir) restored $a2_restored"
    start_host "host-b$n"; pb2=$started
    wait_restored "host-b$n" $((claims / 20000 + 600))
    b2_restored=$(restored_lines "$work/host-b$n/log.txt" | awk '{ c += $3; s += $4; p = p " " $2 } END { printf "%d claims in %.2f s (%s )", c, s, p }')
    log "host B$n joined and restored $b2_restored"

    # Steady: every partition's committed offset moves, both hosts hold partitions.
    deadline=$((SECONDS + 120))
    while :; do
      c1=$(committed_json | jq -c .offsets); sleep 3; c2=$(committed_json | jq -c .offsets)
      moved=$(jq -n --argjson a "$c1" --argjson b "$c2" '[range(0; ($a | length)) | tostring | select($b[.] > $a[.])] | length')
      oa=$(owned_partitions "$work/host-a$n/log.txt" | wc -l); ob=$(owned_partitions "$work/host-b$n/log.txt" | wc -l)
      [[ $moved -eq $partitions && $oa -gt 0 && $ob -gt 0 ]] && break
      ((SECONDS < deadline)) || die "not steady after 120 s: $moved of $partitions partitions committing, A$n owns $oa, B$n owns $ob"
    done
    if owned_partitions "$work/host-a$n/log.txt" | grep -qx 0; then victim="host-a$n" survivor="host-b$n" vpid=$pa2
    else victim="host-b$n" survivor="host-a$n" vpid=$pb2; fi
    if [[ $sb -gt 0 ]]; then
      # Both hosts keep the other's partitions warm and have caught up before the kill.
      deadline=$((SECONDS + claims / 50000 + 300))
      while :; do
        warm_ok=1
        for h in "host-a$n" "host-b$n"; do
          curl -s "http://127.0.0.1:$(cat "$work/$h/metrics.port")/metrics" >"$work/$h/metrics-standby.txt" 2>/dev/null || true
          awk '/^exactly_dedupe_standby_partitions/ { p = $NF } /^exactly_dedupe_standby_lag/ { if ($NF > m) m = $NF } END { exit !(p > 0 && m < 20) }' \
            "$work/$h/metrics-standby.txt" || warm_ok=0
        done
        [[ $warm_ok -eq 1 ]] && break
        ((SECONDS < deadline)) || die "standby copies not warm within the deadline (see $work/host-*$n/metrics-standby.txt)"
        sleep 1
      done
      log "standby copies warm on both hosts: $(grep -h '^exactly_dedupe_standby_lag' "$work/host-a$n/metrics-standby.txt" "$work/host-b$n/metrics-standby.txt" | awk '{ printf "%s ", $NF }')"
    fi
    vparts=$(owned_partitions "$work/$victim/log.txt" | paste -sd,)
    log "steady; $victim owns partitions $vparts (incl. 0): SIGKILL it"
    fo_rc=0
    disown "$vpid"   # its SIGKILL is the point: no "Killed" job notice
    bench_java failover --bootstrap "$B" --group "$group" --input "$in" --output "$out" \
      --partitions "$vparts" --kill-pid "$vpid" --timeout-s 300 >"$work/failover.json" || fo_rc=$?
    [[ -s "$work/failover.json" ]] || die "failover watcher failed"
    kill_ms=$(jq .kill_epoch_ms "$work/failover.json")
    wait_exit "$vpid" 10
    log "failover: $(jq -c '{committed_advanced_s, output_visible_s}' "$work/failover.json")"
    [[ $fo_rc -eq 0 ]] || log "WARNING: some partitions did not fail over within 300 s: $(cat "$work/failover.json")"

    # The survivor's side: when it was handed the victim's partitions, what it restored.
    slog="$work/$survivor/log.txt"
    s_assign_ms=""
    while read -r ts rest; do
      t=$(date -d "$ts" +%s%3N)
      if ((t >= kill_ms)); then s_assign_ms=$t; break; fi
    done < <(grep -E "\] assigned $in-0 " "$slog" || true)
    restored_lines "$slog" | awk -v k="$kill_ms" '$1 >= k' >"$work/$survivor/restored-after-kill.txt"
    s_restore=$(awk '{ c += $3; s += $4; if ($1 > l) l = $1 } END { printf "%.0f %.2f %.0f", c, s, l }' "$work/$survivor/restored-after-kill.txt")
    read -r s_claims s_secs s_last <<<"$s_restore"
    s_assign_s=$([[ -n "$s_assign_ms" ]] && secs "$kill_ms" "$s_assign_ms" || echo "?")
    s_restored_s=$([[ $s_last -gt 0 ]] && secs "$kill_ms" "$s_last" || echo "?")
    fo_commit=$(jq .committed_advanced_s "$work/failover.json")
    fo_visible=$(jq .output_visible_s "$work/failover.json")
    fo_detail=(
      "standby.replicas $sb, while producing $rate records/s: A$n (alone, fresh dir) restored $a2_restored; B$n (joining, fresh dir) restored $b2_restored"
      "victim $victim (partitions $vparts), survivor $survivor; session.timeout.ms $session_ms, heartbeat.interval.ms $hb_ms, sink transaction.timeout ${txn_ms} ms"
      "survivor assigned $in-0 at +$s_assign_s s; restored the victim's partitions ($s_claims claims, $s_secs s of restore) by +$s_restored_s s"
      "per partition: $(jq -c '[.partitions[] | {p: .partition, committed_s: .committed_advanced_s, visible_s: .output_visible_s}]' "$work/failover.json")"
    )
    for l in "${fo_detail[@]}"; do log "  $l"; done
    fo_rows+=("| **failover, standby.replicas $sb: kill -> committed offsets move** (max over victim partitions) | **$fo_commit s** (survivor restored $s_claims claims of the victim's partitions, $s_secs s) |")
    fo_rows+=("| failover, standby.replicas $sb: kill -> output visible to read_committed (max) | $fo_visible s |")
    if [[ $last -eq 0 ]]; then
      spid=$(cat "$work/$survivor/pid")
      kill -TERM "$spid" 2>/dev/null || true
      wait_exit "$spid" 60
      log "stopped $survivor (rc $exit_rc) before the next failover run"
    fi
  }
  fo_rows=()
  runs=($standbys)
  for i in "${!runs[@]}"; do
    failover_run "$((i + 2))" "${runs[$i]}" "$([[ $i -eq $((${#runs[@]} - 1)) ]] && echo 1 || echo 0)"
  done
  log "stopping the producer; waiting for $survivor to drain the input"
  kill -TERM "$pp" 2>/dev/null || true
  wait_exit "$pp" 60
  total_in=$("$tool" end-offsets --bootstrap "$B" --topic "$in" | jq .total_end)
  deadline=$((SECONDS + 300))
  until [[ "$(committed_json | jq .total)" == "$total_in" ]]; do
    ((SECONDS < deadline)) || { log "WARNING: group did not reach $total_in committed within 300 s"; break; }
    sleep 1
  done
  spid=$(cat "$work/$survivor/pid")
  kill -TERM "$spid" 2>/dev/null || true
  wait_exit "$spid" 60
  [[ $exit_rc -eq 0 ]] || log "WARNING: $survivor exited with $exit_rc after SIGTERM"
  verdict="skipped"
  if [[ $verify -eq 1 ]]; then
    log "verify: every distinct id of $total_in input records exactly once in $out"
    vrc=0
    KAFKA_TOOL_HEAP="${KAFKA_TOOL_HEAP:-6g}" "$tool" verify --bootstrap "$B" --input-topic "$in" \
      --output-topic "$out" --mode dedupe >"$work/verify.json" 2>"$work/verify.err" || vrc=$?
    verdict="$([[ $vrc -eq 0 ]] && echo ok || echo FAILED) $(cat "$work/verify.json")"
    log "verify: $verdict"
  fi
  fo_detail+=("verify (dedupe, whole run): $verdict")
fi

# ---------------------------------------------------------------- summary
{
  echo "claims: $claims distinct ids ($size B records, $partitions partitions, $((claims / partitions)) per partition); commit 1s; source queued.min.messages ${prefetch/#0/default}; load at end $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "| measure | value |"
  echo "|---|---:|"
  printf '| **restore rate, host B** (claims / s from the first restore start to the last restore end; partitions restore in parallel) | **%s claims/s** (%s claims in %s s) |\n' "$r_rate_wall" "$r_claims" "$r_span"
  printf '| restore rate per partition-second (claims / sum of per-partition restore s) | %s claims/s (%s s summed) |\n' "$r_rate" "$r_secs"
  printf '| restore wall, host B start -> last partition restored | %s s (group join %s s) |\n' "$r_wall" "$r_join"
  printf '| raw read of the changelog, Java read_committed, partition after partition | %s claims/s (%s s, %s records) |\n' "$raw_rate" "$raw_s" "$(jq .records "$work/raw-read.json")"
  printf '| **restore / raw read** | **%s** |\n' "$ratio"
  printf '| **changelog bytes per id** (log segment files / ids; target <= 24) | **%s** (%s B in %s offsets; key+value as read: %s B/id) |\n' "$bytes_per_id" "$cl_bytes" "$cl_records" "$raw_kv_per_id"
  if [[ $failover -eq 1 ]]; then
    for r in "${fo_rows[@]}"; do echo "$r"; done
    printf '| detection bound: session.timeout.ms | %s ms |\n' "$session_ms"
  fi
  echo
  for l in "${fo_detail[@]}"; do echo "- $l"; done
  echo "- host A consumed $claims records in $a_s s (incl. 5 s idle); per-partition restore on B: $(awk '{ printf "%s %d claims %.2f s; ", $2, $3, $4 }' "$work/host-b/restored.txt")"
} >"$work/summary.md"
echo
cat "$work/summary.md"
