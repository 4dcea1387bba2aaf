#pragma once

#include "tools/simulator/node_model.hpp"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpu_partitioner::sim {

struct pod_key {
  std::string ns;
  std::string name;
  bool operator<(const pod_key& o) const { return ns != o.ns ? ns < o.ns : name < o.name; }
};

/// One entry of a pod's spec.resourceClaims, resolved to its ResourceClaim.
struct pod_claim {
  /// The pod's name for it.
  std::string name;
  /// The ResourceClaim's name: spec.resourceClaims[i].resourceClaimName, or for a template
  /// claim status.resourceClaimStatuses[].resourceClaimName. nullopt: the template's claim
  /// does not exist yet; "": none was needed (the status says so), nothing to prepare.
  std::optional<std::string> claim;
};

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
  /// The GPU operator's device plugin or the DRA driver's kubelet plugin (a container named
  /// device-plugin or gpu-kubeletplugin, in DCM's namespace): it crash-loops on a node with
  /// the plugin-crashloop fault.
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
  /// spec.resourceClaims, resolved.
  std::vector<pod_claim> claims;
  /// Every claim is prepared by its driver (see claims_prepared): kubelet starts a pod with
  /// claims only then. The caller sets it.
  bool claims_prepared = true;
  /// The caller's writes for this pod: one is queued or awaits its answer, or when the last
  /// was answered. Nothing is asked again while a write waits, nor until resend_after after
  /// its answer: behind a slow API server, writes asked again on a timer pile up in the
  /// queue and starve the first ones.
  bool write_waiting = false;
  std::optional<sim_time> write_answered{};
};

/// One allocated device of a claim: status.allocation.devices.results[].
struct allocated_device {
  std::string driver;
  std::string pool;
  std::string device;
};

/// A ResourceClaim as kubelet's DRA manager sees it.
struct observed_claim {
  /// status.allocation is set.
  bool allocated = false;
  std::vector<allocated_device> devices;
  /// The uids of the pods in status.reservedFor.
  std::vector<std::string> reserved_for;
};

/// kubelet's NodePrepareResources gate: every claim the pod names exists, is allocated and
/// reserved for this pod, and each driver of its devices is registered on the node
/// (`drivers_up`). The scheduler allocates and reserves before binding; kubelet only waits.
bool claims_prepared(const observed_pod& pod, const std::map<pod_key, observed_claim>& claims,
                     const std::set<std::string>& drivers_up);

/// The devices of `driver` on the pod's node (its pool is named after the node) that the
/// pod's claims hold: while its containers run, those GPUs are busy.
int claimed_devices(const observed_pod& pod, const std::map<pod_key, observed_claim>& claims,
                    const std::string& driver);

/// The annotation that makes a pod crash-loop on a simulated node.
inline constexpr const char* crash_loop_annotation = "sim.gpu-partitioner.io/crash-loop";

/// Running as the kubelet reported it: Ready, or crash-looping by design.
inline bool settled_running(const observed_pod& p) {
  return p.phase == "Running" && (p.ready || p.crash_loop);
}

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
  /// How long to wait for a write (from when it was asked, and from its answer) to show in
  /// the watch before asking again.
  std::chrono::milliseconds resend_after{3000};
};

/// Plays kubelet for pods on simulated nodes: bound pods start unless their node has a
/// NoExecute taint they do not tolerate or their claims are not prepared; deleted pods finish
/// terminating after their grace period (scaled, and capped). The memory of a pod not in `pods` is
/// dropped: a caller may leave out the pods there is nothing to do for (running and ready, or
/// finished).
pod_actions step_pods(std::map<pod_key, pod_memory>& memory,
                      const std::map<pod_key, observed_pod>& pods, sim_time now,
                      const sim_timing& timing, const kubelet_timing& kubelet = {});

} // namespace gpu_partitioner::sim
