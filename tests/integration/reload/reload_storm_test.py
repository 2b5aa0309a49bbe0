#!/usr/bin/env python3
"""A reload storm: >= 50 reloads (about half invalid; others change a transform's
parameters, add or remove pipelines and files; some written by rename, some in two
halves) while an exactly_once pipeline copies >= 200k records on the real broker.
Then: zero loss and zero duplicates (independent Java read_committed reader), the
running pipeline never restarted, and the metrics agree (parsed by prometheus_client)."""
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

exactly, root = sys.argv[1], sys.argv[2]
tools = os.path.join(root, "tests", "tools")
rng = random.Random(2026)
work = tempfile.mkdtemp(prefix="exactly-reload-")
cfg = os.path.join(work, "conf")
os.makedirs(cfg)
started_broker = None


def sh(*args, check=True):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(args)}\n{r.stdout}\n{r.stderr}")
    return r


bootstrap = os.environ.get("EXACTLY_KAFKA_BOOTSTRAP")
if not bootstrap:
    started_broker = os.path.join(work, "kafka")
    bootstrap = sh(os.path.join(tools, "kafka-broker.sh"), "start", "--dir", started_broker).stdout.split()[-1]


def tool(*args, check=True):
    return sh(os.path.join(tools, "kafka-tool.sh"), *args, "--bootstrap", bootstrap, check=check)


tag = f"{os.getpid()}-{rng.randrange(10**6)}"
src, dst, group = f"reload-in-{tag}", f"reload-out-{tag}", f"reload-g-{tag}"
N = 200000
tool("create-topic", "--topic", src, "--partitions", "4")
tool("create-topic", "--topic", dst, "--partitions", "4")
tool("produce", "--topic", src, "--count", str(N), "--partitions", "4", "--seed", "3")

s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()


def main_yaml(field, extra_key=""):
    return f"""metrics: {{ listen: 127.0.0.1:{port} }}
pipelines:
  - name: copy
    delivery: exactly_once
    commit: {{ interval: 300ms, max.records: 5000 }}
    source:
      plugin: kafka
      config:
        bootstrap.servers: {bootstrap}
        group.id: {group}
        topics: [{src}]
        batch.size: 500
    transforms:
      - plugin: filter
        config: {{ field: {field}, op: exists, action: keep }}
    sink:
      plugin: kafka
      config: {{ bootstrap.servers: {bootstrap}, topic: {dst}, partitioning: input, state.dir: {work}/state }}
{extra_key}"""


def extra_yaml(i):
    return f"""pipelines:
  - name: extra-{i}
    source: {{ plugin: generator, config: {{ count: 2000, seed: {i} }} }}
    sink: {{ plugin: file, config: {{ path: {work}/extra-{i}.jsonl }} }}
"""


