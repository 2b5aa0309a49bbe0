#!/usr/bin/env bash
# Kafka benchmarks, in one invocation against one real broker (KRaft, Kafka 3.9.1).
#
#   tests/bench/kafka/run_bench.sh [--records 2000000] [--repeats 3]
#       [--cases a,aw,b,c,c0,d,e,m,ct,et] [--size 150] [--dup-ratio 0.006] [--partitions 4]
#       [--commit-interval-ms 1000] [--commit-max-records 1000000]
#       [--prefetch 1000000] [--source-rdkafka 'key: value, ...'] [--streams-threads 1]
#       [--sink-rdkafka 'key: value, ...'] (added to every exactly case's kafka sink)
#       [--streams-caching false]
#       [--workdir DIR] [--keep] [--broker-prop KEY=VALUE ...] [--warm-run CASE]
#       (--keep also keeps every case's topics and stores: a latency case at ~250k
#       records/s leaves ~10 GB on the broker, and a dozen of them once filled this
#       machine's disk and stopped the broker mid-run)
#   tests/bench/kafka/run_bench.sh --latency RATE|half [--seconds 60] [--warmup-s 10]
#       [--producer-warmup-s 5] [--producer native|java] [--reader native|java]
#       [--contender-warmup-s 150] [--cases c,d] [--fractions 0.5]
#       [--commit-interval-ms 100] ...
#   --warm-run CASE (throughput mode): CASE runs once before the measured runs, on the
#       same input, and is left out of the table. In every invocation of 2026-12-05 the
#       first run of c was its slowest (10-20% below the next two, with more broker and
#       exactly CPU; as we read it, its process is the first to take much fresh memory
#       from this VM, and its traffic the broker's first lz4-compressed transactional
#       one); a warm run takes that for every case alike (docs/benchmarks.md, "The prefetch queue's idle second").
#   --writeback-from BYTES (either mode, as root): the kernel starts writing dirty pages
#       back once BYTES are dirty (vm.dirty_background_bytes) for this run, restored at
#       exit. Debian's default is 10% of memory (~2.4 GB here), written back at the 30 s
#       expiry in one burst, and the records of those seconds came 0.3-0.8 s late (the
#       raw copy's too); 67108864 (64 MiB) spreads it (docs/benchmarks.md, "The kernel's
#       writeback burst"). Every run logs the machine's writeback settings.
#   --vm-memory keep|fill|as-is (either mode; keep needs root): keep switches this VM's free
#       page reporting off for the run (page_reporting_order past the largest order,
#       restored at exit) and writes once into the free memory (bench_touch_free_memory)
#       before the broker starts. With the reporting on (as-is, the default), the kernel
#       hands the memory it frees to the host, and every later write into such a page
#       waits while the host backs it again (~1.5 s of CPU per GiB): about a minute into
#       each latency case the broker's page cache ran out of backed pages, its copies
#       into the page cache went from 0.5% to 15% of the machine, and the cases fell
#       behind (docs/benchmarks.md, "The broker's writes into memory the VM gave back").
#       Every run logs the reporting order (11: off).
#       fill (no root, no setting changed) leaves the reporting on and keeps the machine's
#       memory full the way a machine that has run for a while has it: a sparse file in
#       the work dir (no disk blocks) sized to the available memory less 1 GiB is read
#       into the page cache before the broker starts and again before every case (after
#       the case before it had its topics deleted). New page cache and process memory then
#       come from reclaiming those clean pages, which the host already backs, instead of
#       from free memory the VM has given back. The file goes at exit.
#   --broker-gc g1|zgc (default $KAFKA_GC, else g1): the collector of the broker started
#       here. g1 is Kafka's own setting (G1, 20 ms pause target); on two busy vCPUs its
#       young collections still stopped the broker 50-194 ms every few seconds, and
#       every record in flight then came late. zgc (JDK 17's ZGC) collects beside the
#       broker's threads: no pause over 50 ms in any case (docs/benchmarks.md, "The
#       broker's collector"), to take the collector out of a diagnosis. Has no effect
#       on a broker given by EXACTLY_KAFKA_BOOTSTRAP.
#
# --latency half: first measures the maximum in the same run, case c catching up on
# --records records with the same --commit-interval-ms (the input loaded as in the
# throughput mode), then runs every latency case at half of that rate: "half of the
# maximum" from this machine's speed in this hour, not from another day's figure.
# --fractions 0.5,0.4,0.3 (with --latency half): every case at each of those fractions
# of that maximum, in that order, one measured maximum for all: a latency curve, read as
# "p99 held up to what share of the maximum", in one run.
# Latency mode (--latency RATE): each contender (a, b, c, c0, d, e, and the 1 and t forms of b, c and e) is started on an empty input
# topic of its own; then the input is produced at RATE records/s for --seconds while a
# read_committed reader (bench_latency_reader) records, per output record, the time from
# the input record's CreateTime to its receipt. Records of the first --warmup-s are not
# measured (startup, first assignment). Before it writes the input, the producer sends
# --producer-warmup-s of the same traffic to a topic nobody reads (and the Java reader,
# --reader java, first reads a million records of that topic), so that the broker's and
# the JVMs' compilation is done before the measured input starts (on 2 vCPUs it took the
# CPU the broker and the contender needed). Prints p50/p90/p99/p99.9/max per case. The
# input is written by bench_paced_produce (librdkafka; the records kafka-tool produce
# writes, at half its CPU: the Java producer took ~0.85 of a core at 245k/s); --producer
# java uses kafka-tool. The output is read by bench_latency_reader (librdkafka,
# read_committed, the same measure and output as `kafka-tool latency`, which --reader
# java uses: at 245k/s the Java reader took 15.7-18.0 CPU-seconds of a 68 s case with
# its warm-up read, this one 6.8-7.4).
# Case a is the floor: the raw copy with the input's timestamps kept and no transactions,
# so nothing waits for a commit; what it measures is the broker, the producer, the reader
# and the machine at that rate. List another case first (the warm-up runs the first).
# Before the measured runs, the first case runs --contender-warmup-s at the same rate,
# unreported, so that the broker has compiled a contender's paths (0 = skip).
# Each case also logs its CPU seconds per process and its busiest threads as CPU s / s
# runnable but waiting for a core: on 2 vCPUs a tail can be a machine with no core left.
#
# Loads one input topic (UUID-text ids in JSON, keyed by id so duplicates share a
# partition), then each contender reads ALL of it from the beginning into its own
# output topic:
#   a  raw copy: plain librdkafka consume -> produce, idempotent, no transactions (the limit)
#   aw a with the fetch wake-ups of exactly's kafka source (plugins/kafka/fetch_waker.hpp):
#      librdkafka 2.0.2 stops fetching at a full prefetch queue until its broker thread
#      next wakes up, up to 1 s later; c/aw compares c with a copy spared that too
#   b  exactly, at_least_once, kafka -> dedupe -> kafka
#   c  exactly, exactly_once,  kafka -> dedupe -> kafka
#      b and c run the dedupe stage with its defaults, so with the changelog ON
#      (changelog: auto + a kafka sink: each round's claims also go to a compacted
#      changelog topic, in the round's transaction for c), as Kafka Streams (d) keeps one.
#      Each run gets its own changelog topic (changelog.topic: bench-changelog-CASE-REP-TAG).
#   c0 (b0): c (b) with `changelog: off` on the dedupe stage: local RocksDB only, the
#      setup measured before the changelog existed; c0/c is the changelog's cost
#   d  Kafka Streams 3.9.1, exactly_once_v2, RocksDB KeyValueStore dedupe
#   e  exactly, exactly_once,  kafka -> kafka (plain copy)
#   m  Kafka Connect 3.9.1 standalone (ConnectStandalone) running MirrorMaker 2's
#      MirrorSourceConnector, at-least-once, Connect's and MM2's defaults: the peer of e.
#      Source and target cluster are the broker itself; DefaultReplicationPolicy with the
#      source alias bench-out-CASE-REP-TAG names the output bench-out-CASE-REP-TAG.<input>
#      (created beforehand like every other output); tasks.max = partitions; offset syncs,
#      topic config and ACL sync off (no heartbeat/checkpoint connectors run); source
#      offsets in a file in the run's dir. Jars: connect-runtime, connect-mirror,
#      connect-json from Maven Central (connect-mm2/pom.xml).
#   mt m with its clients tuned as the Streams app's are: producer linger.ms 5, batch.size
#      1 MiB, and (idempotent, so still in order) 5 requests in flight instead of
#      Connect's 1; consumer max.poll.records 10000. Not in the default cases.
#   c1, e1, b1 (any exactly case + "1"): the same with `threads: 1` (one task: the
#      transforms on the pipeline thread); the plain cases run at the default, one task
#      per core. c/c1 is what the tasks give.
#   ct, et, c0t (any exactly case + "t"): the same with rdkafka: {queued.min.messages:
#      PREFETCH} plus the --source-rdkafka properties (a sweep of other consumer
#      settings: "t" against the plain case in one run). The kafka source defaults to
#      queued.min.messages 1000000 since 2026-11-23, so with the
#      default PREFETCH "t" equals the plain case; it remains for sweeping other values
#      (docs/benchmarks.md: with librdkafka 2.0.2's own default, 100000 per partition, a
#      partition whose queue filled up is fetched again only ~1 s later). The raw copy
#      (a) always uses PREFETCH: it is the tuned limit; "at" is a with the
#      --source-rdkafka properties as well.
# Time: from process start until the group's committed offsets cover the input (b-e;
# bench_run_until_committed), until every record was delivered (a), until the output
# topic's end offsets reach the input's record count (m: MM2 commits no group offsets;
# bench_run_until_committed --end-offsets; "first commit" is then the first output
# record). Every output is then checked by tests/tools/kafka-tool.sh verify (copy for a,
# e, m; dedupe for b, c, c0, d; b and m, at-least-once, may show duplicates, nothing
# else). Prints a table of medians and the ratios c/d, c/a, e/a, e/m (and ct/d, ct/a,
# et/a; c0/c = changelog off vs on, c0/d, c0/a); everything (logs,
# YAML, JSON, metrics scrapes) stays in the work dir, which is printed. Results and
# analysis: docs/benchmarks.md.
#
# Broker: $EXACTLY_KAFKA_BOOTSTRAP if set, else one started (and stopped) here with
# tests/tools/kafka-broker.sh's settings, each --broker-prop KEY=VALUE appended (the last
# value of a key wins; e.g. log.segment.bytes=1073741824, Kafka's own default, instead
# of the test broker's 256 MiB; or log.flush.interval.ms=1000 with
# log.flush.scheduler.interval.ms=1000, which has the broker fsync each log once a second
# so that its dirty pages never pile up into the kernel's 30 s writeback bursts: with
# --vm-memory fill and --broker-gc zgc, the latency target's setting that changes nothing
# on the machine, docs/benchmarks.md "p99 with nothing on the machine changed"). Its heap
# is KAFKA_HEAP, default 6g: the heap Kafka's documentation gives for production (-Xms6g
# -Xmx6g with G1 and a 20 ms pause target).
# At 1g, G1 shrank the young generation to ~50 MB to chase that target on two busy
# cores and collected every ~0.45 s; at 6g every ~2.7 s, with pauses of the same length
# (docs/benchmarks.md, "The broker's heap"). It removes a deleted topic's files 1 s after
# the deletion (log.segment.delete.delay.ms=1000, Kafka's default 60 s), and each case
# waits until its topics' files are gone: with the default, unlinking a case's ~10 GB fell
# into the next case's seconds 50-56 (docs/benchmarks.md, "The broker's collector").
# BUILD_DIR (default build-bench): a Release build of its own, never build/.
# BENCH_DEDUPE_CONFIG='key: value, ...': added to the dedupe stage's config of every
# case that has one (an experiment's knob, e.g. 'rocksdb.write.buffer.size: 1073741824').
# BENCH_SAMPLE_MS=N (latency mode, exactly cases): exactly's metrics scraped every N ms
# into the case's metrics-timeline.txt, to see what a late second looked like inside it
# (a curl per sample: a diagnosis, not for the figures). The reader also prints, for each
# second over 250 ms, the worst latency of each partition, and every latency case prints
# the machine's steal (CPU the hypervisor gave to other guests) per second of input,
# beside the late seconds, the seconds the kernel had 100 MB or more under writeback,
# and the broker's GC pauses over 50 ms per second (when its
# directory is known: its own broker, or EXACTLY_KAFKA_DIR). Who had the cores in a late second: run
# tests/bench/kafka/thread_sampler.py record FILE SECONDS beside it (per-thread CPU of
# every process of the case, every 100 ms) and its report with the reader's second 0.
# Streams app: built with Maven into ${EXACTLY_CACHE:-~/.cache/exactly}/streams-dedupe.
# Connect + MM2: jars copied with Maven into ${EXACTLY_CACHE:-~/.cache/exactly}/connect-mm2/libs.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
build="${BUILD_DIR:-$root/build-bench}"
cache="${EXACTLY_CACHE:-$HOME/.cache/exactly}"
tool="$root/tests/tools/kafka-tool.sh"
broker_sh="$root/tests/tools/kafka-broker.sh"

