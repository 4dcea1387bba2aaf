#pragma once

#include "actors/messages.hpp"
#include "kube/config.hpp"

#include <caf/all.hpp>

#include <set>
#include <string>

namespace gpu_partitioner::actors {

/// What the Watcher tells its sink: each change it observes, that a resource has listed
/// (`synced_atom`, with its plural; and `false` when the API server does not serve it, then
/// `true` if it was a 403, the operator not allowed to list it), and that a
/// payload ConfigMap's stream has listed, or was closed (`listed_atom`, namespace/name, true or
/// false).
using observation_sink = caf::typed_actor<caf::reacts_to<observe_atom, observation>,
                                          caf::reacts_to<synced_atom, std::string>,
                                          caf::reacts_to<synced_atom, std::string, bool, bool>,
                                          caf::reacts_to<listed_atom, std::string, bool>>;

/// The Watcher hears of each profile's payload reference (`payload_atom`, the profile's
/// name and namespace/name of its ConfigMap, "" once none).
using watcher_actor = caf::typed_actor<caf::reacts_to<payload_atom, std::string, std::string>>;

struct watcher_config {
  kube::connection_config connection;
  /// Every observation and sync notice goes here.
  observation_sink sink;
  /// DCM's namespace: every ConfigMap there is watched from the start (which one a node's
  /// DCM reads is its pod's).
  std::string dcm_namespace;
  /// Payload ConfigMaps elsewhere are not watched (the profile is reported instead); empty:
  /// anywhere.
  std::set<std::string> payload_namespaces;
};

/// The Watcher: list+watch streams of Nodes, Pods (bound to nodes), PDBs, DCM's ConfigMap,
/// PartitioningPlans, PartitioningProfiles, NodePartitionings and DCM's Events, each on
/// its own thread and connection, turned into `observation` messages for `sink` (and
/// `synced_atom` once each has listed). The ConfigMaps the profiles name as payloads are
/// watched one by one as the profiles come and go (`listed_atom` once each has listed,
/// and a deletion when none names it any more). Aborted within a second when the actor
/// exits.
watcher_actor::behavior_type watcher(watcher_actor::pointer self, watcher_config config);

} // namespace gpu_partitioner::actors
