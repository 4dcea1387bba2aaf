#include "controller/plan_selections.hpp"

#include "controller/selector.hpp"

namespace gpu_partitioner::controller {

std::vector<const protocol::partitioning*> entries_matching(const protocol::partitioning_plan& plan,
                                                            const node_info& node) {
  std::vector<const protocol::partitioning*> out;
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

std::vector<const protocol::partitioning*>
entries_selecting(const protocol::partitioning_plan& plan, const node_info& node) {
  if (node.is_control_plane())
    return {};
  return entries_matching(plan, node);
}

const std::vector<std::string>& plan_selections::of(const std::string& node) const {
  static const std::vector<std::string> none;
  auto it = plans_by_node.find(node);
  return it == plans_by_node.end() ? none : it->second;
}

std::vector<std::string> plan_selections::others(const std::string& node,
                                                 const std::string& plan) const {
  std::vector<std::string> out;
  for (const auto& name : of(node))
    if (name != plan)
      out.push_back(name);
  return out;
}

std::shared_ptr<const plan_selections>
select_nodes(const std::map<std::string, std::shared_ptr<const protocol::partitioning_plan>>& plans,
             const shared_map<node_info>& nodes) {
  auto out = std::make_shared<plan_selections>();
  for (const auto& entry : nodes) {
    const node_info& node = *entry.second;
    if (node.is_control_plane())
      continue;
    std::vector<std::string> selecting;
    for (const auto& [name, plan] : plans)
      if (!entries_matching(*plan, node).empty())
        selecting.push_back(name);
    if (!selecting.empty())
      out->plans_by_node.emplace(entry.first, std::move(selecting));
  }
  return out;
}

} // namespace gpu_partitioner::controller
