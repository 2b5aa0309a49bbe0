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
test_plugins = sys.argv[2]  # the testkit: a counter source whose records carry timestamps
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
plugin.path: [{test_plugins}]
pipelines:
  - name: aged
    source: {{ plugin: counter, config: {{ count: 1000, batch.size: 100, timestamp.age.ms: 30000 }} }}
    sink: {{ plugin: discard }}
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
        up = [s for s in families.get("exactly_pipeline_up", []).samples
              if s.labels.get("pipeline") in ("known", "aged")] if "exactly_pipeline_up" in families else []
        if len(up) == 2 and all(s.value == 0 for s in up):
            break  # the bounded pipelines finished; their counters are final
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
    # The aged pipeline's records were stamped 30 s before each poll: every batch's and
    # every round's oldest record is at least that old, in the buckets past 25 s (the
    # buckets top out at 10 s: all in +Inf). The known pipeline's records carry no
    # timestamp: no observations.
    aged_commits = value("exactly_commits", pipeline="aged")
    aged_batches = 1000 / 100
    for name, want in (("exactly_record_age_at_poll_seconds", aged_batches),
                       ("exactly_record_age_at_commit_seconds", aged_commits)):
        fam = families.get(name)
        if fam is None or fam.type != "histogram":
            failures.append(f"{name} missing or not a histogram")
            continue
        def sample(suffix, pipeline, le=None):
            got = [s.value for s in fam.samples if s.name == name + suffix and s.labels.get("pipeline") == pipeline
                   and (le is None or s.labels.get("le") == le)]
            return got[0] if got else None
        if sample("_count", "aged") != want:
            failures.append(f"{name} count {sample('_count', 'aged')}, want {want}")
        if sample("_bucket", "aged", "10") != 0:
            failures.append(f"{name}: {sample('_bucket', 'aged', '10.0')} observation(s) under 10 s of records 30 s old")
        total = sample("_sum", "aged")
        if total is None or total < 30 * want:
            failures.append(f"{name} sum {total}, want at least {30 * want}")
        if sample("_count", "known") not in (None, 0):
            failures.append(f"{name} counted records without timestamps: {sample('_count', 'known')}")
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
