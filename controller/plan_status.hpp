#pragma once

// A plan's status from its items: counts by phase, the plan phase, conditions and a
// bounded history of what changed.

#include "controller/plan_resolution.hpp"
#include "controller/rollout_gate.hpp"
#include "protocol/node_partitioning.hpp"
#include "protocol/partitioning_plan.hpp"
#include "protocol/timestamp.hpp"

#include <map>
#include <string>

namespace gpu_partitioner::controller {

protocol::partitioning_plan_status
aggregate_plan_status(const protocol::partitioning_plan& plan, const plan_resolution& resolution,
                      const std::map<std::string, const protocol::node_partitioning*>& items,
                      const protocol::partitioning_plan_status& previous,
                      protocol::wall_clock::time_point now, const gate_decision& gate = {});

/// The status of a plan that did not decode: an Invalid condition naming the problem.
protocol::partitioning_plan_status
invalid_plan_status(const protocol::partitioning_plan_status& previous, const std::string& problem,
                    protocol::wall_clock::time_point now);

} // namespace gpu_partitioner::controller
