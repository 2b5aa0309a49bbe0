#!/usr/bin/env python3
"""Scrapes `exactly run`'s metrics endpoint and parses it with the official Prometheus
Python client (Debian's python3-prometheus-client): the text must parse, and the values
must match the traffic we know we sent."""
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

exactly = sys.argv[1]
work = tempfile.mkdtemp(prefix="exactly-metrics-")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


port = free_port()
config = os.path.join(work, "p.yaml")
with open(config, "w") as f:
    f.write(f"""metrics: {{ listen: 127.0.0.1:{port} }}
pipelines:
  - name: known
    source: {{ plugin: generator, config: {{ count: 5000, seed: 1, duplicate.ratio: 0 }} }}
    transforms:
      - plugin: filter
        config: {{ field: /seq, op: regex, value: "5$", action: drop }}
    sink: {{ plugin: file, config: {{ path: {work}/out.jsonl }} }}
  - name: keepalive
    source: {{ plugin: generator, config: {{ count: 0, rate: 5 }} }}
    sink: {{ plugin: file, config: {{ path: {work}/keepalive.jsonl }} }}
""")

proc = subprocess.Popen([exactly, "run", config], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
failures = []
try:
    families = {}
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        except OSError:
            time.sleep(0.2)
            continue
        families = {fam.name: fam for fam in text_string_to_metric_families(body)}
        up = [s for s in families.get("exactly_pipeline_up", []).samples if s.labels.get("pipeline") == "known"] \
            if "exactly_pipeline_up" in families else []
        if up and up[0].value == 0:
            break  # the bounded pipeline finished; its counters are final
        time.sleep(0.3)
    else:
        failures.append("the bounded pipeline never finished")

    def value(name, **labels):
        fam = families.get(name)
        if fam is None:
            failures.append(f"metric family {name} missing")
            return None
        total = 0.0
        found = False
        for s in fam.samples:
            if s.name.endswith("_created"):
                continue
            if all(s.labels.get(k) == v for k, v in labels.items()) and s.name in (name, name + "_total"):
                total += s.value
                found = True
        if not found:
            failures.append(f"no sample of {name} with {labels}")
        return total

    # 5000 generated; values whose seq ends in 5 are dropped: 500 of them.
    expect = {
        ("exactly_records_in", "known"): 5000,
        ("exactly_records_out", "known"): 4500,
    }
    for (name, pipeline), want in expect.items():
        got = value(name, pipeline=pipeline)
        if got is not None and got != want:
            failures.append(f"{name}{{pipeline={pipeline}}} = {got}, want {want}")
    commits = value("exactly_commits", pipeline="known")
    if commits is not None and commits < 1:
        failures.append("no commits counted")
    lines = sum(1 for _ in open(os.path.join(work, "out.jsonl")))
    if lines != 4500:
        failures.append(f"output has {lines} lines, want 4500")
    hist = families.get("exactly_commit_latency_seconds")
    if hist is None or hist.type != "histogram":
        failures.append("commit latency histogram missing or mistyped")
    else:
        count = [s.value for s in hist.samples if s.name.endswith("_count") and s.labels.get("pipeline") == "known"]
        if not count or count[0] != commits:
            failures.append(f"histogram count {count} != commits {commits}")
    for name, fam in families.items():
        if not name.startswith("exactly_"):
            failures.append(f"metric {name} lacks the exactly_ prefix")
finally:
    proc.terminate()
    out, _ = proc.communicate(timeout=60)
    if proc.returncode != 0:
        failures.append(f"host exited {proc.returncode}: {out.decode()[-2000:]}")

if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("metrics parsed by prometheus_client and match the traffic: 1 passed, 0 failed")
