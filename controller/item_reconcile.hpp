#pragma once

// A plan's NodePartitionings: the item each selected node should have, and what to create,
// update and delete to get there from the items that exist.

#include "controller/cluster_view.hpp"
#include "controller/plan_resolution.hpp"
#include "controller/rollout_gate.hpp"
#include "protocol/node_partitioning.hpp"
#include "protocol/partitioning_plan.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace gpu_partitioner::controller {

/// The item `sel` should have: named <plan>-<node> (reconcile_items names it as
/// item_name.hpp says: it may take the derived name), owned by the plan (blocking its
/// deletion) with the operator's finalizer, carrying the plan's drain, verification and
/// dry run, and the desiredHash of the profile as the view has it (of its name alone when
/// it does not exist yet: the hash changes once it does). `hashes` memoises the hash per
/// profile across the nodes of one plan and view.
protocol::node_partitioning desired_item(const protocol::partitioning_plan& plan,
                                         const selected_node& sel, const cluster_view& view,
                                         std::map<std::string, std::string>& hashes,
                                         const std::set<std::string>& canary_nodes = {});

/// profile -> the desiredHash its nodes should carry, for each profile `resolution` uses.
std::map<std::string, std::string> wanted_hashes(const protocol::partitioning_plan& plan,
                                                 const plan_resolution& resolution,
                                                 const cluster_view& view);

/// Whether an existing item must be updated to match `want`.
bool spec_differs(const protocol::node_partitioning& have, const protocol::node_partitioning& want);

/// A selected node whose item cannot be made now: both its names are held by other objects,
/// or its create failed (`why`: the API server's answer). Its create is asked again; it
/// holds back no other node's turn.
struct unmade_item {
  std::string name;
  std::string node;
  std::string why;
  bool operator==(const unmade_item& o) const {
    return name == o.name && node == o.node && why == o.why;
  }
};

struct item_changes {
  /// Items to create, in rollout order.
  std::vector<protocol::node_partitioning> create;
  /// Items whose spec changes. A node in flight finishes first: its item is left as it is
  /// until it lands, and is then updated.
  std::vector<protocol::node_partitioning> update;
  /// Selected items that exist without the plan and node labels (made before items
  /// carried them): labelled whatever their phase, since labels change nothing on the node.
  std::vector<protocol::node_partitioning> relabel;
  /// Selected items that exist and need nothing (in flight with a changed spec included).
  std::vector<std::string> unchanged;
  /// Every item the plan keeps: the selected ones.
  std::set<std::string> keep;
  /// The selected items in rollout order; those not created yet (their turn held until
  /// they are); and of those and the unmade, the ones whose node is down (cordoned or
  /// NotReady), which count against maxUnavailable.
  std::vector<std::string> selected;
  std::vector<std::string> absent;
  std::vector<std::string> absent_unavailable;
  /// Selected items that cannot be made now (not in `absent`): reported on the plan.
  std::vector<unmade_item> unmade;
  /// The nodes of the absent and unmade items, each with whether it counts as down then
  /// (absent_down_changed).
  std::map<std::string, bool> absent_down;
  /// Nodes whose item is in flight with a changed spec: updated once it lands.
  std::set<std::string> held;
};

/// What a live, valid plan's items need, given its resolution and its items now (`mine`,
/// by name). Each node's item is found by plan and node (find_item); a new one is named by
/// new_item_name against every item of the view. `canary_nodes` are the canary's nodes
/// (their items carry canary and its soak). `create_errors`: item name -> why its last
/// create failed (cleared once one succeeds).
item_changes reconcile_items(const protocol::partitioning_plan& plan,
                             const plan_resolution& resolution,
                             const std::map<std::string, const protocol::node_partitioning*>& mine,
                             const cluster_view& view,
                             const std::set<std::string>& canary_nodes = {},
                             const std::map<std::string, std::string>& create_errors = {});

/// Whether the view's flight changes (cluster_view::flight_changes) can change what plan
/// `plan` resolves or updates: a flight on a node it selects, where another plan selects
/// the node or owns the item, or where its own item waits to land for an update (`held`:
/// item_changes::held). A flight of its own item on a node only it selects changes
/// neither: that is nearly every flight of a rollout, and working a plan of thousands of
/// nodes out again for each would take the supervisor's whole time.
bool flights_concern(const cluster_view& view, const std::string& plan,
                     const std::set<std::string>& held);

/// Whether the view changed whether a node without its item yet counts as down
/// (`absent_down`: item_changes::absent_down as last worked out): such nodes count against
/// maxUnavailable, so the plan must be worked out again.
bool absent_down_changed(const cluster_view& view, const std::map<std::string, bool>& absent_down);

/// Whether the view's node changes can change a plan's node selection (resolve_plan's
/// answer for any of the view's plans, which see each other's): a node came, went or
/// changed its control-plane role, or a label key that a selector or exclusion names
/// changed on some node. DCM's and the labeller's labels, written many times a rollout,
/// change no selection that does not name them.
bool selections_may_change(const cluster_view& view);

/// The items to delete: those not kept, not already being deleted. None while the plan is
/// gone or being deleted (the garbage collector deletes its items) or invalid (a
/// half-valid plan touches nothing).
std::vector<std::string>
items_to_remove(const std::map<std::string, const protocol::node_partitioning*>& mine,
                const std::set<std::string>& keep, bool plan_gone, bool plan_invalid);

} // namespace gpu_partitioner::controller
