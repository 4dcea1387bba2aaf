#pragma once

#include "tools/simulator/node_model.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpu_partitioner::sim {

/// What the simulated kubelet sees of a pod bound to one of its nodes.
struct observed_pod {
  std::string ns;
  std::vector<std::pair<std::string, std::string>> containers; // name, image
  std::string name;
  std::string uid;
  std::string node;
  std::string phase;
  bool ready = false;
  /// Annotated sim.gpu-partitioner.io/crash-loop: started, it runs but never becomes
  /// Ready, its container restarting (CrashLoopBackOff).
  bool crash_loop = false;
  /// The GPU operator's device plugin (a container named device-plugin, in DCM's
  /// namespace): it crash-loops on a node with the plugin-crashloop fault.
  bool device_plugin = false;
  bool deleting = false;
  long long grace_seconds = 30;
  /// One of DCM's DaemonSet pods (in DCM's namespace, app.kubernetes.io/name=
  /// device-config-manager).
  bool dcm = false;
  /// Tolerates amd-dcm=up:NoExecute (the taint DCM's procedure puts on the node).
  bool tolerates_dcm_taint = false;
  /// Its node carries amd-dcm=up:NoExecute: a pod that does not tolerate it is refused by
  /// the kubelet's admission and never starts (the taint manager deletes it).
  bool node_dcm_tainted = false;
};

/// The annotation that makes a pod crash-loop on a simulated node.
inline constexpr const char* crash_loop_annotation = "sim.gpu-partitioner.io/crash-loop";

/// Running as the kubelet reported it: Ready, or crash-looping by design.
inline bool settled_running(const observed_pod& p) {
  return p.phase == "Running" && (p.ready || p.crash_loop);
}

struct pod_key {
  std::string ns;
  std::string name;
  bool operator<(const pod_key& o) const { return ns != o.ns ? ns < o.ns : name < o.name; }
};

struct pod_memory {
  sim_time first_seen{};
  sim_time deleting_since{};
  bool deleting_seen = false;
  /// When a write was last asked for, so a write in flight is not asked for again.
  std::optional<sim_time> acted_at;
};

struct pod_actions {
  /// Report Running and Ready (containers started).
  std::vector<observed_pod> start;
  /// Gone after their grace period: delete for good.
  std::vector<observed_pod> remove;
};

struct kubelet_timing {
  /// From binding to Running and Ready.
  std::chrono::milliseconds startup{1000};
  /// The longest a terminating pod takes, whatever its grace period says.
  std::chrono::milliseconds max_termination{30000};
  /// How long to wait for a write to show in the watch before asking again.
  std::chrono::milliseconds resend_after{3000};
};

/// Plays kubelet for pods on simulated nodes: bound pods start unless their node has a
/// NoExecute taint they do not tolerate; deleted pods finish terminating after their grace
/// period (scaled, and capped). The memory of a pod not in `pods` is dropped: a caller may
/// leave out the pods there is nothing to do for (running and ready, or finished).
pod_actions step_pods(std::map<pod_key, pod_memory>& memory,
                      const std::map<pod_key, observed_pod>& pods, sim_time now,
                      const sim_timing& timing, const kubelet_timing& kubelet = {});

} // namespace gpu_partitioner::sim
