#pragma once

// DESIGN.md section 5: which nodes a plan selects, with which profile, and which it must
// leave alone.

#include "controller/observed.hpp"
#include "controller/plan_selections.hpp"
#include "controller/shared_map.hpp"
#include "protocol/partitioning_plan.hpp"

#include <map>
#include <memory>
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
  /// none of them is touched. The first conflicts_limit by name, each naming the first
  /// few entries or plans that select it; `conflict_count` counts them all. A plan that
  /// every other plan overlaps so stays small, in memory and in its status.
  std::vector<protocol::node_conflict> conflicts;
  std::size_t conflict_count = 0;
  /// Problems with the plan itself that stop it from acting at all.
  std::vector<std::string> problems;
  /// Entries that select no node ("spec.partitionings[0] (training) selects no node").
  std::vector<std::string> unmatched;
};

/// The longest object name Kubernetes accepts; a NodePartitioning is named <plan>-<node>
/// (controller/item_name.hpp).
inline constexpr std::size_t max_object_name = 253;

/// Resolves `plan` against the observed nodes and every other plan. Control-plane nodes
/// are never selected; `exclude` removes nodes; an entry with an empty selector is a
/// problem (it would select every node), not a wildcard, as are selectors, labels and
/// resource names Kubernetes would refuse, and nodes whose item name would be too long.
/// Plans being deleted still claim their nodes until they are gone. A node in flight for
/// one plan (`in_flight`: node -> that plan's name) stays with it until it lands: another
/// plan selecting it then sees a conflict instead of taking it away mid-change.
///
/// `selections` says which plans select each node (select_nodes over every plan): the
/// operator works it out once per view for all its plans. It may hold `plan` itself.
plan_resolution resolve_plan(const protocol::partitioning_plan& plan,
                             const plan_selections& selections, const shared_map<node_info>& nodes,
                             const std::map<std::string, std::string>& in_flight = {});

/// The same against `other_plans` (those named as `plan` are skipped).
plan_resolution resolve_plan(const protocol::partitioning_plan& plan,
                             const std::vector<protocol::partitioning_plan>& other_plans,
                             const shared_map<node_info>& nodes,
                             const std::map<std::string, std::string>& in_flight = {});

} // namespace gpu_partitioner::controller
