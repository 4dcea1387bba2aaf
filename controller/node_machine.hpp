#pragma once

// DESIGN.md section 4: one node's way from Pending to Succeeded or Failed. A pure
// function of what was observed (the NodePartitioning, its Node, the pods on it, PDBs,
// the profile, DCM's config) and the time; it returns the writes to make and when to
// look again. Every step is idempotent: a controller restarted at any instant re-reads
// the same state and continues.

#include "controller/dcm_discovery.hpp"
#include "controller/dra.hpp"
#include "controller/finding.hpp"
#include "controller/observed.hpp"
#include "controller/shared_map.hpp"
#include "protocol/node_partitioning.hpp"
#include "protocol/partitioning_profile.hpp"
#include "protocol/timestamp.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpu_partitioner::controller {

// -- names the operator writes --
inline constexpr const char* item_finalizer = "infrastructure.silogen.ai/node-partitioning";
/// On the Node while we hold it: "true" if it was already cordoned before we came (an
/// admin's cordon, which we never lift), "false" if we cordoned it. Any other value is
/// read as "true", and rewritten when a run starts.
inline constexpr const char* was_unschedulable_annotation =
    "infrastructure.silogen.ai/was-unschedulable";
/// On the Node: `<desiredHash>@<startedAt>` of the run that set the profile label, so a
/// restart knows the label is this run's (and a retry sets it afresh).
inline constexpr const char* applied_hash_annotation = "infrastructure.silogen.ai/applied-hash";
/// On a NodePartitioning: set (to any value) to retry a Failed node.
inline constexpr const char* retry_annotation = "infrastructure.silogen.ai/retry";
inline constexpr const char* dcm_profile_label = "dcm.amd.com/gpu-config-profile";
inline constexpr const char* dcm_state_label = "dcm.amd.com/gpu-config-profile-state";
/// Set by AMD's node labeller on a node whose GPUs all share one style ("cpx_nps4").
inline constexpr const char* partition_label = "amd.com/gpu.compute-memory-partition";
/// Set by AMD's node labeller: the GPUs' PCI device id (MI300X: 74a1).
inline constexpr const char* gpu_device_id_label = "amd.com/gpu.device-id";

/// The profile a node is to get, as far as it could be resolved.
struct resolved_profile {
  std::string name;
  /// The PartitioningProfile exists (and decoded).
  bool found = false;
  protocol::partitioning_profile_spec spec;
  /// DCM's profile name: operatorPayload.profileName, else the profile's name.
  std::string dcm_name;
  /// The payload ConfigMap's data["profile.json"], if it was found.
  std::optional<std::string> payload;
  /// protocol::payload_hash of it; "" without one.
  std::string payload_hash;
  /// Why the payload is missing, when it is ("ConfigMap kube-amd-gpu/x not found").
  std::string payload_problem;
  /// The payload's ConfigMap is in a namespace payloads may not live in (the problem
  /// above says which are allowed).
  bool payload_forbidden = false;
  /// The payload's ConfigMap, or a DCM-name rival's, is still being listed: whether the
  /// payload exists, or conflicts, is not known yet.
  bool payload_pending = false;
  /// The profile exists but does not decode: why (its field and problem).
  std::string invalid;
  /// Other profiles that use the same DCM profile name with another valid payload: DCM
  /// holds one payload per name, so they would overwrite each other's.
  std::vector<std::string> dcm_name_rivals;
};

/// Whether the item's plan lets the operator act on it.
struct plan_standing {
  /// The item belongs to a live plan (its planRef names one, with that uid). An item
  /// made by hand, or left by a plan that is gone, is not acted on at all.
  bool owned = true;
  /// The plan may start nodes: false while it is invalid or being deleted.
  bool may_start = true;
  /// Why not, for the item's conditions.
  finding problem;
};

/// On DCM's ConfigMap: when the operator last changed its config.json. DCM reads the
/// ConfigMap as a mounted file that kubelet refreshes a minute or more after a change.
inline constexpr const char* dcm_config_written_annotation =
    "infrastructure.silogen.ai/config-written-at";
/// A device plugin pod in CrashLoopBackOff with this many restarts fails verification at
/// once: kubelet backs off 10 s, 20 s, 40 s, so this is about a minute of crashing.
inline constexpr int plugin_crash_restarts = 3;
/// The label of the GPU operator's DCM DaemonSet pods (app.kubernetes.io/name=...).
inline constexpr const char* dcm_pod_label = "app.kubernetes.io/name";
inline constexpr const char* dcm_pod_label_value = "device-config-manager";

/// DCM's Event reasons that mean the profile is in place.
inline bool dcm_success_reason(const std::string& reason) {
  return reason == "SuccessfullyPartitioned" || reason == "RequestedPartitionConfigAlreadyExists";
}

