#pragma once

// What one node's step reads, taken from the cluster view: the node's pods and the budgets
// that cover them, its profile with the payload and its rivals, its plan's standing, DCM's
// config and Events, and the profiles DCM's config may be given. Pure: the view in,
// node_inputs out; the worker adds only what it alone knows (worker_facts).

#include "controller/cluster_view.hpp"
#include "controller/node_machine.hpp"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpu_partitioner::controller {

/// Where DCM's config is, and how long kubelet may take to deliver a change of it to
/// DCM's mounted file (--dcm-config-sync).
struct dcm_settings {
  std::string ns;
  std::string name;
  std::chrono::milliseconds sync{90000};
};

/// What only the node's worker knows: its token, its evictions so far, its last write's
/// error.
struct worker_facts {
  bool token = false;
  std::map<std::string, eviction_memory> evictions;
  std::string write_error;
  std::string resolved_write_error;
};

/// The profile `name` as the view has it: found or invalid, its DCM name, its payload
/// (or why there is none, or that its ConfigMap is still being listed), and the other
/// profiles that give the same DCM name another payload.
resolved_profile resolve_profile(const cluster_view& view, const std::string& name);

/// Whether the item's plan lets the operator act on it: it must name a live plan, by name
/// and uid; an invalid or deleting plan starts no node.
plan_standing standing_of(const cluster_view& view, const protocol::node_partitioning& item);

/// The nodes other than `except` whose profile label holds `dcm_name`.
std::vector<std::string> nodes_labelled(const cluster_view& view, const std::string& dcm_name,
                                        const std::string& except);

/// DCM's ConfigMap as the view has it; written_at is the latest of our stamp, the root's
/// sight of a change, and the creation (whole seconds: taken as a second later).
dcm_config_state dcm_config_of(const cluster_view& view, const dcm_settings& dcm);

/// The inputs of step_node for `item` (its status as the worker last wrote it), deciding
/// on `node` (the view's, or the worker's own write while the watch lags; nullopt: gone).
node_inputs assemble_node_inputs(const cluster_view& view, protocol::node_partitioning item,
                                 std::optional<node_info> node, const dcm_settings& dcm,
                                 const worker_facts& facts, protocol::wall_clock::time_point now);

} // namespace gpu_partitioner::controller
