#include "config/host_schema.hpp"

namespace exactly::config {
using plugin::Field;

namespace {

Field fld(const char* key, ex_config_type t, const char* dflt, const char* doc,
          std::vector<std::string> allowed = {}, bool required = false) {
  Field f;
  f.key = key;
  f.type = t;
  f.required = required;
  f.has_default = dflt != nullptr;
  if (dflt) f.default_value = dflt;
  f.doc = doc;
  f.allowed = std::move(allowed);
  return f;
}

}  // namespace

// The host's own schema for a pipeline entry (sub-components are handled apart).
const std::vector<Field>& pipeline_fields() {
  static const std::vector<Field> f = {
      fld("name", EX_CFG_STRING, nullptr, "unique pipeline name", {}, true),
      fld("delivery", EX_CFG_STRING, "at_least_once", "delivery guarantee",
          {"at_least_once", "exactly_once"}),
      fld("commit.interval", EX_CFG_DURATION, "1s", "time from one commit's start to the next (a round gathers for what the last "
          "commit left of it, and at least as long as commits typically take); a round also "
          "ends once its oldest record has waited this long since its timestamp (late input "
          "after a stall upstream), but gathers at least a quarter of it and twice the "
          "typical commit; not while the pipeline reads a backlog (the newest record polled "
          "older than twice this and at least 2 s: a catch-up keeps the cadence, with fewer "
          "commits)"),
      fld("commit.max.records", EX_CFG_INT, "100000", "records that close a round early"),
      fld("commit.after.takeover", EX_CFG_DURATION, "2s",
          "for this long after the source is given partitions (other than at start) or resumes "
          "a held one, every batch commits at once, so a takeover's first output is not held "
          "back for commit.interval; 0 = off"),
      fld("commit.when.idle", EX_CFG_BOOL, "true",
          "commit the round as soon as a poll of the source waited 100 ms and found nothing, "
          "instead of waiting out commit.interval: the last records of a burst become visible "
          "at once; a trickle commits at most about every 100 ms (a source whose own poll "
          "timeout is shorter never looks idle)"),
      fld("ready.commit.timeout", EX_CFG_DURATION, "10s",
          "/readyz answers 503 for the pipeline while a commit (with the abort after it) has "
          "run longer than this: one held by a broker outage has not failed yet. Only the "
          "commit counts, not a round held by a sink's backpressure (a rate-limited http "
          "sink draining its window is working); 0 = never"),
      fld("threads", EX_CFG_INT, "0",
          "tasks the pipeline's partitions are split into, each running its own instances of "
          "the transforms, side by side on up to this many threads while that measures faster "
          "than one thread (a partition always stays in one task, so its order is kept; the "
          "sink and the commit stay one); 0 = the machine's cores"),
      fld("errors.policy", EX_CFG_STRING, "stop", "what a record error does",
          {"stop", "skip", "dead-letter"}),
      fld("errors.max.consecutive.aborts", EX_CFG_INT, "10",
          "aborted rounds in a row before the pipeline is rebuilt"),
      fld("restart.backoff.initial", EX_CFG_DURATION, "1s",
          "first restart delay; it doubles at each restart, and is back to this once an "
          "instance committed and ran for restart.backoff.max"),
      fld("restart.backoff.max", EX_CFG_DURATION, "60s", "longest restart delay"),
      // Sub-components: validated separately, listed so unknown-key hints know them.
      fld("source", EX_CFG_MAP, nullptr, "source component"),
      fld("transforms", EX_CFG_LIST, nullptr, "transform components"),
      fld("sink", EX_CFG_MAP, nullptr, "sink component"),
      fld("errors.dead-letter", EX_CFG_MAP, nullptr, "dead-letter sink component"),
  };
  return f;
}

const std::vector<Field>& file_fields() {
  static const std::vector<Field> f = {
      fld("plugin.path", EX_CFG_LIST, nullptr, "directories with plugin libraries"),
      fld("metrics.listen", EX_CFG_STRING, nullptr, "address:port for Prometheus metrics"),
      fld("plugin.insecure", EX_CFG_BOOL, "false",
          "load plugins from directories or files that other users can write (refused by default)"),
      fld("stage.timeout", EX_CFG_DURATION, "60s",
          "report (log and metric, naming pipeline, stage, call and record) a plugin call "
          "that has not returned after this long, and a record a sink has kept in flight "
          "this long (logged, naming sink, partition and offset); 0 = never"),
      fld("shutdown.timeout", EX_CFG_DURATION, "60s",
          "how long pipelines may take to stop after a signal or when a reload replaces "
          "them, or to close once a bounded run's input is all committed (at least 1s); past "
          "it the host prints the calls still running and exits with code 3"),
      fld("pipelines", EX_CFG_LIST, nullptr, "pipeline definitions"),
  };
  return f;
}

}  // namespace exactly::config