records=2000000 repeats=3 cases="a,b,c,c0,d,e,m,ct,et" size=150 dup=0.006 partitions=4
interval_ms=1000 max_records=1000000 streams_threads=1 streams_caching=false prefetch=1000000
source_rdkafka=""
sink_rdkafka=""
work="" keep=0 seed=7 latency_rate=0 latency_s=60 warmup_s=10 producer_warmup_s=5 producer=native reader=native
contender_warmup_s=150 fractions=0.5 writeback_from="" warm_run="" broker_gc="${KAFKA_GC:-g1}"
vm_memory=as-is
# A deleted topic's files go 1 s after the deletion instead of Kafka's 60 s, so that the
# files of a case (~10 GB at 250k records/s) are gone before the next case starts
# (wait_deletions); --broker-prop log.segment.delete.delay.ms=... overrides it.
broker_props=(--prop log.segment.delete.delay.ms=1000)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --records) records="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --cases) cases="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --dup-ratio) dup="$2"; shift 2 ;;
    --partitions) partitions="$2"; shift 2 ;;
    --commit-interval-ms) interval_ms="$2"; shift 2 ;;
    --commit-max-records) max_records="$2"; shift 2 ;;
    --streams-threads) streams_threads="$2"; shift 2 ;;
    --prefetch) prefetch="$2"; shift 2 ;;
    --source-rdkafka) source_rdkafka="$2"; shift 2 ;;
    --sink-rdkafka) sink_rdkafka="$2"; shift 2 ;;
    --streams-caching) streams_caching="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --workdir) work="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --latency) latency_rate="$2"; shift 2 ;;
    --seconds) latency_s="$2"; shift 2 ;;
    --warmup-s) warmup_s="$2"; shift 2 ;;
    --producer-warmup-s) producer_warmup_s="$2"; shift 2 ;;
    --producer) producer="$2"; shift 2 ;;
    --reader) reader="$2"; shift 2 ;;
    --contender-warmup-s) contender_warmup_s="$2"; shift 2 ;;
    --fractions) fractions="$2"; shift 2 ;;
    --broker-prop) broker_props+=(--prop "$2"); shift 2 ;;
    --writeback-from) writeback_from="$2"; shift 2 ;;
    --warm-run) warm_run="$2"; shift 2 ;;
    --broker-gc) broker_gc="$2"; shift 2 ;;
    --vm-memory) vm_memory="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "run_bench.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
IFS=',' read -r -a case_list <<<"$cases"
[[ -z $warm_run || $latency_rate == 0 ]] ||
  { echo "run_bench.sh: --warm-run is for the throughput mode (--latency has --contender-warmup-s)" >&2; exit 2; }
[[ $vm_memory == keep || $vm_memory == fill || $vm_memory == as-is ]] ||
  { echo "run_bench.sh: --vm-memory is keep, fill or as-is, not $vm_memory" >&2; exit 2; }
[[ $broker_gc == g1 || $broker_gc == zgc ]] ||
  { echo "run_bench.sh: --broker-gc is g1 or zgc, not $broker_gc" >&2; exit 2; }
[[ $producer == native || $producer == java ]] ||
  { echo "run_bench.sh: --producer is native or java, not $producer" >&2; exit 2; }
[[ $reader == native || $reader == java ]] ||
  { echo "run_bench.sh: --reader is native or java, not $reader" >&2; exit 2; }
IFS=',' read -r -a fraction_list <<<"$fractions"
pct() { awk -v f="$1" 'BEGIN { printf "%d", f * 100 + 0.5 }'; }  # a fraction's whole percent
for f in "${fraction_list[@]}"; do
  awk -v f="$f" 'BEGIN { exit !(f ~ /^(0?\.[0-9]+|1(\.0*)?)$/ && f > 0) }' ||
    { echo "run_bench.sh: --fractions takes numbers in (0, 1], not '$f'" >&2; exit 2; }
done
# Runs are named by whole percent (40p1): two fractions of one percent would share topics.
[[ $(for f in "${fraction_list[@]}"; do pct "$f"; echo; done | sort | uniq -d) == "" ]] ||
  { echo "run_bench.sh: --fractions $fractions names one whole percent twice" >&2; exit 2; }
[[ $fractions == 0.5 || $latency_rate == half ]] ||
  { echo "run_bench.sh: --fractions needs --latency half (the maximum it is a fraction of)" >&2; exit 2; }

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
# The VM's free page reporting (a kernel without it: "none").
page_reporting=/sys/module/page_reporting/parameters/page_reporting_order
# What of the machine's memory settings moves the figures: writeback and page reporting.
machine_settings() {
  local v=/proc/sys/vm
  echo "writeback from $(cat $v/dirty_background_bytes) bytes / $(cat $v/dirty_background_ratio)% dirty, expiry $(( $(cat $v/dirty_expire_centisecs) * 10 )) ms, free page reporting order $(cat $page_reporting 2>/dev/null || echo none)"
}
[[ -z "$writeback_from" || "$writeback_from" =~ ^[0-9]+$ ]] ||
  { echo "run_bench.sh: --writeback-from takes a byte count, not '$writeback_from'" >&2; exit 2; }

# ---------------------------------------------------------------- build
log "building in $build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target exactly exactly_plugin_kafka exactly_plugin_dedupe \
  bench_raw_copy bench_run_until_committed bench_paced_produce bench_latency_reader \
  bench_touch_free_memory >/dev/null
streams_target="$cache/streams-dedupe"
mkdir -p "$streams_target"
mvn_build() {
  (cd "$streams_target" && mvn -B -q "$@" -f "$here/streams-dedupe/pom.xml" \
    -Dbench.target="$streams_target" compile dependency:build-classpath \
    -Dmdep.outputFile="$streams_target/classpath.txt")
}
log "building the Kafka Streams app into $streams_target"
mvn_build -o >"$streams_target/build.log" 2>&1 || mvn_build >>"$streams_target/build.log" 2>&1 ||
  { tail -n 30 "$streams_target/build.log" >&2; die "maven build of streams-dedupe failed"; }
