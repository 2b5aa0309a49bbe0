#!/usr/bin/env bash
# The Debian packages, built with cpack from the build tree, installed in a clean root
# and used from the installed files only:
#   1. cpack -G DEB: exactly_<v>_<arch>.deb and exactly-dev_<v>_all.deb
#   2. their metadata and contents: dependencies from dpkg-shlibdeps, every plugin in
#      /usr/lib/exactly/plugins, no test fixture, no group/world-writable entry, the
#      man page (covering every command of `exactly --help`), the systemd unit
#   3. installed in a clean root, then from the installed files: `exactly plugins`
#      through the default plugin path, the quickstart pipeline, the unit's ExecStart
#      run as its user (SIGHUP reloads, SIGTERM commits and exits 0),
#      examples/upper-case built against the installed exactly-dev and run by the host,
#      and a program built on the installed test harness that drives that plugin
#
#   tests/package/package_install_test.sh <build dir>
#
# The clean root: as root with mount namespaces (unshare -m), a throwaway overlay of /
# with the exactly files removed, chrooted, where `dpkg -i` installs both packages for
# real (dependencies checked by dpkg, postinst creates the exactly user and dirs) and
# `dpkg --purge` removes them at the end. Without that (not root, no overlayfs), both
# packages are unpacked with `dpkg-deb -x` into a fresh directory and used from there.
# EXACTLY_PACKAGE_TEST_MODE=extract forces the second way, =chroot the first.
set -euo pipefail
umask 022

# A service process started by the test is killed when the test fails.
service_pid=""
fail() {
  echo "FAIL: $*" >&2
  if [ -n "$service_pid" ]; then kill -KILL "$service_pid" 2>/dev/null || true; fi
  exit 1
}
# The pid of a process named exactly that descends from $1 (the service's main process).
# From /proc: pgrep (procps) may be missing on a minimal system.
ppid_of() {
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return 0; }
  s=${s##*) }   # after "pid (comm) ": state ppid ...
  set -- $s
  echo "$2"
}
find_exactly() {
  local d a
  for d in /proc/[0-9]*; do
    [ "$(cat "$d/comm" 2>/dev/null)" = exactly ] || continue
    a=${d#/proc/}
    while [ "$a" -gt 1 ]; do
      a=$(ppid_of "$a")
      if [ "$a" = "$1" ]; then echo "${d#/proc/}"; return 0; fi
    done
  done
  return 0
}
note() { echo "== $*"; }

# ---------------------------------------------------------------------------------------
# Phase 2: run against installed files. $1 = root prefix ("" when installed by dpkg in
# the chroot), $2 = dpkg|extract, $3 = directory holding the .debs.
installed_checks() {
  local R=$1 how=$2 debs=$3
  local bin=$R/usr/bin/exactly plugdir=$R/usr/lib/exactly/plugins
  local etc=/etc/exactly varlib=/var/lib/exactly user=exactly
  local scratch
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/exactly-pkg-run-XXXXXX")
  chmod 0755 "$scratch"
  # Only the installed files: no plugin path from the caller's environment.
  unset EXACTLY_PLUGIN_PATH

  if [ "$how" = dpkg ]; then
    note "clean root: nothing of exactly before the install"
    for p in /usr/bin/exactly /usr/lib/exactly /usr/include/exactly /usr/lib/cmake/exactly_sdk \
             /usr/local/bin/exactly /usr/local/lib/exactly /usr/local/include/exactly \
             /usr/local/lib/cmake/exactly_sdk /etc/exactly /var/lib/exactly; do
      [ ! -e "$p" ] || fail "$p exists before the install"
    done
    ! getent passwd exactly >/dev/null || fail "user exactly exists before the install"

    note "dpkg -i"
    DEBIAN_FRONTEND=noninteractive dpkg -i "$debs"/exactly_*.deb "$debs"/exactly-dev_*.deb \
      || fail "dpkg -i failed (dependencies not installed on this machine?)"
    dpkg-query -W -f='${Package} ${Version} ${Status}\n' exactly exactly-dev

    note "postinst: the exactly user and its directories"
    local pw; pw=$(getent passwd exactly) || fail "postinst did not create user exactly"
    echo "$pw"
    [ "$(echo "$pw" | cut -d: -f6)" = /var/lib/exactly ] || fail "home of exactly is not /var/lib/exactly"
    case "$(echo "$pw" | cut -d: -f7)" in */nologin|/bin/false) ;; *) fail "exactly has a login shell";; esac
    [ "$(echo "$pw" | cut -d: -f3)" -lt 1000 ] || fail "exactly is not a system user"
    [ "$(stat -c '%U:%G %a' /var/lib/exactly)" = "exactly:exactly 750" ] \
      || fail "/var/lib/exactly is $(stat -c '%U:%G %a' /var/lib/exactly)"
    [ "$(stat -c '%U:%G %a' /etc/exactly)" = "root:exactly 750" ] \
      || fail "/etc/exactly is $(stat -c '%U:%G %a' /etc/exactly)"
    as_user() { runuser -u exactly -- "$@"; }
  else
    note "dpkg-deb -x into $R"
    dpkg-deb -x "$debs"/exactly_*.deb "$R"
    dpkg-deb -x "$debs"/exactly-dev_*.deb "$R"
    # What postinst would create.
    etc=$scratch/etc-exactly varlib=$scratch/var-lib-exactly user=$(id -un)
    mkdir -p "$etc" "$varlib"
    chmod 0750 "$etc" "$varlib"
    as_user() { "$@"; }
  fi

  note "the installed binary and its default plugin path"
  "$bin" --version
  as_user "$bin" plugins --json > "$scratch/plugins.json" || fail "exactly plugins failed"
  python3 - "$scratch/plugins.json" "$plugdir" <<'PY' || fail "exactly plugins"
