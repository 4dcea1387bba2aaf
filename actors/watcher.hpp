#pragma once

#include "kube/config.hpp"

#include <caf/all.hpp>

#include <string>

namespace gpu_partitioner::actors {

struct watcher_config {
  kube::connection_config connection;
  /// Every observation and sync notice goes here.
  caf::actor sink;
};

/// The Watcher: list+watch streams of Nodes, Pods (bound to nodes), PDBs, ConfigMaps,
/// PartitioningPlans, PartitioningProfiles and NodePartitionings, each on its own thread
/// and connection, turned into `observation` messages for `sink` (and `synced_atom` once
/// each has listed). Aborted within a second when the actor exits.
caf::behavior watcher(caf::event_based_actor* self, watcher_config config);

} // namespace gpu_partitioner::actors
