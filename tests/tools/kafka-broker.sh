#!/usr/bin/env bash
# A real Apache Kafka 3.9.x broker (KRaft, no ZooKeeper) for tests and benchmarks,
# run from Maven Central jars cached outside the source tree. Loopback only.
#
#   kafka-broker.sh fetch
#   kafka-broker.sh start [--nodes 1|3] [--dir DIR] [--port P] [--heap 768m] [--timeout-s 90]
#                         [--prop KEY=VALUE]...   (extra broker properties, fresh dirs only)
#                         [--sasl-ssl]            (a SASL_SSL listener instead of PLAINTEXT,
#                                                  fresh dirs only; see kafka-sasl-ssl.sh)
#   kafka-broker.sh stop [--dir DIR] [--clean]
#   kafka-broker.sh status [--dir DIR]
#   kafka-broker.sh kill-node N [--dir DIR]       (SIGKILL)
#   kafka-broker.sh stop-node N [--dir DIR]       (SIGTERM: a clean, controlled shutdown)
#   kafka-broker.sh start-node N [--dir DIR] [--no-wait] [--timeout-s 90]
#   kafka-broker.sh bootstrap [--dir DIR]
#   kafka-broker.sh stop-all        # every broker this script started (cleanup after a crash)
#
# start prints the bootstrap address as the LAST line of stdout and writes it to
# DIR/bootstrap. Without --dir, start uses a fresh mktemp dir under /tmp; the other
# commands use $EXACTLY_KAFKA_DIR, else the dir of the last start (recorded in the cache).
# start on a DIR of a stopped cluster restarts it with its saved ports and data.
# Each node logs to DIR/node-N/logs: server.log, and gc.log (every collection and its
# pause: a paused broker answers nothing, which a latency benchmark sees).
# Environment: EXACTLY_CACHE (cache root, default ~/.cache/exactly), KAFKA_HEAP,
# KAFKA_GC (g1, the default: Kafka's own G1 settings; zgc: ZGC, which collects beside the
# broker's threads, for latency diagnosis; its pauses go to gc-phases.log beside gc.log).
set -euo pipefail
# shellcheck source=kafka-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/kafka-common.sh"
# shellcheck source=kafka-sasl-ssl.sh
source "$(dirname "${BASH_SOURCE[0]}")/kafka-sasl-ssl.sh"

PORT_LOCK=/tmp/exactly-kafka-ports.lock
# The dirs of the clusters started here, one a line: a cluster's ports stay its own while
# its dir exists, running or not (see port_reserved).
PORT_REGISTRY=/tmp/exactly-kafka-clusters
LAST_DIR_FILE="$KT_CACHE_ROOT/kafka-last-dir"

die() { echo "kafka-broker: error: $*" >&2; exit 1; }
log() { echo "kafka-broker: $*" >&2; }
# Checked once here, before any command formats or starts a node.
GC="${KAFKA_GC:-g1}"
[[ $GC == g1 || $GC == zgc ]] || die "KAFKA_GC is g1 or zgc, not '$GC'"
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" >&2; exit 2; }

# ------------------------------------------------------------------ helpers
port_busy() { [[ -n "$(ss -Htln "( sport = :$1 )" 2>/dev/null)" ]]; }

# True if port $1 is one of a cluster's saved ports whose dir still exists. A node stopped
# on purpose (the broker-failure tests stop one for a minute) starts again on its saved
# ports; a cluster started meanwhile by a test running beside it found them free and took
# them, and the stopped cluster's clients then talked to the wrong cluster (a CI run of
# BrokerOutage, 2026-12-04). Fresh starts without --port skip these ports.
port_reserved() {
    local p="$1" d base nodes
    [[ -f "$PORT_REGISTRY" ]] || return 1
    while IFS= read -r d; do
        [[ -n "$d" && -f "$d/cluster.env" ]] || continue
        base="$(sed -n 's/^BROKER_BASE=//p' "$d/cluster.env")"
        nodes="$(sed -n 's/^NODES=//p' "$d/cluster.env")"
        [[ "$base" =~ ^[0-9]+$ && "$nodes" =~ ^[0-9]+$ ]] || continue
        (( p >= base && p < base + 2 * nodes )) && return 0
    done <"$PORT_REGISTRY"
    return 1
}