import json, sys
doc, plugdir = json.load(open(sys.argv[1])), sys.argv[2]
if doc["failures"]:
    sys.exit("libraries that failed to load: %r" % doc["failures"])
found = {(c["kind"], c["name"]): lib["path"] for lib in doc["libraries"] for c in lib["components"]}
want = [("source", "kafka"), ("sink", "kafka"), ("transform", "dedupe"), ("transform", "dedupe-redis"),
        ("source", "generator"), ("source", "file"), ("sink", "file"), ("transform", "filter"),
        ("sink", "http")]
for k in want:
    if k not in found:
        sys.exit("%s %s not found; found %r" % (k + (sorted(found),)))
    if not found[k].startswith(plugdir + "/"):
        sys.exit("%s %s loaded from %s, not from %s" % (k + (found[k], plugdir)))
PY
  echo "all 9 components from $plugdir"

  note "quickstart from the installed example configuration"
  local qs=$R/usr/share/doc/exactly/examples/quickstart.yaml
  [ -f "$qs" ] || fail "no $qs"
  local qsdir=$scratch/quickstart
  mkdir -p "$qsdir"
  if [ "$how" = dpkg ]; then
    # The chroot's /tmp is its own: run the file as installed, as the service user.
    chown exactly:exactly "$qsdir"
    rm -rf /tmp/exactly-quickstart
    (cd "$qsdir" && as_user "$bin" run --no-watch "$qs") >"$qsdir/summary" 2>"$qsdir/log" \
      || { tail -30 "$qsdir/log"; fail "quickstart run failed"; }
  else
    # The host's /tmp is shared: the same file with its state in the scratch dir.
    sed "s|/tmp/exactly-quickstart|$qsdir/state|g" "$qs" > "$qsdir/quickstart.yaml"
    (cd "$qsdir" && "$bin" run --no-watch "$qsdir/quickstart.yaml") >"$qsdir/summary" 2>"$qsdir/log" \
      || { tail -30 "$qsdir/log"; fail "quickstart run failed"; }
  fi
  cat "$qsdir/summary"
  # load-events: 50000 generated; dedupe-events: 50000 read, some dropped, the rest out.
  python3 - "$qsdir/summary" <<'PY' || fail "quickstart summary"
