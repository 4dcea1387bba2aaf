#pragma once

// DESIGN.md section 5: which nodes a plan selects, with which profile, and which it must
// leave alone.

#include "controller/observed.hpp"
#include "protocol/partitioning_plan.hpp"

#include <map>
#include <string>
#include <vector>

namespace gpu_partitioner::controller {

struct selected_node {
  std::string node;
  /// The partitionings entry that selected it.
  std::string entry;
  std::string profile;
};

struct plan_resolution {
  /// In rollout order (by node name).
  std::vector<selected_node> selected;
  /// Nodes selected twice (by two entries of this plan, or by this and another plan):
  /// none of them is touched.
  std::vector<protocol::node_conflict> conflicts;
  /// Problems with the plan itself that stop it from acting at all.
  std::vector<std::string> problems;
};

/// Resolves `plan` against the observed nodes and every other plan. Control-plane nodes
/// are never selected; `exclude` removes nodes; an entry with an empty selector is a
/// problem (it would select every node), not a wildcard. Plans being deleted still
/// claim their nodes until they are gone.
plan_resolution resolve_plan(const protocol::partitioning_plan& plan,
                             const std::vector<protocol::partitioning_plan>& other_plans,
                             const std::map<std::string, node_info>& nodes);

} // namespace gpu_partitioner::controller
