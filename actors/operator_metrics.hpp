#pragma once

// The operator's metrics (names and labels follow Prometheus conventions; docs/monitoring.md
// lists them). One registry per process, shared by the actors.

#include "kube/http_client.hpp"
#include "metrics/registry.hpp"
#include "protocol/partitioning_plan.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace gpu_partitioner::actors {

struct operator_metrics {
  metrics::registry registry;
  metrics::family& nodes;
  metrics::family& transitions;
  metrics::family& phase_seconds;
  metrics::family& evictions;
  metrics::family& blocked_pods;
  metrics::family& api_requests;
  metrics::family& api_seconds;
  metrics::family& api_rate_limiter_seconds;
  metrics::family& api_rate_limiter_waiting;
  metrics::family& io_queue_depth;
  metrics::family& superseded_writes;
  metrics::family& events_dropped;
  metrics::family& watch_restarts;
  metrics::family& reconcile_errors;
  metrics::family& reaction_seconds;
  metrics::family& leader;
  metrics::family& progress;
  metrics::family& plan_phase;
  metrics::family& dry_run;
  metrics::family& window_open;
  metrics::family& canary_phase;
  metrics::family& soaking;
  metrics::family& max_failures;
  metrics::family& preflight_failed;
  metrics::family& tls_verification_disabled;
  /// Every watch has listed once (for /readyz).
  std::atomic<bool> synced{false};

  operator_metrics();

  /// An observer for http_client: API requests by verb, resource and code, with latency.
  kube::request_observer api_observer();

  /// An observer for kube::rate_limiter: how long each request waited for a token.
  kube::rate_limiter::observer rate_limiter_observer();
  /// A depth observer for kube::rate_limiter: the requests waiting in each lane.
  kube::rate_limiter::depth_observer rate_limiter_depth();

  /// The plan's phase as an enumeration gauge: 1 for its phase, 0 for the others.
  void publish_plan_phase(const std::string& plan, std::optional<protocol::plan_phase> phase);
  /// The plan's nodes by phase, its progress, phase and dry-run flag, whether its windows
  /// let nodes start, its canary's phase and its soaking nodes.
  /// `max_failures`: the failed nodes it tolerates (spec.rollout.maxFailures resolved);
  /// `preflight_failed`: of its Failed nodes, those that failed in preflight.
  void publish_plan(const std::string& plan, const protocol::partitioning_plan_status& status,
                    bool dry, std::int32_t max_failures = 0, std::int32_t preflight_failed = 0);

  /// Drops every series of a plan that is gone, with its items (no stale gauge keeps an
  /// alert firing for it).
  void forget_plan(const std::string& plan);
};

/// The process's metrics.
operator_metrics& process_metrics();

} // namespace gpu_partitioner::actors