streams_cp="$streams_target/classes:$(cat "$streams_target/classpath.txt")"
# Kafka Connect + MirrorMaker 2 (case m): nothing to compile, only the runtime jars,
# copied again only when connect-mm2/pom.xml changed.
connect_target="$cache/connect-mm2"
connect_stamp="$(sha256sum "$here/connect-mm2/pom.xml" | cut -c1-16)"
mkdir -p "$connect_target"
if [[ "$(cat "$connect_target/libs.stamp" 2>/dev/null)" != "$connect_stamp" ]]; then
  mvn_copy() {
    rm -rf "$connect_target/libs.tmp"
    (cd "$connect_target" && mvn -B -q "$@" -f "$here/connect-mm2/pom.xml" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$connect_target/libs.tmp")
  }
  log "copying the Kafka Connect + MirrorMaker 2 jars into $connect_target/libs"
  mvn_copy -o >"$connect_target/build.log" 2>&1 || mvn_copy >>"$connect_target/build.log" 2>&1 ||
    { tail -n 30 "$connect_target/build.log" >&2; die "maven copy of the connect-mm2 jars failed"; }
  rm -rf "$connect_target/libs" && mv "$connect_target/libs.tmp" "$connect_target/libs"
  echo "$connect_stamp" >"$connect_target/libs.stamp"
fi
connect_cp="$connect_target/libs/*"
"$tool" build >/dev/null

# ---------------------------------------------------------------- broker
[[ -n "$work" ]] || work="$(mktemp -d /tmp/exactly-kafka-bench.XXXXXX)"
mkdir -p "$work"
broker_dir="" broker_pid=0
# Puts back the writeback threshold --writeback-from replaced (bytes if it was set in
# bytes, else the ratio: setting one clears the other).
restore_writeback() {
  [[ -n "${wb_saved:-}" ]] || return 0
  local bytes ratio
  read -r bytes ratio <<<"$wb_saved"
  if [[ $bytes != 0 ]]; then echo "$bytes" >/proc/sys/vm/dirty_background_bytes || true
  else echo "$ratio" >/proc/sys/vm/dirty_background_ratio || true; fi
  wb_saved=""
}
# Switches the VM's free page reporting back on (--vm-memory keep).
restore_page_reporting() {
  [[ -n "${pr_saved:-}" ]] || return 0
  echo "$pr_saved" >"$page_reporting" || true
  pr_saved=""
}
# --vm-memory fill: the sparse file whose zero pages hold the free memory as clean cache.
fill_file=""
meminfo_mib() { awk -v k="$1:" '$1 == k { printf "%d", $2 / 1024 }' /proc/meminfo; }  # MemFree, ...
fill_memory() {
  [[ -n $fill_file ]] || return 0
  local t0=$SECONDS before
  before=$(meminfo_mib MemFree)
  dd if="$fill_file" of=/dev/null bs=4M status=none || die "--vm-memory fill: reading $fill_file failed"
  log "VM memory: page cache filled, free $before -> $(meminfo_mib MemFree) MiB in $(( SECONDS - t0 )) s"
}
cleanup() {
  local rc=$?
  restore_writeback
  restore_page_reporting
  [[ -n $fill_file ]] && rm -f "$fill_file"
  if [[ -n "$broker_dir" ]]; then
    if [[ $keep -eq 1 ]]; then "$broker_sh" stop --dir "$broker_dir" >/dev/null 2>&1 || true
    else "$broker_sh" stop --dir "$broker_dir" --clean >/dev/null 2>&1 || true; fi
  fi
  log "work dir: $work"
  exit $rc
}
trap cleanup EXIT
wb_saved=""
if [[ -n "$writeback_from" ]]; then
  wb_saved="$(cat /proc/sys/vm/dirty_background_bytes) $(cat /proc/sys/vm/dirty_background_ratio)"
  echo "$writeback_from" 2>/dev/null >/proc/sys/vm/dirty_background_bytes ||
    { wb_saved=""; die "--writeback-from needs root (writing /proc/sys/vm/dirty_background_bytes failed)"; }
fi
pr_saved=""
if [[ $vm_memory == keep ]]; then
  [[ -r $page_reporting ]] ||
    die "--vm-memory keep: this kernel has no free page reporting ($page_reporting): nothing to keep"
  pr_saved="$(cat "$page_reporting")"
  # Past the largest order (10 on x86-64): no free block is ever large enough to report.
  echo 11 2>/dev/null >"$page_reporting" ||
    { pr_saved=""; die "--vm-memory keep needs root (writing $page_reporting failed)"; }
  log "VM memory: free page reporting off for this run (order $pr_saved -> 11); writing once into the free memory"
  touched="$("$build/bench_touch_free_memory")" || die "--vm-memory keep: bench_touch_free_memory failed"
  log "VM memory: $touched"
fi
if [[ $vm_memory == fill ]]; then
  fill_file="$work/vm-fill.bin"
  truncate -s "$(( $(meminfo_mib MemAvailable) - 1024 ))M" "$fill_file" ||
    die "--vm-memory fill: cannot create $fill_file"
  log "VM memory: free page reporting left on; keeping the memory full with $(( $(stat -c %s "$fill_file") >> 20 )) MiB of clean page cache ($fill_file, sparse)"
  fill_memory
fi
if [[ -n "${EXACTLY_KAFKA_BOOTSTRAP:-}" ]]; then
  B="$EXACTLY_KAFKA_BOOTSTRAP"
  # A local broker's CPU is measured too when its listening pid can be seen.
  broker_pid="$(ss -Hltnp "sport = :${B##*:}" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n1 | cut -d= -f2 || true)"
  broker_pid="${broker_pid:-0}"
  log "using the broker at $B (pid: $broker_pid; 0 = not measured)"
else
  broker_dir="$work/kafka"
  B="$(KAFKA_HEAP="${KAFKA_HEAP:-6g}" KAFKA_GC="$broker_gc" "$broker_sh" start --dir "$broker_dir" "${broker_props[@]}" | tail -n1)"
  broker_pid="$(cat "$broker_dir/node-1/pid")"
  log "broker $B (pid $broker_pid, dir $broker_dir, collector $broker_gc)"
fi

# Waits until the broker has removed the files of the topics deleted so far. Kafka
# deletes a topic's files log.segment.delete.delay.ms after the deletion (60 s by default), and
# unlinking a case's ~10 GB on this ext4 (mounted with discard) kept the broker's
# scheduler thread busy for 3-4 s: 50-56 s into the next latency case, where it made the
# late seconds of most cases of 2026-12-05 night, the floor's too (docs/benchmarks.md,
# "The broker's collector"). Waits for every partition dir of the topics named, renamed
# for deletion (-delete) or not yet; the first deletion after the broker's start can take
# up to ~30 s (its delete task's first run). Only a broker started here can be watched.
wait_deletions() {  # topic...
  [[ -n ${broker_dir:-} ]] || return 0
  local t0=$SECONDS t left
  while :; do
    left=""
    for t in "$@"; do if compgen -G "$broker_dir/node-*/data/$t-[0-9]*" >/dev/null; then left=$t; fi; done
    [[ -z $left ]] && break
    (( SECONDS - t0 < 180 )) || { log "  the broker still deletes files after 180 s; going on"; return 0; }
    sleep 1
  done
  (( SECONDS - t0 < 2 )) || log "  waited $(( SECONDS - t0 )) s for the broker to delete the last case's files"
}

cpu_of() {  # utime+stime of a pid in seconds
  awk -v t="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); split($0, f, " "); printf "%.2f", (f[12] + f[13]) / t }' "/proc/$1/stat"
}

thread_table() {  # pid: per thread name (digits folded), CPU s and s waiting for a core
  # Waiting for a core (schedstat's run-queue time) tells a machine with no CPU left from
  # a thread that is slow by itself. The shell twin of proc_stats.hpp's threads_json (the
  # C++ tools' per-thread report). One awk for every thread: a broker has ~100, and a
  # process per file would cost the 2-vCPU box CPU at each case's start and end.
  awk -v hz="$(getconf CLK_TCK)" '
    BEGIN {
      for (i = 1; i < ARGC; i++) {
        t = ARGV[i]; name = ""; st = ""; rq = ""
        if ((getline name < (t "/comm")) <= 0) continue
        if ((getline st < (t "/stat")) <= 0) continue
        getline rq < (t "/schedstat")
        close(t "/comm"); close(t "/stat"); close(t "/schedstat")
        gsub(/[0-9]+/, "N", name)
        sub(/^.*\) /, "", st); split(st, f, " "); split(rq, q, " ")
        c[name] += (f[12] + f[13]) / hz; w[name] += q[2] / 1e9
      }
      for (k in c) printf "%s\t%.2f\t%.2f\n", k, c[k], w[k]
    }' /proc/"$1"/task/* 2>/dev/null
}

threads_since() {  # table-before pid [n]: the n busiest names since the table, "CPU/waiting"
  thread_table "$2" | awk -F'\t' -v before="$1" '
    BEGIN { while ((getline l < before) > 0) { split(l, f, "\t"); c0[f[1]] = f[2]; w0[f[1]] = f[3] } }
    { printf "%.2f\t%s %.1f/%.1f\n", $2 - c0[$1], $1, $2 - c0[$1], $3 - w0[$1] }' |
    sort -rn | head -n "${3:-4}" | cut -f2 | paste -sd, - | sed 's/,/, /g'
}

# The kernel's reclaim counters (/proc/vmstat), to tell per case how much memory was
# taken back from the page cache by kswapd and how much by the allocating threads
# themselves (direct reclaim: a stall in whichever thread wanted the page), and how often
# an allocation waited for compaction. With --vm-memory fill all new memory comes from
# reclaim.
vmstat_snapshot() {
  awk '$1 ~ /^(allocstall_(dma|dma32|normal|movable)|pgsteal_kswapd|pgsteal_direct|compact_stall)$/ { print $1, $2 }' /proc/vmstat
  # kswapd's own CPU: reclaim done beside the case takes cores the four processes want.
  local k
  for k in $(pgrep -x 'kswapd[0-9]*'); do
    awk '{ sub(/^.*\) /, ""); split($0, f, " "); print "kswapd_ticks", f[12] + f[13] }' "/proc/$k/stat" 2>/dev/null
  done
}
reclaim_report() {  # before-file after-file
  awk -v page_kb="$(( $(getconf PAGESIZE) / 1024 ))" -v tck="$(getconf CLK_TCK)" 'NR == FNR { b[$1] += $2; next } { a[$1] += $2 } END {
    for (k in a) d[k] = a[k] - b[k]
    printf "kernel reclaim over the case: %d MB by kswapd (%.2f CPU-s), %d MB by the allocating threads (%d stalls), %d compaction stalls",
      d["pgsteal_kswapd"] * page_kb / 1024, d["kswapd_ticks"] / tck, d["pgsteal_direct"] * page_kb / 1024,
      d["allocstall_dma"] + d["allocstall_dma32"] + d["allocstall_normal"] + d["allocstall_movable"], d["compact_stall"] }' "$1" "$2"
}

