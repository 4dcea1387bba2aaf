#pragma once

#include "kube/config.hpp"

#include <caf/all.hpp>

#include <string>

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

/// Coalesces status writes per object (the latest within a short window wins), writes
/// them through the status subresource, and records Events (aggregated). Spawn detached.
/// `persist_atom, item, status` writes an item's status at once (replacing what is pending
/// for it) and answers "" or the error: a worker persists the phase it entered before it
/// changes the node, so a restarted operator finds the run where the node is.
caf::behavior status_writer(caf::event_based_actor* self, io_config config);

} // namespace gpu_partitioner::actors
