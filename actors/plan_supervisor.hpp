#pragma once

#include <chrono>

#include <caf/all.hpp>

#include <string>

namespace gpu_partitioner::actors {

struct plan_supervisor_config {
  std::string plan;
  std::string dcm_namespace;
  /// How long after a change of DCM's config kubelet has surely delivered it to DCM's
  /// mounted file (--dcm-config-sync).
  std::chrono::milliseconds dcm_config_sync{90000};
  std::string dcm_name;
  caf::actor io;
  caf::actor writer;
};

/// One per PartitioningPlan: resolves its node set, owns its NodePartitionings (creates,
/// updates, deletes them), runs a NodeWorker per item and the plan's RolloutGovernor,
/// and writes the plan's status.
caf::behavior plan_supervisor(caf::event_based_actor* self, plan_supervisor_config config);

/// The RolloutGovernor of one plan: grants drain tokens under the plan's limits.
caf::behavior rollout_governor_actor(caf::event_based_actor* self, std::string plan);

} // namespace gpu_partitioner::actors
