#pragma once

#include "actors/io_executor.hpp"
#include "actors/status_writer.hpp"
#include "actors/watcher.hpp"

#include <caf/all.hpp>

#include <chrono>

#include <set>
#include <string>

namespace gpu_partitioner::actors {

struct operator_settings {
  /// DCM's namespace: its pods, ConfigMaps and Events.
  std::string dcm_namespace = "kube-amd-gpu";
  /// How long after a change of DCM's config kubelet has surely delivered it to DCM's
  /// mounted file (--dcm-config-sync).
  std::chrono::milliseconds dcm_config_sync{90000};
  /// The ConfigMaps in DCM's namespace the operator may write (--dcm-configmaps); empty: any.
  std::set<std::string> dcm_configmaps;
  /// How long after the label DCM may still change a failed run's GPUs (--dcm-retry-seconds).
  std::chrono::milliseconds dcm_retry_bound{controller::dcm_retry_bound};
  /// Whether the operator's RBAC lets it delete pods (asked at start).
  bool pods_deletable = true;
  /// Where payload ConfigMaps may live (--payload-namespaces); empty: anywhere.
  std::set<std::string> payload_namespaces;
  /// Who writes (the lease holder's identity, recorded in field managers and events).
  std::string identity = "gpu-partitioner";
  /// At most one snapshot of a changed view per interval, to the plans: the first change
  /// after a quiet interval goes out at once, a burst is coalesced to the interval's end.
  std::chrono::milliseconds publish_interval{50};
};

/// The root: the Watcher's sink, and `tick_atom` to publish the view that changed.
using operator_root_actor = observation_sink::extend<caf::reacts_to<tick_atom>>;

/// The root of the operator: it gathers the Watcher's observations into the current
/// view of the cluster, publishes immutable snapshots of it, and runs one
/// PlanSupervisor per PartitioningPlan. `io` performs writes; `writer` is the
/// StatusWriter.
operator_root_actor::behavior_type operator_root(operator_root_actor::pointer self,
                                                 operator_settings settings, io_actor io,
                                                 status_writer_actor writer);

} // namespace gpu_partitioner::actors
