#pragma once

// A node's soak: after it succeeded, how long it must stay verified and healthy before
// the rollout counts it done (spec.soakSeconds), and what counts as unhealthy. The node
// machine watches its own node; the canary gate reads the result from its status.

#include "controller/finding.hpp"
#include "controller/node_machine.hpp"

#include <optional>

namespace gpu_partitioner::controller {

/// A GPU pod on the node in CrashLoopBackOff with this many restarts fails a soak.
inline constexpr int soak_crash_restarts = 3;

/// What fails a soak now, or an empty finding: the node not Ready, the verification no
/// longer holding (labels, allocatable), a pod holding GPUs (or the device plugin)
/// crash-looping, DCM's state label at failure, or a DCM Event that is not a success and
/// is newer, by DCM's own clock (the node's), than `dcm_events_until` (the run's mark at
/// DCM's answer: someone asked DCM again, or it failed). Without a mark DCM's Events are
/// not read; its state label still is.
finding soak_problem(const node_inputs& in,
                     std::optional<protocol::wall_clock::time_point> dcm_events_until);

/// When the soak of the node's latest success ends: its completion plus spec.soakSeconds,
/// if the success came from a run (or a retry after a failure); nullopt when the node has
/// nothing to soak (no soak asked, not Succeeded, or already in the target state when the
/// plan found it).
std::optional<protocol::wall_clock::time_point> soak_end(const protocol::node_partitioning& item);

} // namespace gpu_partitioner::controller
