#!/usr/bin/env bash
# A private redis-server on 127.0.0.1 for tests and benchmarks (never the system
# service). Data, config, log and pid live in DIR.
#
#   redis-server.sh start --dir DIR [--port P] [--appendfsync always|everysec|no] [--arg "--k v"]...
#                         [--tls [--tls-clients yes|no]]
#   redis-server.sh stop --dir DIR [--clean]     # SHUTDOWN NOSAVE, SIGKILL if it hangs
#   redis-server.sh kill --dir DIR               # SIGKILL (a crash)
#
# start prints 127.0.0.1:PORT as the LAST stdout line once the server answers PING (and
# has loaded its data). Without --port, the first free port from 16379 up is used.
# start on a DIR of a stopped server restarts it with the same port and settings, so
# its AOF is read back. --appendfsync turns the AOF on with that fsync policy.
# --tls: the port takes only TLS (no plaintext port). A throwaway CA, a server
# certificate for IP 127.0.0.1 and DNS localhost, and a client certificate are made in
# DIR/tls (ca.pem, server.*, client.pem, client.key; other-ca.pem is a CA that signed
# nothing). --tls-clients yes makes the server require a client certificate.
# DIR/cli.args holds the redis-cli options that reach the server.
set -euo pipefail
die() { echo "redis-server.sh: error: $*" >&2; exit 1; }

cmd="${1:-}"; shift || true
DIR=""; PORT=""; FSYNC=""; EXTRA=(); CLEAN=0; TLS=0; TLS_CLIENTS=no
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) DIR="$2"; shift 2 ;;
    --port) PORT="$2"; shift 2 ;;
    --appendfsync) FSYNC="$2"; shift 2 ;;
    --arg) EXTRA+=("$2")
      # A server with a password: redis-cli (ping, shutdown) authenticates with it.
      if [[ "$2" == "--requirepass "* ]]; then export REDISCLI_AUTH="${2#--requirepass }"; fi
      shift 2 ;;
    --clean) CLEAN=1; shift ;;
    --tls) TLS=1; shift ;;
    --tls-clients) TLS_CLIENTS="$2"; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
[[ -n "$DIR" ]] || die "--dir is required"
command -v redis-server >/dev/null || die "redis-server not found (tests/tools/install-deps.sh installs it)"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"

# The TLS material of DIR/tls, made once (openssl, 2048-bit RSA, valid 7 days).
make_tls() {
  local d="$DIR/tls"
  [[ -f "$d/.complete" ]] && return 0
  command -v openssl >/dev/null || die "openssl not found (tests/tools/install-deps.sh installs it)"
  rm -rf "$d"; mkdir -p "$d"
  (
    cd "$d"
    set -e
    for ca in ca other-ca; do
      openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 7 -keyout "$ca.key" -out "$ca.pem" \
        -subj "/CN=exactly test $ca" -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign"
    done
    openssl req -newkey rsa:2048 -nodes -sha256 -keyout server.key -out server.csr -subj "/CN=127.0.0.1"
    printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "extendedKeyUsage=serverAuth" >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 -days 7 \
      -extfile server.ext -out server.pem
    openssl req -newkey rsa:2048 -nodes -sha256 -keyout client.key -out client.csr -subj "/CN=exactly"
    printf '%s\n' "extendedKeyUsage=clientAuth" >client.ext
    openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 -days 7 \
      -extfile client.ext -out client.pem
    chmod 600 ./*.key
  ) >"$d/make.log" 2>&1 || { cat "$d/make.log" >&2; die "making the TLS material failed (see $d/make.log)"; }
  touch "$d/.complete"
}

# redis-cli with the options DIR/cli.args holds (TLS) and the server's port.
cli() {
  local args=()
  [[ -f "$DIR/cli.args" ]] && read -r -a args <"$DIR/cli.args"
  redis-cli -h 127.0.0.1 -p "$(cat "$DIR/port")" "${args[@]+"${args[@]}"}" "$@"
}

port_busy() { [[ -n "$(ss -Htln "( sport = :$1 )" 2>/dev/null)" ]]; }
running() { [[ -f "$DIR/pid" ]] && kill -0 "$(cat "$DIR/pid")" 2>/dev/null; }

case "$cmd" in
  start)
    if running; then echo "127.0.0.1:$(cat "$DIR/port")"; exit 0; fi
    if [[ ! -f "$DIR/redis.conf" ]]; then
      exec 9>/tmp/exactly-redis-ports.lock
      flock 9
      if [[ -z "$PORT" ]]; then
        PORT=16379
        while port_busy "$PORT" || [[ -e "/tmp/exactly-redis-port-$PORT" ]]; do PORT=$((PORT + 1)); done
      fi
      port_busy "$PORT" && die "port $PORT is busy"
      # The claim stays until stop --clean: a stopped server keeps its port for a restart.
      echo "$DIR" >"/tmp/exactly-redis-port-$PORT"
      if [[ $TLS -eq 1 ]]; then
        make_tls
        echo "--tls --cacert $DIR/tls/ca.pem --cert $DIR/tls/client.pem --key $DIR/tls/client.key" >"$DIR/cli.args"
      fi
      {
        echo "bind 127.0.0.1"
        if [[ $TLS -eq 1 ]]; then
          echo "port 0"
          echo "tls-port $PORT"
          echo "tls-cert-file $DIR/tls/server.pem"
          echo "tls-key-file $DIR/tls/server.key"
          echo "tls-ca-cert-file $DIR/tls/ca.pem"
          echo "tls-auth-clients $TLS_CLIENTS"
        else
          echo "port $PORT"
        fi
        echo "dir $DIR"
        echo "save \"\""
        echo "daemonize no"
        echo "logfile $DIR/redis.log"
        if [[ -n "$FSYNC" ]]; then echo "appendonly yes"; echo "appendfsync $FSYNC"; else echo "appendonly no"; fi
        for a in "${EXTRA[@]+"${EXTRA[@]}"}"; do echo "${a#--}"; done
      } >"$DIR/redis.conf"
      echo "$PORT" >"$DIR/port"
      flock -u 9
      exec 9>&-   # the server must not inherit the lock
    fi
    PORT="$(cat "$DIR/port")"
    setsid redis-server "$DIR/redis.conf" </dev/null >>"$DIR/stdout.log" 2>&1 9>&- &
    echo $! >"$DIR/pid"
    for _ in $(seq 1 200); do
      # PING answers LOADING while the AOF is read back: wait for PONG.
      if [[ "$(cli ping 2>/dev/null)" == PONG ]]; then
        echo "127.0.0.1:$PORT"; exit 0
      fi
      running || { tail -20 "$DIR/redis.log" >&2 || true; die "redis-server exited"; }
      sleep 0.05
    done
    die "redis-server on port $PORT did not answer within 10 s"
    ;;
  stop)
    if running; then
      pid="$(cat "$DIR/pid")"
      cli shutdown nosave >/dev/null 2>&1 || true
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    if [[ $CLEAN -eq 1 ]]; then
      [[ -f "$DIR/port" ]] && rm -f "/tmp/exactly-redis-port-$(cat "$DIR/port")"
      rm -rf "$DIR"
    fi
    ;;
  kill)
    running && kill -9 "$(cat "$DIR/pid")"
    for _ in $(seq 1 100); do running || exit 0; sleep 0.05; done
    die "redis-server did not die"
    ;;
  *) die "usage: redis-server.sh start|stop|kill --dir DIR ..." ;;
esac
