#pragma once

#include "actors/messages.hpp"
#include "controller/observed.hpp"
#include "kube/client.hpp"
#include "kube/config.hpp"

#include <caf/all.hpp>

#include <memory>
#include <string>
#include <vector>

namespace gpu_partitioner::actors {

struct io_config {
  kube::connection_config connection;
  /// Recorded as the field manager of our writes.
  std::string field_manager = "gpu-partitioner";
  /// The lease holder's identity, so each write can be traced to one replica.
  std::string identity;
  /// The Events' own token bucket (null: they take the connection's, in its lowest lane).
  /// A bucket of their own, as a controller-runtime recorder's client has, keeps them
  /// from taking the tokens a node's step waits for, and from starving while a rollout
  /// uses every token: an Event tells of now, and one that waited minutes is dropped.
  std::shared_ptr<kube::rate_limiter> event_limiter;
};

/// Every io handle (an executor, a pool of them, the router): a node step's writes,
/// answered with what happened, and a supervisor's write of a NodePartitioning, answered
/// with "" or the error.
using io_actor = caf::typed_actor<caf::replies_to<io_atom, node_io>::with<node_io_result>,
                                  caf::replies_to<io_atom, item_io>::with<std::string>>;

/// A blocking writer on its own thread and connection (spawn it detached, several in a
/// pool): performs a node step's writes in order (node patch, taint, evictions, DCM's
/// ConfigMap, item metadata) and the supervisors' item writes, and answers with what
/// happened.
io_actor::behavior_type io_executor(io_actor::pointer self, io_config config);

/// The check before the taint that ends a drain: the pods on `node` that the taint would
/// remove, listed by the API server now (not as a watch shows them). "" when there are
/// none; else which they are, or why they could not be listed: the taint waits.
std::string pods_left_on_node(kube::client& api, const std::string& node,
                              const std::vector<std::string>& ignored = {});

/// Before evicting a pod again that the watch still shows after an eviction: why asking
/// again would be needless, read from the API server ("gone", "already being deleted",
/// or "" when the pod of that uid is there and not being deleted, or the read failed).
std::string removal_needless(kube::client& api, const std::string& ns, const std::string& name,
                             const std::string& uid);

/// Adds (`add`) or removes amd-dcm=up:NoExecute on `node`. The taints have no merge key,
/// so the list is replaced whole under a test of the resourceVersion it was read at; a
/// failed test (someone else wrote) reads the node and tries again (kube/optimistic.hpp).
/// With `known` (the node as the caller saw it) and the taint to change there, the first
/// try is made on that version without a read. Answers with the Node as written, or as
/// read when there was nothing to change.
kube::result<rapidjson::Document> set_dcm_taint(kube::client& api, const std::string& node,
                                                bool add, const controller::node_info* known,
                                                const kube::patch_options& manager);

} // namespace gpu_partitioner::actors
