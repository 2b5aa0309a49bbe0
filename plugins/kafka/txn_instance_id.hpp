// The default transactional.id is "exactly-<pipeline>-<instance id>". The instance id is
// made once and kept in the state dir, so a restarted host reuses the same id: its
// init_transactions then fences the dead instance and aborts its open transaction at
// once, instead of leaving read_committed readers stalled until the transaction times out.
#pragma once

#include <string>

namespace exactly::kafka {

// Reads (or creates) the instance id for `pipeline` under `state_dir`; throws
// ConfigError("state.dir", ...) when the directory cannot be used.
std::string txn_instance_id(const std::string& state_dir, const std::string& pipeline);
// The file that keeps that instance id: <state.dir>/kafka-sink/<pipeline>.instance-id.
std::string instance_id_path(const std::string& state_dir, const std::string& pipeline);

// "exactly-<pipeline>-<instance id>" with the pipeline name made safe for an id.
std::string default_transactional_id(const std::string& pipeline, const std::string& instance);

}  // namespace exactly::kafka