register_cluster() {   # under the port lock: adds $DIR, drops dirs that are gone
    local d keep=()
    if [[ -f "$PORT_REGISTRY" ]]; then
        while IFS= read -r d; do
            [[ -n "$d" && "$d" != "$DIR" && -f "$d/cluster.env" ]] && keep+=("$d")
        done <"$PORT_REGISTRY"
    fi
    printf '%s\n' "${keep[@]}" "$DIR" | sed '/^$/d' >"$PORT_REGISTRY.tmp" && mv "$PORT_REGISTRY.tmp" "$PORT_REGISTRY"
}

pid_alive_for() {   # pid dir: true if pid runs a kafka.Kafka of this dir
    local pid="$1" d="$2"
    [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "kafka.Kafka $d/" 
}

pid_gone() {        # true once the process has exited (a zombie counts as gone)
    [[ -r "/proc/$1/stat" ]] || return 0
    local st; st="$(sed -E 's/^[0-9]+ \(.*\) ([A-Z]).*/\1/' "/proc/$1/stat" 2>/dev/null)" || return 0
    [[ -z "$st" || "$st" == Z || "$st" == X ]]
}

node_pid() { cat "$DIR/node-$1/pid" 2>/dev/null || true; }
node_running() { pid_alive_for "$(node_pid "$1")" "$DIR"; }

resolve_dir() {     # for commands other than start
    if [[ -z "${DIR:-}" ]]; then
        DIR="${EXACTLY_KAFKA_DIR:-}"
        [[ -z "$DIR" && -f "$LAST_DIR_FILE" ]] && DIR="$(cat "$LAST_DIR_FILE")"
    fi
    [[ -n "$DIR" ]] || die "no --dir given, EXACTLY_KAFKA_DIR unset and no previous start recorded"
    DIR="$(cd "$DIR" 2>/dev/null && pwd)" || die "no such dir: $DIR"
    [[ -f "$DIR/cluster.env" ]] || die "$DIR is not a kafka-broker.sh dir (no cluster.env)"
    # shellcheck disable=SC1091
    source "$DIR/cluster.env"
}

tail_logs() {
    local n
    for ((n = 1; n <= NODES; n++)); do
        echo "----- node $n: tail of $DIR/node-$n/logs/server.log -----" >&2
        tail -n 25 "$DIR/node-$n/logs/server.log" >&2 2>/dev/null || true
        if [[ -s "$DIR/node-$n/stdout.log" ]]; then
            echo "----- node $n: tail of $DIR/node-$n/stdout.log -----" >&2
            tail -n 15 "$DIR/node-$n/stdout.log" >&2 || true
        fi
    done
}

# ------------------------------------------------------------------ config
EXTRA_PROPS=()   # start --prop KEY=VALUE
write_node_config() {   # node number
    local n="$1" nd="$DIR/node-$1" voters="" i rf minisr
    for ((i = 1; i <= NODES; i++)); do
        voters="$voters${voters:+,}$i@127.0.0.1:$(( CTRL_BASE + i - 1 ))"
    done
    if (( NODES == 1 )); then rf=1; minisr=1; else rf=3; minisr=2; fi
    mkdir -p "$nd/data" "$nd/logs"
    local listeners
    if [[ "${SECURITY:-plaintext}" == sasl_ssl ]]; then
        listeners="$(ks_node_props "$n")"
    else
        listeners="listeners=PLAINTEXT://127.0.0.1:$(( BROKER_BASE + n - 1 )),CONTROLLER://127.0.0.1:$(( CTRL_BASE + n - 1 ))
advertised.listeners=PLAINTEXT://127.0.0.1:$(( BROKER_BASE + n - 1 ))
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    fi
    cat >"$nd/server.properties" <<EOF
# generated by tests/tools/kafka-broker.sh
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$voters
controller.listener.names=CONTROLLER
$listeners
log.dirs=$nd/data
num.partitions=4
default.replication.factor=$rf
min.insync.replicas=$minisr
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$minisr
transaction.state.log.num.partitions=10
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
delete.topic.enable=true
num.network.threads=3
num.io.threads=4
num.recovery.threads.per.data.dir=1
log.cleaner.dedupe.buffer.size=16777216
log.cleaner.threads=1
log.retention.hours=168
log.segment.bytes=268435456
socket.send.buffer.bytes=1048576
socket.receive.buffer.bytes=1048576
EOF
    local prop
    for prop in "${EXTRA_PROPS[@]}"; do echo "$prop" >>"$nd/server.properties"; done
    cat >"$nd/log4j.properties" <<EOF
# generated by tests/tools/kafka-broker.sh: everything goes to logs/server.log
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.File=$nd/logs/server.log
log4j.appender.file.MaxFileSize=50MB
log4j.appender.file.MaxBackupIndex=2
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.network.RequestChannel\$=WARN
log4j.logger.kafka.log.LogCleaner=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.authorizer.logger=WARN
log4j.logger.org.apache.kafka.storage.internals.log=WARN
log4j.logger.kafka.log=WARN
EOF
}

format_node() {
    local nd="$DIR/node-$1"
    printf '%s\n' 'log4j.rootLogger=WARN, console' 'log4j.appender.console=org.apache.log4j.ConsoleAppender' \
        'log4j.appender.console.layout=org.apache.log4j.PatternLayout' \
        'log4j.appender.console.layout.ConversionPattern=[%d] %p %m (%c)%n' >"$nd/log4j-format.properties"
    local extra=()
    [[ "${SECURITY:-plaintext}" == sasl_ssl ]] && mapfile -t extra < <(ks_format_args)
    java -Xmx256m -Dlog4j.configuration="file:$nd/log4j-format.properties" -cp "$KT_LIBS/*" \
        kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$nd/server.properties" --ignore-formatted \
        "${extra[@]}" >"$nd/format.log" 2>&1 || { cat "$nd/format.log" >&2; die "formatting node $1 failed"; }
}

launch_node() {         # node number; runs with fd of the port lock closed
    local n="$1" nd="$DIR/node-$1" pid
    : >"$nd/stdout.log"
    # setsid: the broker outlives the calling shell and its process group.
    local gc=(-XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35)
    [[ $GC == zgc ]] && gc=(-XX:+UseZGC -Xlog:gc+phases:file="$nd/logs/gc-phases.log":uptime,time:filecount=2,filesize=10m)
    setsid java -Xms"${HEAP_MIN}" -Xmx"${HEAP}" "${gc[@]}" -XX:+ExplicitGCInvokesConcurrent \
        -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
        -Xlog:gc:file="$nd/logs/gc.log":uptime,time:filecount=2,filesize=10m \
        -Dlog4j.configuration="file:$nd/log4j.properties" -Dkafka.logs.dir="$nd/logs" \
        -cp "$KT_LIBS/*" kafka.Kafka "$nd/server.properties" \
        </dev/null >>"$nd/stdout.log" 2>&1 {PORT_FD}>&- &
    pid=$!
    echo "$pid" >"$nd/pid"
    echo "$pid"
}

# Waits until node n listens on its ports (or dies); returns non-zero if it died.
wait_listening() {
    local n="$1" deadline=$(( SECONDS + ${2:-60} ))
    local bp=$(( BROKER_BASE + n - 1 )) cp=$(( CTRL_BASE + n - 1 ))
    local pid; pid="$(node_pid "$n")"
    while (( SECONDS < deadline )); do
        # Not node_running: until the launched shell has exec'd java its cmdline is still
        # this script's, and under load that window is long enough to call a healthy
        # start dead. A pid that is gone is dead; one that is alive is starting.
        pid_gone "$pid" && return 1
        if [[ -n "$(ss -Htln "( sport = :$bp or sport = :$cp )" 2>/dev/null | sed -n 2p)" ]]; then return 0; fi
        sleep 0.1
    done
    return 0   # slow but alive: let the metadata wait decide
}

write_pids() {
    local n out=""
    for ((n = 1; n <= NODES; n++)); do
        node_running "$n" && out="$out$(node_pid "$n")"$'\n'
    done
    printf '%s' "$out" >"$DIR/pids"
}

bootstrap_addr() {
    local n out=""
    for ((n = 1; n <= NODES; n++)); do out="$out${out:+,}127.0.0.1:$(( BROKER_BASE + n - 1 ))"; done
    echo "$out"
}

# Waits for a metadata answer from the cluster; on failure prints log tails and dies.
wait_ready() {          # bootstrap min-brokers timeout
    local pids="" n
    for ((n = 1; n <= NODES; n++)); do node_running "$n" && pids="$pids${pids:+,}$(node_pid "$n")"; done
    local cc=()
    [[ "${SECURITY:-plaintext}" == sasl_ssl ]] && cc=(--command-config "$(ks_dir)/client.properties")
    if ! "$KT_TOOLS_DIR/kafka-tool.sh" wait --bootstrap "$1" --min-brokers "$2" --timeout-s "$3" \
            ${pids:+--watch-pid "$pids"} "${cc[@]}" >"$DIR/wait.log" 2>&1; then
        cat "$DIR/wait.log" >&2
        tail_logs
        die "Kafka at $1 did not become ready within $3 s (dir: $DIR)"
    fi
}

# ------------------------------------------------------------------ commands
cmd_fetch() {
    kt_fetch_libs
    kt_build_tool >/dev/null
}

cmd_start() {
    local port="" nodes="" heap="${KAFKA_HEAP:-768m}" timeout=90 fresh=0 n security=""
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --nodes) nodes="$2"; shift 2 ;;
            --dir) DIR="$2"; shift 2 ;;
            --port) port="$2"; shift 2 ;;
            --heap) heap="$2"; shift 2 ;;
            --timeout-s) timeout="$2"; shift 2 ;;
            --prop) [[ "$2" == *=* ]] || die "--prop wants KEY=VALUE, got '$2'"
                    EXTRA_PROPS+=("$2"); shift 2 ;;
            --sasl-ssl) security=sasl_ssl; shift ;;
            *) die "start: unknown option $1" ;;
        esac
    done
    [[ -z "$nodes" || "$nodes" == 1 || "$nodes" == 3 ]] || die "--nodes must be 1 or 3"
    [[ -z "$port" || "$port" =~ ^[0-9]+$ ]] || die "--port must be a number"
    kt_need ss "apt-get install iproute2"
    kt_need setsid "apt-get install util-linux"
    cmd_fetch

    if [[ -z "${DIR:-}" ]]; then
        DIR="$(mktemp -d /tmp/exactly-kafka.XXXXXX)" || die "mktemp failed"
    fi
    mkdir -p "$DIR" && DIR="$(cd "$DIR" && pwd)" || die "cannot create $DIR"

    if [[ -f "$DIR/cluster.env" ]]; then
        # shellcheck disable=SC1091
        source "$DIR/cluster.env"
        [[ -z "$nodes" || "$nodes" == "$NODES" ]] || die "$DIR holds a $NODES-node cluster (asked for $nodes)"
        [[ -z "$port" || "$port" == "$BROKER_BASE" ]] || die "$DIR holds a cluster on port $BROKER_BASE (asked for $port)"
        [[ -z "$security" || "$security" == "${SECURITY:-plaintext}" ]] || die "$DIR holds a ${SECURITY:-plaintext} cluster (asked for $security)"
        local all=1 any=0
        for ((n = 1; n <= NODES; n++)); do if node_running "$n"; then any=1; else all=0; fi; done
        if (( all )); then
            log "already running in $DIR"
            echo "$DIR" >"$LAST_DIR_FILE"
            bootstrap_addr
            return 0
        fi
    else
        fresh=1
        NODES="${nodes:-1}"
        SECURITY="${security:-plaintext}"
    fi
    HEAP="$heap"; HEAP_MIN="$heap"
    [[ "$heap" =~ ^([0-9]+)m$ ]] && (( ${BASH_REMATCH[1]} > 512 )) && HEAP_MIN=512m

    # Choose ports (brokers P..P+N-1, controllers P+N..P+2N-1) under a machine-wide lock
    # held until the brokers listen, so that concurrent starts do not collide.
    exec {PORT_FD}>"$PORT_LOCK"
    flock -w 180 "$PORT_FD" || die "timed out waiting for $PORT_LOCK"
    local need=$(( 2 * NODES )) base tries p busy
    if (( fresh )); then
        if [[ -n "$port" ]]; then
            base="$port"
            for ((p = base; p < base + need; p++)); do port_busy "$p" && die "port $p is in use (--port $port needs $base..$((base + need - 1)))"; done
        else
            base=19092
            for ((tries = 0; ; tries++)); do
                (( tries < 200 )) || die "no free loopback port range found"
                busy=0
                for ((p = base; p < base + need; p++)); do
                    { port_busy "$p" || port_reserved "$p"; } && { busy=1; break; }
                done
                (( busy )) || break
                base=$(( base + 10 ))
            done
        fi
        BROKER_BASE="$base"; CTRL_BASE=$(( base + NODES ))
        CLUSTER_ID="$(java -cp "$KT_LIBS/*" kafka.tools.StorageTool random-uuid 2>/dev/null | head -n1 | tr -d '[:space:]')"
        [[ "$CLUSTER_ID" =~ ^[A-Za-z0-9_-]{22}$ ]] || die "StorageTool random-uuid failed"
        cat >"$DIR/cluster.env" <<EOF
NODES=$NODES
BROKER_BASE=$BROKER_BASE
CTRL_BASE=$CTRL_BASE
CLUSTER_ID=$CLUSTER_ID
SECURITY=$SECURITY
EOF
        register_cluster
        [[ "$SECURITY" == sasl_ssl ]] && ks_prepare
        for ((n = 1; n <= NODES; n++)); do write_node_config "$n"; done
        # Format in parallel (each is a short JVM).
        local fpids=()
        for ((n = 1; n <= NODES; n++)); do ( format_node "$n" ) & fpids+=($!); done
        for p in "${fpids[@]}"; do wait "$p" || die "formatting failed (dir: $DIR)"; done
    else
        for ((n = 1; n <= NODES; n++)); do
            node_running "$n" && continue
            for p in $(( BROKER_BASE + n - 1 )) $(( CTRL_BASE + n - 1 )); do
                port_busy "$p" && die "port $p of node $n (saved in $DIR/cluster.env) is in use"
            done
        done
    fi

    for ((n = 1; n <= NODES; n++)); do
        node_running "$n" || launch_node "$n" >/dev/null
    done
    for ((n = 1; n <= NODES; n++)); do
        if ! wait_listening "$n" 60; then
            exec {PORT_FD}>&-
            tail_logs
            die "broker node $n exited during startup (dir: $DIR)"
        fi
    done
    exec {PORT_FD}>&-
    write_pids

    local bs; bs="$(bootstrap_addr)"
    wait_ready "$bs" "$NODES" "$timeout"
    echo "$bs" >"$DIR/bootstrap"
    echo "$DIR" >"$LAST_DIR_FILE"
    log "Kafka $(kt_kafka_version) ($NODES node(s)) ready, dir $DIR, pids $(tr '\n' ' ' <"$DIR/pids")"
    echo "$bs"
}

stop_pids() {           # timeout pid...
    local t="$1"; shift
    local pid deadline=$(( SECONDS + t )) left
    for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
    while :; do
        left=()
        for pid in "$@"; do pid_gone "$pid" || left+=("$pid"); done
        (( ${#left[@]} == 0 )) && return 0
        if (( SECONDS >= deadline )); then
            log "SIGKILL after ${t}s: ${left[*]}"
            for pid in "${left[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
            sleep 0.2
            return 0
        fi
        sleep 0.1
    done
}

cmd_stop() {
    local clean=0
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --dir) DIR="$2"; shift 2 ;;
            --clean) clean=1; shift ;;
            *) die "stop: unknown option $1" ;;
        esac
    done
    if [[ -z "${DIR:-}" ]]; then
        DIR="${EXACTLY_KAFKA_DIR:-}"
        [[ -z "$DIR" && -f "$LAST_DIR_FILE" ]] && DIR="$(cat "$LAST_DIR_FILE")"
    fi
    if [[ -z "${DIR:-}" || ! -f "$DIR/cluster.env" ]]; then
        log "nothing to stop${DIR:+ in $DIR}"; return 0
    fi
    resolve_dir
    local n pids=()
    for ((n = 1; n <= NODES; n++)); do
        node_running "$n" && pids+=("$(node_pid "$n")")
    done
    if (( ${#pids[@]} )); then
        stop_pids 30 "${pids[@]}"
        log "stopped ${#pids[@]} node(s) in $DIR"
    else
        log "not running ($DIR)"
    fi
    for ((n = 1; n <= NODES; n++)); do rm -f "$DIR/node-$n/pid"; done
    : >"$DIR/pids"
    if (( clean )); then
        case "$DIR" in /|/tmp|"$HOME") die "refusing to delete $DIR" ;; esac
        rm -rf "$DIR"
        [[ -f "$LAST_DIR_FILE" && "$(cat "$LAST_DIR_FILE")" == "$DIR" ]] && rm -f "$LAST_DIR_FILE"
        log "removed $DIR"
    fi
    return 0
}

cmd_status() {
    while [[ $# -gt 0 ]]; do
        case "$1" in --dir) DIR="$2"; shift 2 ;; *) die "status: unknown option $1" ;; esac
    done
    if [[ -z "${DIR:-}" ]]; then
        DIR="${EXACTLY_KAFKA_DIR:-}"
        [[ -z "$DIR" && -f "$LAST_DIR_FILE" ]] && DIR="$(cat "$LAST_DIR_FILE")"
    fi
    if [[ -z "${DIR:-}" || ! -f "$DIR/cluster.env" ]]; then
        echo "stopped${DIR:+ $DIR} (no cluster there)"; return 3
    fi
    resolve_dir
    local n up=0
    for ((n = 1; n <= NODES; n++)); do
        if node_running "$n"; then
            up=$(( up + 1 ))
            echo "node $n: running pid $(node_pid "$n") 127.0.0.1:$(( BROKER_BASE + n - 1 ))"
        else
            echo "node $n: stopped 127.0.0.1:$(( BROKER_BASE + n - 1 ))"
        fi
    done
    if (( up == NODES )); then echo "running $(bootstrap_addr) $DIR"; return 0
    elif (( up == 0 )); then echo "stopped $DIR"; return 3
    else echo "partial ($up/$NODES) $(bootstrap_addr) $DIR"; return 1; fi
}

node_arg() {
    [[ "${1:-}" =~ ^[0-9]+$ ]] || die "$2: node number required"
    (( $1 >= 1 && $1 <= NODES )) || die "$2: node $1 out of range 1..$NODES"
}

# signal_node CMD SIGNAL GRACE_S N [--dir DIR]: sends SIGNAL to node N and waits until it is
# gone; past GRACE_S seconds it is SIGKILLed (a controlled shutdown is bounded too).
signal_node() {
    local cmd="$1" sig="$2" grace="$3" n="${4:-}"; shift 4 || shift $#
    while [[ $# -gt 0 ]]; do
        case "$1" in --dir) DIR="$2"; shift 2 ;; *) die "$cmd: unknown option $1" ;; esac
    done
    resolve_dir
    node_arg "$n" "$cmd"
    if node_running "$n"; then
        local pid; pid="$(node_pid "$n")"
        kill "-$sig" "$pid" 2>/dev/null || true
        local deadline=$(( SECONDS + grace ))
        while ! pid_gone "$pid" && (( SECONDS < deadline )); do sleep 0.05; done
        if ! pid_gone "$pid"; then
            log "node $n did not exit within $grace s of SIG$sig: SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            while ! pid_gone "$pid"; do sleep 0.05; done
        fi
        log "$cmd: node $n (pid $pid) is gone"
    else
        log "node $n was not running"
    fi
    rm -f "$DIR/node-$n/pid"
    write_pids
}

cmd_kill_node() { signal_node kill-node KILL 30 "$@"; }
cmd_stop_node() { signal_node stop-node TERM 60 "$@"; }

cmd_start_node() {
    local n="${1:-}" wait=1 timeout=90; shift || true
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --dir) DIR="$2"; shift 2 ;;
            --no-wait) wait=0; shift ;;
            --timeout-s) timeout="$2"; shift 2 ;;
            *) die "start-node: unknown option $1" ;;
        esac
    done
    resolve_dir
    node_arg "$n" start-node
    HEAP="${KAFKA_HEAP:-768m}"; HEAP_MIN=512m
    [[ "$HEAP" =~ ^([0-9]+)m$ ]] && (( ${BASH_REMATCH[1]} <= 512 )) && HEAP_MIN="$HEAP"
    if node_running "$n"; then log "node $n already running"; return 0; fi
    local p
    for p in $(( BROKER_BASE + n - 1 )) $(( CTRL_BASE + n - 1 )); do
        port_busy "$p" && die "port $p of node $n is in use"
    done
    PORT_FD=0   # nothing to close: launch_node closes {PORT_FD}
    exec {PORT_FD}</dev/null
    launch_node "$n" >/dev/null
    exec {PORT_FD}>&-
    wait_listening "$n" 60 || { tail_logs; die "node $n exited during startup"; }
    write_pids
    if (( wait )); then
        # Ask the restarted node itself: its first metadata answer needs it serving.
        wait_ready "127.0.0.1:$(( BROKER_BASE + n - 1 ))" "$NODES" "$timeout"
    fi
    log "node $n started (pid $(node_pid "$n"))"
}

# Stops every broker that this script started (any dir), e.g. after a crashed test run.
# Only processes of this user whose server.properties was generated by this script.
cmd_stop_all() {
    local pid args props pids=()
    for pid in $(pgrep -u "$(id -u)" -f 'kafka\.Kafka .*/node-[0-9]+/server\.properties' || true); do
        args="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || continue
        props="$(sed -nE 's/.*kafka\.Kafka (\S+\/node-[0-9]+\/server\.properties).*/\1/p' <<<"$args")"
        [[ -n "$props" ]] && head -n1 "$props" 2>/dev/null | grep -q '^# generated by tests/tools/kafka-broker.sh' || continue
        pids+=("$pid")
    done
    if (( ${#pids[@]} )); then stop_pids 30 "${pids[@]}"; log "stopped ${#pids[@]} broker process(es): ${pids[*]}"
    else log "no brokers started by kafka-broker.sh are running"; fi
}

cmd_bootstrap() {
    while [[ $# -gt 0 ]]; do
        case "$1" in --dir) DIR="$2"; shift 2 ;; *) die "bootstrap: unknown option $1" ;; esac
    done
    resolve_dir
    bootstrap_addr
}

[[ $# -ge 1 ]] || usage
cmd="$1"; shift
case "$cmd" in
    fetch) cmd_fetch "$@" ;;
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    status) cmd_status "$@" ;;
    kill-node) cmd_kill_node "$@" ;;
    stop-node) cmd_stop_node "$@" ;;
    start-node) cmd_start_node "$@" ;;
    bootstrap) cmd_bootstrap "$@" ;;
    stop-all) cmd_stop_all "$@" ;;
    -h|--help|help) usage ;;
    *) echo "kafka-broker: unknown command: $cmd" >&2; usage ;;
esac
