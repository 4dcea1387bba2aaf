#pragma once

#include "actors/io_executor.hpp"
#include "actors/messages.hpp"
#include "actors/rollout_governor.hpp"
#include "actors/status_writer.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <set>

#include <string>

namespace gpu_partitioner::actors {

struct plan_supervisor_config {
  std::string plan;
  std::string dcm_namespace;
  /// How long after a change of DCM's config kubelet has surely delivered it to DCM's
  /// mounted file (--dcm-config-sync).
  std::chrono::milliseconds dcm_config_sync{90000};
  std::set<std::string> dcm_configmaps;
  std::chrono::milliseconds dcm_retry_bound{controller::dcm_retry_bound};
  io_actor io;
  status_writer_actor writer;
};

/// A PlanSupervisor: the views of the cluster (`view_atom`), and `tick_atom` to look at
/// the latest again after an item write failed.
using plan_supervisor_actor =
    caf::typed_actor<caf::reacts_to<view_atom, snapshot_ptr>, caf::reacts_to<tick_atom>>;

/// One per PartitioningPlan: resolves its node set, owns its NodePartitionings (creates,
/// updates, deletes them), runs a NodeWorker per item and the plan's RolloutGovernor,
/// and writes the plan's status.
plan_supervisor_actor::behavior_type plan_supervisor(plan_supervisor_actor::pointer self,
                                                     plan_supervisor_config config);

} // namespace gpu_partitioner::actors
