#pragma once

// kubelet's node heartbeats, for one simulated node: its Lease in kube-node-lease, renewed
// every quarter of the lease's duration (pkg/kubelet/nodelease), and its status, posted
// when it differs from what kubelet reports and otherwise every nodeStatusReportFrequency
// (kubelet_node_status.go). The node-lifecycle controller reads either as a sign of life: a
// node whose kubelet stopped renews nothing and goes Unknown after the controller's grace
// period. A pure step: what the node shows and the time in, the writes out. Heartbeats are
// wall time against the control plane's own clocks: --time-scale does not touch them.

#include "tools/simulator/node_model.hpp"

#include <chrono>
#include <string>

namespace gpu_partitioner::sim {

/// Where nodes' Leases live, and what kubelet writes in them.
inline constexpr const char* node_lease_namespace = "kube-node-lease";

struct heartbeat_timing {
  /// The Lease's spec.leaseDurationSeconds (kubelet's nodeLeaseDurationSeconds default).
  std::chrono::seconds lease_duration{40};
  /// kubelet renews every quarter of the lease's duration (nodeLeaseRenewIntervalFraction).
  std::chrono::milliseconds renew_every{10000};
  /// A renewal that failed is tried again this soon (kubelet retries at once, backing off
  /// from 200 ms to 7 s).
  std::chrono::milliseconds retry_after{1000};
  /// An unchanged status is posted this often (nodeStatusReportFrequency): the Ready
  /// condition's lastHeartbeatTime.
  std::chrono::milliseconds report_every{300000};
  /// kubelet compares what the node shows with what it reports this often
  /// (nodeStatusUpdateFrequency): a Ready the lifecycle controller marked Unknown, say
  /// after an API server outage, is put back within it.
  std::chrono::milliseconds update_every{10000};
};

/// What the tick sees of one node's heartbeats.
struct heartbeat_view {
  /// Its kubelet runs (no kubelet-stopped fault).
  bool kubelet_running = true;
  /// The status of the node's Ready condition as the watch shows it ("True", "False",
  /// "Unknown"); "" while the node has none (not registered: the registration posts it).
  std::string ready;
  /// A renewal, or a status post, is queued or awaits its answer: none is asked again.
  bool renewal_waiting = false;
  bool status_waiting = false;
  /// The last renewal was answered with an error (told once).
  bool renewal_failed = false;
};

struct heartbeat_memory {
  /// kubelet was running at the last step: a start renews and reports afresh.
  bool running = false;
  sim_time next_renewal{};
  sim_time next_report{};
  /// When a Ready status was last posted, to post one at most every update_every.
  sim_time ready_posted{};
  bool ready_posted_once = false;
};

struct heartbeat_actions {
  bool renew_lease = false;
  /// Post the node's conditions: Ready with a transition (the node shows otherwise), or
  /// only a fresh lastHeartbeatTime.
  enum class status_post { none, ready, heartbeat };
  status_post status = status_post::none;
};

/// Where in each interval a node's writes fall, from 0 up to 1: a hash of its name, so that
/// nodes registered together (tools/sim up, a restarted gpu-sim) do not renew together.
double heartbeat_phase(const std::string& node);

/// One step for one node. A kubelet that starts (or is first seen) posts Ready if the node
/// shows otherwise and renews at its phase of renew_every, then every renew_every (again
/// retry_after after a failure); it reports its unchanged status every report_every, at its
/// phase of that. A stopped kubelet writes nothing.
heartbeat_actions step_heartbeat(heartbeat_memory& memory, const heartbeat_view& node, sim_time now,
                                 double phase, const heartbeat_timing& timing = {});

} // namespace gpu_partitioner::sim
