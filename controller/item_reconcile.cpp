#include "controller/item_reconcile.hpp"

#include "controller/item_name.hpp"
#include "controller/node_inputs.hpp"
#include "controller/node_machine.hpp"
#include "protocol/api_group.hpp"
#include "protocol/desired_hash.hpp"

#include <algorithm>

namespace gpu_partitioner::controller {

protocol::node_partitioning desired_item(const protocol::partitioning_plan& plan,
                                         const selected_node& sel, const cluster_view& view,
                                         std::map<std::string, std::string>& hashes,
                                         const std::set<std::string>& canary_nodes) {
  protocol::node_partitioning item;
  item.metadata.name = item_names_of(plan.metadata.name, sel.node).plain;
  item.metadata.finalizers = {item_finalizer};
  item.metadata.labels = item_labels_of(plan.metadata.name, sel.node);
  protocol::owner_reference owner;
  owner.api_version = std::string(protocol::api_version);
  owner.kind = std::string(protocol::partitioning_plan::kind_name);
  owner.name = plan.metadata.name;
  owner.uid = plan.metadata.uid;
  owner.controller = true;
  owner.block_owner_deletion = true;
  item.metadata.owner_references = {owner};
  item.spec.plan_ref = {plan.metadata.name, plan.metadata.uid};
  item.spec.node_name = sel.node;
  item.spec.profile_ref.name = sel.profile;
  item.spec.drain = plan.spec.rollout.drain;
  item.spec.verification = plan.spec.verification;
  item.spec.dry_run = plan.spec.dry_run;
  const auto rollout = item_rollout_of(plan.spec.rollout, sel.node, canary_nodes);
  item.spec.soak_seconds = rollout.soak_seconds;
  item.spec.canary = rollout.canary;
  // Profile names cannot hold '/': the payload's hash is memoised beside the spec's.
  const std::string payload_key = "payload/" + sel.profile;
  if (auto known = hashes.find(sel.profile); known != hashes.end()) {
    item.spec.desired_hash = known->second;
    item.spec.payload_hash = hashes[payload_key];
    return item;
  }
  item.spec.payload_hash = hashes[payload_key] = payload_hash_of(view, sel.profile);
  if (auto profile = view.profiles.find(sel.profile); profile != view.profiles.end()) {
    item.spec.desired_hash =
        protocol::desired_hash(*profile->second, item.spec.drain, item.spec.verification);
  } else {
    protocol::partitioning_profile missing;
    missing.metadata.name = sel.profile;
    item.spec.desired_hash =
        protocol::desired_hash(missing, item.spec.drain, item.spec.verification);
  }
  hashes[sel.profile] = item.spec.desired_hash;
  return item;
}

bool spec_differs(const protocol::node_partitioning& have,
                  const protocol::node_partitioning& want) {
  return have.spec.desired_hash != want.spec.desired_hash ||
         have.spec.payload_hash != want.spec.payload_hash ||
         have.spec.dry_run != want.spec.dry_run || !(have.spec.drain == want.spec.drain) ||
         !(have.spec.verification == want.spec.verification) ||
         have.spec.profile_ref.name != want.spec.profile_ref.name ||
         have.spec.soak_seconds != want.spec.soak_seconds || have.spec.canary != want.spec.canary;
}

std::map<std::string, std::string> wanted_hashes(const protocol::partitioning_plan& plan,
                                                 const plan_resolution& resolution,
                                                 const cluster_view& view) {
  std::map<std::string, std::string> memo, hashes;
  for (const auto& sel : resolution.selected)
    if (!hashes.count(sel.profile))
      hashes[sel.profile] = desired_item(plan, sel, view, memo).spec.desired_hash;
  return hashes;
}

item_changes reconcile_items(const protocol::partitioning_plan& plan,
                             const plan_resolution& resolution,
                             const std::map<std::string, const protocol::node_partitioning*>& mine,
                             const cluster_view& view, const std::set<std::string>& canary_nodes,
                             const std::map<std::string, std::string>& create_errors) {
  item_changes out;
  std::map<std::string, std::string> hashes;
  for (const auto& sel : resolution.selected) {
    auto want = desired_item(plan, sel, view, hashes, canary_nodes);
    const auto* have = find_item(mine, plan, sel.node);
    const auto fresh = have ? std::nullopt : new_item_name(view.items, plan, sel.node);
    const auto names = item_names_of(plan.metadata.name, sel.node);
    const std::string name = have ? have->metadata.name : fresh.value_or(names.derived);
    want.metadata.name = name;
    out.selected.push_back(name);
    if (have || fresh)
      out.keep.insert(name);
    // A payload that cannot be read now (its ConfigMap not listed yet, or gone) keeps the
    // hash the item has: only a payload read anew and different is news.
    if (want.spec.payload_hash.empty() && have)
      want.spec.payload_hash = have->spec.payload_hash;
    if (have && labels_missing(*have, want.metadata.labels))
      out.relabel.push_back(want);
    if (!have) {
      const auto error = create_errors.find(name);
      if (!fresh)
        out.unmade.push_back({name, sel.node,
                              "NodePartitionings " + names.plain + " and " + names.derived +
                                  " both exist and neither is this plan's item for the node"});
      else if (error != create_errors.end())
        out.unmade.push_back({name, sel.node, error->second});
      else
        out.absent.push_back(name);
      auto node = view.nodes.find(sel.node);
      const bool down = node != view.nodes.end() && counts_down(*node->second);
      out.absent_down[sel.node] = down;
      if (down)
        out.absent_unavailable.push_back(name);
      if (fresh)
        out.create.push_back(std::move(want));
    } else if (!spec_differs(*have, want)) {
      out.unchanged.push_back(name);
    } else if (!in_flight(*have)) {
      out.update.push_back(std::move(want));
    } else {
      out.unchanged.push_back(name);
      out.held.insert(sel.node);
    }
  }
  return out;
}

std::vector<std::string>
items_to_remove(const std::map<std::string, const protocol::node_partitioning*>& mine,
                const std::set<std::string>& keep, bool plan_gone, bool plan_invalid) {
  std::vector<std::string> out;
  if (plan_gone || plan_invalid)
    return out;
  for (const auto& [name, item] : mine)
    if (!keep.count(name) && !item->metadata.deletion_timestamp)
      out.push_back(name);
  return out;
}

bool flights_concern(const cluster_view& view, const std::string& plan,
                     const std::set<std::string>& held) {
  if (view.item_specs_changed || (!view.flight_changes.empty() && !view.selections))
    return true;
  for (const auto& [node, plans] : view.flight_changes) {
    const auto& selecting = view.selections->of(node);
    if (std::find(selecting.begin(), selecting.end(), plan) == selecting.end())
      continue; // not selected: a flight there changes neither the resolution nor keep
    if (selecting.size() > 1 || plans.size() > 1 || !plans.count(plan) || held.count(node))
      return true;
  }
  return false;
}

bool absent_down_changed(const cluster_view& view, const std::map<std::string, bool>& absent_down) {
  for (const auto& [node, since] : view.node_changes) {
    auto was = absent_down.find(node);
    if (was == absent_down.end())
      continue;
    auto now = view.nodes.find(node);
    if ((now != view.nodes.end() && counts_down(*now->second)) != was->second)
      return true;
  }
  return false;
}

bool selections_may_change(const cluster_view& view) {
  if (view.nodes_came_or_went)
    return true;
  if (view.relabelled_keys.empty())
    return false;
  auto names_changed = [&](const protocol::label_selector& selector) {
    for (const auto& [key, value] : selector.match_labels)
      if (view.relabelled_keys.count(key))
        return true;
    for (const auto& r : selector.match_expressions)
      if (view.relabelled_keys.count(r.key))
        return true;
    return false;
  };
  for (const auto& [name, plan] : view.plans)
    for (const auto& entry : plan->spec.partitionings)
      if (names_changed(entry.selector) || (entry.exclude && names_changed(*entry.exclude)))
        return true;
  return false;
}

} // namespace gpu_partitioner::controller
