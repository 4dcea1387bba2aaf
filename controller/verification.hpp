#pragma once

// After DCM: whether the node shows what its profile expects (DESIGN.md section 4,
// verification).

#include "controller/node_machine.hpp"

#include <string>

namespace gpu_partitioner::controller {

/// Why the node does not verify yet ("expected amd.com/gpu=63, found 64"; gaps joined by
/// "; "); empty when it does: the ready labels named, the expected allocatable resources,
/// the labeller's partition style where the node has it, the plugin's resources.
std::string verification_gap(const node_inputs& in);

/// The node already has the target partitioning and is in service: profile label, DCM's
/// success, nothing missing to verify, and no taint, cordon or DeviceTaintRule of ours.
bool in_target_state(const node_inputs& in);

/// The profile's payload is no longer the one the node's last run (recorded in `st`) gave
/// DCM or was to give: a payload is part of what a run is, so an edit of its ConfigMap is a
/// new run, never a silent one. Unknown either way (no payload now, or a run from before
/// payloads were recorded) is no change.
bool payload_changed(const node_inputs& in, const protocol::node_partitioning_status& st);

} // namespace gpu_partitioner::controller