import sys
lines = [l.split() for l in open(sys.argv[1])]
head = next((l for l in lines if l[:4] == ["pipeline", "state", "in", "out"]), None)
if head is None:
    sys.exit("no summary table")
rows = {l[0]: dict(zip(head, l)) for l in lines if l and l[0] in ("load-events", "dedupe-events")}
if set(rows) != {"load-events", "dedupe-events"}:
    sys.exit("no summary rows for both pipelines")
for name, r in rows.items():
    if r["state"] != "finished":
        sys.exit("%s ended %s" % (name, r["state"]))
if int(rows["load-events"]["out"]) != 50000:
    sys.exit("load-events wrote %s, not 50000" % rows["load-events"]["out"])
d = rows["dedupe-events"]
i, o, dr = int(d["in"]), int(d["out"]), int(d["dropped"])
if i != 50000 or dr <= 0 or i != o + dr:
    sys.exit("dedupe-events in/out/dropped %d/%d/%d" % (i, o, dr))
print("quickstart: 50000 in, %d duplicates dropped, %d out" % (dr, o))
PY

  note "the systemd unit's ExecStart, as its User, in its WorkingDirectory"
  local unit=$R/usr/lib/systemd/system/exactly.service
  local exec_start workdir unit_user
  exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
  workdir=$(sed -n 's/^WorkingDirectory=//p' "$unit")
  unit_user=$(sed -n 's/^User=//p' "$unit")
  [ "$exec_start" = "/usr/bin/exactly run /etc/exactly" ] || fail "ExecStart=$exec_start"
  [ "$workdir" = /var/lib/exactly ] && [ "$unit_user" = exactly ] || fail "unit user/dir"
  # The dedupe fold's SCHED_IDLE can be left again only with RLIMIT_NICE >= 10 (as User=exactly).
  [ "$(sed -n 's/^LimitNICE=//p' "$unit")" = 10 ] || fail "unit LimitNICE is not 10"
  if command -v systemd-analyze >/dev/null; then
    if [ "$how" = dpkg ]; then
      systemd-analyze verify --man=no exactly.service || fail "systemd-analyze verify"
    else
      # The unit as installed, its paths pointed at the unpacked tree.
      mkdir -p "$scratch/unit"
      sed "s|/usr/bin/exactly|$bin|g" "$unit" > "$scratch/unit/exactly.service"
      systemd-analyze verify --man=no "$scratch/unit/exactly.service" || fail "systemd-analyze verify"
    fi
    echo "systemd-analyze verify: ok"
  else
    echo "systemd-analyze not installed: unit checked by content only"
  fi
  cat > "$etc/rate.yaml" <<YAML
pipelines:
  - name: service-check
    delivery: exactly_once
    commit: { interval: 200ms }
    source: { plugin: generator, config: { count: 0, rate: 2000, seed: 7, duplicate.ratio: 0.01 } }
    transforms:
      - plugin: dedupe
        config: { id: { json: /messageId }, state.dir: $varlib/dedupe }
    sink: { plugin: file, config: { path: $varlib/out.jsonl } }