def write(path, text, how):
    if how == "rename":
        tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, path)
    elif how == "halves":  # an editor that flushes twice: must not reload in between
        with open(path, "w") as f:
            f.write(text[: len(text) // 2])
            f.flush()
            time.sleep(0.05)
            f.write(text[len(text) // 2:])
    else:
        with open(path, "w") as f:
            f.write(text)


main = os.path.join(cfg, "main.yaml")
write(main, main_yaml("/seq"), "plain")
log = open(os.path.join(work, "host.log"), "w")
host = subprocess.Popen([exactly, "run", cfg], stdout=log, stderr=subprocess.STDOUT)


def committed():
    r = tool("consume-group-offsets", "--group", group, "--topic", src, check=False)
    return json.loads(r.stdout)["total"] if r.returncode == 0 else -1


def scrape():
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    out = {}
    for fam in text_string_to_metric_families(body):
        for smp in fam.samples:
            out[(smp.name, tuple(sorted(smp.labels.items())))] = smp.value
    return out


failures = []
invalid = valid = 0
extras = []
field = "/seq"
time.sleep(3)
for i in range(56):
    how = rng.choice(["plain", "rename", "halves"])
    if i % 2 == 1:  # invalid: the running pipelines must not notice
        kind = i % 6
        if kind == 1:
            write(main, main_yaml(field, "  - name: broken\n    source: { plugin: nope }\n"), how)
        elif kind == 3:
            write(os.path.join(cfg, "bad.yaml"), "pipelines:\n  - name: [unclosed\n", how)
        else:
            write(main, main_yaml(field).replace("batch.size: 500", "batch.size: many"), how)
        invalid += 1
        time.sleep(0.7)
        # repair
        if os.path.exists(os.path.join(cfg, "bad.yaml")):
            os.unlink(os.path.join(cfg, "bad.yaml"))
        write(main, main_yaml(field), "rename")
    else:
        kind = (i // 2) % 3
        if kind == 0:
            field = "/messageId" if field == "/seq" else "/seq"  # every record has both
            write(main, main_yaml(field), how)
        elif kind == 1:
            write(os.path.join(cfg, f"extra-{i}.yaml"), extra_yaml(i), how)
            extras.append(i)
        elif extras:
            os.unlink(os.path.join(cfg, f"extra-{extras.pop(0)}.yaml"))
        valid += 1
    time.sleep(0.7)

deadline = time.time() + 600
while committed() < N and time.time() < deadline:
    time.sleep(2)
if committed() < N:
    failures.append(f"pipeline did not finish: committed {committed()} of {N}")

m = scrape()
def get(name, **labels):
    return m.get((name, tuple(sorted(labels.items()))), 0.0)
failed_reloads = get("exactly_config_reloads_total", result="failed")
ok_reloads = get("exactly_config_reloads_total", result="ok")
print(f"reloads: ok={ok_reloads} failed={failed_reloads} (wrote {valid} valid, {invalid} invalid changes)")
if failed_reloads < invalid * 0.8:
    failures.append(f"only {failed_reloads} failed reloads counted for {invalid} invalid edits")
if ok_reloads + failed_reloads < 50:
    failures.append(f"only {ok_reloads + failed_reloads} reloads happened")
if get("exactly_restarts_total", pipeline="copy") != 0:
    failures.append("the copy pipeline was restarted by its instance failing")
if get("exactly_pipeline_up", pipeline="copy") != 1:
    failures.append("the copy pipeline is not up at the end")
lag = {k: v for k, v in m.items() if k[0] == "exactly_kafka_source_consumer_lag" and ("pipeline", "copy") in k[1]}
if len(lag) != 4:
    failures.append(f"consumer lag reported for {len(lag)} partitions, want 4")
elif sum(lag.values()) != 0:
    failures.append(f"consumer lag after catching up is {sum(lag.values())}, want 0")
if get("exactly_records_out_total", pipeline="copy") < N:
    failures.append(f"records_out_total {get('exactly_records_out_total', pipeline='copy')} < {N}")

host.send_signal(signal.SIGTERM)
rc = host.wait(timeout=120)
log.close()
hostlog = open(os.path.join(work, "host.log")).read()
if rc != 0:
    failures.append(f"host exited {rc}")
in_place = hostlog.count("transform parameters changed in place")
if in_place < 5:
    failures.append(f"only {in_place} in-place transform changes")
if hostlog.count("rejected (") < invalid * 0.8:
    failures.append("invalid reloads were not all logged with their errors")
v = tool("verify", "--input-topic", src, "--output-topic", dst, "--mode", "copy", check=False)
print(v.stdout.strip())
if v.returncode != 0:
    failures.append("verify failed: " + v.stdout + v.stderr[-2000:])
mk = tool("marker-check", "--topic", dst, "--timeout-s", "20", check=False)
if mk.returncode != 0:
    failures.append("marker check failed: " + mk.stdout + mk.stderr)
if started_broker:
    sh(os.path.join(tools, "kafka-broker.sh"), "stop", "--clean", "--dir", started_broker, check=False)
if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    print(hostlog[-4000:])
    sys.exit(1)
print("reload storm: 1 passed, 0 failed")
