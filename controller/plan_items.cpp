#include "controller/plan_items.hpp"

#include "controller/node_inputs.hpp"

namespace gpu_partitioner::controller {

void plan_items::put(const std::string& name, const protocol::node_partitioning* item) {
  if (auto was = node_of_.find(name); was != node_of_.end()) {
    on_node_.erase(was->second);
    node_of_.erase(was);
  }
  reading_nodes_.erase(name);
  if (item && item->spec.plan_ref.name == plan_) {
    items_[name] = item;
    on_node_[item->spec.node_name] = name;
    node_of_[name] = item->spec.node_name;
    if (reads_every_node(*item))
      reading_nodes_.insert(name);
  } else {
    items_.erase(name);
  }
}

void plan_items::update(const cluster_view& view) {
  if (!built_) {
    built_ = true;
    for (const auto& [name, item] : view.items)
      put(name, item.get());
    return;
  }
  for (const auto& name : view.item_changes) {
    auto it = view.items.find(name);
    put(name, it == view.items.end() ? nullptr : it->second.get());
  }
}

plan_items::by_name plan_items::touched(const cluster_view& view) const {
  by_name out;
  for (const auto& name : view.item_changes)
    if (auto it = items_.find(name); it != items_.end())
      out.insert(*it);
  auto of_node = [&](const std::string& node) {
    if (auto on = on_node_.find(node); on != on_node_.end())
      out.emplace(on->second, items_.at(on->second));
  };
  for (const auto& [node, at] : view.node_changes)
    of_node(node);
  for (const auto& node : view.budget_changes)
    of_node(node);
  if (view.schedulability_changed)
    for (const auto& name : reading_nodes_)
      out.emplace(name, items_.at(name));
  return out;
}

} // namespace gpu_partitioner::controller
