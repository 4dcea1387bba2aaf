#pragma once

#include "kube/config.hpp"

#include <caf/all.hpp>

#include <string>

namespace gpu_partitioner::actors {

struct watcher_config {
  kube::connection_config connection;
  /// Every observation and sync notice goes here.
  caf::actor sink;
  /// DCM's ConfigMap, the one ConfigMap watched from the start.
  std::string dcm_namespace;
  std::string dcm_name;
};

/// The Watcher: list+watch streams of Nodes, Pods (bound to nodes), PDBs, DCM's ConfigMap,
/// PartitioningPlans, PartitioningProfiles, NodePartitionings and DCM's Events, each on
/// its own thread and connection, turned into `observation` messages for `sink` (and
/// `synced_atom` once each has listed). The ConfigMaps the profiles name as payloads are
/// watched one by one as the profiles come and go (`listed_atom` once each has listed,
/// and a deletion when none names it any more). Aborted within a second when the actor
/// exits.
caf::behavior watcher(caf::event_based_actor* self, watcher_config config);

} // namespace gpu_partitioner::actors