jit_cpu_of() {  # utime+stime of a JVM's JIT compiler threads (C1, C2) in seconds
  local t files=()
  for t in /proc/"$1"/task/*; do
    [[ $(cat "$t/comm" 2>/dev/null) == C[12]\ Compiler* ]] && files+=("$t/stat")
  done
  [[ ${#files[@]} -gt 0 ]] || { echo 0; return; }
  awk -v t="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); split($0, f, " "); s += f[12] + f[13] }
    END { printf "%.2f", s / t }' "${files[@]}" 2>/dev/null || echo 0
}

# Every 250 ms, one line "ms-since-the-epoch steal-jiffies all-jiffies dirty-kB
# writeback-kB" of the machine, for a case. Steal is CPU time the hypervisor gave to
# another guest while this VM wanted it: on a shared 2-vCPU machine a late second can be
# one where the cores were not ours. Dirty and writeback: with Debian's defaults the first
# ~1.5 GB of a case's writes go to the disk in one burst 30 s in, and the seconds around
# it were late in every case (docs/benchmarks.md, "The kernel's writeback burst").
machine_sampler() {  # file
  while kill -0 $$ 2>/dev/null; do  # $$: the script, so a case that dies leaves none behind
    awk -v ms="$(date +%s%3N)" '
      FNR == NR && /^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; st = $9 }
      FNR != NR && /^Dirty:/ { d = $2 } FNR != NR && /^Writeback:/ { w = $2 }
      END { print ms, st, t, d, w }' /proc/stat /proc/meminfo
    sleep 0.25
  done >"$1"
}
# The reader's timeline, for the reports beside it: its second 0 (the first record's
# timestamp, ms since the epoch) and its late seconds ("s:ms/ms/.. s:.."), from its stderr.
reader_second0() { grep -m1 -o 'second 0 = [0-9]*' "$1" 2>/dev/null | grep -o '[0-9]*$' || true; }
reader_late() { grep -m1 'seconds over 250 ms' "$1" | sed 's/^[^:]*:[^:]*://' || true; }

steal_report() {  # samples-file reader-stderr: steal per second of input, beside the late seconds
  # Second i of the reader's timeline starts at its "second 0" + i s; a sample's delta
  # counts for the second its sample ends in. A record of second i that was late waited
  # through second i and the next, so a late second is shown with the steal of both.
  local first
  first=$(reader_second0 "$2")
  [[ -n $first && -s $1 ]] || return 0
  awk -v first="$first" -v late="$(reader_late "$2")" '
    NR > 1 && $1 >= first { s = int(($1 - first) / 1000); st[s] += $2 - ps; all[s] += $3 - pt; if (s > n) n = s }
    { ps = $2; pt = $3 }
    END {
      split(late, l, " "); for (k in l) { split(l[k], f, ":"); if (f[1] != "") islate[f[1] + 0] = 1 }
      for (s = 0; s <= n; s++) if (all[s] > 0) {
        p[s] = 100 * st[s] / all[s]; tot_s += st[s]; tot_a += all[s]
        if (p[s] >= 25) hi++
      }
      out = sprintf("machine steal: %.1f%% over the input, %d of %d seconds at 25%% or more", tot_a ? 100 * tot_s / tot_a : 0, hi, n + 1)
      nl = 0; both = 0; line = ""
      for (s = 0; s <= n; s++) if (s in islate) {
        nl++; w = (p[s] > p[s + 1]) ? p[s] : p[s + 1]; if (w >= 25) both++
        line = line sprintf(" %d:%.0f/%.0f", s, p[s], p[s + 1])
      }
      if (nl) out = out sprintf("; seconds over 250 ms with 25%% or more in that second or the next: %d of %d, steal %% by second (that/next):%s", both, nl, line)
      print out
    }' "$1"
}

writeback_report() {  # samples-file reader-stderr: pages under writeback per second, beside the late seconds
  local first
  first=$(reader_second0 "$2")
  [[ -n $first && -s $1 ]] || return 0
  awk -v first="$first" -v late="$(reader_late "$2")" '
    $1 >= first { s = int(($1 - first) / 1000); if ($5 > wb[s]) wb[s] = $5; if ($4 > dirty[s]) dirty[s] = $4; if (s > n) n = s }
    END {
      split(late, l, " "); for (k in l) { split(l[k], f, ":"); if (f[1] != "") islate[f[1] + 0] = 1 }
      peak = 0; bursts = ""
      for (s = 0; s <= n; s++) {
        if (dirty[s] > peak) peak = dirty[s]
        if (wb[s] >= 102400) bursts = bursts sprintf(" %d:%.0f", s, wb[s] / 1024)
      }
      out = sprintf("kernel writeback: dirty pages peaked at %.0f MB; seconds with 100 MB or more under writeback (second:MB):%s", peak / 1024, bursts == "" ? " none" : bursts)
      nl = 0; both = 0
      for (s = 0; s <= n; s++) if (s in islate) { nl++; if (wb[s] >= 102400 || (s > 0 && wb[s - 1] >= 102400)) both++ }
      if (nl) out = out sprintf("; seconds over 250 ms with one in that second or the one before: %d of %d", both, nl)
      print out
    }' "$1"
}

gc_report() {  # reader-stderr: the broker's GC pauses over 50 ms per second of input
  # A pause stops the whole broker (no fetch, produce or commit is answered), so it is
  # one suspect for a late second; docs/benchmarks.md ("The changelog's compaction")
  # found one beside half of them. Needs the broker's directory: its own, or
  # EXACTLY_KAFKA_DIR for one started by tests/tools/kafka-broker.sh (gc.log since 9fa36bf;
  # with ZGC, gc-phases.log for its pauses and gc.log for its allocation stalls).
  local dir="${broker_dir:-${EXACTLY_KAFKA_DIR:-}}" first out="" t ms
  first=$(reader_second0 "$1")
  [[ -n $dir && -n $first ]] || return 0
  ls "$dir"/node-*/logs/gc.log >/dev/null 2>&1 || return 0
  # [2026-12-02T02:48:22.344+0000][11.792s] GC(7) Pause Young (Normal) (...) 88M->44M(1024M) 47.927ms
  # The log spans the broker's life (every earlier case too): only the lines of this
  # case's seconds, compared as local-time text (the JVM's and date's zone are the
  # machine's), go on to date, one process each.
  local from to
  from=$(date -d "@$(( first / 1000 - 1 ))" +%Y-%m-%dT%H:%M:%S)
  to=$(date -d "@$(( first / 1000 + ${latency_s:-90} + 2 ))" +%Y-%m-%dT%H:%M:%S)
  while read -r t ms; do
    t=$(date -d "$t" +%s%3N 2>/dev/null) || continue
    (( t >= first && t - first < ${latency_s:-90} * 1000 + 1000 )) && out+=" $(( (t - first) / 1000 )):${ms%.*}"
  done < <(cat "$dir"/node-*/logs/gc*.log | awk -v from="$from" -v to="$to" '/ Pause |Allocation Stall/ {
      ts = substr($1, 2, 28); sub(/\].*/, "", ts); s = substr(ts, 1, 19)
      if (s < from || s > to) next
      v = $NF; sub(/ms$/, "", v); if (v + 0 > 50) print ts, v }')
  echo "broker GC pauses over 50 ms (second:ms):${out:- none}"
}

# ---------------------------------------------------------------- input
tag="$(date +%s)"
in="bench-in-$tag"
if [[ "$latency_rate" == 0 || "$latency_rate" == half ]]; then
"$tool" create-topic --bootstrap "$B" --topic "$in" --partitions "$partitions" >/dev/null
log "producing $records records ($size bytes, dup ratio $dup, keyed by id) into $in"
t0=$(date +%s.%N)
"$tool" produce --bootstrap "$B" --topic "$in" --count "$records" --partitions "$partitions" \
  --dup-ratio "$dup" --size "$size" --seed "$seed" --keyed >"$work/produce.json"
log "loaded in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s: $(cat "$work/produce.json")"
total_end=$("$tool" end-offsets --bootstrap "$B" --topic "$in" | jq .total_end)
[[ "$total_end" == "$records" ]] || die "input has $total_end records, expected $records"
fi
# The first group and the first transaction on a fresh broker create __consumer_offsets
# and __transaction_state (~1 s each); do it here so no contender pays for it.
"$tool" create-topic --bootstrap "$B" --topic "bench-warmup-$tag" --partitions 1 >/dev/null
"$tool" produce --bootstrap "$B" --topic "bench-warmup-$tag" --count 1 \
  --transactional-id "bench-warmup-$tag" >/dev/null
"$tool" consume-group-offsets --bootstrap "$B" --group "bench-warmup-$tag" \
  --topic "bench-warmup-$tag" >/dev/null