/// Whether one of DCM's Events says a run did not succeed, or will be retried: a Warning
/// (other than a success reason), or a reason DCM sends only then (AMDSMIAPIFailure comes
/// as Normal after an init failure). Any other Normal Event is progress, not an answer:
/// newer DCM sends "recovering memory partition for KMM driver, might take upto 5 mins"
/// in the middle of a memory-mode change, and the same pod sends AMD AI NIC Events.
bool dcm_failure_event(const dcm_event_info& e);

/// DCM retries a failed run every minute for 30 minutes from the label's trigger, and the
/// attempt under way then completes (a memory change reloads the driver, up to 5 minutes
/// with a KMM-managed one; each host service takes 10 s more): 40 minutes after the label,
/// DCM has surely stopped.
inline constexpr std::chrono::minutes dcm_retry_bound{40};

/// A failure DCM does not retry: the config file unreadable, the profile unknown or
/// invalid, amd-smi unusable. (NonExistentProfile is run again when the file changes, and
/// PartitionRetrying is retried.)
inline bool dcm_final_failure(const std::string& reason) {
  return reason == "InvalidJSONInConfigMap" || reason == "InvalidProfileInfo" ||
         reason == "ConfigMapNotPresent" || reason == "AMDSMIAPIFailure" ||
         reason == "DuplicateProfileExists" || reason == "PartitionFailure";
}

/// DCM stamps its Events with the node's clock, never compared with the operator's: a run
/// records (status.dcmEventsUntil) the newest of them it has accounted for, and reads as
/// new only those newer by that same clock. The mark of `events`: the newest one's time,
/// or the epoch when there is none.
std::string dcm_events_mark(const std::vector<dcm_event_info>& events);

/// The run's recorded mark; nullopt when its start recorded none (a run started by an
/// operator that did not): then no Event is taken for new.
std::optional<protocol::wall_clock::time_point>
dcm_events_until(const protocol::node_partitioning_status& status);

/// The node's DCM and the config ConfigMap it reads, as observed.
struct dcm_config_state {
  std::string ns;
  /// The ConfigMap the node's DCM pod mounts; "" when there is none, or it cannot be told.
  std::string name;
  /// The node's DCM pod (namespace/name), whether it runs, its version (its image's tag)
  /// and why the ConfigMap it reads cannot be told (find_node_dcm).
  std::string pod;
  bool running = false;
  std::string image;
  std::optional<dcm_version> version;
  std::string problem;
  /// The operator may write it (dcm_settings::writable).
  bool writable = true;
  /// How long after the label DCM may still change the GPUs of a failed run.
  std::chrono::milliseconds retry_bound{dcm_retry_bound};
  bool found = false;
  std::string config_json;
  /// When config.json last changed, as far as known: our annotation, else the ConfigMap's
  /// creation. Nothing: long enough ago.
  std::optional<protocol::wall_clock::time_point> written_at;
  /// How long after a change kubelet has surely delivered it to DCM's file
  /// (--dcm-config-sync).
  std::chrono::milliseconds sync{90000};
};

/// The outcome of the last eviction attempt for a pod, kept by the worker between steps.
struct eviction_memory {
  protocol::wall_clock::time_point at{};
  /// A budget refused it (429).
  bool blocked = false;
  bool done = false;
  std::string message;
  /// Any other error; `failures` in a row, for the backoff (record_eviction counts them).
  bool failed = false;
  int failures = 0;
  /// The run that asked (its status.startedAt). A drain reads only its own run's: a pod
  /// of the same name in a later run is a pod that run has not evicted.
  std::string run{};
  /// The API server said this pod (by uid) no longer exists, while the pods' watch still
  /// showed it: the drain counts it gone and does not read it again.
  std::string gone_uid{};
};

