#pragma once

#include "protocol/timestamp.hpp"

// What the operator has observed of the cluster's built-in objects, reduced to what the
// decisions read. The Watcher fills these from list+watch streams; the decisions in this
// folder take them (and the time) and return actions.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gpu_partitioner::controller {

/// The taint the DCM procedure uses: pods that do not tolerate it are removed, the GPU
/// operator's device plugin and labeller among them.
inline constexpr const char* dcm_taint_key = "amd-dcm";
inline constexpr const char* dcm_taint_value = "up";

/// The taints kube-controller-manager's node-lifecycle controller keeps on nodes: the
/// cordon (spec.unschedulable) shown as a taint, and a Ready condition that is False
/// (not-ready) or Unknown (unreachable: the kubelet stopped renewing its Lease).
inline constexpr const char* unschedulable_taint_key = "node.kubernetes.io/unschedulable";
inline constexpr const char* not_ready_taint_key = "node.kubernetes.io/not-ready";
inline constexpr const char* unreachable_taint_key = "node.kubernetes.io/unreachable";

struct taint {
  std::string key;
  std::string value;
  std::string effect; // NoSchedule, PreferNoSchedule, NoExecute
  bool operator==(const taint& o) const {
    return key == o.key && value == o.value && effect == o.effect;
  }
};

/// The prefix of the operator's own annotations (node_machine.hpp names them).
inline constexpr std::string_view operator_annotation_prefix = "infrastructure.silogen.ai/";

struct node_info {
  std::string name;
  std::string uid;
  std::string resource_version;
  std::map<std::string, std::string> labels;
  /// Only the operator's own (operator_annotation_prefix): it reads no other, and the
  /// kubelet's, CNI's and CSI's annotations, a kilobyte or more on a real node, would
  /// take memory in every node's entry and wake its worker whenever they change.
  std::map<std::string, std::string> annotations;
  bool unschedulable = false;
  std::vector<taint> taints;
  /// status.allocatable, as quantities written by the API server ("64", "2Ti").
  std::map<std::string, std::string> allocatable;
  /// The Ready condition is True.
  bool ready = true;

  bool has_dcm_taint() const;
  /// The value of label `key`, "" when the node has none.
  std::string label(const std::string& key) const;
  /// Labelled or tainted node-role.kubernetes.io/control-plane (or the older .../master).
  bool is_control_plane() const;
};

/// Whether a node counts against maxUnavailable whatever the operator does to it: cordoned
/// (by anyone) or not Ready.
inline bool counts_down(const node_info& node) {
  return node.unschedulable || !node.ready;
}

struct toleration {
  std::string key;
  std::string op = "Equal"; // Equal or Exists
  std::string value;
  std::string effect; // empty: all effects
  /// For NoExecute: tolerated only this long, then evicted anyway (without regard for
  /// PDBs), so such a pod counts as not tolerating the taint.
  bool bounded = false;

  bool operator==(const toleration& o) const {
    return key == o.key && op == o.op && value == o.value && effect == o.effect &&
           bounded == o.bounded;
  }
};

/// Whether a toleration tolerates a taint (the rules of core/v1 Toleration).
bool tolerates(const toleration& t, const taint& taint);
/// Whether it tolerates the amd-dcm taint for good (no tolerationSeconds).
bool tolerates_dcm_without_bound(const toleration& t);

/// How many labels, tolerations and nodeSelector entries a pod keeps in the operator's
/// memory. Real pods carry a few; the API server bounds only the object's size. A pod
/// with more labels keeps the first (by key): a budget or drainPolicy.podSelector may then
/// not select it here, which names budgets less well (the Eviction API enforces them all
/// the same) and holds the pod rather than evicting it.
inline constexpr std::size_t pod_list_limit = 64;

