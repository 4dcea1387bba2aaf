#pragma once

// When and how far a plan's rollout may go, beyond its disruption limits: its change
// windows, its canary, and its failure budget. Pure: the plan, its items and nodes, and
// the time in; which items may start, the plan's window and canary status, and when to
// look again out. The governor applies the answer with maxParallel and maxUnavailable.

#include "controller/observed.hpp"
#include "controller/plan_resolution.hpp"
#include "controller/rollout_window.hpp"
#include "controller/shared_map.hpp"
#include "protocol/node_partitioning.hpp"
#include "protocol/partitioning_plan.hpp"
#include "protocol/timestamp.hpp"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpu_partitioner::controller {

/// The windows of a plan as window_evaluation takes them; a problem (naming the field)
/// for any the schema cannot refuse: an unknown time zone, or a start equal to its end.
struct plan_windows {
  std::vector<window_spec> windows;
  std::vector<std::string> problems;
};
plan_windows windows_of(const protocol::rollout_policy& rollout);

/// The canary's key: which desired states (profile and policies, one desiredHash per
/// profile the plan uses) it tests. `hashes` is profile -> desiredHash.
std::string canary_key(const std::map<std::string, std::string>& hashes);

/// The item spec fields a plan's rollout sets per node (not part of desiredHash).
struct item_rollout {
  std::optional<std::int64_t> soak_seconds;
  bool canary = false;
  bool operator==(const item_rollout& o) const {
    return soak_seconds == o.soak_seconds && canary == o.canary;
  }
};
/// What the plan's rollout sets on the item of `node`, given the canary's nodes.
item_rollout item_rollout_of(const protocol::rollout_policy& rollout, const std::string& node,
                             const std::set<std::string>& canary_nodes);

/// What a run under the plan's desired state would do to one of its nodes (canary_needs
/// works it out from the view).
struct node_need {
  /// The run would change the node: it does not run its profile yet.
  bool change = false;
  /// Why it cannot start now (empty: it can).
  std::string blocked;
};

/// The value of the promote-canary annotation that promotes the canary `key` chosen at
/// plan generation `generation`: a promotion names one rollout and promotes nothing else.
std::string promotion_of(const std::string& key, std::int64_t generation);

struct gate_inputs {
  const protocol::partitioning_plan* plan = nullptr;
  const plan_resolution* resolution = nullptr;
  /// The plan's items, by item name.
  const std::map<std::string, const protocol::node_partitioning*>* items = nullptr;
  const shared_map<node_info>* nodes = nullptr;
  /// profile -> the desiredHash its nodes should carry now.
  std::map<std::string, std::string> hashes;
  /// The canary as last written (the plan's status may lag our writes).
  std::optional<protocol::canary_status> previous;
  /// What a run would do to a selected node, asked while the canary chooses its nodes.
  std::function<node_need(const selected_node&)> need;
  protocol::wall_clock::time_point now{};
};

/// A plan-level Event to record (on a change of the canary's phase).
struct gate_event {
  std::string type = "Normal";
  std::string reason;
  std::string message;
};

struct gate_decision {
  /// Items that may start; nullopt: any the limits allow.
  std::optional<std::set<std::string>> only;
  /// maxFailures resolved against the plan's nodes.
  std::int32_t max_failures = 0;
  std::optional<protocol::window_status> window;
  std::optional<protocol::canary_status> canary;
  /// Why nothing starts outside the windows (empty inside, or without windows).
  std::string outside_window;
  /// Windows none of whose openings is longer than minWindowRemainingSeconds.
  std::vector<std::string> warnings;
  /// Look again then even if nothing changes (a window opens or closes, a soak ends).
  std::optional<protocol::wall_clock::time_point> wake;
  std::vector<gate_event> events;
};

gate_decision decide_gate(const gate_inputs& in);

} // namespace gpu_partitioner::controller
