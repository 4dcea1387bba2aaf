#pragma once

// DESIGN.md section 5: who may start. One governor per plan grants drain tokens; a
// token is reserved the moment it is granted, so the limits hold under any
// interleaving of requests, releases and observations.

#include "protocol/int_or_percent.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpu_partitioner::controller {

struct rollout_limits {
  std::int32_t max_parallel = 1;
  protocol::int_or_percent max_unavailable;
  bool paused = false;
  /// More Failed nodes than this stop the rollout: no new tokens until one is retried or
  /// removed (maxFailures resolved; 0 stops on the first failure).
  std::int32_t max_failures = 0;
  /// Only these nodes may start (a canary, or none outside a change window); nullopt:
  /// any.
  std::optional<std::set<std::string>> only{};
};

/// What the governor knows of one of the plan's nodes.
struct governor_node {
  /// Its NodePartitioning is between Draining and Verifying (a token held, perhaps by
  /// an operator that has since restarted).
  bool in_flight = false;
  /// Unavailable for another reason: cordoned (an admin's cordon included), NotReady,
  /// or Failed and still cordoned.
  bool unavailable = false;
  /// Failed: counts against maxFailures, and as unavailable whatever its node shows.
  bool failed = false;
  /// In flight only for its soak: back in service, it holds its token (maxParallel) but
  /// is not unavailable on that account.
  bool soaking = false;
  /// Pending, preflight passed, not already in the target state: asks to start.
  bool wants_token = false;
};

/// Why the governor grants nothing more now (for plan status and logs).
enum class hold_reason {
  none,
  paused,
  failed_node,
  max_parallel,
  max_unavailable,
  no_candidates,
  not_allowed
};

const char* to_string(hold_reason reason);

class rollout_governor {
public:
  void set_limits(const rollout_limits& limits) { limits_ = limits; }
  const rollout_limits& limits() const { return limits_; }

  /// Records what was observed of a node (adds it if new). A node seen in flight holds
  /// a token whether or not this governor granted it.
  void observe(const std::string& node, const governor_node& facts);

  /// The node left the plan (no longer selected, or deleted): its token goes back.
  void forget(const std::string& node);

  /// The node finished (Succeeded, Failed, rolled back to Pending): its token goes back.
  void release(const std::string& node);

  /// Grants tokens to waiting nodes, in name order, while the limits allow; returns the
  /// nodes granted now. With `before`, only to nodes named before it: a node whose turn
  /// has not come, because an earlier one is yet to say whether it wants one, waits.
  std::vector<std::string> grant(const std::string* before = nullptr);

  bool holds(const std::string& node) const { return tokens_.count(node) > 0; }

  /// The plan's selected nodes.
  std::int32_t total() const { return static_cast<std::int32_t>(nodes_.size()); }
  /// Nodes holding a token (in flight).
  std::int32_t in_flight() const;
  /// Nodes unavailable for any reason, in flight included.
  std::int32_t unavailable() const;
  /// Failed nodes.
  std::int32_t failed() const;
  /// maxUnavailable resolved against the plan's node count.
  std::int32_t max_unavailable() const { return limits_.max_unavailable.resolve(total()); }

  /// Why nothing more would be granted now.
  hold_reason holding() const;

private:
  bool counts_unavailable(const std::string& node, const governor_node& facts) const;
  bool allowed(const std::string& node) const {
    return !limits_.only || limits_.only->count(node) > 0;
  }
  hold_reason check(const std::string& candidate, const governor_node& facts) const;

  rollout_limits limits_;
  std::map<std::string, governor_node> nodes_;
  std::set<std::string> tokens_;
};

} // namespace gpu_partitioner::controller
