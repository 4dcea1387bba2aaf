#pragma once

#include <chrono>

#include <caf/all.hpp>

#include <string>

namespace gpu_partitioner::actors {

struct operator_settings {
  /// DCM's config ConfigMap.
  std::string dcm_namespace = "kube-amd-gpu";
  /// How long after a change of DCM's config kubelet has surely delivered it to DCM's
  /// mounted file (--dcm-config-sync).
  std::chrono::milliseconds dcm_config_sync{90000};
  std::string dcm_name = "default-dcm-config";
  /// Who writes (the lease holder's identity, recorded in field managers and events).
  std::string identity = "gpu-partitioner";
  /// At most one snapshot of a changed view per interval, to the plans: the first change
  /// after a quiet interval goes out at once, a burst is coalesced to the interval's end.
  std::chrono::milliseconds publish_interval{50};
};

/// The root of the operator: it gathers the Watcher's observations into the current
/// view of the cluster, publishes immutable snapshots of it, and runs one
/// PlanSupervisor per PartitioningPlan. `io` performs writes; `writer` is the
/// StatusWriter.
caf::behavior operator_root(caf::event_based_actor* self, operator_settings settings, caf::actor io,
                            caf::actor writer);

} // namespace gpu_partitioner::actors
