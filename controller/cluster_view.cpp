#include "controller/cluster_view.hpp"

namespace gpu_partitioner::controller {

void cluster_view::note_relabelling(const node_info* was, const node_info* now) {
  // A control-plane node is never selected, whatever its labels: a change of role is a
  // node coming or going for the plans.
  if (!was || !now || was->is_control_plane() != now->is_control_plane()) {
    nodes_came_or_went = true;
    return;
  }
  for (const auto& [key, value] : was->labels)
    if (auto it = now->labels.find(key); it == now->labels.end() || it->second != value)
      relabelled_keys.insert(key);
  for (const auto& [key, value] : now->labels)
    if (!was->labels.count(key))
      relabelled_keys.insert(key);
}

void cluster_view::note_schedulability(const node_info* was, const node_info* now) {
  if (!was || !now || was->unschedulable != now->unschedulable || !(was->taints == now->taints) ||
      was->ready != now->ready || was->allocatable != now->allocatable)
    schedulability_changed = true;
}

bool meta_changed(const protocol::object_meta& a, const protocol::object_meta& b) {
  return a.uid != b.uid || a.generation != b.generation || a.labels != b.labels ||
         a.annotations != b.annotations || a.finalizers != b.finalizers ||
         a.deletion_timestamp != b.deletion_timestamp;
}

void cluster_view::note_item_change(const protocol::node_partitioning* was,
                                    const protocol::node_partitioning* now) {
  if (!was && !now) {
    item_specs_changed = true;
    return;
  }
  auto flies = [](const protocol::node_partitioning* i) { return i && holds_its_node(*i); };
  if (flies(was) != flies(now) ||
      (flies(was) && was->spec.plan_ref.name != now->spec.plan_ref.name))
    for (const auto* i : {was, now})
      if (i)
        flight_changes[i->spec.node_name].insert(i->spec.plan_ref.name);
  if (!was || !now || meta_changed(was->metadata, now->metadata))
    for (const auto* i : {was, now})
      if (i)
        item_spec_plans.insert(i->spec.plan_ref.name);
}

void cluster_view::note_budget_change(const std::string& key,
                                      const std::map<std::string, std::string>& pod_nodes) {
  const std::string ns = key.substr(0, key.find('/') + 1);
  for (auto it = pod_nodes.lower_bound(ns);
       it != pod_nodes.end() && it->first.compare(0, ns.size(), ns) == 0; ++it)
    budget_changes.insert(it->second);
}

} // namespace gpu_partitioner::controller
