// The kafka sink's topics other than its fixed one: handles of routed topics (topic.from),
// and what the cluster says of a topic before and after it refuses records: missing,
// denied by an ACL, or with rules of its own (topic_rules.hpp).
#include "kafka_sink.hpp"

#include <algorithm>

namespace exactly::kafka {

rd_kafka_topic_t* KafkaSink::new_handle(const std::string& topic, std::string& why) {
  if (cluster_.prepare_topic) cluster_.prepare_topic(topic);
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk_, topic.c_str(), nullptr);
  if (rkt == nullptr)
    why = "kafka sink: cannot create topic handle for " + topic + ": " +
          rd_kafka_err2str(rd_kafka_last_error());
  return rkt;
}

rd_kafka_topic_t* KafkaSink::topic_handle(std::string_view topic) {
  auto it = topics_.find(topic);
  if (it != topics_.end()) return it->second;
  std::string name(topic), why;
  rd_kafka_topic_t* rkt = new_handle(name, why);
  if (rkt == nullptr) throw sdk::StatusError(sdk::Status::fatal(why));
  topics_.emplace(std::move(name), rkt);
  return rkt;
}

// A record's own topic (topic.from). A name Kafka cannot have is that record's problem:
// librdkafka gives no handle for a name over 512 bytes (which failed the sink, restarted
// into the same record for ever) and the broker refuses the others only at delivery (a
// round replayed for ever). Checked once per name, when its handle is made.
//
// A legal name of a topic the cluster does not have (a broker that does not create
// topics on first use, as production brokers are often set up) failed only at delivery
// too, 30 s later (librdkafka's topic.metadata.propagation.max.ms), and replayed the round
// for ever: the sink asks the cluster once per new name, and rejects the records of a
// topic it says it lacks, asking again after kMissingRecheckMs.
rd_kafka_topic_t* KafkaSink::routed_handle(std::string_view topic, std::string& why) {
  auto it = routed_.find(topic);
  if (it != routed_.end()) return it->second;
  std::string illegal = illegal_topic_reason(topic);
  if (!illegal.empty()) {
    why = "kafka sink: " + router_.source() + " names " + illegal;
    return nullptr;
  }
  // A dedupe changelog (this sink's, or one of exactly's default names): records routed
  // there would be read back as claims by its restores (QA: a restore skipped them
  // without a word).
  const bool default_changelog = topic.starts_with("exactly-") && topic.ends_with("-changelog");
  if (default_changelog || (changelog_ && changelog_->keeps(topic))) {
    why = "kafka sink: " + router_.source() + " names topic '" + std::string(topic) +
          "', the changelog of a stateful stage: records are not written into a changelog";
    return nullptr;
  }
  auto known_denied = denied_until_.find(topic);
  if (known_denied != denied_until_.end()) {
    if (now_ms() < known_denied->second) {
      why = denied_reason(topic);
      return nullptr;
    }
    denied_until_.erase(known_denied);
  }
  auto missing = [&] {
    why = missing_reason(topic);
    return nullptr;
  };
  auto known_missing = missing_until_.find(topic);
  if (known_missing != missing_until_.end()) {
    if (now_ms() < known_missing->second) return missing();
    missing_until_.erase(known_missing);
  }
  std::string name(topic);
  rd_kafka_topic_t* rkt = new_handle(name, why);
  if (rkt == nullptr) return nullptr;
  if (cluster_.prepare_topic || !cluster_lacks(rkt)) {
    routed_.emplace(std::move(name), rkt);
    return rkt;
  }
  rd_kafka_topic_destroy(rkt);
  remember_missing(std::move(name));
  return missing();
}

const TopicRules& KafkaSink::rules_for(std::string_view topic) {
  auto it = rules_.find(topic);
  if (it != rules_.end()) return it->second;
  TopicRules rules;
  // The embedded demo cluster has no admin API to ask. A cluster that does not answer
  // (no DescribeConfigs rights) leaves the topic without rules: the broker's refusal
  // then fails the round, as it did before the sink read them.
  if (cluster_.changelog_caveat.empty()) {
    std::map<std::string, std::string> configs;
    const std::string name(topic);
    if (describe_topic_configs(rk_, name, std::min<int64_t>(call_timeout_ms_, 5000), "describing topic " + name,
                               configs)) {
      rules = topic_rules_from(configs);
      if (rules.compacted)
        host_.info("kafka sink: topic " + name + " is compacted: a record without a key for it goes to the "
                   "error policy");
      if (rules.before_ms != TopicRules::kNoLimit || rules.after_ms != TopicRules::kNoLimit)
        host_.info("kafka sink: topic " + name + " takes CreateTimes from " +
                   (rules.before_ms == TopicRules::kNoLimit ? std::string("any time") : std::to_string(rules.before_ms) + " ms") +
                   " before the broker's clock to " +
                   (rules.after_ms == TopicRules::kNoLimit ? std::string("any time") : std::to_string(rules.after_ms) + " ms") +
                   " after it: a record outside goes to the error policy");
    }
  }
  // Records that each name another routed topic must not grow this without bound.
  if (rules_.size() >= kMissingKept) rules_.clear();
  return rules_.emplace(std::string(topic), rules).first->second;
}

