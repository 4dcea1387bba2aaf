#pragma once

// What a run under a plan's desired state would do to each of its nodes, for choosing the
// canary: worked out from the plan, the profiles and the nodes as the view shows them, not
// from the nodes' items, which lag a spec change by a write and a watch event.

#include "controller/cluster_view.hpp"
#include "controller/node_inputs.hpp"
#include "controller/plan_resolution.hpp"
#include "controller/rollout_gate.hpp"
#include "protocol/partitioning_plan.hpp"
#include "protocol/timestamp.hpp"

#include <map>
#include <string>

namespace gpu_partitioner::controller {

/// Answers gate_inputs::need for one plan and view.
class canary_needs {
public:
  canary_needs(const protocol::partitioning_plan& plan, const cluster_view& view,
               const dcm_settings& dcm, protocol::wall_clock::time_point now);

  /// A node needs a change unless it already runs the profile the plan names for it (and
  /// DCM last got that profile's payload for it). It is blocked while it is not Ready,
  /// preflight finds something in its way, or it failed under this desired state and waits
  /// for a retry.
  node_need operator()(const selected_node& sel);

private:
  const protocol::partitioning_plan& plan_;
  const cluster_view& view_;
  view_slicer slicer_;
  protocol::wall_clock::time_point now_;
  std::map<std::string, std::string> hashes_;
};

} // namespace gpu_partitioner::controller
