#!/usr/bin/env python3
"""The metric names in the docs cannot drift from the code.

    metrics_doc_test.py SOURCE_DIR

Reads every metric the code registers (host: metrics::global().add/set/observe("name",
...); plugins: host_.counter/gauge("name", ...)) from host/ and plugins/, and checks:

1. docs/operations.md's metrics tables (rows "| `exactly_<name>` | <type> | ...") list
   every one of them, with the type the code gives it (add -> counter, set -> gauge,
   observe -> histogram, counter(...) -> counter, gauge(...) -> gauge), and nothing
   else;
2. every `exactly_<name>` that looks like a metric anywhere in docs/*.md,
   docs/*.json, README.md and plugins/*/README.md is registered by the code
   (histogram series suffixes _bucket/_sum/_count allowed);
3. every code-formatted unprefixed plugin metric name in those files (`dedupe_...`,
   `kafka_sink_...`, ... followed by ` or {) is registered by the code;
4. each plugin's README names every metric that plugin's code registers.

A metric whose name is built at run time would not be seen: keep names literal.
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
failures = []

# ---------------------------------------------------------------- the code
HOST_CALL = re.compile(r'global\(\)\s*\.\s*(add|set|observe)\(\s*"([a-z0-9_]+)"')
PLUGIN_CALL = re.compile(r'(?:\.|->)\s*(counter|gauge)\(\s*"([a-z0-9_]+)"')
KIND = {"add": "counter", "set": "gauge", "observe": "histogram",
        "counter": "counter", "gauge": "gauge"}

code = {}        # name -> {types}
where = {}       # name -> first file
per_plugin = {}  # plugin dir name -> {names}


def scan(path, plugin=None):
    text = path.read_text(errors="replace")
    for rx in (HOST_CALL, PLUGIN_CALL):
        for m in rx.finditer(text):
            call, name = m.group(1), m.group(2)
            code.setdefault(name, set()).add(KIND[call])
            where.setdefault(name, str(path.relative_to(root)))
            if plugin:
                per_plugin.setdefault(plugin, set()).add(name)


for sub in ("host", "plugins"):
    for path in sorted((root / sub).rglob("*")):
        if path.suffix in (".cpp", ".hpp", ".h", ".cc") and path.is_file():
            rel = path.relative_to(root).parts
            scan(path, rel[1] if sub == "plugins" else None)

if len(code) < 20:
    failures.append(f"found only {len(code)} metrics in the code: has the registration "
                    "pattern changed? (update this test)")

for name, kinds in sorted(code.items()):
    if len(kinds) > 1:
        failures.append(f"{name} is registered as {' and '.join(sorted(kinds))} ({where[name]})")

# ---------------------------------------------------------------- 1. the tables
ops = root / "docs" / "operations.md"
ROW = re.compile(r"^\|\s*`exactly_([a-z0-9_]+)`\s*\|\s*([a-z]+)\s*\|", re.M)
table = {}
for m in ROW.finditer(ops.read_text()):
    name, kind = m.group(1), m.group(2)
    if name in table:
        failures.append(f"docs/operations.md: exactly_{name} has two table rows")
    table[name] = kind

for name in sorted(code):
    if name not in table:
        failures.append(f"docs/operations.md: no metrics table row for exactly_{name} "
                        f"(registered in {where[name]})")
    elif table[name] not in code[name]:
        failures.append(f"docs/operations.md: exactly_{name} is a {table[name]} in the table, "
                        f"a {'/'.join(sorted(code[name]))} in {where[name]}")
for name in sorted(table):
    if name not in code:
        failures.append(f"docs/operations.md: the table lists exactly_{name}, which no code "
                        "registers")

# ---------------------------------------------------------------- 2-4. every mention
docs = sorted((root / "docs").glob("*.md")) + sorted((root / "docs").glob("*.json"))
docs += [root / "README.md"] + sorted((root / "plugins").glob("*/README.md"))

# Metrics of the example plugins the docs build (shout in plugin-authoring.md).
examples = set()
for doc in [root / "docs" / "plugin-authoring.md"] + sorted((root / "examples").rglob("*.cpp")):
    if doc.exists():
        examples |= {m.group(2) for m in PLUGIN_CALL.finditer(doc.read_text(errors="replace"))}

# exactly_<word> tokens that are not metrics: SDK/CMake identifiers, delivery modes,
# library files (exactly_<name>.so) and plugin targets (exactly_plugin_<name>).
NOT_METRICS = {"exactly_once", "exactly_once_v2", "exactly_sdk", "exactly_add_plugin",
               "exactly_add_test", "exactly_plugin_descriptor"}
# A metric name starts with a letter (exactly_0.1.0_amd64.deb is a package file).
PREFIXED = re.compile(r"\bexactly_[a-z][a-z0-9_]*")
# Plugin metric families, as the plugin READMEs write them (without the prefix):
# dedupe_, filter_, kafka_source_, http_sink_, ...


def family(name):
    w = name.split("_")
    return "_".join(w[:2]) if len(w) > 2 and w[1] in ("source", "sink") else w[0]


FAMILIES = sorted({family(n) for names in per_plugin.values() for n in names},
                  key=len, reverse=True)
UNPREFIXED = re.compile(r"`((?:" + "|".join(re.escape(f) for f in FAMILIES) +
                        r")_[a-z0-9_]+)(?=[`{])")


def known(name):
    if name in code or name in examples:
        return True
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and "histogram" in code.get(name[: -len(suffix)], ()):
            return True
    return False


for doc in docs:
    if not doc.exists():
        continue
    rel = doc.relative_to(root)
    text = doc.read_text(errors="replace")
    for m in PREFIXED.finditer(text):
        tok = m.group(0)
        after = text[m.end(): m.end() + 3]
        if tok in NOT_METRICS or after.startswith(".so") or after.startswith(".h"):
            continue
        if tok.startswith("exactly_plugin_") and not known(tok[len("exactly_"):]):
            # a CMake target exactly_plugin_<name>, unless it is a metric's prefix
            if not tok.startswith("exactly_plugin_load"):
                continue
        if not known(tok[len("exactly_"):]):
            line = text.count("\n", 0, m.start()) + 1
            failures.append(f"{rel}:{line}: {tok} is not a metric the code registers")
    for m in UNPREFIXED.finditer(text):
        if not known(m.group(1)):
            line = text.count("\n", 0, m.start()) + 1
            failures.append(f"{rel}:{line}: `{m.group(1)}` is not a metric the code registers")

for plugin, names in sorted(per_plugin.items()):
    readme = root / "plugins" / plugin / "README.md"
    if not readme.exists():
        continue
    text = readme.read_text(errors="replace")
    for name in sorted(names):
        if not re.search(r"(?<![A-Za-z0-9])(?:exactly_)?" + re.escape(name) + r"\b", text):
            failures.append(f"plugins/{plugin}/README.md does not name its metric {name}")

if failures:
    print("\n".join("FAIL: " + f for f in failures))
    print(f"{len(failures)} problem(s): the docs and the code disagree about metric names")
    sys.exit(1)
print(f"{len(code)} metrics registered in the code; docs/operations.md lists each with its "
      f"type, and every metric named in the docs exists")
