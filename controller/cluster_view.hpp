#pragma once

// The cluster as the operator observed it: one immutable view, published by the operator's
// root and read by every decision. Plain data: what the watches saw, decoded into the
// structs of observed.hpp and the CRD types.

#include "controller/dra.hpp"
#include "controller/observed.hpp"
#include "controller/plan_selections.hpp"
#include "controller/shared_map.hpp"
#include "protocol/node_partitioning.hpp"
#include "protocol/partitioning_plan.hpp"
#include "protocol/partitioning_profile.hpp"
#include "protocol/timestamp.hpp"

#include <map>
#include <memory>
#include <set>
#include <string>

namespace gpu_partitioner::controller {

/// A ConfigMap's data, plus (under keys no data key can be) what the decisions need of its
/// metadata: when DCM's config.json last changed and when the ConfigMap was created.
using config_map_data = std::map<std::string, std::string>;
/// Our annotation on DCM's ConfigMap (dcm_config_written_annotation), as the watch read it.
inline constexpr const char* config_written_key = "@written-at";
/// The ConfigMap's creationTimestamp.
inline constexpr const char* config_created_key = "@created";
/// When the operator's root saw config.json change (by anyone: an admin's edit too).
inline constexpr const char* config_changed_key = "@changed-at";

/// Whether an object's metadata changed in a way that matters (generation, labels,
/// annotations, finalizers, deletion), not just its resourceVersion.
bool meta_changed(const protocol::object_meta& a, const protocol::object_meta& b);

/// Between Draining and Verifying: the node belongs to its plan until it lands.
inline bool in_flight(const protocol::node_partitioning& item) {
  using p = protocol::node_phase;
  auto phase = item.status.phase.value_or(p::pending);
  return phase == p::draining || phase == p::applying || phase == p::waiting_operator ||
         phase == p::verifying;
}

/// In flight and not being deleted: the node stays with this item's plan, and no other
/// plan may start it.
inline bool holds_its_node(const protocol::node_partitioning& item) {
  return in_flight(item) && !item.metadata.deletion_timestamp;
}

/// Everything observed, immutable once published; shared by every actor that reads it.
struct cluster_view {
  template <class T>
  using by_key = std::map<std::string, std::shared_ptr<const T>>;
  /// The large collections (a node, pod set, budget or item each per node) are
  /// shared_maps: a new view shares their storage with the last one.
  shared_map<node_info> nodes;
  /// node name -> (namespace/name -> pod). A node's pods are shared by the views that
  /// hold them and replaced, not changed, once published: a new view copies a pointer per
  /// node, not every pod.
  shared_map<by_key<pod_info>> pods_by_node;
  /// A node's pods, to change: a new copy in their place (a published view never changes
  /// under its readers; a node has a few pods).
  by_key<pod_info>& pods_to_edit(const std::string& node) { return edit(pods_by_node, node); }
  shared_map<pdb_info> pdbs;
  /// The DaemonSets there are (namespace/name -> UID), shared by the views until one comes
  /// or goes. A pod's DaemonSet owner counts only if it is here (resolve_daemon_set_owner).
  std::shared_ptr<const daemon_set_uids> daemon_sets = std::make_shared<daemon_set_uids>();
  by_key<protocol::partitioning_plan> plans;
  /// Plans that exist but did not decode: name -> why; and the generation judged (the
  /// one their status's observedGeneration names).
  std::map<std::string, std::string> invalid_plans;
  std::map<std::string, std::int64_t> invalid_plan_generations;
  by_key<protocol::partitioning_profile> profiles;
  std::map<std::string, std::string> invalid_profiles;
  shared_map<protocol::node_partitioning> items;
  by_key<config_map_data> config_maps;
  /// The operator may delete pods (its RBAC, asked at start): evictionKind Delete,
  /// respectPDB false and the DRA driver's restart need it.
  bool pods_deletable = true;
  /// The namespaces payload ConfigMaps may live in (--payload-namespaces, DCM's by
  /// default): whoever may write a payload decides how nodes are partitioned. Empty: any.
  std::set<std::string> payload_namespaces;
  /// The payload ConfigMaps (namespace/name) whose watch has listed: one missing from
  /// config_maps is known not to exist only once here; "<namespace>/*": every one there
  /// (DCM's namespace, watched whole).
  std::set<std::string> config_maps_listed;
  /// DCM's Events (source amd-device-config-manager) by the node they came from. Shared
  /// and replaced per node, as pods_by_node.
  shared_map<by_key<dcm_event>> dcm_events_by_node;
  by_key<dcm_event>& dcm_events_to_edit(const std::string& node) {
    return edit(dcm_events_by_node, node);
  }
  /// Dynamic Resource Allocation, per node, shared and replaced as pods_by_node: its
  /// ResourceSlices (by name), and the ResourceClaims allocated on its devices (by
  /// namespace/name).
  shared_map<by_key<resource_slice_info>> slices_by_node;
  shared_map<by_key<resource_claim_info>> claims_by_node;
  /// The operator's DeviceTaintRules, by the node they were made for.
  shared_map<by_key<device_taint_rule_info>> taint_rules_by_node;
  /// Resources the API server does not serve (or does not let us list), by plural; and
  /// of them, those it refused to let us list (403): served, perhaps in use, but unseen.
  std::set<std::string> absent_resources;
  std::set<std::string> forbidden_resources;
  /// One node's entry of such a map, to change: a copy in its place.
  template <class T>
  static by_key<T>& edit(shared_map<by_key<T>>& per_node, const std::string& node) {
    auto& slot = per_node[node];
    auto copy = slot ? std::make_shared<by_key<T>>(*slot) : std::make_shared<by_key<T>>();
    slot = copy;
    return *copy;
  }
  /// Every watch has listed once.
  bool synced = false;
  // -- what changed since the previous snapshot (a worker looks again only if its part did) --
  /// Nodes whose Node object, pods, DCM Events, ResourceSlices or claims changed, with the arrival
  /// of the earliest such change (reaction latency starts there).
  std::map<std::string, protocol::wall_clock::time_point> node_changes;
  /// NodePartitionings, by name.
  std::set<std::string> item_changes;
  /// Nodes with a pod in a namespace whose budgets changed (a budget covers pods of its
  /// own namespace only): the budgets over their pods may differ.
  std::set<std::string> budget_changes;
  /// Which plans select each node: select_nodes over `plans` and `nodes`, worked out by
  /// the operator's root when either may have changed it; null until then.
  std::shared_ptr<const plan_selections> selections;
  /// Plans (not their status), profiles, ConfigMaps, or the caches just synced: every
  /// worker looks again.
  bool shared_changed = false;
  /// The label keys whose value changed, came or went on some node (every key of a node
  /// that came or went): the plans' node selections, and who carries a DCM name, may
  /// differ only when a key they read is here.
  std::set<std::string> relabelled_keys;
  /// A node came or went, or became or stopped being a control-plane node.
  bool nodes_came_or_went = false;
  /// A node came or went, or its cordon, taints, readiness or GPU resources changed (its
  /// extended resources, or its DRA devices and the claims on them): where an evicted pod's
  /// replacement may run may differ (a draining node's deadlock check).
  bool schedulability_changed = false;
  /// Whether nodes' values of `key` may differ from the previous snapshot's.
  bool relabelled(const std::string& key) const {
    return nodes_came_or_went || relabelled_keys.count(key) > 0;
  }
  /// Records that the budget `key` (namespace/name) changed, given where each pod
  /// (namespace/name) is.
  void note_budget_change(const std::string& key,
                          const std::map<std::string, std::string>& pod_nodes);
  /// Records what a node's change (`was` to `now`; null: absent) means for the above.
  void note_relabelling(const node_info* was, const node_info* now);
  /// Records what a NodePartitioning's change (`was` to `now`; null: absent or not
  /// decodable) means for item_specs_changed and item_spec_plans.
  void note_item_change(const protocol::node_partitioning* was,
                        const protocol::node_partitioning* now);
  /// Records whether a node's change bears on where pods may be scheduled.
  void note_schedulability(const node_info* was, const node_info* now);
  /// A NodePartitioning that did not decode changed: any plan's resolution may differ.
  bool item_specs_changed = false;
  /// NodePartitionings that began or ended their flight (or, in flight, went or moved to
  /// another plan): node -> the plans of its item before and after. A node in flight stays
  /// with its plan, so the resolution of a plan selecting the node may differ if another
  /// plan is involved (flights_concern).
  std::map<std::string, std::set<std::string>> flight_changes;
  /// Plans one of whose NodePartitionings came, went, or changed its metadata or spec, not
  /// in flight: only that plan's supervisor has anything new to create, update or delete.
  /// (Not every change of phase: working out a plan again takes a walk over every node and
  /// item, and with many plans one plan's items must not make all of them walk.)
  std::set<std::string> item_spec_plans;
};

} // namespace gpu_partitioner::controller
