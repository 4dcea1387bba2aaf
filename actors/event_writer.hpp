#pragma once

#include "actors/io_executor.hpp"
#include "actors/messages.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <memory>
#include <string>

namespace gpu_partitioner::actors {

/// An Event writer: records the Events it is sent.
using event_writer_actor = caf::typed_actor<caf::reacts_to<event_atom, event_io>>;

/// How many Events may wait for one writer (those being written included) before the
/// next Normal one is dropped; a Warning is dropped only when twice as many wait. Events
/// go in the lowest lane and one at a time: when the API server is slow, a rollout makes
/// them faster than a writer records them, and without a bound they would wait, in
/// memory, for many minutes and arrive long after what they tell of (client-go's
/// recorder keeps at most 1,000 and drops the rest alike).
inline constexpr int event_backlog_limit = 512;

/// Whether an Event of `type` joins a writer's backlog of `waiting`.
inline bool event_admitted(int waiting, const std::string& type) {
  return waiting < (type == "Warning" ? 2 * event_backlog_limit : event_backlog_limit);
}

/// The Events waiting for one writer: the sender counts one in, the writer one out once
/// it has recorded it (or failed to).
using event_backlog = std::shared_ptr<std::atomic<int>>;

/// Records Events (aggregated: a repeat of one written in the last ten minutes raises its
/// count) on a connection of its own (spawn it detached), so that a burst of them never
/// holds up a status write. It remembers the latest 1,024 it wrote: one that recurs (a
/// drain blocked, retried every 5 s) stays remembered, as each repeat makes it the
/// newest, while a rollout's own Events, which never repeat, are let go.
event_writer_actor::behavior_type event_writer(event_writer_actor::pointer self, io_config config,
                                               event_backlog backlog);

} // namespace gpu_partitioner::actors
