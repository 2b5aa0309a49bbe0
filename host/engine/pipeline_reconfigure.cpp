// Hot reload in place: new parameters handed to the running plugin objects between
// rounds, or a restart when one of them cannot take them.
#include "engine/pipeline_instance.hpp"

#include "util/log.hpp"

namespace exactly::engine {

std::future<bool> Pipeline::request_reconfigure(const config::PipelineSpec& next) {
  std::lock_guard<std::mutex> g(reconf_mu_);
  if (reconf_done_) reconf_done_->set_value(false);  // superseded
  if (!in_rounds_) {
    reconf_done_.reset();
    reconf_spec_.reset();
    std::promise<bool> no;
    no.set_value(false);
    return no.get_future();
  }
  reconf_spec_ = next;
  reconf_done_.emplace();
  return reconf_done_->get_future();
}

void Pipeline::withdraw_reconfigure() {
  std::lock_guard<std::mutex> g(reconf_mu_);
  if (!reconf_done_) return;
  reconf_done_->set_value(false);
  reconf_done_.reset();
  reconf_spec_.reset();
}

void Pipeline::apply_reconfigure(Instance& in) {
  std::lock_guard<std::mutex> g(reconf_mu_);
  if (!reconf_spec_) return;
  const config::PipelineSpec& next = *reconf_spec_;
  const auto& stages = in.tasks[0].transforms;  // every task has the same stages
  bool ok = next.transforms.size() == stages.size();
  auto refuse = [&](const std::string& id, const Outcome& o) {
    log::info("pipeline:" + spec_.name, "{} cannot change in place ({}); restarting instead", id,
              o.message);
    ok = false;
  };
  for (size_t i = 0; ok && i < stages.size(); ++i) {
    if (next.transforms[i].fingerprint() == stages[i]->spec().fingerprint()) continue;
    for (auto& task : in.tasks) {
      Outcome o = task.transforms[i]->reconfigure(next.transforms[i]);
      if (!o.ok()) {
        refuse(task.transforms[i]->id(), o);
        break;
      }
    }
  }
  if (ok && next.source.fingerprint() != in.source->spec().fingerprint()) {
    Outcome o = in.source->reconfigure(next.source);
    if (!o.ok()) refuse(in.source->id(), o);
  }
  if (ok && next.sink.fingerprint() != in.sink->spec().fingerprint()) {
    Outcome o = in.sink->reconfigure(next.sink);
    if (!o.ok()) refuse(in.sink->id(), o);
  }
  if (ok) {
    spec_ = next;
    log::info("pipeline:" + spec_.name, "transform parameters changed in place");
  }
  reconf_done_->set_value(ok);
  reconf_done_.reset();
  reconf_spec_.reset();
}

void Pipeline::decline_reconfigure(const char* why) {
  std::lock_guard<std::mutex> g(reconf_mu_);
  if (!reconf_spec_) return;
  log::info("pipeline:" + spec_.name, "cannot change in place while {}; restarting instead", why);
  reconf_done_->set_value(false);
  reconf_done_.reset();
  reconf_spec_.reset();
}

}  // namespace exactly::engine