struct pod_info {
  std::string ns;
  std::string name;
  std::string uid;
  std::string node_name;
  std::map<std::string, std::string> labels;
  std::string phase; // Pending, Running, Succeeded, Failed
  /// Its Ready condition is True (a budget counts only such pods healthy).
  bool ready = true;
  /// A container of it waits in CrashLoopBackOff; the most restarts of any container.
  bool crash_looping = false;
  int restarts = 0;
  /// It has a container named "device-plugin", as the GPU operator's device plugin
  /// DaemonSet does (ROCm/gpu-operator, internal/plugin). Any tenant can name a container
  /// so: is_gpu_device_plugin says whether it is the plugin.
  bool device_plugin = false;
  /// A pod of AMD's DRA driver's kubelet plugin: a DaemonSet pod running its image
  /// (dra_driver_image), or labelled app.kubernetes.io/component=kubeletplugin as AMD's
  /// chart labels it.
  bool dra_driver = false;
  bool deleting = false;
  /// Owned by a DaemonSet (its controller would put it back at once): its controller
  /// reference names an apps/v1 DaemonSet, and (checked where a node's inputs are put
  /// together, resolve_daemon_set_owners) that DaemonSet exists with that UID. A pod
  /// whose DaemonSet is not there is unmanaged, as kubectl drain finds it.
  bool daemon_set = false;
  /// The DaemonSet its controller reference names: namespace/name and UID.
  std::string daemon_set_key;
  std::string daemon_set_uid;
  /// A static pod's mirror (kubernetes.io/config.mirror): the API cannot remove it.
  bool mirror = false;
  /// No controller owns it: nothing recreates it once evicted (kubectl drain refuses it
  /// without --force).
  bool unmanaged = false;
  /// It mounts an emptyDir volume: that data is lost on eviction (kubectl drain refuses
  /// it without --delete-emptydir-data).
  bool empty_dir = false;
  /// When its deletion is due (metadata.deletionTimestamp: when it was asked, plus the
  /// grace) and that grace: a pod still here long after is stuck, not held by a budget.
  std::optional<protocol::wall_clock::time_point> deletion_deadline;
  std::optional<long long> deletion_grace_seconds;
  /// Its tolerations, the first pod_list_limit distinct ones (a pod may carry tens of
  /// thousands, each kept by every view: a tenant's cheap way to grow the operator); none
  /// for a DaemonSet's pod, which is never evicted to run elsewhere (its DaemonSet puts
  /// one back on the node), so no room is looked for it, and whose tolerations are most
  /// of all the pods' (nine or so each, on every node).
  /// Fewer tolerations kept only ever find less room for a replacement; whether it
  /// tolerates the amd-dcm taint is worked out over all of them (tolerates_dcm).
  std::vector<toleration> tolerations;
  /// Some of its tolerations tolerate the amd-dcm taint without bound (read over all).
  bool tolerates_dcm = false;
  /// spec.nodeSelector: where it (and a replacement from the same template) may run. One
  /// with more than pod_list_limit entries is not kept: node_selector_cut, and no node is
  /// taken for room for it. Empty for a DaemonSet's pod (as its tolerations).
  std::map<std::string, std::string> node_selector;
  bool node_selector_cut = false;
  /// GPUs (any amd.com/ resource) requested by its containers, plus the devices of AMD's
  /// DRA driver its claims hold.
  long long gpus = 0;
  /// Some of its GPUs are held through ResourceClaims.
  bool gpu_claims = false;
  /// What it mounts where DCM reads its config (dcm_config_mount_path): the ConfigMap's
  /// name, "" for a volume of another kind; nullopt when nothing is mounted there. With
  /// the image of the container that mounts it (DCM's, whose tag is DCM's version).
  std::optional<std::string> dcm_config_mount;
  std::string dcm_image;

  bool tolerates_dcm_taint() const;
  bool finished() const { return phase == "Succeeded" || phase == "Failed"; }
};

/// The GPU operator's device plugin: a pod with its container, run by a DaemonSet in the
/// GPU operator's namespace (DCM's). A tenant's pod with a container of that name is not.
inline bool is_gpu_device_plugin(const pod_info& p, const std::string& gpu_operator_ns) {
  return p.device_plugin && p.daemon_set && p.ns == gpu_operator_ns;
}

/// Where DCM reads config.json: a ConfigMap volume of its pod (ROCm/device-config-manager
/// globals.JsonFilePath; the GPU operator and DCM's own chart mount it there).
inline constexpr const char* dcm_config_mount_path = "/etc/config-manager";

