#include "actors/operator_metrics.hpp"

#include "metrics/process.hpp"
#include "protocol/node_partitioning.hpp"

namespace gpu_partitioner::actors {

namespace {

const std::vector<double> phase_buckets{1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600};
// Each reaches well past the figure it is read for (reaction p99 of 100 ms, a wait of a
// second), so that a tail of many seconds shows as itself, not as the top bucket.
const std::vector<double> latency_buckets{0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                          0.5,   1,    2.5,   5,    10,  30};
const std::vector<double> throttle_buckets{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                           0.5,   1,     2.5,  5,     10,   30,  60};
const std::vector<double> reaction_buckets{0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05,
                                           0.075, 0.1,    0.15,  0.2,  0.3,  0.5,  1,
                                           2.5,   5,      10,    20,   30,   60,   120};

} // namespace

operator_metrics::operator_metrics()
    : nodes(
          registry.gauge("gpu_partitioner_nodes", "The plan's nodes by phase.", {"plan", "phase"})),
      transitions(registry.counter("gpu_partitioner_phase_transitions_total",
                                   "Nodes entering a phase.", {"plan", "phase"})),
      phase_seconds(registry.histogram("gpu_partitioner_phase_duration_seconds",
                                       "Time nodes spent in a phase, recorded when they leave it.",
                                       {"phase"}, phase_buckets)),
      evictions(registry.counter("gpu_partitioner_evictions_total",
                                 "Eviction attempts by result (evicted, pdb_blocked, error).",
                                 {"result"})),
      blocked_pods(registry.gauge(
          "gpu_partitioner_drain_blocked_pods",
          "Pods a drain cannot evict now: a PodDisruptionBudget or the drain policy refuses, "
          "or the eviction failed.",
          {"plan", "node"})),
      api_requests(registry.counter("gpu_partitioner_api_requests_total",
                                    "Requests to the API server by verb, resource and HTTP code "
                                    "(0: no answer).",
                                    {"verb", "resource", "code"})),
      api_seconds(registry.histogram("gpu_partitioner_api_request_duration_seconds",
                                     "Latency of requests to the API server (watches excluded).",
                                     {"verb", "resource"}, latency_buckets)),
      api_rate_limiter_seconds(registry.histogram(
          "gpu_partitioner_api_rate_limiter_duration_seconds",
          "Time requests to the API server waited for the client-side rate limiter "
          "(--api-qps, --api-burst) before they went, retries and watch openings included, "
          "by lane (restore, rollout, items, status, events; the most urgent lane goes first).",
          {"lane"}, throttle_buckets)),
      api_rate_limiter_waiting(
          registry.gauge("gpu_partitioner_api_rate_limiter_waiting_requests",
                         "Requests waiting for a token of the client-side rate limiter now, by "
                         "lane.",
                         {"lane"})),
      io_queue_depth(registry.gauge(
          "gpu_partitioner_io_queue_depth",
          "Node steps and item writes waiting for a free connection, by pool (writes, "
          "evictions, items).",
          {"pool"})),
      superseded_writes(registry.counter(
          "gpu_partitioner_superseded_writes_total",
          "Item writes dropped unsent because a newer resolution of their plan no longer "
          "wanted them, by pool.",
          {"pool"})),
      events_dropped(registry.counter(
          "gpu_partitioner_events_dropped_total",
          "Events not recorded because too many waited to be written already, by type "
          "(Normal first; a Warning only when twice as many wait).",
          {"type"})),
      watch_restarts(registry.counter("gpu_partitioner_watch_restarts_total",
                                      "Watch streams restarted, by resource and kind (relist or "
                                      "reconnect).",
                                      {"resource", "kind"})),
      reconcile_errors(registry.counter("gpu_partitioner_reconcile_errors_total",
                                        "Writes that failed and will be retried.", {"plan"})),
      reaction_seconds(registry.histogram(
          "gpu_partitioner_reaction_seconds",
          "From the arrival of a watched change of a node or its pods that a waiting node "
          "worker acts on (pods gone, DCM's answer, the device plugin's report) to the start "
          "of its next write, by the kind of that write.",
          {"write"}, reaction_buckets)),
      leader(registry.gauge("gpu_partitioner_leader", "1 while this replica leads, else 0.")),
      progress(registry.gauge("gpu_partitioner_plan_progress_ratio",
                              "Succeeded nodes over the plan's nodes (0 to 1).", {"plan"})),
      plan_phase(registry.gauge("gpu_partitioner_plan_phase",
                                "1 for the plan's phase (Pending, Progressing, Paused, Completed, "
                                "Degraded), 0 for the others.",
                                {"plan", "phase"})),
      dry_run(registry.gauge("gpu_partitioner_plan_dry_run",
                             "1 while the plan is a dry run (its nodes stay Pending), else 0.",
                             {"plan"})),
      window_open(registry.gauge(
          "gpu_partitioner_plan_window_open",
          "1 while the plan's change windows let nodes start (always, without windows), else 0.",
          {"plan"})),
      canary_phase(registry.gauge("gpu_partitioner_plan_canary_phase",
                                  "1 for the phase of the plan's canary (Selecting, InProgress, "
                                  "AwaitingPromotion, Passed, Failed), 0 for the others; none "
                                  "without a canary.",
                                  {"plan", "phase"})),
      soaking(registry.gauge("gpu_partitioner_plan_soaking_nodes",
                             "The plan's Succeeded nodes still soaking (holding their token).",
                             {"plan"})),
      max_failures(registry.gauge("gpu_partitioner_plan_max_failures",
                                  "Failed nodes the plan tolerates before it starts no further "
                                  "node (spec.rollout.maxFailures resolved; 0 unset).",
                                  {"plan"})),
      preflight_failed(registry.gauge(
          "gpu_partitioner_plan_preflight_failed_nodes",
          "Of the plan's Failed nodes, those that failed in preflight, before anything on the "
          "node changed.",
          {"plan"})),
      tls_verification_disabled(registry.gauge(
          "gpu_partitioner_api_tls_verification_disabled",
          "1 when the kubeconfig turns off verification of the API server's certificate "
          "(insecure-skip-tls-verify), else 0.")) {
  tls_verification_disabled.set({}, 0);
  for (const auto lane : kube::request_lanes) {
    api_rate_limiter_seconds.ensure({std::string(kube::to_string(lane))});
    api_rate_limiter_waiting.set({std::string(kube::to_string(lane))}, 0);
  }
  leader.set({}, 0);
  // Known label values start at 0, so that rate() and increase() see the first one.
  for (const char* result : {"evicted", "pdb_blocked", "error"})
    evictions.ensure({result});
  for (const char* type : {"Normal", "Warning"})
    events_dropped.ensure({type});
  for (const auto& phase : protocol::enum_names(protocol::codec::tag<protocol::node_phase>{}))
    phase_seconds.ensure({std::string(phase.name)});
  // The process's CPU, memory, descriptors and heap, read when /metrics is asked.
  metrics::register_process_metrics(registry);
}

kube::request_observer operator_metrics::api_observer() {
  return [this](const kube::request_record& r) {
    // A watch is a GET on the wire; its own verb, as the API server's metrics say.
    api_requests.add(
        {r.stream ? "WATCH" : kube::to_string(r.method), r.resource, std::to_string(r.code)});
    // A watch's latency is its lifetime, not a response time.
    if (!r.stream)
      api_seconds.observe({kube::to_string(r.method), r.resource},
                          std::chrono::duration<double>(r.latency).count());
  };
}

kube::rate_limiter::observer operator_metrics::rate_limiter_observer() {
  return [this](kube::request_lane lane, std::chrono::nanoseconds waited) {
    api_rate_limiter_seconds.observe({std::string(kube::to_string(lane))},
                                     std::chrono::duration<double>(waited).count());
  };
}

kube::rate_limiter::depth_observer operator_metrics::rate_limiter_depth() {
  return [this](kube::request_lane lane, std::size_t waiting) {
    api_rate_limiter_waiting.set({std::string(kube::to_string(lane))},
                                 static_cast<double>(waiting));
  };
}

void operator_metrics::publish_plan_phase(const std::string& plan,
                                          std::optional<protocol::plan_phase> phase) {
  if (!phase)
    return;
  for (auto p : {protocol::plan_phase::pending, protocol::plan_phase::progressing,
                 protocol::plan_phase::paused, protocol::plan_phase::completed,
                 protocol::plan_phase::degraded})
    plan_phase.set({plan, std::string(protocol::codec::to_string(p))}, p == *phase ? 1 : 0);
}

void operator_metrics::publish_plan(const std::string& plan,
                                    const protocol::partitioning_plan_status& status, bool dry,
                                    std::int32_t tolerated, std::int32_t in_preflight) {
  const auto& n = status.nodes;
  using p = protocol::node_phase;
  const std::pair<p, std::int32_t> by_phase[] = {
      {p::pending, n.pending},     {p::draining, n.draining},
      {p::applying, n.applying},   {p::waiting_operator, n.waiting_operator},
      {p::verifying, n.verifying}, {p::succeeded, n.succeeded},
      {p::failed, n.failed}};
  for (const auto& [phase, count] : by_phase)
    nodes.set({plan, std::string(protocol::codec::to_string(phase))}, count);
  progress.set({plan}, n.total > 0 ? double(n.succeeded) / n.total : 0.0);
  publish_plan_phase(plan, status.phase);
  dry_run.set({plan}, dry ? 1 : 0);
  window_open.set({plan}, !status.window || status.window->may_start ? 1 : 0);
  soaking.set({plan}, n.soaking);
  max_failures.set({plan}, tolerated);
  preflight_failed.set({plan}, in_preflight);
  if (status.canary && status.canary->phase) {
    for (const auto& e : protocol::enum_names(protocol::codec::tag<protocol::canary_phase>{}))
      canary_phase.set({plan, std::string(e.name)}, e.value == *status.canary->phase ? 1 : 0);
  } else {
    canary_phase.remove_where("plan", plan);
  }
}

void operator_metrics::forget_plan(const std::string& plan) {
  for (auto* f :
       {&nodes, &transitions, &blocked_pods, &reconcile_errors, &progress, &plan_phase, &dry_run,
        &window_open, &canary_phase, &soaking, &max_failures, &preflight_failed})
    f->remove_where("plan", plan);
}

operator_metrics& process_metrics() {
  static operator_metrics m;
  return m;
}

} // namespace gpu_partitioner::actors