YAML
  if [ "$how" = dpkg ]; then
    chgrp exactly "$etc/rate.yaml"
    chmod 0640 "$etc/rate.yaml"
  fi
  local cmd=${exec_start//\/etc\/exactly/$etc}
  cmd=${cmd//\/usr\/bin\/exactly/$bin}
  (cd "${workdir/\/var\/lib\/exactly/$varlib}" && as_user $cmd >"$scratch/svc.out" 2>"$scratch/svc.log") &
  local pid=$!
  local i main=""
  for i in $(seq 1 100); do
    main=$(find_exactly "$pid" | head -n1)
    [ -n "$main" ] && break
    sleep 0.1
  done
  [ -n "$main" ] || fail "no service process"
  service_pid=$main
  for i in $(seq 1 300); do [ -s "$varlib/out.jsonl" ] && break; sleep 0.1; done
  [ -s "$varlib/out.jsonl" ] || { cat "$scratch/svc.log"; fail "the service wrote nothing"; }
  # ExecReload=/bin/kill -HUP $MAINPID
  kill -HUP "$main"
  for i in $(seq 1 50); do grep -q "SIGHUP: applied" "$scratch/svc.log" && break; sleep 0.1; done
  grep "\[reload\]" "$scratch/svc.log" || true
  grep -q "SIGHUP: applied: .*unchanged=service-check" "$scratch/svc.log" || fail "SIGHUP did not reload"
  # systemctl stop: SIGTERM commits the running round, exit 0 (not a failure to restart).
  kill -TERM "$main"
  local rc=0; wait "$pid" || rc=$?
  service_pid=""
  [ "$rc" -eq 0 ] || { tail -20 "$scratch/svc.log"; fail "service exit code $rc after SIGTERM"; }
  [ -d "$varlib/dedupe" ] || fail "dedupe state not under $varlib"
  echo "service: $(wc -l < "$varlib/out.jsonl") records out, reloaded on SIGHUP, exit 0 on SIGTERM"
  rm -f "$etc/rate.yaml"

  note "examples/upper-case from exactly-dev, built against the installed SDK"
  local ex=$scratch/upper-case
  cp -r "$R/usr/share/doc/exactly-dev/examples/upper-case" "$ex"
  local gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S "$ex" -B "$ex/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$R/usr" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
    >"$ex/configure.log" 2>&1 || { cat "$ex/configure.log"; fail "example configure"; }
  local sdk_dir; sdk_dir=$(sed -n 's/^exactly_sdk_DIR:PATH=//p' "$ex/build/CMakeCache.txt")
  [ "$sdk_dir" = "$R/usr/lib/cmake/exactly_sdk" ] || fail "example found the SDK at '$sdk_dir'"
  cmake --build "$ex/build" >"$ex/build.log" 2>&1 || { cat "$ex/build.log"; fail "example build"; }
  mkdir -p "$ex/plugins"
  cp "$ex/build/exactly_upper_case.so" "$ex/plugins/"
  cat > "$ex/p.yaml" <<YAML
plugin.path: [$ex/plugins]
pipelines:
  - name: shout
    source: { plugin: generator, config: { count: 300, seed: 3, duplicate.ratio: 0 } }
    transforms:
      - plugin: upper_case
        config: { field: /payload }
    sink: { plugin: file, config: { path: $ex/out.jsonl } }
YAML
  # The service user writes the output next to the example.
  if [ "$how" = dpkg ]; then chown exactly "$ex"; fi
  as_user "$bin" run --no-watch "$ex/p.yaml" >/dev/null 2>"$ex/run.log" \
    || { cat "$ex/run.log"; fail "example run"; }
  [ "$(wc -l < "$ex/out.jsonl")" -eq 300 ] || fail "example: not 300 records"
  ! grep -q '"payload":"[^"]*[a-z]' "$ex/out.jsonl" || fail "example: payloads not upper-cased"
  echo "example: built with exactly_sdk_DIR=$sdk_dir, 300 records upper-cased by the installed host"

  note "the installed test harness drives the example plugin (a plugin author's unit test)"
  local ht=$scratch/harness-test
  mkdir -p "$ht"
  cat > "$ht/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(harness_check LANGUAGES CXX)
find_package(exactly_sdk REQUIRED)
add_executable(harness_check harness_check.cpp)
target_link_libraries(harness_check PRIVATE exactly::sdk ${CMAKE_DL_LIBS})
CMAKE
  cat > "$ht/harness_check.cpp" <<'CPP'
#include <exactly/testing/harness.hpp>
#include <cstdio>
int main(int argc, char** argv) {
  using namespace exactly::testing;
  Library lib(argv[1]);
  TransformHarness t(lib, "upper_case", {{"field", "/name"}});
  if (!t.ok()) { std::puts(t.create_status().message().c_str()); return 1; }
  auto out = t.process({rec(std::nullopt, R"({"name":"ada"})"), rec(std::nullopt, R"({"id":1})")});
  // records: every output record in order; kept: the input indices passed without a copy.
  if (out.records.size() != 2 || out.records[0].value != R"({"name":"ADA"})" ||
      out.records[1].value != R"({"id":1})") {
    std::printf("records: %zu\n", out.records.size());
    for (auto& r : out.records) std::printf("  %s\n", r.value.c_str());
    return 2;
  }
  if (out.kept.size() != 1 || out.kept[0] != 1) return 3;
  std::puts("harness: upper_case turned ada into ADA and kept the record without the field");
  return argc == 2 ? 0 : 4;
}
CPP
  cmake -S "$ht" -B "$ht/build" "${gen[@]}" -DCMAKE_PREFIX_PATH="$R/usr" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
    >"$ht/configure.log" 2>&1 || { cat "$ht/configure.log"; fail "harness check configure"; }
  cmake --build "$ht/build" >"$ht/build.log" 2>&1 || { cat "$ht/build.log"; fail "harness check build"; }
  "$ht/build/harness_check" "$ex/plugins/exactly_upper_case.so" || fail "harness check (exit $?)"

  if [ "$how" = dpkg ]; then
    note "dpkg --purge"
    DEBIAN_FRONTEND=noninteractive dpkg --purge exactly-dev exactly
    for p in /usr/bin/exactly /usr/lib/exactly /usr/include/exactly /usr/lib/cmake/exactly_sdk \
             /usr/lib/systemd/system/exactly.service /etc/exactly; do
      [ ! -e "$p" ] || fail "$p left after purge"
    done
    [ -d /var/lib/exactly ] || fail "purge removed the state in /var/lib/exactly"
    echo "purged: files gone, /var/lib/exactly (state) kept"
  fi
  rm -rf "$scratch"
}

# ---------------------------------------------------------------------------------------
# Inside the throwaway root (run by the chroot below).
if [ "${1:-}" = "--installed" ]; then
  installed_checks "" dpkg "$2"
  echo "chroot checks passed"
  exit 0
fi

# In a new mount namespace: overlay of /, chroot, run this script with --installed.
if [ "${1:-}" = "--chroot" ]; then
  work=$2
  mnt=$work/root
  mount -t tmpfs -o mode=0755 tmpfs "$work/ov"
  mkdir -p "$work/ov/up" "$work/ov/wk" "$mnt"
  mount -t overlay overlay -o "lowerdir=/,upperdir=$work/ov/up,workdir=$work/ov/wk" "$mnt"
  mount --rbind /dev "$mnt/dev"
  mount -t proc proc "$mnt/proc"
  # Fresh /tmp and /run: nothing shared with the host (its systemd socket included).
  mount -t tmpfs -o mode=1777 tmpfs "$mnt/tmp"
  mount -t tmpfs -o mode=0755 tmpfs "$mnt/run"
  mkdir -p "$mnt/run/lock" && chmod 1777 "$mnt/run/lock"
  # A clean root: whatever exactly a `cmake --install` may have left on this machine
  # goes (in the overlay only).
  rm -rf "$mnt/usr/local/bin/exactly" "$mnt/usr/local/lib/exactly" "$mnt/usr/local/include/exactly" \
         "$mnt/usr/local/lib/cmake/exactly_sdk" "$mnt/usr/bin/exactly" "$mnt/usr/lib/exactly" \
         "$mnt/usr/include/exactly" "$mnt/usr/lib/cmake/exactly_sdk" "$mnt/etc/exactly" \
         "$mnt/var/lib/exactly"
  if chroot "$mnt" getent passwd exactly >/dev/null; then
    chroot "$mnt" deluser --quiet --system exactly >/dev/null
  fi
  mkdir -p "$mnt/tmp/pkgtest"
  cp "$work"/debs/*.deb "$0" "$mnt/tmp/pkgtest/"
  exec chroot "$mnt" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    bash /tmp/pkgtest/"$(basename "$0")" --installed /tmp/pkgtest
fi

# ---------------------------------------------------------------------------------------
# Phase 1: build the packages and check them.
if [[ $# -ne 1 ]]; then
  echo "usage: $0 <exactly build dir>" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
[ -f "$build/CPackConfig.cmake" ] || fail "no $build/CPackConfig.cmake"
command -v dpkg-shlibdeps >/dev/null || fail "dpkg-shlibdeps missing (Debian package dpkg-dev)"
work=$(mktemp -d "${TMPDIR:-/tmp}/exactly-package-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debs" "$work/ov"

note "cpack -G DEB"
cpack_bin=$(sed -n 's/^CMAKE_CPACK_COMMAND:INTERNAL=//p' "$build/CMakeCache.txt")
(cd "$build" && "${cpack_bin:-cpack}" -G DEB -B "$work/cpack" --config "$build/CPackConfig.cmake") \
  >"$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; fail "cpack"; }
cp "$work"/cpack/*.deb "$work/debs/"
ls -l "$work/debs"
deb=$(ls "$work"/debs/exactly_*.deb)
dev=$(ls "$work"/debs/exactly-dev_*.deb)
[ "$(ls "$work"/debs/*.deb | wc -l)" -eq 2 ] || fail "expected exactly two packages"

note "metadata"
dpkg-deb -f "$deb" Package Version Architecture Depends Suggests
dpkg-deb -f "$dev" Package Version Architecture Depends Recommends
[ "$(dpkg-deb -f "$deb" Package)" = exactly ] || fail "package name"
[ "$(dpkg-deb -f "$deb" Architecture)" = "$(dpkg --print-architecture)" ] || fail "architecture"
[ "$(dpkg-deb -f "$dev" Package)" = exactly-dev ] || fail "dev package name"
[ "$(dpkg-deb -f "$dev" Architecture)" = all ] || fail "dev package architecture"
# Each package's own synopsis on its Description line, its body indented by one space
# (CPack put the project's summary first on both, QA).
[ "$(dpkg-deb -f "$deb" Description | head -1)" = "exactly-once pipelines from plugins (Kafka Connect-style host)" ] \
  || fail "exactly's synopsis: $(dpkg-deb -f "$deb" Description | head -2)"
[ "$(dpkg-deb -f "$dev" Description | head -1)" = "SDK for exactly plugins (headers, CMake package, test harness)" ] \
  || fail "exactly-dev's synopsis: $(dpkg-deb -f "$dev" Description | head -2)"
for f in "$deb" "$dev"; do
  ! dpkg-deb -f "$f" Description | tail -n +2 | grep -qvE '^ [^ ]|^ \.$' \
    || fail "description body lines not indented by one space: $(dpkg-deb -f "$f" Description)"
  [ "$(dpkg-deb -f "$f" Description | grep -c 'exactly-once pipelines from plugins (Kafka')" -le 1 ] \
    || fail "synopsis repeated: $(dpkg-deb -f "$f" Description)"
done
depends=$(dpkg-deb -f "$deb" Depends)
# From dpkg-shlibdeps: the libraries the host and the plugins link.
for lib in adduser procps libc6 'libstdc\+\+6' librdkafka1 'librocksdb[0-9.]*' 'libyaml-cpp[0-9.]*' \
           'libfmt[0-9]*' 'libboost-filesystem[0-9.]*' 'libcivetweb[0-9]*' 'libcurl4' \
           'libhiredis[0-9.]*' 'libre2-[0-9]+' 'libsimdjson[0-9]*' 'libspdlog[0-9.]*(-fmt[0-9]+)?'; do
  # grep -q on a here-string, never at the end of a pipe: with pipefail, a grep -q that
  # exits at its first match can kill the writer with SIGPIPE and fail the pipeline.
  grep -qE "^($lib)( |$)" <<<"$(tr ',' '\n' <<<"$depends" | sed 's/^ *//')" \
    || fail "Depends lacks $lib: $depends"
done
for f in "$deb" "$dev"; do
  [ "$(dpkg-deb -f "$f" Version)" = "$(dpkg-deb -f "$deb" Version)" ] || fail "versions differ"
done

note "contents"
dpkg-deb -c "$deb" | awk '{print $1, $2, $6}' > "$work/deb.list"
dpkg-deb -c "$dev" | awk '{print $1, $2, $6}' > "$work/dev.list"
have() { grep -q " \./${2#/}\$" "$work/$1.list" || fail "$1 package lacks $2"; }
for f in /usr/bin/exactly /usr/lib/systemd/system/exactly.service /usr/share/man/man1/exactly.1.gz \
         /usr/share/doc/exactly/README.md /usr/share/doc/exactly/docs/operations.md \
         /usr/share/doc/exactly/docs/config-reference.md /usr/share/doc/exactly/examples/quickstart.yaml \
         /usr/share/doc/exactly/examples/kafka-dedupe.yaml; do
  have deb "$f"
done
for p in kafka dedupe generator file filter http; do
  have deb "/usr/lib/exactly/plugins/exactly_$p.so"
  have deb "/usr/share/doc/exactly/plugins/$p/README.md"  # the docs link to each
done
[ "$(grep -c '/usr/lib/exactly/plugins/.*\.so$' "$work/deb.list")" -eq 6 ] \
  || fail "plugins other than the six: $(grep '\.so$' "$work/deb.list")"
for f in /usr/include/exactly/plugin_abi.h /usr/include/exactly/sdk.hpp \
         /usr/include/exactly/detail/guard.hpp /usr/include/exactly/detail/lifecycle.hpp \
         /usr/include/exactly/detail/source_adapter.hpp /usr/include/exactly/detail/transform_adapter.hpp \
         /usr/include/exactly/detail/sink_adapter.hpp \
         /usr/include/exactly/testing/harness.hpp /usr/lib/cmake/exactly_sdk/exactly_sdkConfig.cmake \
         /usr/lib/cmake/exactly_sdk/exactly_sdkConfigVersion.cmake \
         /usr/lib/cmake/exactly_sdk/exactly_sdk_targets.cmake /usr/lib/cmake/exactly_sdk/exactly_plugin.cmake \
         /usr/share/doc/exactly-dev/examples/upper-case/CMakeLists.txt \
         /usr/share/doc/exactly-dev/plugin-authoring.md; do
  have dev "$f"
done
if grep "include/\|cmake/" "$work/deb.list"; then fail "SDK files in the exactly package"; fi
if grep "\.so$\|/bin/" "$work/dev.list"; then fail "binaries in exactly-dev"; fi
if grep -i "testkit\|abi_mismatch\|abi_1_0\|abi_wrong_facts\|not_a_plugin" "$work/deb.list" "$work/dev.list"; then
  fail "test fixtures packaged"
fi
# The host refuses plugins its group or others can write: so would an installed system.
awk '$1 !~ /^l/ && (substr($1,6,1) == "w" || substr($1,9,1) == "w") {print; bad=1} END {exit bad}' \
  "$work/deb.list" "$work/dev.list" || fail "group/world-writable entries"
awk '$2 != "root/root" {print; bad=1} END {exit bad}' "$work/deb.list" "$work/dev.list" \
  || fail "entries not owned by root"
# Stripped (CPACK_STRIP_FILES).
mkdir -p "$work/x"
dpkg-deb -x "$deb" "$work/x"
for f in "$work/x/usr/bin/exactly" "$work"/x/usr/lib/exactly/plugins/*.so; do
  if grep -q '\.symtab' <<<"$(readelf -S "$f")"; then fail "$f not stripped"; fi
done

note "maintainer scripts"
dpkg-deb -e "$deb" "$work/control"
for s in postinst prerm postrm; do
  [ -x "$work/control/$s" ] || fail "no executable $s"
  sh -n "$work/control/$s" || fail "$s: syntax"
done
grep -q "adduser .*--system" "$work/control/postinst" || fail "postinst creates no system user"

note "man page"
man_src=$(zcat "$work/x/usr/share/man/man1/exactly.1.gz")
grep -q '^\.TH "*exactly"* "*1"*' <<<"$man_src" || fail "man page has no .TH exactly 1"
man_plain=$(sed 's/\\-/-/g; s/\\f[BIRP]//g' <<<"$man_src")
man_dashes=$(sed 's/\\-/-/g' <<<"$man_src")
# Every command of the binary's own --help is in the man page.
"$work/x/usr/bin/exactly" --help | sed -n 's/^  exactly \([a-z-]*\).*/\1/p' > "$work/help-commands"
[ -s "$work/help-commands" ] || fail "no commands in exactly --help"
while read -r c; do
  grep -q -- "exactly $c" <<<"$man_plain" \
    || fail "man page does not cover 'exactly $c'"
done < "$work/help-commands"
for opt in --log-level --no-watch --json --plugin-path EXACTLY_PLUGIN_PATH SIGHUP /etc/exactly /var/lib/exactly; do
  grep -q -- "$opt" <<<"$man_dashes" || fail "man page does not mention $opt"
done
if command -v groff >/dev/null; then
  warnings=$(echo "$man_src" | groff -man -Tutf8 -ww -z 2>&1) || true
  [ -z "$warnings" ] || fail "groff warnings: $warnings"
fi
echo "man page: $(paste -sd' ' "$work/help-commands") covered"

note "systemd unit"
unit=$work/x/usr/lib/systemd/system/exactly.service
cat "$unit" | grep -v '^#'
want() { grep -qx "$1" "$unit" || fail "unit lacks '$1'"; }
want "ExecStart=/usr/bin/exactly run /etc/exactly"
want 'ExecReload=/bin/kill -HUP $MAINPID'
want "Restart=on-failure"
want "User=exactly"
want "Group=exactly"
want "StateDirectory=exactly"
want "WorkingDirectory=/var/lib/exactly"
want "WantedBy=multi-user.target"
if grep -q '^ExecStart=.*--no-watch' "$unit"; then fail "the unit must watch /etc/exactly"; fi

# Phase 2 in a clean root.
mode=${EXACTLY_PACKAGE_TEST_MODE:-auto}
if [ "$mode" = auto ]; then
  mode=extract
  if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null \
     && unshare -m --propagation private sh -c "mount -t tmpfs tmpfs '$work/ov' && mkdir '$work/ov/u' '$work/ov/w' '$work/ov/m' && mount -t overlay overlay -o 'lowerdir=/,upperdir=$work/ov/u,workdir=$work/ov/w' '$work/ov/m'" 2>/dev/null; then
    mode=chroot
  fi
fi
if [ "$mode" = chroot ]; then
  note "clean root: overlay of / in a mount namespace, chroot, dpkg -i"
  unshare -m --propagation private bash "$0" --chroot "$work" || fail "chroot checks"
else
  note "clean root: dpkg-deb -x into a fresh directory (no mount namespace or overlayfs here)"
  # Scratch dirs under $work: removed on exit, also after a failure.
  TMPDIR=$work installed_checks "$work/root" extract "$work/debs"
fi
echo "PASS (clean root by $mode)"