struct node_inputs {
  protocol::node_partitioning item;
  plan_standing plan;
  std::optional<node_info> node;
  std::vector<pod_info> pods;
  std::vector<pdb_info> pdbs;
  resolved_profile profile;
  dcm_config_state dcm;
  /// Every node (a drain's and a dry run's deadlock check), and the plan's (a dry run's);
  /// null when not given.
  std::shared_ptr<const shared_map<node_info>> cluster_nodes;
  std::shared_ptr<const std::set<std::string>> plan_nodes;
  /// With plan_nodes: the plan's maxParallel (0: not known).
  std::int32_t plan_max_parallel = 0;
  /// With cluster_nodes: per node, the devices of AMD's DRA driver no claim holds.
  std::shared_ptr<const std::map<std::string, std::int64_t>> free_gpu_devices;
  /// The plan's RolloutGovernor granted this node a token.
  bool token = false;
  /// Keyed by "namespace/name".
  std::map<std::string, eviction_memory> evictions;
  /// Why the last batch of writes failed, if it did (shown in status.lastError).
  std::string write_error;
  /// The write error that a later successful write resolved: lastError is cleared if it
  /// still says this.
  std::string resolved_write_error;
  /// The node's ResourceSlices (every driver's) and the claims allocated on its devices.
  std::vector<resource_slice_info> slices;
  std::vector<resource_claim_info> claims;
  /// The operator's DeviceTaintRules made for this node, and whether the API server serves
  /// them (drainPolicy.cordon Devices).
  std::vector<device_taint_rule_info> taint_rules;
  bool device_taints_served = false;
  /// The operator may not list ResourceClaims (cluster_view::forbidden_resources): pods
  /// holding a DRA node's GPUs through claims cannot be seen.
  bool claims_forbidden = false;
  /// The operator's RBAC lets it delete pods (cluster_view::pods_deletable).
  bool pods_deletable = true;
  /// DCM's Events from this node (about its pod here), any order.
  std::vector<dcm_event_info> dcm_events;
  /// DCM profile name -> payload, of every profile the item's plan uses that may be
  /// written to DCM's config: they go in one write, early, while the first nodes drain.
  std::map<std::string, std::string> plan_profiles;
  /// Other nodes whose profile label holds this profile's DCM name, when DCM's config
  /// holds another payload under it: writing ours would repartition them undrained.
  std::vector<std::string> dcm_name_holders;
  protocol::wall_clock::time_point now{};
};

/// One merge patch of the Node: cordon state, labels, annotations (nullopt removes).
struct node_patch {
  std::optional<bool> unschedulable;
  std::map<std::string, std::optional<std::string>> labels;
  std::map<std::string, std::optional<std::string>> annotations;
  bool empty() const { return !unschedulable && labels.empty() && annotations.empty(); }
};

struct pod_removal {
  std::string ns;
  std::string name;
  std::string uid;
  /// Through the Eviction API (PDBs respected); false: a plain delete.
  bool evict = true;
  /// Evicted before, and still shown undeleted after the retry interval: the pods' watch
  /// may lag (after an API server restart, say), so the pod is read first and evicted
  /// again only if it is really still there and not being deleted.
  bool again = false;
  /// drainPolicy.gracePeriodSeconds: overrides the pod's own.
  std::optional<std::int64_t> grace_seconds{};
};

/// Ensure `gpu-config-profiles.<name>` of DCM's config holds each payload, in one write
/// that also stamps dcm_config_written_annotation when anything changed.
struct dcm_config_write {
  std::string ns;
  std::string name;
  /// DCM profile name -> payload.
  std::map<std::string, std::string> profiles;
};

/// drainPolicy.cordon Devices: the node's DeviceTaintRule made (or its effect set), or
/// deleted.
struct device_taint_write {
  std::string name;
  std::string node;
  /// The driver's pool on the node, whose devices it taints.
  std::string pool;
  /// NoSchedule or NoExecute; "" deletes the rule.
  std::string effect;
};

struct event_record {
  /// On the Node (true) or on the NodePartitioning (false).
  bool on_node = false;
  std::string type = "Normal";
  std::string reason;
  std::string message;
};

struct node_step {
  std::optional<node_patch> patch;
  /// Add (true) or remove (false) amd-dcm=up:NoExecute.
  std::optional<bool> taint;
  /// With the taint that ends a drain: the executor first lists the node's pods on the API
  /// server itself and refuses the taint if any is left that it would remove. The watch
  /// may not show yet a pod bound a moment ago (a scheduler with a stale cache binds to a
  /// cordoned node), and the taint removes such a pod whatever its budget says.
  bool confirm_drained = false;
  /// Pods (uids) the confirmation ignores: deleted long ago on a node that is not Ready.
  std::vector<std::string> not_awaited;
  std::vector<pod_removal> removals;
  std::optional<device_taint_write> device_taint;
  std::optional<dcm_config_write> dcm;
  /// The status to write, if it changed.
  std::optional<protocol::node_partitioning_status> status;
  std::vector<event_record> events;
  bool add_finalizer = false;
  bool remove_finalizer = false;
  bool clear_retry = false;
  /// Asks the governor for a token (Pending, ready to start).
  bool wants_token = false;
  /// In flight: counts against maxParallel until it ends.
  bool in_flight = false;
  /// In flight only for its soak: back in service, so not unavailable on that account.
  bool soaking = false;
  /// Look again after this long even if nothing changes; zero: only on a change.
  std::chrono::milliseconds requeue{0};
  /// The node's writes wait until the status that decided them (its phase and run) is
  /// written: a restarted operator must not read an older phase than the node shows.
  /// Unless this phase of the same run is on record already: an operator restarted with
  /// it, and the node as written, derives the same write again (or finds it made), so
  /// the node may go first and the status follow with the others.
  std::optional<protocol::node_phase> enough_on_record;
};

/// The one step function of the node state machine.
node_step step_node(const node_inputs& in);

} // namespace gpu_partitioner::controller
