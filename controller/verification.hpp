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

} // namespace gpu_partitioner::controller
