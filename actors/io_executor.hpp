#pragma once

#include "controller/observed.hpp"
#include "kube/client.hpp"
#include "kube/config.hpp"

#include <caf/all.hpp>

#include <string>
#include <vector>

namespace gpu_partitioner::actors {

struct io_config {
  kube::connection_config connection;
  /// Recorded as the field manager of our writes.
  std::string field_manager = "gpu-partitioner";
  /// The lease holder's identity, so each write can be traced to one replica.
  std::string identity;
};

/// A blocking writer on its own thread and connection (spawn it detached, several in a
/// pool): performs a node step's writes in order (node patch, taint, evictions, DCM's
/// ConfigMap, item metadata) and the supervisors' item writes, and answers with what
/// happened.
caf::behavior io_executor(caf::event_based_actor* self, io_config config);

/// The check before the taint that ends a drain: the pods on `node` that the taint would
/// remove, listed by the API server now (not as a watch shows them). "" when there are
/// none; else which they are, or why they could not be listed: the taint waits.
std::string pods_left_on_node(kube::client& api, const std::string& node);

/// Before evicting a pod again that the watch still shows after an eviction: why asking
/// again would be needless, read from the API server ("gone", "already being deleted",
/// or "" when the pod of that uid is there and not being deleted, or the read failed).
std::string removal_needless(kube::client& api, const std::string& ns, const std::string& name,
                             const std::string& uid);

/// Adds (`add`) or removes amd-dcm=up:NoExecute on `node`. The taints have no merge key,
/// so the list is replaced whole under a test of the resourceVersion it was read at; a
/// failed test (someone else wrote) reads the node and tries again, up to five times.
/// With `known` (the node as the caller saw it) and the taint to change there, the first
/// try is made on that version without a read. Answers with the Node as written, or as
/// read when there was nothing to change.
kube::result<rapidjson::Document> set_dcm_taint(kube::client& api, const std::string& node,
                                                bool add, const controller::node_info* known,
                                                const kube::patch_options& manager);

/// A pool of io_executors (linked: they go when it goes) that hands each request to an
/// executor with nothing to do, or, when all are busy, to the first to finish, in the
/// order the requests came. (CAF's round-robin pool queued a write behind a slow one on
/// a busy connection while others were idle.)
caf::behavior io_pool(caf::event_based_actor* self, std::vector<caf::actor> executors);

/// The io handle the workers and supervisors use: hands node steps that evict or delete
/// pods to `evictions`, the supervisors' writes of NodePartitionings to `items`, and every
/// other node step to `writes` (each a pool of io_executors). The short writes a rollout
/// waits on (cordon, taint, label, untaint, uncordon) then never queue behind evictions,
/// which the API server may hold for 500 ms on a PDB conflict, nor behind the thousand
/// creates that start a plan of a thousand nodes. A step that only evicts or deletes pods
/// goes out as one request per pod, side by side, and is answered once, with every pod's
/// outcome. Linked to the pools: they go when it goes.
caf::behavior io_router(caf::event_based_actor* self, caf::actor writes, caf::actor evictions,
                        caf::actor items);

/// Coalesces status writes per object (the latest within a short window wins), writes
/// them through the status subresource, and records Events (aggregated). Routes each
/// object to one of eight detached status writers and its Events to one of two event
/// writers, each with a connection of its own: an object's writes stay in order, and a
/// burst (fifty nodes at once) is written side by side.
/// `persist_atom, item, status` writes an item's status at once (replacing what is pending
/// for it) and answers "" or the error: a worker persists the phase it entered before it
/// changes the node, so a restarted operator finds the run where the node is. Both come
/// at high priority (a persist goes ahead of queued flushes): an item's statuses then
/// arrive in the order they were sent, and none older is written after a persist.
caf::behavior status_writer(caf::event_based_actor* self, io_config config);

} // namespace gpu_partitioner::actors
