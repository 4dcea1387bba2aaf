#pragma once

// In what order one step's writes go: the item's status, the node's changes, the token.
// A restarted operator reads the item's status and the node as they were written, so the
// status that decided a node change must be on record first, unless what is on record
// already leads the machine to the same change; and a run's end must be on record before
// its token goes to the next node.

#include "controller/node_machine.hpp"
#include "controller/rollout_governor.hpp"
#include "protocol/node_partitioning.hpp"

#include <optional>
#include <string>

namespace gpu_partitioner::controller {

/// A run's phase as the item's status records it, "<Phase>@<startedAt>": what a restarted
/// operator would read, compared with what the worker knows is written.
std::string phase_record(protocol::node_phase phase, const std::string& started_at);
std::string phase_record(const protocol::node_partitioning_status& status);

struct write_order {
  /// Write the status first, then the node's changes (node patch, taint, evictions,
  /// DCM's config).
  bool status_first = false;
  /// The run ended and gives its token back: the governor hears only once the status
  /// that ends it is written.
  bool release_after_status = false;
};

/// `status`: the item's status after the step; `written`: the phase_record known written
/// ("" if none); `holds_run`: the worker holds a token, or the record shows the run in
/// flight.
write_order order_writes(const node_step& out,
                         const std::optional<protocol::node_partitioning_status>& status,
                         const std::string& written, bool holds_run);

/// Whether `next` may wait a few seconds to be written, coalesced with what follows: it
/// only brings the conditions or the drain's progress up to date, in the same phase of the
/// same run as `before` (the item's last status sent). Nothing decides on those fields
/// alone, and a restarted operator derives them again from what it observes; a phase, a
/// run, an error or DCM's record changing is written at once.
bool status_may_wait(const protocol::node_partitioning_status& before,
                     const protocol::node_partitioning_status& next);

/// What the governor is told of the node after a step: in flight, asking to start, Failed
/// (as the item was and stays, or becomes), or unavailable (cordoned or NotReady).
governor_node governor_facts(const node_inputs& in, const node_step& out);

} // namespace gpu_partitioner::controller
