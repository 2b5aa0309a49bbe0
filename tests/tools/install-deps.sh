#!/usr/bin/env bash
# Installs the Debian packages exactly builds and tests with. Safe to run again:
# it asks apt only for what is missing.
set -euo pipefail
PKGS=(build-essential cmake ninja-build pkg-config
      librdkafka-dev librocksdb-dev libboost-dev libboost-filesystem-dev libyaml-cpp-dev
      libgtest-dev libgmock-dev libsimdjson-dev libfmt-dev libxxhash-dev libcivetweb-dev libcurl4-openssl-dev
      rocksdb-tools python3 python3-prometheus-client openssl
      libhiredis-dev redis-server redis-tools libssl-dev  # dedupe-redis (TLS: OpenSSL)
      libre2-dev  # the filter's regular expressions (linear time: plugins/filter/predicate.cpp)
      libcli11-dev libspdlog-dev  # the command line and the log of the host
      cargo  # the Rust example plugin (examples/rust-mask); Debian 12's 1.63 is enough
      clang libclang-rt-14-dev  # the fuzz targets (tests/fuzz): clang 14 and its libFuzzer
      adduser procps dpkg-dev scdoc systemd   # packaging: the .deb's Depends, dpkg-shlibdeps, man page, systemd-analyze
      python3-confluent-kafka python3-aiohttp)  # the http benchmark's hand-written consumer peer (tests/bench/http/hand_consumer.py)
if [ "${1:-}" = "--with-java" ]; then PKGS+=(default-jdk-headless maven iproute2 util-linux); fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# cargo may come from rustup: accept any on PATH.
if command -v cargo >/dev/null; then
  keep=()
  for p in "${missing[@]+"${missing[@]}"}"; do [ "$p" = cargo ] || keep+=("$p"); done
  missing=("${keep[@]+"${keep[@]}"}")
fi
# Java and Maven may come from outside apt (a preinstalled JDK): accept them if on PATH.
if [ "${1:-}" = "--with-java" ]; then
  keep=()
  for p in "${missing[@]}"; do
    case "$p" in
      default-jdk-headless) command -v javac >/dev/null || keep+=("$p") ;;
      maven) command -v mvn >/dev/null || keep+=("$p") ;;
      *) keep+=("$p") ;;
    esac
  done
  missing=("${keep[@]+"${keep[@]}"}")
fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
