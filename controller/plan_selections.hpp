#pragma once

// Which plans select each node: worked out once per view for every plan and node, since a
// plan's conflicts are the other plans selecting its nodes (DESIGN.md section 5).

#include "controller/observed.hpp"
#include "controller/shared_map.hpp"
#include "protocol/partitioning_plan.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gpu_partitioner::controller {

/// The entries of `plan` that select `node`: their selector matches and their exclude
/// does not. An empty selector selects nothing (resolve_plan reports it). Control-plane
/// nodes are left to the caller.
std::vector<const protocol::partitioning*> entries_matching(const protocol::partitioning_plan& plan,
                                                            const node_info& node);

/// As entries_matching, but none for a control-plane node: those are never selected.
std::vector<const protocol::partitioning*>
entries_selecting(const protocol::partitioning_plan& plan, const node_info& node);

struct plan_selections {
  /// Node name -> the plans (by name, in name order) with an entry selecting it; nodes
  /// no plan selects are absent.
  std::map<std::string, std::vector<std::string>> plans_by_node;

  /// The plans selecting `node` (none: empty).
  const std::vector<std::string>& of(const std::string& node) const;
  /// The plans other than `plan` selecting `node`.
  std::vector<std::string> others(const std::string& node, const std::string& plan) const;
};

/// Every plan against every node, once: nodes x entries selector matches.
std::shared_ptr<const plan_selections>
select_nodes(const std::map<std::string, std::shared_ptr<const protocol::partitioning_plan>>& plans,
             const shared_map<node_info>& nodes);

} // namespace gpu_partitioner::controller
