#pragma once

#include "protocol/api_group.hpp"
#include "protocol/codec/equality.hpp"
#include "protocol/codec/field.hpp"
#include "protocol/condition.hpp"
#include "protocol/drain_policy.hpp"
#include "protocol/int_or_percent.hpp"
#include "protocol/label_selector.hpp"
#include "protocol/object_meta.hpp"
#include "protocol/plan_verification.hpp"
#include "protocol/profile_reference.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace gpu_partitioner::protocol {

/// spec.rollout: how many nodes may be disrupted at once, and how they are drained.
struct rollout_policy {
  std::int32_t max_parallel = 1;
  int_or_percent max_unavailable = int_or_percent::count(1);
  drain_policy drain;
};

constexpr auto describe(codec::tag<rollout_policy>) {
  using T = rollout_policy;
  // int_or_percent validates its own range (minimum 1, 1% to 100%).
  return std::make_tuple(codec::field("maxParallel", &T::max_parallel).minimum(1),
                         codec::field("maxUnavailable", &T::max_unavailable),
                         codec::field("drainPolicy", &T::drain));
}

/// One entry of spec.partitionings: a set of nodes and the profile they get.
struct partitioning {
  std::string name;
  label_selector selector;
  /// Nodes matching this are left out even if `selector` matches them.
  std::optional<label_selector> exclude;
  profile_reference profile_ref;
};

constexpr auto describe(codec::tag<partitioning>) {
  using T = partitioning;
  return std::make_tuple(
      codec::field("name", &T::name).required().max_length(63).matching(codec::dns1123_label),
      codec::field("selector", &T::selector).required(), codec::field("exclude", &T::exclude),
      codec::field("profileRef", &T::profile_ref).required());
}

struct partitioning_plan_spec {
  /// No new node starts while paused; nodes in flight finish to a safe state.
  bool paused = false;
  /// Create NodePartitionings that preview the work, change nothing on nodes.
  bool dry_run = false;
  rollout_policy rollout;
  plan_verification verification;
  std::vector<partitioning> partitionings;
};

constexpr auto describe(codec::tag<partitioning_plan_spec>) {
  using T = partitioning_plan_spec;
  return std::make_tuple(
      codec::field("paused", &T::paused), codec::field("dryRun", &T::dry_run),
      codec::field("rollout", &T::rollout), codec::field("verification", &T::verification),
      codec::field("partitionings", &T::partitionings).required().min_items(1).map_key("name"));
}

enum class plan_phase { pending, progressing, paused, completed, degraded };

constexpr auto enum_names(codec::tag<plan_phase>) {
  using E = plan_phase;
  return std::array<codec::enum_name<E>, 5>{{{E::pending, "Pending"},
                                             {E::progressing, "Progressing"},
                                             {E::paused, "Paused"},
                                             {E::completed, "Completed"},
                                             {E::degraded, "Degraded"}}};
}

/// status.nodes: the plan's nodes by phase.
struct node_counts {
  std::int32_t total = 0;
  std::int32_t pending = 0;
  std::int32_t draining = 0;
  std::int32_t applying = 0;
  std::int32_t waiting_operator = 0;
  std::int32_t verifying = 0;
  std::int32_t succeeded = 0;
  std::int32_t failed = 0;
};

constexpr auto describe(codec::tag<node_counts>) {
  using T = node_counts;
  return std::make_tuple(codec::field("total", &T::total).minimum(0),
                         codec::field("pending", &T::pending).minimum(0),
                         codec::field("draining", &T::draining).minimum(0),
                         codec::field("applying", &T::applying).minimum(0),
                         codec::field("waitingOperator", &T::waiting_operator).minimum(0),
                         codec::field("verifying", &T::verifying).minimum(0),
                         codec::field("succeeded", &T::succeeded).minimum(0),
                         codec::field("failed", &T::failed).minimum(0));
}

/// A node the plan leaves alone because two partitionings (or two plans) select it.
struct node_conflict {
  std::string node;
  std::string reason;
};

constexpr auto describe(codec::tag<node_conflict>) {
  using T = node_conflict;
  return std::make_tuple(codec::field("node", &T::node).required().min_length(1),
                         codec::field("reason", &T::reason));
}

/// One entry of the plan's bounded history.
struct plan_event {
  std::string time;
  std::string type;
  std::string message;
};

constexpr auto describe(codec::tag<plan_event>) {
  using T = plan_event;
  return std::make_tuple(codec::field("time", &T::time).required().date_time(),
                         codec::field("type", &T::type).required().min_length(1),
                         codec::field("message", &T::message));
}

struct partitioning_plan_status {
  /// The maximum number of entries in `history`; the writer drops the oldest.
  static constexpr std::size_t history_limit = 50;

  std::int64_t observed_generation = 0;
  std::optional<plan_phase> phase;
  node_counts nodes;
  /// Node names in rollout order.
  std::vector<std::string> order;
  std::vector<node_conflict> conflicts;
  std::vector<condition> conditions;
  std::vector<plan_event> history;
};

constexpr auto describe(codec::tag<partitioning_plan_status>) {
  using T = partitioning_plan_status;
  return std::make_tuple(codec::field("observedGeneration", &T::observed_generation).minimum(0),
                         codec::field("phase", &T::phase), codec::field("nodes", &T::nodes),
                         codec::field("order", &T::order), codec::field("conflicts", &T::conflicts),
                         codec::field("conditions", &T::conditions).map_key("type"),
                         codec::field("history", &T::history).max_items(T::history_limit));
}

/// Rolls profiles out to the nodes its partitionings select (cluster-scoped).
struct partitioning_plan {
  static constexpr std::string_view kind_name = "PartitioningPlan";
  static constexpr std::string_view plural = "partitioningplans";

  std::string api_version{protocol::api_version};
  std::string kind{kind_name};
  object_meta metadata;
  partitioning_plan_spec spec;
  partitioning_plan_status status;
};

constexpr auto describe(codec::tag<partitioning_plan>) {
  using T = partitioning_plan;
  return std::make_tuple(
      codec::field("apiVersion", &T::api_version).fixed(), codec::field("kind", &T::kind).fixed(),
      codec::field("metadata", &T::metadata), codec::field("spec", &T::spec).required(),
      codec::field("status", &T::status));
}

/// The condition types of a PartitioningPlan's status.
namespace plan_condition {
inline constexpr const char* invalid = "Invalid";
inline constexpr const char* nodes_selected = "NodesSelected";
inline constexpr const char* conflict = "Conflict";
inline constexpr const char* paused = "Paused";
inline constexpr const char* progressing = "Progressing";
inline constexpr const char* degraded = "Degraded";
inline constexpr const char* completed = "Completed";
} // namespace plan_condition

} // namespace gpu_partitioner::protocol
