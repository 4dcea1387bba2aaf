#pragma once

// Before a node is disturbed: everything that would make its run fail, found while it is
// still in service (DESIGN.md section 4, preflight).

#include "controller/finding.hpp"
#include "controller/node_machine.hpp"

#include <string>
#include <vector>

namespace gpu_partitioner::controller {

/// Preflight findings (ProfileNotFound, PayloadInvalid, ...); empty when the node may
/// start. Some are checked only before a run (ready labels, DCM's pod): during one, the
/// taint takes the labels and pods of a node's GPU stack off.
std::vector<finding> preflight(const node_inputs& in);

/// DCMProfileNameConflict: `rival` gives the profile's DCM name another payload.
finding rival_finding(const resolved_profile& profile, const std::string& rival);

/// DCMProfileInUse: writing the profile's payload would change what DCM's config holds
/// under a name the nodes in `in.dcm_name_holders` carry.
finding holders_finding(const node_inputs& in);

} // namespace gpu_partitioner::controller
