#pragma once

// What a NodeWorker makes of a step for others: its writes for the executor, the metrics
// and log line of a new status, and the Events the step records.

#include "actors/messages.hpp"
#include "controller/node_machine.hpp"

#include <optional>
#include <string>

namespace gpu_partitioner::actors {

/// Publishes a new status of the item of `plan` on `node`: the drain's blocked-pod gauge,
/// a transition and the time spent in the phase left when the phase changed from
/// `previous`, and a log line naming the phase entered (or "status updated").
void report_status(const std::string& plan, const std::string& node,
                   const std::optional<protocol::node_phase>& previous,
                   const protocol::node_partitioning_status& status);

/// A step's writes as the executor takes them, for `item`.
node_io writes_of(const std::string& item, const controller::node_step& out,
                  const controller::node_inputs& in);
/// Whether `io` writes anything.
bool any_write(const node_io& io);

/// A step's Event as the Event writer takes it: on the Node, or on the item.
event_io event_of(const controller::event_record& e, const controller::node_inputs& in);

} // namespace gpu_partitioner::actors
