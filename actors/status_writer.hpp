#pragma once

#include "actors/io_executor.hpp"

#include <caf/all.hpp>

namespace gpu_partitioner::actors {

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