sdk::Status KafkaSink::note_denied_topics() {
  std::vector<std::string> topics = take_unauthorized_topics();
  for (auto& t : dr_denied_) topics.push_back(std::move(t));
  dr_denied_.clear();
  for (const std::string& t : topics) {
    if (router_.is_fixed() && t == router_.fixed_topic()) return denied_config("topic", t);
    if (changelog_ && changelog_->keeps(t)) return denied_config("changelog.topic", t);
    if (denied_until_.size() >= kMissingKept) {
      const int64_t now = now_ms();
      std::erase_if(denied_until_, [now](const auto& d) { return d.second <= now; });
      if (denied_until_.size() >= kMissingKept) denied_until_.clear();
    }
    denied_until_.insert_or_assign(t, now_ms() + kDeniedRecheckMs);
    drop_routed(t);
    host_.warn("kafka sink: " + cluster_.display + " does not let this producer write topic '" + t +
               "' (" + router_.source() + "): its records go to the error policy for the next " +
               std::to_string(kDeniedRecheckMs / 1000) + " s, then the sink tries the topic again");
  }
  return sdk::Status::ok();
}

namespace {
std::string write_acl(const std::map<std::string, std::string>& connection, const std::string& topic) {
  return acl_command(connection, "--operation Write --operation Describe", "--topic " + topic);
}
}  // namespace

std::string KafkaSink::denied_reason(std::string_view topic) const {
  return "kafka sink: " + router_.source() + " names topic '" + std::string(topic) + "', which " +
         cluster_.display + " does not let this producer write (TOPIC_AUTHORIZATION_FAILED: an ACL; " +
         write_acl(connection_, std::string(topic)) + ")";
}

sdk::Status KafkaSink::denied_config(const std::string& key, const std::string& topic) const {
  return sdk::Status::config(key, "kafka sink: " + cluster_.display + " does not let this producer write topic " +
                                      topic + " (TOPIC_AUTHORIZATION_FAILED: an ACL denies it, or grants it "
                                      "nothing); no round can commit. Fix: " + write_acl(connection_, topic));
}

std::string KafkaSink::missing_reason(std::string_view topic) const {
  return "kafka sink: " + router_.source() + " names topic '" + std::string(topic) + "', which " +
         cluster_.display + " does not have (and does not create on first use)";
}

void KafkaSink::remember_missing(std::string name) {
  // Records that each name another missing topic must not grow this without bound.
  if (missing_until_.size() >= kMissingKept) {
    const int64_t now = now_ms();
    std::erase_if(missing_until_, [now](const auto& m) { return m.second <= now; });
    if (missing_until_.size() >= kMissingKept) missing_until_.clear();  // asked again
  }
  missing_until_.insert_or_assign(std::move(name), now_ms() + kMissingRecheckMs);
}

// librdkafka refused a routed record as an unknown topic: it learnt that before the
// cluster's answer to the sink did (a deleted topic that the broker the sink asked still
// listed). The same outcome as a topic the cluster says it lacks.
std::string KafkaSink::refuse_unknown_routed(std::string_view topic) {
  drop_routed(topic);
  remember_missing(std::string(topic));
  return missing_reason(topic);
}

bool KafkaSink::drop_routed(std::string_view topic) {
  auto it = routed_.find(topic);
  if (it == routed_.end()) return false;
  rd_kafka_topic_destroy(it->second);
  routed_.erase(it);
  return true;
}

void KafkaSink::forget_vanished_topics() {
  for (const std::string& name : vanished_)
    if (drop_routed(name))
      host_.warn("kafka sink: topic '" + name + "' (" + router_.source() +
                 ") failed delivery as unknown to " + cluster_.display +
                 "; the cluster is asked again before its next record");
  vanished_.clear();
}

bool KafkaSink::cluster_lacks(rd_kafka_topic_t* rkt) {
  // Asking for the one topic lets a broker that creates topics on first use create it
  // now (as the first record would), so "unknown" means the cluster will not have it.
  const rd_kafka_metadata_t* md = nullptr;
  const rd_kafka_resp_err_t err =
      rd_kafka_metadata(rk_, 0, rkt, &md, static_cast<int>(std::min<int64_t>(call_timeout_ms_, 5000)));
  const bool lacks = err == RD_KAFKA_RESP_ERR_NO_ERROR && md != nullptr && md->topic_cnt == 1 &&
                     md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
  if (md != nullptr) rd_kafka_metadata_destroy(md);
  return lacks;
}

std::string KafkaSink::partition_count_text(const std::string& topic) {
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk_, topic.c_str(), nullptr);
  if (rkt == nullptr) return "fewer partitions";
  const rd_kafka_metadata_t* md = nullptr;
  const rd_kafka_resp_err_t err =
      rd_kafka_metadata(rk_, 0, rkt, &md, static_cast<int>(std::min<int64_t>(call_timeout_ms_, 5000)));
  std::string out = "fewer partitions";
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR && md != nullptr && md->topic_cnt == 1 &&
      md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR)
    out = std::to_string(md->topics[0].partition_cnt) + " partition(s)";
  if (md != nullptr) rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(rkt);
  return out;
}

}  // namespace exactly::kafka