if [[ "$latency_rate" != 0 ]]; then
  # A latency run starts on a fresh broker whose JVM has not compiled its produce, fetch
  # and transaction paths yet: the first seconds at full rate then build a backlog that
  # the whole run spends working off (seen per second in the reader's timeline). Give the
  # broker that traffic first, the same for every contender.
  log "warming up the broker: 2,000,000 records produced in a transaction and read back read_committed"
  "$tool" produce --bootstrap "$B" --topic "bench-warmup-$tag" --count 2000000 --size "$size" \
    --transactional-id "bench-warmup2-$tag" >/dev/null
  "$tool" count --bootstrap "$B" --topic "bench-warmup-$tag" --read-committed >/dev/null
fi

# ---------------------------------------------------------------- contenders
metrics_port=$((19500 + RANDOM % 400))

write_yaml() {  # case delivery with_dedupe dir group out tuned changelog_off changelog_topic
  local c="$1" delivery="$2" dedupe="$3" d="$4" group="$5" out="$6" tuned="$7" nocl="$8" cl="$9" extra=""
  local changelog="changelog.topic: $cl"  # the default changelog: auto, a topic per run
  [[ "$tuned" == 1 ]] && extra=", rdkafka: { queued.min.messages: $prefetch${source_rdkafka:+, $source_rdkafka} }"
  [[ "$nocl" == 1 ]] && changelog="changelog: off"
  {
    echo "metrics: { listen: 127.0.0.1:$metrics_port }"
    echo "pipelines:"
    echo "  - name: bench-$c"
    echo "    delivery: $delivery"
    echo "    commit: { interval: ${interval_ms}ms, max.records: $max_records }"
    [[ -n "${yaml_threads:-}" ]] && echo "    threads: $yaml_threads"
    echo "    source: { plugin: kafka, config: { bootstrap.servers: \"$B\", group.id: $group, topics: [$in]$extra } }"
    if [[ "$dedupe" == 1 ]]; then
      echo "    transforms:"
      echo "      - plugin: dedupe"
      echo "        config: { id: { json: /messageId }, state.dir: \"$d/dedupe\", $changelog${BENCH_DEDUPE_CONFIG:+, $BENCH_DEDUPE_CONFIG} }"
    fi
    echo "    sink: { plugin: kafka, config: { bootstrap.servers: \"$B\", topic: $out, partitioning: input, state.dir: \"$d/sink\"${sink_rdkafka:+, rdkafka: { $sink_rdkafka \}} } }"
  } >"$d/pipeline.yaml"
}

# Case m: a Connect worker (standalone) and one MirrorSourceConnector, source and target
# cluster both the broker under test. Converters pass bytes through (as MM2's own driver
# sets them); the REST listener takes a free loopback port; plugins are found through
# their ServiceLoader manifests (plugin.discovery=service_load: startup without the
# classpath scan; it only makes the peer faster).
write_connect_config() {  # case rep dir tuned
  local c="$1" rep="$2" d="$3" tuned="$4"
  {
    echo "bootstrap.servers=$B"
    echo "key.converter=org.apache.kafka.connect.converters.ByteArrayConverter"
    echo "value.converter=org.apache.kafka.connect.converters.ByteArrayConverter"
    echo "header.converter=org.apache.kafka.connect.converters.ByteArrayConverter"
    echo "offset.storage.file.filename=$d/connect.offsets"
    echo "listeners=http://127.0.0.1:0"
    echo "plugin.discovery=service_load"
    if [[ $tuned == 1 ]]; then
      echo "producer.linger.ms=5"
      echo "producer.batch.size=1048576"
      echo "producer.enable.idempotence=true"
      echo "producer.max.in.flight.requests.per.connection=5"
    fi
  } >"$d/connect-worker.properties"
  {
    echo "name=bench-mm2-$c-$rep-$tag"
    echo "connector.class=org.apache.kafka.connect.mirror.MirrorSourceConnector"
    echo "tasks.max=$partitions"
    echo "source.cluster.alias=bench-out-$c-$rep-$tag"
    echo "target.cluster.alias=bench-target"
    echo "source.cluster.bootstrap.servers=$B"
    echo "target.cluster.bootstrap.servers=$B"
    echo "topics=$in"
    echo "replication.policy.class=org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
    echo "replication.factor=1"
    echo "emit.offset-syncs.enabled=false"
    echo "sync.topic.configs.enabled=false"
    echo "sync.topic.acls.enabled=false"
    if [[ $tuned == 1 ]]; then echo "source.consumer.max.poll.records=10000"; fi
  } >"$d/mm2-source.properties"
  {
    echo "log4j.rootLogger=INFO, stdout"
    echo "log4j.appender.stdout=org.apache.log4j.ConsoleAppender"
    echo "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout"
    echo "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n"
    echo "log4j.logger.org.reflections=ERROR"
  } >"$d/connect-log4j.properties"
}

results="$work/results.tsv"
printf 'case\trep\trecords_per_s\tseconds\tcpu_s\tpeak_rss_mb\tbroker_cpu_s\tfirst_s\tsteady_per_s\tload1\tverify\tverify_json\n' >"$results"

