# shellcheck shell=bash
# Shared by kafka-broker.sh and kafka-tool.sh (sourced, not executed).
#
# Cache layout (outside the source tree):
#   ${EXACTLY_CACHE:-$HOME/.cache/exactly}/kafka-3.9.x/
#     libs/*.jar            broker + clients runtime closure (from Maven Central)
#     libs.stamp            "<kafka version> <sha256 of kafka-pom.xml>" once libs/ is complete
#     tool-<hash>/          compiled tests/tools/java (one dir per source hash)
#     .lock                 flock for fetch / compile

KT_TOOLS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KT_CACHE_ROOT="${EXACTLY_CACHE:-${HOME:-/tmp}/.cache/exactly}"
KT_HOME="$KT_CACHE_ROOT/kafka-3.9.x"
KT_LIBS="$KT_HOME/libs"
KT_POM="$KT_TOOLS_DIR/kafka-pom.xml"
KT_JAVA_SRC="$KT_TOOLS_DIR/java"

kt_die() { echo "kafka-tools: error: $*" >&2; exit 1; }
kt_log() { echo "kafka-tools: $*" >&2; }

kt_need() { command -v "$1" >/dev/null 2>&1 || kt_die "'$1' not found in PATH ($2)"; }

kt_pom_hash() { sha256sum "$KT_POM" | cut -c1-16; }

# True when libs/ holds a complete copy for the current pom.
kt_libs_ready() {
    [[ -f "$KT_HOME/libs.stamp" ]] || return 1
    local want; want="$(kt_pom_hash)"
    [[ "$(cut -d' ' -f2 "$KT_HOME/libs.stamp" 2>/dev/null)" == "$want" ]] || return 1
    compgen -G "$KT_LIBS/kafka_2.13-*.jar" >/dev/null
}

kt_kafka_version() { cut -d' ' -f1 "$KT_HOME/libs.stamp" 2>/dev/null; }

# Copies org.apache.kafka:kafka_2.13 (3.9.1, else 3.9.0) and its runtime closure into libs/.
kt_fetch_libs() {
    kt_libs_ready && return 0
    mkdir -p "$KT_HOME" || kt_die "cannot create $KT_HOME"
    exec {kt_lock_fd}>"$KT_HOME/.lock"
    flock -w 900 "$kt_lock_fd" || kt_die "timed out waiting for $KT_HOME/.lock"
    if kt_libs_ready; then exec {kt_lock_fd}>&-; return 0; fi   # another process did it
    kt_need mvn "install Maven: apt-get install maven"
    kt_need java "install a JDK 17: apt-get install openjdk-17-jdk-headless"
    local tmp="$KT_HOME/libs.tmp.$$" v ok="" log="$KT_HOME/fetch.log"
    : >"$log"
    for v in 3.9.1 3.9.0; do
        rm -rf "$tmp"
        kt_log "fetching Kafka $v runtime jars from Maven Central (first run only) ..."
        # Run from a scratch dir so Maven writes nothing into the source tree.
        if (cd "$KT_HOME" && mvn -B -q -f "$KT_POM" -Dkafka.version="$v" \
                dependency:copy-dependencies -DincludeScope=runtime \
                -DoutputDirectory="$tmp" >>"$log" 2>&1) \
           && compgen -G "$tmp/kafka_2.13-$v.jar" >/dev/null; then
            ok="$v"; break
        fi
        kt_log "Kafka $v not resolvable (see $log)"
    done
    if [[ -z "$ok" ]]; then
        rm -rf "$tmp"; exec {kt_lock_fd}>&-
        tail -n 30 "$log" >&2
        kt_die "could not fetch Kafka jars with Maven (log: $log)"
    fi
    rm -rf "$KT_LIBS" && mv "$tmp" "$KT_LIBS" || kt_die "cannot move jars into $KT_LIBS"
    echo "$ok $(kt_pom_hash)" >"$KT_HOME/libs.stamp"
    exec {kt_lock_fd}>&-
    kt_log "Kafka $ok: $(ls "$KT_LIBS" | wc -l) jars in $KT_LIBS"
}

# Minimal classpath for the Java tool: kafka-clients and what it needs at runtime.
kt_client_cp() {
    local cp="" j
    for j in "$KT_LIBS"/kafka-clients-*.jar "$KT_LIBS"/slf4j-api-*.jar "$KT_LIBS"/slf4j-reload4j-*.jar \
             "$KT_LIBS"/reload4j-*.jar "$KT_LIBS"/lz4-java-*.jar "$KT_LIBS"/snappy-java-*.jar \
             "$KT_LIBS"/zstd-jni-*.jar; do
        [[ -f "$j" ]] && cp="$cp${cp:+:}$j"
    done
    echo "$cp"
}

kt_src_hash() {
    { cat "$KT_JAVA_SRC"/*.java; kt_kafka_version; } | sha256sum | cut -c1-16
}

# Compiles tests/tools/java into the cache when its sources changed; prints the class dir.
kt_build_tool() {
    kt_fetch_libs
    local h dir
    h="$(kt_src_hash)"; dir="$KT_HOME/tool-$h"
    if [[ ! -f "$dir/.complete" ]]; then
        exec {kt_lock_fd}>"$KT_HOME/.lock"
        flock -w 300 "$kt_lock_fd" || kt_die "timed out waiting for $KT_HOME/.lock"
        if [[ ! -f "$dir/.complete" ]]; then
            kt_need javac "install a JDK 17: apt-get install openjdk-17-jdk-headless"
            rm -rf "$dir.tmp"; mkdir -p "$dir.tmp"
            javac -nowarn -encoding UTF-8 --release 17 -cp "$(kt_client_cp)" -d "$dir.tmp" "$KT_JAVA_SRC"/*.java >&2 \
                || { rm -rf "$dir.tmp"; exec {kt_lock_fd}>&-; kt_die "javac failed for $KT_JAVA_SRC"; }
            cat >"$dir.tmp/log4j.properties" <<'EOF'
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d{HH:mm:ss,SSS}] %p %c{1}: %m%n
# The clients log expected disconnects while a broker starts or is killed.
log4j.logger.org.apache.kafka.clients.NetworkClient=ERROR
log4j.logger.org.apache.kafka.clients.admin.internals=ERROR
log4j.logger.org.apache.kafka.clients.producer.internals.Sender=ERROR
log4j.logger.org.apache.kafka.common.utils.AppInfoParser=ERROR
EOF
            touch "$dir.tmp/.complete"
            rm -rf "$dir" && mv "$dir.tmp" "$dir"
            # Drop class dirs of older sources (not touched for a day).
            find "$KT_HOME" -maxdepth 1 -name 'tool-*' -type d ! -name "tool-$h" -mtime +1 -exec rm -rf {} + 2>/dev/null
        fi
        exec {kt_lock_fd}>&-
    fi
    echo "$dir"
}
