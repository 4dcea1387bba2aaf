#include "controller/plan_resolution.hpp"

#include "controller/selector.hpp"

#include <set>

namespace gpu_partitioner::controller {

namespace {

// The entries of `plan` that select `node` (control-plane nodes and exclusions aside).
std::vector<const protocol::partitioning*>
entries_selecting(const protocol::partitioning_plan& plan, const node_info& node) {
  std::vector<const protocol::partitioning*> out;
  if (node.is_control_plane())
    return out;
  for (const auto& entry : plan.spec.partitionings) {
    if (is_empty(entry.selector))
      continue;
    if (!matches(entry.selector, node.labels))
      continue;
    if (entry.exclude && !is_empty(*entry.exclude) && matches(*entry.exclude, node.labels))
      continue;
    out.push_back(&entry);
  }
  return out;
}

} // namespace

plan_resolution resolve_plan(const protocol::partitioning_plan& plan,
                             const std::vector<protocol::partitioning_plan>& other_plans,
                             const std::map<std::string, node_info>& nodes) {
  plan_resolution out;
  std::set<std::string> names;
  for (std::size_t i = 0; i < plan.spec.partitionings.size(); ++i) {
    const auto& entry = plan.spec.partitionings[i];
    const std::string where = "spec.partitionings[" + std::to_string(i) + "]";
    if (is_empty(entry.selector))
      out.problems.push_back(where + ".selector: empty; it would select every node, so the plan "
                                     "does nothing until it names labels");
    if (!names.insert(entry.name).second)
      out.problems.push_back(where + ".name: \"" + entry.name + "\" is used twice");
  }
  if (!out.problems.empty())
    return out;

  for (const auto& [name, node] : nodes) {
    auto mine = entries_selecting(plan, node);
    if (mine.empty())
      continue;
    if (mine.size() > 1) {
      std::string which;
      for (const auto* e : mine)
        which += (which.empty() ? "" : ", ") + e->name;
      out.conflicts.push_back({name, "selected by several partitionings of this plan: " + which});
      continue;
    }
    std::string others;
    for (const auto& other : other_plans) {
      if (other.metadata.name == plan.metadata.name)
        continue;
      if (!entries_selecting(other, node).empty())
        others += (others.empty() ? "" : ", ") + other.metadata.name;
    }
    if (!others.empty()) {
      out.conflicts.push_back({name, "also selected by plan " + others});
      continue;
    }
    out.selected.push_back({name, mine.front()->name, mine.front()->profile_ref.name});
  }
  return out;
}

} // namespace gpu_partitioner::controller