run_case() {  # case rep
  local c="$1" rep="$2"
  local d="$work/$c-$rep" out="bench-out-$c-$rep-$tag" group="bench-$c-$rep-$tag"
  # MM2 names its output <source alias>.<input> (DefaultReplicationPolicy); the alias is
  # bench-out-CASE-REP-TAG, so the output is still a topic of this run alone.
  [[ ${c:0:1} == m ]] && out="bench-out-$c-$rep-$tag.$in"
  local base="${c:0:1}" tuned=0 nocl=0 one=0 wake=0 cl="bench-changelog-$c-$rep-$tag"
  fill_memory
  case "${c:1}" in
    "") ;;
    t) tuned=1 ;;
    w) wake=1 ;;
    1) one=1 ;;
    0) nocl=1 ;;
    0t) nocl=1 tuned=1 ;;
    *) die "unknown case $c" ;;
  esac
  [[ $nocl == 0 || $base == b || $base == c ]] || die "case $c: only b and c have a dedupe changelog to turn off"
  [[ $wake == 0 || $base == a ]] || die "case $c: w (fetch wake-ups) is for the raw copy; exactly's source has them"
  mkdir -p "$d"
  "$tool" create-topic --bootstrap "$B" --topic "$out" --partitions "$partitions" >/dev/null
  sleep 2  # let the broker settle after the previous verify / topic deletion
  local load1
  load1=$(cut -d' ' -f1 /proc/loadavg)
  log "run $rep: case $c -> $out (load $load1)"
  local json rc=0
  case "$base" in
    a)
      local bc0=0
      [[ $broker_pid -gt 0 ]] && bc0=$(cpu_of "$broker_pid")
      # at: the raw copy with the --source-rdkafka properties too ("k: v, k2: v2").
      local props=() kv
      if [[ $tuned == 1 && -n "$source_rdkafka" ]]; then
        IFS=',' read -ra kvs <<<"$source_rdkafka"
        for kv in "${kvs[@]}"; do
          kv="${kv// /}"
          props+=(--consumer-prop "${kv%%:*}=${kv#*:}")
        done
      fi
      json=$("$build/bench_raw_copy" --bootstrap "$B" --input "$in" --output "$out" \
               --count "$records" --group "$group" --wake-fetch "$wake" \
               --consumer-prop queued.min.messages="$prefetch" "${props[@]}" 2>"$d/log.txt") || rc=$?
      local bc=-1
      [[ $broker_pid -gt 0 ]] && bc=$(awk -v a="$bc0" -v b="$(cpu_of "$broker_pid")" 'BEGIN { printf "%.2f", b - a }')
      json=$(jq -c --argjson bc "$bc" '. + {broker_cpu_s: $bc, first_commit_s: .first_record_s,
        steady_records_per_s: (.records / (.seconds - .first_record_s) | floor)}' <<<"$json")
      ;;
    b|c|e)
      local delivery=exactly_once dedupe=1
      [[ $base == b ]] && delivery=at_least_once
      [[ $base == e ]] && dedupe=0
      yaml_threads=""
      [[ $one == 1 ]] && yaml_threads=1
      write_yaml "$c" "$delivery" "$dedupe" "$d" "$group" "$out" "$tuned" "$nocl" "$cl"
      json=$("$build/bench_run_until_committed" --bootstrap "$B" --group "$group" --topic "$in" \
               --target "$records" --broker-pid "$broker_pid" --log "$d/log.txt" \
               --on-done "curl -s http://127.0.0.1:$metrics_port/metrics > '$d/metrics.txt'" \
               -- "$build/exactly" run --no-watch "$d/pipeline.yaml") || rc=$?
      ;;
    d)
      [[ $tuned == 0 ]] || die "case $c: the Streams app has no librdkafka consumer to tune"
      json=$("$build/bench_run_until_committed" --bootstrap "$B" --group "$group" --topic "$in" \
               --target "$records" --broker-pid "$broker_pid" --log "$d/log.txt" \
               -- java -Xmx1g -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$streams_cp" \
                  exactly.bench.StreamsDedupe --bootstrap "$B" --input "$in" --output "$out" \
                  --application-id "$group" --state-dir "$d/state" \
                  --commit-interval-ms "$interval_ms" --threads "$streams_threads" \
                  --caching "$streams_caching") || rc=$?
      ;;
    m)
      write_connect_config "$c" "$rep" "$d" "$tuned"
      json=$("$build/bench_run_until_committed" --end-offsets --bootstrap "$B" --topic "$out" \
               --target "$records" --broker-pid "$broker_pid" --log "$d/log.txt" \
               -- java -Xmx1g -Dlog4j.configuration="file:$d/connect-log4j.properties" \
                  -cp "$connect_cp" org.apache.kafka.connect.cli.ConnectStandalone \
                  "$d/connect-worker.properties" "$d/mm2-source.properties") || rc=$?
      ;;
    *) die "unknown case $c" ;;
  esac
  [[ $rc -eq 0 ]] || { echo "$json" >"$d/result.json"; tail -n 20 "$d/log.txt" >&2; die "case $c run $rep failed: $json"; }
  if [[ ( $base == b || $base == c ) && $nocl == 0 ]]; then
    # The changelog this run wrote: offsets (records + transaction markers) and, with a
    # broker of our own, bytes of log segments.
    local cl_end cl_bytes=-1
    cl_end=$("$tool" end-offsets --bootstrap "$B" --topic "$cl" 2>/dev/null | jq .total_end) || cl_end=-1
    if [[ -n "$broker_dir" ]]; then
      cl_bytes=$(cat "$broker_dir"/node-*/data/"$cl"-*/*.log 2>/dev/null | wc -c) || true
    fi
    json=$(jq -c --argjson e "${cl_end:--1}" --argjson by "$cl_bytes" \
      '. + {changelog_end_offsets: $e, changelog_bytes: $by}' <<<"$json")
  fi
  echo "$json" >"$d/result.json"

  local mode=copy vrc=0 v
  [[ $base == b || $base == c || $base == d ]] && mode=dedupe
  v=$("$tool" verify --bootstrap "$B" --input-topic "$in" --output-topic "$out" --mode "$mode" \
        2>"$d/verify.err") || vrc=$?
  echo "$v" >"$d/verify.json"
  local verdict=ok
  if [[ $vrc -ne 0 ]]; then
    # at_least_once (b, m) may write duplicates (nothing else; a repeat sent again may
    # also come out of order); every other case must pass strictly.
    if [[ ( $base == b || $base == m ) && $vrc -eq 1 ]] &&
       jq -e '.missing == 0 and .extra == 0 and .wrong_payload == 0' <<<"$v" >/dev/null; then
      verdict="dups=$(jq .duplicated <<<"$v")"
    else
      verdict=FAILED
      log "verify FAILED for case $c run $rep: $v"
      head -n 20 "$d/verify.err" >&2
    fi
  fi
  log "  $(jq -c '{records_per_s, seconds, cpu_s, peak_rss_kb, broker_cpu_s, changelog_end_offsets, changelog_bytes} | with_entries(select(.value != null))' <<<"$json") verify=$verdict"
  jq -r --arg c "$c" --arg r "$rep" --arg v "$verdict" --arg vj "$v" --arg l "$load1" \
    '[$c, $r, .records_per_s, .seconds, .cpu_s, ((.peak_rss_kb / 1024) | floor), .broker_cpu_s,
      .first_commit_s, .steady_records_per_s, $l, $v, $vj] | @tsv' <<<"$json" >>"$results"
  if [[ $keep -eq 0 ]]; then
    "$tool" delete-topic --bootstrap "$B" --topic "$out" >/dev/null 2>&1 || true
    [[ $base == d ]] && "$tool" delete-topic --bootstrap "$B" --topic "$group-dedupe-ids-changelog" >/dev/null 2>&1 || true
    [[ ( $base == b || $base == c ) && $nocl == 0 ]] &&
      { "$tool" delete-topic --bootstrap "$B" --topic "$cl" >/dev/null 2>&1 || true; }
    rm -rf "$d/dedupe" "$d/state"
    wait_deletions "$out" "$group-dedupe-ids-changelog" "$cl"
  fi
}

# awk rules shared by the summaries below: how a pipeline with several tasks ran them
# (tasks() is "" for one task).
TASK_COUNTS_AWK='
    /^exactly_task_batches_fanned_out_total/ { tf = $2 } /^exactly_task_batches_on_caller_total/ { tc = $2 }
    /^exactly_task_speedup/ { ts = $2 }
    function tasks() { return (tf + tc) ? sprintf("; tasks: %d batches fanned out, %d on the pipeline thread, last speedup %.2f", tf, tc, ts) : "" }
'

# "cpu by stage CASE (CPU-s per 1M records): <stage> <call> <value>; ... all <sum>" from
# exactly's stage_cpu_seconds_total in a metrics scrape, per record it read
# (records_in_total); nothing when the scrape has none.
stage_cpu() {
  awk -v c="$1" '
    /^exactly_records_in_total[{ ]/ { n += $NF }
    /^exactly_stage_cpu_seconds_total\{/ {
      match($0, /stage="[^"]*"/); st = substr($0, RSTART + 7, RLENGTH - 8)
      match($0, /call="[^"]*"/); cl = substr($0, RSTART + 6, RLENGTH - 7)
      v[st " " cl] += $NF; total += $NF
    }
    END {
      if (!total || !n) exit
      line = sprintf("cpu by stage %s (CPU-s per 1M records):", c)
      for (k in v) if (v[k] * 1e6 / n >= 0.005) line = line sprintf(" %s %.3f;", k, v[k] * 1e6 / n)
      printf "%s all %.3f\n", line, total * 1e6 / n
    }' "$2"
}

# Batches and commits of a latency run from exactly's histograms: counts, means, and how
# many took longer than 100 ms, 250 ms and 1 s.
latency_histograms() {
  awk '
    function over(h, le,   k) { k = h SUBSEP le; return ((h SUBSEP "+Inf") in b) ? b[h SUBSEP "+Inf"] - ((k in b) ? b[k] : 0) : 0 }
    /^exactly_(batch|commit)_latency_seconds_bucket/ {
      h = ($0 ~ /batch/) ? "batch" : "commit"
      match($0, /le="[^"]+"/); le = substr($0, RSTART + 4, RLENGTH - 5); b[h SUBSEP le] = $2 }
    /^exactly_record_age_at_(poll|commit)_seconds_bucket/ {
      h = ($0 ~ /at_poll/) ? "poll_age" : "commit_age"
      match($0, /le="[^"]+"/); le = substr($0, RSTART + 4, RLENGTH - 5); b[h SUBSEP le] = $2 }
    /^exactly_record_age_at_poll_seconds_count/ { pc = $2 } /^exactly_record_age_at_commit_seconds_count/ { ac = $2 }
    /^exactly_batch_latency_seconds_sum/ { bs = $2 } /^exactly_batch_latency_seconds_count/ { bc = $2 }
    /^exactly_commit_latency_seconds_sum/ { cs = $2 } /^exactly_commit_latency_seconds_count/ { cc = $2 }
'"$TASK_COUNTS_AWK"'
    END { printf "exactly: %d batches (mean %.1f ms; > 100 ms: %d, > 250 ms: %d, > 1 s: %d), %d commits (mean %.1f ms; > 100 ms: %d, > 250 ms: %d, > 1 s: %d)",
            bc, bc ? 1000 * bs / bc : 0, over("batch", "0.1"), over("batch", "0.25"), over("batch", "1"),
            cc, cc ? 1000 * cs / cc : 0, over("commit", "0.1"), over("commit", "0.25"), over("commit", "1")
          # Where the age came from: input already old when polled, or rounds old at commit.
          if (pc > 0) printf "; oldest record per batch at poll > 100 ms: %d, > 250 ms: %d of %d; per round at commit > 250 ms: %d, > 500 ms: %d of %d",
            over("poll_age", "0.1"), over("poll_age", "0.25"), pc, over("commit_age", "0.25"), over("commit_age", "0.5"), ac
          printf "%s", tasks() }' "$1"
}

# Latency mode: a contender on an empty topic, then input at a fixed rate while a
# read_committed reader measures each output record's age.
run_latency_case() {  # case rep seconds (rep "w": the broker's warm-up run, not reported)
  local c="$1" rep="$2" latency_s="$3"
  local d="$work/lat-$c-$rep" out="bench-lout-$c-$rep-$tag" group="bench-l$c-$rep-$tag"
  local cl="bench-changelog-l$c-$rep-$tag" count=$(( latency_rate * latency_s ))
  in="bench-lin-$c-$rep-$tag"
  mkdir -p "$d"
  fill_memory
  "$tool" create-topic --bootstrap "$B" --topic "$in" --partitions "$partitions" >/dev/null
  "$tool" create-topic --bootstrap "$B" --topic "$out" --partitions "$partitions" >/dev/null
  local pid
  case "$c" in
    b|c|e|b1|c1|e1|bt|ct|et|b1t|c1t|e1t|c0)
      local delivery=exactly_once dedupe=1 tuned=0 nocl=0
      [[ $c == b* ]] && delivery=at_least_once
      [[ $c == e* ]] && dedupe=0
      [[ $c == *t ]] && tuned=1
      [[ $c == c0 ]] && nocl=1
      yaml_threads=""
      [[ $c == ?1* ]] && yaml_threads=1
      write_yaml "$c" "$delivery" "$dedupe" "$d" "$group" "$out" "$tuned" "$nocl" "$cl"
      "$build/exactly" run --no-watch "$d/pipeline.yaml" >"$d/log.txt" 2>&1 &
      pid=$! ;;
    a)
      # The floor: a plain librdkafka copy, no transactions (each record visible once
      # acked), timestamps kept; it exits once it has copied the whole input.
      "$build/bench_raw_copy" --bootstrap "$B" --input "$in" --output "$out" --count "$count" \
        --group "$group" --keep-timestamps 1 --timeout-s $(( latency_s + 900 )) >"$d/log.txt" 2>&1 &
      pid=$! ;;
    d)
      java -Xmx1g -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$streams_cp" \
        exactly.bench.StreamsDedupe --bootstrap "$B" --input "$in" --output "$out" \
        --application-id "$group" --state-dir "$d/state" \
        --commit-interval-ms "$interval_ms" --threads "$streams_threads" \
        --caching "$streams_caching" >"$d/log.txt" 2>&1 &
      pid=$! ;;
    *) die "latency mode: case $c is not one of a, b, c, c0, d, e (+ 1 for threads: 1, + t for --source-rdkafka)" ;;
  esac
  # Every process's CPU seconds over the case (bash's `time` for the reader and the
  # producer, /proc for the broker and the contender): on 2 vCPUs they share, the sum
  # says whether the machine itself was full.
  local TIMEFORMAT='%U %S' case_t0 broker_cpu0=0 broker_jit0=0
  case_t0=$(date +%s.%N)
  [[ $broker_pid != 0 ]] && broker_cpu0=$(cpu_of "$broker_pid") && broker_jit0=$(jit_cpu_of "$broker_pid")
  [[ $broker_pid != 0 ]] && thread_table "$broker_pid" >"$d/broker-threads.tsv"
  local read=("$build/bench_latency_reader")
  [[ $reader == java ]] && read=("$tool" latency --warmup-topic "bench-warmup-$tag" --warmup-records 1000000)
  { time "${read[@]}" --bootstrap "$B" --topic "$out" --warmup-s "$warmup_s" \
    --expect-file "$d/expect" --idle-timeout-s 60 >"$d/latency.json" 2>"$d/latency.err"; } 2>"$d/reader.cpu" &
  local reader_pid=$!
  log "latency: case $c -> $out, $latency_rate records/s for $latency_s s (load $(cut -d' ' -f1 /proc/loadavg))"
  # BENCH_SAMPLE_MS (see the header): each scrape after a "T <ms since the epoch>" line.
  local sampler_pid=""
  if [[ -n ${BENCH_SAMPLE_MS:-} && $c != a && $c != d ]]; then
    ( while kill -0 "$pid" 2>/dev/null; do
        echo "T $(date +%s%3N)"
        curl -s "http://127.0.0.1:$metrics_port/metrics" 2>/dev/null |
          grep -E '^exactly_(records_in_total|commits_total|kafka_source_consumer_lag|record_age_at_poll_seconds_bucket|record_age_at_commit_seconds_bucket|commit_latency_seconds_(count|sum)|batch_latency_seconds_(count|sum)|dedupe_(fold|merge)_cpu_seconds_total|dedupe_merges_total)' || true
        sleep "$(awk -v ms="$BENCH_SAMPLE_MS" 'BEGIN { printf "%.3f", ms / 1000 }')"
      done >"$d/metrics-timeline.txt" ) &
    sampler_pid=$!
  fi
  vmstat_snapshot >"$d/vmstat.before"
  machine_sampler "$d/machine.txt" &
  local machine_pid=$!
  local produce=("$tool" produce --partitions "$partitions" --keyed)
  [[ $producer == native ]] && produce=("$build/bench_paced_produce")
  { time "${produce[@]}" --bootstrap "$B" --topic "$in" --count "$count" \
    --dup-ratio "$dup" --size "$size" --seed "$seed" --rate "$latency_rate" \
    --linger-ms 5 --warmup-topic "bench-warmup-$tag" --warmup-s "$producer_warmup_s" \
    >"$d/produce.json" 2>"$d/produce.err"; } 2>"$d/produce.cpu" ||
    die "case $c: producing failed: $(tail -n 3 "$d/produce.err")"
  local rate_seen
  rate_seen=$(jq '.produced / .seconds | floor' "$d/produce.json")
  # The reader expects every record of a copy and every distinct id of a dedupe.
  if [[ $c == e* || $c == a ]]; then jq .produced "$d/produce.json" >"$d/expect.tmp"
  else jq .distinct_ids "$d/produce.json" >"$d/expect.tmp"; fi
  mv "$d/expect.tmp" "$d/expect"
  local rrc=0
  wait "$reader_pid" || rrc=$?
  [[ -n $sampler_pid ]] && { kill "$sampler_pid" 2>/dev/null; wait "$sampler_pid" 2>/dev/null || true; }
  kill "$machine_pid" 2>/dev/null; wait "$machine_pid" 2>/dev/null || true
  vmstat_snapshot >"$d/vmstat.after"
  # exactly's own view of the run (b, c, e): how its batches and commits were spread, to
  # tell a slow commit from a slow batch when the tail is long.
  if [[ $c != d && $c != a ]]; then
    curl -s "http://127.0.0.1:$metrics_port/metrics" >"$d/metrics.txt" 2>/dev/null || true
    [[ -s "$d/metrics.txt" ]] && log "  $(latency_histograms "$d/metrics.txt")"
    [[ -s "$d/metrics.txt" ]] && log "  $(stage_cpu "$c" "$d/metrics.txt")"
  fi
  local contender_cpu broker_cpu=- broker_jit=- case_s sum_cpu
  # The raw copy ends by itself once its last records are acked: up to 30 s for it, so
  # that its own report of its CPU is there (a process that has exited has no /proc).
  if [[ $c == a ]]; then
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  fi
  contender_cpu=$(cpu_of "$pid" 2>/dev/null || echo 0)
  if [[ $c == a ]] && jq -e .cpu_s <(tail -n1 "$d/log.txt") >/dev/null 2>&1; then
    contender_cpu=$(tail -n1 "$d/log.txt" | jq -r .cpu_s)
  fi
  [[ $broker_pid != 0 ]] && broker_cpu=$(awk -v a="$broker_cpu0" -v b="$(cpu_of "$broker_pid")" 'BEGIN { printf "%.1f", b - a }')
  [[ $broker_pid != 0 ]] && broker_jit=$(awk -v a="$broker_jit0" -v b="$(jit_cpu_of "$broker_pid")" 'BEGIN { printf "%.1f", b - a }')
  case_s=$(awk -v a="$case_t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  local contender_threads broker_threads=-
  contender_threads=$(threads_since /dev/null "$pid" 5)
  [[ $broker_pid != 0 ]] && broker_threads=$(threads_since "$d/broker-threads.tsv" "$broker_pid" 3)
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  sum_cpu() { awk '{ printf "%.1f", $1 + $2 }' "$1" 2>/dev/null || echo -; }
  log "  CPU seconds over the case's $case_s s (2 vCPUs: at most $(awk -v s="$case_s" 'BEGIN { printf "%.0f", 2 * s }')):" \
    "broker $broker_cpu (its JIT compilers $broker_jit), contender $contender_cpu, producer $(sum_cpu "$d/produce.cpu")," \
    "reader $(sum_cpu "$d/reader.cpu") (producer and reader with their warm-ups)"
  log "  busiest threads, CPU s/s waiting for a core: contender (since it started) $contender_threads; broker (over the case) $broker_threads"
  local verdict=ok
  [[ $rrc -eq 0 ]] || verdict="incomplete($(jq -c '{received, expected}' "$d/latency.json" 2>/dev/null))"
  log "  $(cat "$d/latency.json") produced at $rate_seen/s verify=$verdict"
  [[ $rrc -eq 0 ]] || log "  the reader failed: $(tail -n 2 "$d/latency.err")"
  # Where the tail came from: a backlog built early and worked off, or spikes later on.
  # (Either may be missing: a reader that failed says why in latency.err, shown below.)
  timeline=$(grep -m1 'worst ms per second' "$d/latency.err" 2>/dev/null | sed 's/^[a-z_-]*\( latency\)\?: //' || true)
  [[ -n $timeline ]] && log "  $timeline"
  timeline=$(grep -m1 'seconds over 250 ms' "$d/latency.err" 2>/dev/null | sed 's/^[a-z_-]*: //' || true)
  [[ -n $timeline ]] && log "  $timeline"
  timeline=$(steal_report "$d/machine.txt" "$d/latency.err")
  [[ -n $timeline ]] && log "  $timeline"
  timeline=$(gc_report "$d/latency.err")
  [[ -n $timeline ]] && log "  $timeline"
  timeline=$(writeback_report "$d/machine.txt" "$d/latency.err")
  [[ -n $timeline ]] && log "  $timeline"
  log "  $(reclaim_report "$d/vmstat.before" "$d/vmstat.after")"
  # The input side of it: how long the producer waited for its acks, per second.
  timeline=$(grep -m1 'worst send-to-ack' "$d/produce.err" 2>/dev/null | sed 's/^[a-z_-]* produce: //' || true)
  [[ -n $timeline ]] && log "  input $timeline"
  [[ $rep != w ]] && jq -r --arg c "$c" --arg r "$rep" --arg v "$verdict" --argjson ps "$rate_seen" \
    '[$c, $r, $ps, .measured, .p50_ms, .p90_ms, .p99_ms, .p999_ms, .max_ms, $v] | @tsv' \
    "$d/latency.json" >>"$work/latency.tsv"
  if [[ $keep -eq 0 ]]; then
    local t
    for t in "$in" "$out" "$cl" "$group-dedupe-ids-changelog"; do
      "$tool" delete-topic --bootstrap "$B" --topic "$t" >/dev/null 2>&1 || true
    done
    rm -rf "$d/dedupe" "$d/state"
    wait_deletions "$in" "$out" "$cl" "$group-dedupe-ids-changelog"
  fi
}

if [[ "$latency_rate" != 0 ]]; then
  log "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(machine_settings)"
  max_note="" rates=("$latency_rate") labels=("")
  if [[ "$latency_rate" == half ]]; then
    log "the maximum: case c catching up on $records records with ${interval_ms} ms commits"
    run_case c max
    max_rate=$(awk -F'\t' '$1 == "c" && $2 == "max" { printf "%d", $3 }' "$results")
    [[ "${max_rate:-0}" -gt 0 ]] || die "no rate from the catch-up run (see $results)"
    rates=() labels=()
    for f in "${fraction_list[@]}"; do
      rates+=("$(awk -v m="$max_rate" -v f="$f" 'BEGIN { printf "%d", m * f }')")
      # One fraction keeps the old run labels (1, 2, ...); several prefix the share.
      [[ ${#fraction_list[@]} -gt 1 ]] && labels+=("$(pct "$f")p") || labels+=("")
    done
    latency_rate=${rates[0]}
    share="fractions $fractions"
    [[ $fractions == 0.5 ]] && share=half
    max_note=" ($share of the maximum measured first in this run: case c caught up on $records records at $max_rate records/s)"
    log "maximum $max_rate records/s: the latency cases run at ${rates[*]} records/s"
    [[ $keep -eq 1 ]] || { "$tool" delete-topic --bootstrap "$B" --topic "$in" >/dev/null 2>&1 || true; wait_deletions "$in"; }
  fi
  # The broker's warm-up above is one producer's transaction; a contender's traffic (a
  # group, a transaction every round, offsets in each, a changelog, read_committed fetches
  # of short transactions) runs other broker paths, which its JVM compiled during the
  # first measured run's first seconds: they took the CPU the contender needed, and the
  # backlog that built then set that run's p99. So the first case runs once first, at the
  # same rate, unreported (a broker in service has long compiled these paths). For long
  # enough: sampled every 10 s at 245k records/s, the broker's C2 compiler thread used
  # 12-44% of a core through the first ~100 s of this traffic and 2-6% from ~150 s on;
  # each case prints its compilers' CPU seconds.
  if [[ $contender_warmup_s -gt 0 ]]; then
    log "warming up the broker with case ${case_list[0]} for $contender_warmup_s s (not reported)"
    run_latency_case "${case_list[0]}" w "$contender_warmup_s"
  fi
  for i in "${!rates[@]}"; do
    latency_rate=${rates[$i]}
    for rep in $(seq 1 "$repeats"); do
      # A case listed twice (--cases c,a,c) runs on topics, a group and a dir of its own
      # each time (run 1, then 1.2): a kept run's topics are not deleted, and a reader on a
      # reused name would read the earlier run's output.
      declare -A seen=()
      for c in "${case_list[@]}"; do
        seen[$c]=$(( ${seen[$c]:-0} + 1 ))
        label="${labels[$i]}$rep"
        [[ ${seen[$c]} -gt 1 ]] && label="$label.${seen[$c]}"
        run_latency_case "$c" "$label" "$latency_s"
      done
      unset seen
    done
  done
  {
    runs_note=""
    [[ ${#rates[@]} -gt 1 ]] &&
      runs_note=" (run ${labels[0]}1 = the first run at $(pct "${fraction_list[0]}")% of the maximum)"
    echo "latency at ${rates[*]} records/s$max_note for $latency_s s ($warmup_s s warm-up not measured), $size B, dup ratio $dup, $partitions partitions, commit ${interval_ms} ms, Streams threads $streams_threads$runs_note"
    echo
    echo "| case | run | produced/s | measured | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | complete |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }' "$work/latency.tsv"
  } >"$work/latency.md"
  cat "$work/latency.md"
  exit 0
fi

log "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), load $(cut -d' ' -f1-3 /proc/loadavg), $(machine_settings)"
if [[ -n $warm_run ]]; then
  log "warm run: case $warm_run once, not reported"
  run_case "$warm_run" w
  awk -F'\t' '$2 != "w"' "$results" >"$results.tmp" && mv "$results.tmp" "$results"
fi
for rep in $(seq 1 "$repeats"); do
  for c in "${case_list[@]}"; do run_case "$c" "$rep"; done
done

# ---------------------------------------------------------------- summary
summary="$work/summary.md"
{
  echo "records: $records x $size B, dup ratio $dup, $partitions partitions, commit ${interval_ms} ms (exactly: max.records $max_records), Streams threads $streams_threads, repeats: $repeats; medians; load = 1-min load average at the start of the run"
  echo
  echo "| case | what | records/s | wall s | CPU s | peak RSS MiB | broker CPU s | first commit s | steady records/s | load | verify |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
  for c in "${case_list[@]}"; do
    case "${c:0:1}" in
      a) what="raw librdkafka copy (no txn)" ;;
      b) what="exactly at_least_once + dedupe (changelog on)" ;;
      c) what="exactly exactly_once + dedupe (changelog on)" ;;
      d) what="Kafka Streams EOS v2 + RocksDB dedupe" ;;
      e) what="exactly exactly_once copy" ;;
      m) what="Kafka Connect standalone + MM2 MirrorSourceConnector (at-least-once)" ;;
    esac
    [[ ${c:1} == 0* ]] && what="${what/changelog on/changelog off}"
    if [[ $c == mt ]]; then what="$what, clients tuned as d's"
    elif [[ ${c:1} == *t ]]; then what="$what, source prefetch $prefetch${source_rdkafka:+, $source_rdkafka}"; fi
    [[ ${c:1} == 1 ]] && what="$what, threads: 1"
    [[ ${c:1} == w ]] && what="$what, fetch wake-ups as exactly's source"
    awk -F'\t' -v c="$c" -v what="$what" '
      function median(arr, n,   i, j, t) {
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (arr[j] < arr[i]) { t = arr[i]; arr[i] = arr[j]; arr[j] = t }
        return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
      }
      NR > 1 && $1 == c { n++; r[n] = $3; s[n] = $4; u[n] = $5; m[n] = $6; b[n] = $7; f[n] = $8; y[n] = $9; l[n] = $10; v = v (v == "" ? "" : ",") $11 }
      END { if (n) printf "| %s | %s | %.0f | %.1f | %.1f | %.0f | %.1f | %.1f | %.0f | %.1f | %s |\n", c, what, median(r, n), median(s, n), median(u, n), median(m, n), median(b, n), median(f, n), median(y, n), median(l, n), v }' "$results"
  done
  echo
  awk -F'\t' '
    function median(arr, n,   i, j, t) {
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (arr[j] < arr[i]) { t = arr[i]; arr[i] = arr[j]; arr[j] = t }
      return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
    }
    NR > 1 { k = $1; cnt[k]++; val[k, cnt[k]] = $3 }
    END {
      for (k in cnt) { n = cnt[k]; for (i = 1; i <= n; i++) tmp[i] = val[k, i]; med[k] = median(tmp, n) }
      if (("c" in med) && ("d" in med)) printf "c/d = %.2f (target >= 3)\n", med["c"] / med["d"]
      if (("c" in med) && ("a" in med)) printf "c/a = %.2f (target >= 0.6)\n", med["c"] / med["a"]
      if (("c" in med) && ("aw" in med)) printf "c/aw = %.2f (the raw copy with the fetch wake-ups of the exactly source)\n", med["c"] / med["aw"]
      if (("aw" in med) && ("a" in med)) printf "aw/a = %.2f\n", med["aw"] / med["a"]
      if (("e" in med) && ("a" in med)) printf "e/a = %.2f\n", med["e"] / med["a"]
      if (("e" in med) && ("m" in med)) printf "e/m = %.2f (target >= 3)\n", med["e"] / med["m"]
      if (("m" in med) && ("a" in med)) printf "m/a = %.2f\n", med["m"] / med["a"]
      if (("e" in med) && ("mt" in med)) printf "e/mt = %.2f (m with tuned clients)\n", med["e"] / med["mt"]
      if (("b" in med) && ("a" in med)) printf "b/a = %.2f\n", med["b"] / med["a"]
      if (("ct" in med) && ("d" in med)) printf "ct/d = %.2f (target >= 3)\n", med["ct"] / med["d"]
      if (("ct" in med) && ("a" in med)) printf "ct/a = %.2f (target >= 0.6)\n", med["ct"] / med["a"]
      if (("ct" in med) && ("at" in med)) printf "ct/at = %.2f (both with the --source-rdkafka properties)\n", med["ct"] / med["at"]
      if (("at" in med) && ("a" in med)) printf "at/a = %.2f\n", med["at"] / med["a"]
      if (("et" in med) && ("a" in med)) printf "et/a = %.2f\n", med["et"] / med["a"]
      if (("c0" in med) && ("c" in med)) printf "c0/c = %.2f (changelog off vs on)\n", med["c0"] / med["c"]
      if (("c1" in med) && ("c" in med)) printf "c/c1 = %.2f (default threads vs threads: 1)\n", med["c"] / med["c1"]
      if (("c1" in med) && ("a" in med)) printf "c1/a = %.2f\n", med["c1"] / med["a"]
      if (("c0" in med) && ("d" in med)) printf "c0/d = %.2f\n", med["c0"] / med["d"]
      if (("c0" in med) && ("a" in med)) printf "c0/a = %.2f\n", med["c0"] / med["a"]
    }' "$results"
} >"$summary"
cat "$summary"

# Where exactly's time goes: means of the host's histograms from each case's last run.
for c in "${case_list[@]}"; do
  m="$work/$c-$repeats/metrics.txt"
  [[ -s "$m" ]] || continue
  awk -v c="$c" '
    /^exactly_batch_latency_seconds_sum/ { bs = $2 } /^exactly_batch_latency_seconds_count/ { bc = $2 }
    /^exactly_commit_latency_seconds_sum/ { cs = $2 } /^exactly_commit_latency_seconds_count/ { cc = $2 }
    /^exactly_commits_total/ { commits = $2 }
'"$TASK_COUNTS_AWK"'
    END { if (bc && cc) printf "case %s: %d batches, mean %.2f ms (%.1f s in all); %d commits, mean %.1f ms (%.1f s in all)%s\n", c, bc, 1000 * bs / bc, bs, cc, 1000 * cs / cc, cs, tasks() }' "$m"
done
# CPU-seconds per million records of each stage's calls, from each case's last run
# (librdkafka's own threads are in the threads lines).
for c in "${case_list[@]}"; do
  m="$work/$c-$repeats/metrics.txt"
  [[ -s "$m" ]] && stage_cpu "$c" "$m"
done
# Which threads burned the CPU (and waited for a core), from each case's last run.
for c in "${case_list[@]}"; do
  r="$work/$c-$repeats/result.json"
  [[ -s "$r" ]] && echo "threads $c: $(jq -c '.threads | to_entries | .[:4] | map({(.key): .value}) | add' "$r")"
done
if grep -q FAILED "$results"; then die "some outputs failed verification (see $results)"; fi
