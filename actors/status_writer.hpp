#pragma once

#include "actors/io_executor.hpp"
#include "actors/messages.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace gpu_partitioner::actors {

/// The StatusWriter: statuses of items (`status_atom`, coalesced; `status_atom, later_atom`,
/// coalesced over status_settle_window; `persist_atom`, written at once and answered with
/// "" or the error), statuses of plans, Events, and, as the operator stops,
/// `flush_atom, stop_atom`: everything pending written, then `true`.
using status_writer_actor = caf::typed_actor<
    caf::reacts_to<status_atom, std::string, protocol::node_partitioning_status>,
    caf::reacts_to<status_atom, later_atom, std::string, protocol::node_partitioning_status>,
    caf::replies_to<persist_atom, std::string,
                    protocol::node_partitioning_status>::with<std::string>,
    caf::reacts_to<plan_status_atom, std::string, protocol::partitioning_plan_status>,
    caf::reacts_to<event_atom, event_io>, caf::replies_to<flush_atom, stop_atom>::with<bool>>;

/// How long an item's status that may wait (controller::status_may_wait: conditions and
/// drain progress within a phase) is held for what follows it. A drain's conditions move
/// several times in its first seconds (the pods to evict, the evictions answered, the pods
/// gone, the taint): held this long, they are one write, or none when the next phase's
/// status replaces them first.
constexpr std::chrono::milliseconds status_settle_window{5000};

/// Coalesces status writes per object (the latest within a short window wins), writes
/// them through the status subresource, and records Events (aggregated). Routes each
/// object to one of 32 detached status writers and its Events to one of two event
/// writers, each with a connection of its own: an object's writes stay in order, and a
/// burst (fifty nodes at once) is written side by side.
/// A persist replaces what is pending for the item: a worker persists the phase it entered
/// before it changes the node, so a restarted operator finds the run where the node is.
/// Statuses and persists come at high priority (a persist goes ahead of queued flushes):
/// an item's statuses then arrive in the order they were sent, and none older is written
/// after a persist.
status_writer_actor::behavior_type status_writer(status_writer_actor::pointer self,
                                                 io_config config);

/// Run by a status writer on its own thread just before it writes the status of the
/// object `name`; `waiting()` counts the messages queued at that writer meanwhile. A test
/// holds a write here until a worker's messages wait behind it, so that the order they are
/// handled in is the writer's and not the scheduler's.
using status_write_hook =
    std::function<void(const std::string& name, const std::function<std::size_t()>& waiting)>;

/// status_writer with `before_write` run before each status write (the operator runs none).
status_writer_actor::behavior_type hooked_status_writer(status_writer_actor::pointer self,
                                                        io_config config,
                                                        status_write_hook before_write);

} // namespace gpu_partitioner::actors
