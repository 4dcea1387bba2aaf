#pragma once

#include "actors/io_executor.hpp"
#include "actors/messages.hpp"

#include <caf/all.hpp>

namespace gpu_partitioner::actors {

/// An Event writer: records the Events it is sent.
using event_writer_actor = caf::typed_actor<caf::reacts_to<event_atom, event_io>>;

/// Records Events (aggregated: a repeat of one written in the last ten minutes raises its
/// count) on a connection of its own (spawn it detached), so that a burst of them never
/// holds up a status write. It remembers the latest 1,024 it wrote: one that recurs (a
/// drain blocked, retried every 5 s) stays remembered, as each repeat makes it the
/// newest, while a rollout's own Events, which never repeat, are let go.
event_writer_actor::behavior_type event_writer(event_writer_actor::pointer self, io_config config);

} // namespace gpu_partitioner::actors
