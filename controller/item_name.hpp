#pragma once

// What a NodePartitioning is called, and how it is found. DESIGN.md names the item of node
// N in plan P `P-N`; two plans can want that name (plan `gpu` with node `a-1`, plan `gpu-a`
// with node `1`), and one name can hold only one object. So an item takes `P-N` when that
// name is free, else a name derived from it that the other cannot want; and an item is
// found by plan and node, under either name, never by a name alone. Every reader and writer
// of item names (reconcile, the gate, plan status, the kubectl plugin) goes through here.

#include "protocol/node_partitioning.hpp"
#include "protocol/partitioning_plan.hpp"

#include <map>
#include <optional>
#include <string>

namespace gpu_partitioner::controller {

/// Labels every item carries, for `kubectl get nodepartitionings -l ...`, the plugin and
/// cleanup: its plan's name and its node's. A name longer than a label value's 63
/// characters gets no label (the item is still found by spec.planRef and spec.nodeName).
inline constexpr const char* item_plan_label = "infrastructure.silogen.ai/plan";
inline constexpr const char* item_node_label = "infrastructure.silogen.ai/node";

/// The labels above for the item of `node` in `plan`.
std::map<std::string, std::string> item_labels_of(const std::string& plan, const std::string& node);

/// Whether `item` lacks one of `want` or carries another value for it (other labels,
/// a user's, are left alone).
bool labels_missing(const protocol::node_partitioning& item,
                    const std::map<std::string, std::string>& want);

/// The two names the item of `node` in `plan` may carry.
struct item_names {
  /// `<plan>-<node>`, the specification's.
  std::string plain;
  /// `<plan>-<node>-<h>`, h the first 10 hex digits of SHA-256 of `<plan>/<node>` ('/'
  /// is in no object name, so no other pair hashes the same text); `<plan>-<node>` cut
  /// (and stripped of a trailing '-' or '.') so that the whole fits 253 characters.
  std::string derived;
};

item_names item_names_of(const std::string& plan, const std::string& node);

/// `item` is the item of `node` in `plan`: its planRef names the plan (and its uid, when
/// both are known) and its nodeName is the node. Anything else under one of its names
/// (another plan's item, one a deleted plan of the same name left, one made by hand) is
/// never taken for it.
bool is_item_of(const protocol::node_partitioning& item, const protocol::partitioning_plan& plan,
                const std::string& node);

/// The item of `node` in `plan` among `items` (by name: raw or shared pointers), under
/// either of its names; null if there is none.
template <class ItemsByName>
const protocol::node_partitioning* find_item(const ItemsByName& items,
                                             const protocol::partitioning_plan& plan,
                                             const std::string& node) {
  const auto names = item_names_of(plan.metadata.name, node);
  for (const auto* name : {&names.plain, &names.derived})
    if (auto it = items.find(*name);
        it != items.end() && it->second && is_item_of(*it->second, plan, node))
      return &*it->second;
  return nullptr;
}

/// The name a new item of `node` in `plan` takes, given every NodePartitioning that
/// exists (`all`, by name): `<plan>-<node>` unless an object that is not this item holds
/// it, else the derived name; nullopt when that is held too (the plan reports it).
template <class ItemsByName>
std::optional<std::string> new_item_name(const ItemsByName& all,
                                         const protocol::partitioning_plan& plan,
                                         const std::string& node) {
  auto names = item_names_of(plan.metadata.name, node);
  for (auto* name : {&names.plain, &names.derived})
    if (auto it = all.find(*name);
        it == all.end() || !it->second || is_item_of(*it->second, plan, node))
      return std::move(*name);
  return std::nullopt;
}

} // namespace gpu_partitioner::controller