/// A DCM pod: in DCM's namespace, labelled as the GPU operator's DaemonSet labels it
/// (app.kubernetes.io/name=device-config-manager) or as DCM's own Helm chart does
/// (app=amdgpu-device-config-manager, "standalone DCM").
bool is_dcm_pod(const pod_info& p, const std::string& dcm_namespace);

/// Whether a pod's change (`was` -> `now`, null: absent) changes who reads which DCM
/// ConfigMap: a DCM pod came, went, or mounts another. What other nodes' slices share (the
/// nodes whose DCM reads a ConfigMap) must then be worked out again.
bool dcm_reader_changed(const pod_info* was, const pod_info* now, const std::string& dcm_namespace);

/// DaemonSets, namespace/name -> UID: all a drain needs to know of them.
using daemon_set_uids = std::map<std::string, std::string>;
/// Their resource's plural, as cluster_view::absent_resources names it.
inline constexpr const char* kube_daemon_sets_plural = "daemonsets";

/// Whether the DaemonSet a pod's controller reference names is there (the UID too): if
/// not, the pod is not a DaemonSet's (daemon_set false, unmanaged), and neither is it
/// AMD's DRA driver. A forged owner would otherwise keep any pod on a drained node.
void resolve_daemon_set_owner(pod_info& p, const daemon_set_uids& daemon_sets);

struct pdb_info {
  std::string ns;
  std::string name;
  std::map<std::string, std::string> match_labels;
  /// matchExpressions reduced to the selector string form; empty if none.
  struct requirement {
    std::string key;
    std::string op; // In, NotIn, Exists, DoesNotExist
    std::vector<std::string> values;
  };
  std::vector<requirement> match_expressions;
  bool selects_nothing = false; // a nil selector
  int disruptions_allowed = 0;
  /// status.currentHealthy and desiredHealthy: a budget below its desired count refuses
  /// unhealthy pods too, unless spec.unhealthyPodEvictionPolicy is AlwaysAllow.
  int current_healthy = 0;
  int desired_healthy = 0;
  bool always_allow_unhealthy = false;
  /// status.disruptedPods: pods whose eviction the API server approved (and counted
  /// against the budget) but has not yet seen deleted.
  std::set<std::string> disrupted_pods;
  /// When the watch delivered this version: a budget that allows a disruption is news
  /// only if seen after the eviction it refused (a view older than the refusal is stale).
  protocol::wall_clock::time_point seen{};

  bool covers(const pod_info& pod) const;
};

/// One of DCM's Events from the node (about its pod there), as the decisions read it.
struct dcm_event_info {
  std::string type; // Normal or Warning
  std::string reason;
  std::string message;
  /// SelectedProfile of DCM's GPU PartitionStatus message: which request it answers. ""
  /// for a message of another shape: the same pod sends AMD AI NIC Events, whose
  /// SelectedProfile is a NIC profile; a GPU answer always carries GPUStatus (null when no
  /// GPU was worked on).
  std::string profile;
  protocol::wall_clock::time_point time{};
};

/// One of DCM's Events as the watch decodes it: where it came from and what it is
/// about, to file it under its node, and what it says.
struct dcm_event {
  /// metadata.namespace: where the Event was written.
  std::string ns;
  /// source.host: the node DCM runs on (DCM writes its Events about its own pod there).
  std::string host;
  /// involvedObject: the kind, namespace and name of what it is about.
  std::string about_kind;
  std::string about_namespace;
  std::string about_name;
  dcm_event_info info;
};

/// Whether a DCM Event could be DCM's at all: written in `dcm_namespace` about a pod there.
/// Anyone may write an Event with DCM's source and reasons in a namespace they own.
bool from_dcms_namespace(const dcm_event& e, const std::string& dcm_namespace);

/// The node a DCM Event answers for, or "" when it is not to be trusted. Events cannot be
/// authenticated, and any node's kubelet may write one anywhere, naming any host: an answer
/// counts only when its pod (`pod`, null while not seen) is a pod in DCM's namespace that
/// is not a kubelet's mirror pod, and it counts for the node that pod runs on (the source
/// host, if given, must be that node). An Event whose pod is not seen yet waits for it.
std::string dcm_event_node(const dcm_event& e, const std::string& dcm_namespace,
                           const pod_info* pod);

} // namespace gpu_partitioner::controller
