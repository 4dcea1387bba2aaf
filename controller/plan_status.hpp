#pragma once

// A plan's status from its items: counts by phase, the plan phase, conditions and a
// bounded history of what changed.

#include "controller/cluster_view.hpp"
#include "controller/item_reconcile.hpp"
#include "controller/plan_resolution.hpp"
#include "controller/rollout_gate.hpp"
#include "protocol/node_partitioning.hpp"
#include "protocol/partitioning_plan.hpp"
#include "protocol/timestamp.hpp"

#include <map>
#include <string>
#include <vector>

namespace gpu_partitioner::controller {

/// Whether `item` is Failed in preflight, before anything on its node changed (its last
/// phase change is PreflightFailed): it needs a fix, but took no capacity down. The alerts
/// tell these from failures that left a node cordoned
/// (gpu_partitioner_plan_preflight_failed_nodes).
bool failed_in_preflight(const protocol::node_partitioning& item);

/// `unmade`: the selected nodes whose item cannot be made now (reconcile_items): condition
/// ItemsCreated False names them and why, and the plan is not Completed while there are any.
protocol::partitioning_plan_status
aggregate_plan_status(const protocol::partitioning_plan& plan, const plan_resolution& resolution,
                      const std::map<std::string, const protocol::node_partitioning*>& items,
                      const protocol::partitioning_plan_status& previous,
                      protocol::wall_clock::time_point now, const gate_decision& gate = {},
                      const std::vector<unmade_item>& unmade = {});

/// status.devices: per profile of the resolution, its nodes that publish their GPUs through
/// DRA and the devices they show of its expectedDevices (profiles without any, or with no
/// such node, are left out).
std::vector<protocol::profile_devices> devices_by_profile(const plan_resolution& resolution,
                                                          const cluster_view& view);

/// The status of a plan that did not decode: an Invalid condition naming the problem, both
/// it and status.observedGeneration naming `generation`, the one judged.
protocol::partitioning_plan_status
invalid_plan_status(const protocol::partitioning_plan_status& previous, const std::string& problem,
                    std::int64_t generation, protocol::wall_clock::time_point now);

} // namespace gpu_partitioner::controller
