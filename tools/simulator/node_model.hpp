#pragma once

// One simulated node's AMD GPU stack: DCM (the partition runs), the device plugin and the
// node labeller, as ROCm/device-config-manager, ROCm/k8s-device-plugin and
// ROCm/gpu-operator behave (../shared/reference/amd-dcm.md, "Behaviours that bite"; the
// README cites the source of each). A pure step: observed state and time in, writes out.

#include "tools/simulator/dcm_config.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpu_partitioner::sim {

using sim_clock = std::chrono::steady_clock;
using sim_time = sim_clock::time_point;

// -- labels and names the real AMD stack uses --
inline constexpr const char* profile_label = "dcm.amd.com/gpu-config-profile";
inline constexpr const char* state_label = "dcm.amd.com/gpu-config-profile-state";
inline constexpr const char* partition_label = "amd.com/gpu.compute-memory-partition";
inline constexpr const char* gpu_resource = "amd.com/gpu";
inline constexpr const char* dcm_component = "amd-device-config-manager";
/// The label of the GPU operator's DCM DaemonSet pods.
inline constexpr const char* dcm_pod_label = "app.kubernetes.io/name";
inline constexpr const char* dcm_pod_label_value = "device-config-manager";
/// The label of standalone DCM's pods (its own Helm chart, no GPU operator).
inline constexpr const char* dcm_standalone_pod_label = "app";
inline constexpr const char* dcm_standalone_pod_label_value = "amdgpu-device-config-manager";
/// Where DCM reads its config: the directory a ConfigMap volume of its pod is mounted at.
inline constexpr const char* dcm_config_dir = "/etc/config-manager";

// -- the simulator's own --
/// Comma-separated faults to inject on a node (a label, so `kubectl label` sets it); see
/// node_faults.
inline constexpr const char* fault_label = "sim.gpu-partitioner.io/fault";
/// The GPUs' actual modes ("CPX/NPS4", or one per GPU, comma-separated, when they differ),
/// kept on the node so a restarted simulator remembers what the hardware is in.
inline constexpr const char* partition_annotation = "sim.gpu-partitioner.io/partition";
/// "true": the node's amdgpu driver is managed by KMM (the GPU operator's driver
/// DaemonSet): a memory change takes up to 5 minutes, and newer DCM says so in an Event.
inline constexpr const char* kmm_driver_label = "sim.gpu-partitioner.io/kmm-driver";
/// Newer DCM's Event reason (also its generateName) while a KMM driver reloads.
inline constexpr const char* kmm_recovery_reason =
    "recovering memory partition for KMM driver, might take upto 5 mins";
/// Seconds the node's clock is ahead (`90`) or behind (`n90`: a label value cannot start
/// with '-'): DCM stamps its Events with the node's clock. A choice of the simulator.
inline constexpr const char* clock_skew_label = "sim.gpu-partitioner.io/clock-skew-seconds";
/// GPUs per node (default 8, an MI300X platform).
inline constexpr const char* gpu_count_annotation = "sim.gpu-partitioner.io/gpus";
/// Which GPU API the node's GPU stack offers: `device-plugin`, `dra` or `dra-dynamic`; a
/// node without it gets gpu-sim's --gpu-api.
inline constexpr const char* gpu_api_label = "sim.gpu-partitioner.io/gpu-api";

/// How a node's GPUs reach pods: AMD's device plugin (amd.com/ extended resources), or
/// AMD's DRA driver publishing ResourceSlices of the partitions DCM made (`dra`) or of every
/// partition it could carve itself (`dra_dynamic`, KEP-4815 partitionable devices). One
/// replaces the other on a node: both are never deployed together.
enum class gpu_api { device_plugin, dra, dra_dynamic };

/// The label's value for each API.
const char* gpu_api_name(gpu_api api);

/// A value of the gpu-api label; nullopt for an unknown word.
std::optional<gpu_api> parse_gpu_api(const std::string& text);

/// The node's API: its gpu-api label, else `fallback`. An unknown value means the device
/// plugin (the GPU operator's default) and sets `*unknown` for the caller to report.
gpu_api node_gpu_api(const std::map<std::string, std::string>& labels, gpu_api fallback,
                     bool* unknown = nullptr);

/// The real stack's delays, all multiplied by `scale` (--time-scale).
struct sim_timing {
  double scale = 1.0;
  /// A compute-only change takes seconds; a memory (NPS) change reloads the driver.
  std::chrono::milliseconds compute_change{10000};
  std::chrono::milliseconds memory_change{140000};
  /// A memory change with a KMM-managed driver: DCM unloads it and waits up to 5 minutes
  /// for KMM to load it again.
  std::chrono::milliseconds kmm_memory_change{300000};
  /// A request for the mode the GPUs are already in still answers.
  std::chrono::milliseconds no_change{2000};
  /// Refusals (missing config, unknown profile, bad counts) come back quickly.
  std::chrono::milliseconds refusal{2000};
  /// Each host service DCM stops before an attempt (and restarts after), present or not.
  std::chrono::milliseconds host_service{10000};
  /// From the taint going to the device plugin reporting again.
  std::chrono::milliseconds plugin_restart{5000};
  int slow_plugin_factor = 10;
  /// kubelet drops a stopped plugin's resources from capacity this long after it went.
  std::chrono::milliseconds capacity_follows{300000};
  /// DCM retries a busy run this often, for this long.
  std::chrono::milliseconds retry_period{60000};
  std::chrono::milliseconds retry_window{30 * 60000};
  /// kubelet's refresh of a ConfigMap volume: DCM reads the file this long after a change.
  std::chrono::milliseconds config_lag{60000};

  sim_clock::duration scaled(std::chrono::milliseconds d) const;
};

/// How much one node's delays differ from the configured ones (--jitter): DCM's (its
/// host services, mode changes, no-ops and refusals) times `dcm`, the device plugin's
/// restart times `plugin`. Both 1 without jitter.
struct node_jitter {
  double dcm = 1.0;
  double plugin = 1.0;
};

/// The node's factors for jitter `fraction` (0 to less than 1): each uniform in
/// [1 - fraction, 1 + fraction], drawn from a hash of `seed` and the node's name, so the
/// same node gets the same factors in every run with that seed and nodes do not move
/// in lockstep.
node_jitter jitter_of(const std::string& node, double fraction, unsigned long long seed);

/// `timing` with the node's factors applied to DCM's and the plugin's delays.
sim_timing jittered(const sim_timing& timing, const node_jitter& jitter);

enum class resource_strategy { single, mixed };

/// The site's GPU operator set-up, the same for every node.
struct stack_options {
  dcm_version version = dcm_version::v1_3;
  resource_strategy strategy = resource_strategy::single;
  /// A site's own readiness label, set by its labeller when the plugin is up; empty key:
  /// none (AMD's components set none).
  std::string ready_key;
  std::string ready_value;
  /// The labeller's opt-in partition labels (amd.com/gpu.compute-memory-partition and the
  /// *-partitioning-supported ones): off as the GPU operator runs it.
  bool partition_labels = false;
};

/// Faults of the real stack, injected per node by the fault label.
struct node_faults {
  /// Every attempt fails in amd-smi (AMDSMIAPIFailure, not retried).
  bool dcm_failure = false;
  /// DCM never answers: no state label, no Event.
  bool dcm_stuck = false;
  /// The plugin reports at most 63 partitions (CPX shows 63 instead of 64: the BMC's
  /// video driver takes one of the 64 DRM render minors).
  bool wrong_count = false;
  /// The plugin takes 10x longer to come back after the taint goes.
  bool slow_plugin = false;
  /// The node's kubelet never starts DCM's pod: nothing answers a label.
  bool dcm_missing = false;
  /// The kubelet stops: the node goes NotReady, its pods stay Terminating.
  bool kubelet_stopped = false;
  /// DCM's state write is lost to a conflict (its Event still goes out).
  bool state_lost = false;
  /// A host process keeps the GPUs open: every attempt finds them busy.
  bool gpu_held = false;
  /// After the taint goes the plugin crash-loops: it never reports again.
  bool plugin_crashloop = false;
};

/// Parses the fault label; unknown words are ignored (and reported by the caller).
node_faults parse_faults(const std::string& text, std::vector<std::string>* unknown = nullptr);

/// What the simulator sees of a node now.
struct observed_node {
  std::string name;
  std::string uid;
  /// The GPU API the node's labels (or gpu-sim's flag) choose.
  gpu_api api = gpu_api::device_plugin;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  /// The node carries amd-dcm=up:NoExecute.
  bool dcm_taint = false;
  /// status.capacity of the amd.com/ resources, as last written.
  std::map<std::string, long long> gpu_capacity;
  /// Counts changes of the profile label seen on the watch (a removal and a re-add
  /// between two steps are two changes, as DCM's informer delivers both).
  std::uint64_t profile_changes = 0;
  /// DCM's pod running on this node ("" if none): DCM acts only while it runs, and its
  /// Events are about it.
  std::string dcm_pod;
  /// The ConfigMap that pod mounts at /etc/config-manager ("" if none: its file is missing).
  std::string dcm_config{};
  /// The uid of a DRA driver pod (dra_driver_pod) Running on this node and not being
  /// deleted ("" if none): on a DRA node the driver's kubelet plugin runs in it.
  std::string driver_pod{};
};

/// DCM's config.json as a ConfigMap volume holds it now (kubelet delivers a change late).
struct dcm_file {
  /// The parsed config, or why there is none (ConfigMapNotPresent, InvalidJSONInConfigMap).
  std::optional<dcm_config> config;
  dcm_failure problem{"ConfigMapNotPresent", "DCM's ConfigMap does not exist"};
  /// Goes up each time the file changes: every node whose DCM mounts it and whose label is
  /// set runs again.
  std::uint64_t generation = 0;
  /// The file is not JSON at all (or absent): RetryPartition's own read of it fails before
  /// the run reaches PartitionGPU.
  bool unreadable = false;
};

/// What the simulator sees of the rest: DCM's config files and the GPU pods per node.
struct observed_world {
  /// The file each ConfigMap of DCM's namespace makes, by the ConfigMap's name: a node's
  /// DCM reads the one its pod mounts (observed_node::dcm_config).
  std::map<std::string, dcm_file> files;
  /// The partitions (amd.com/ units, or gpu.amd.com devices of claims) that running pods
  /// hold, by node name.
  std::map<std::string, int> gpu_pods;
};

/// Which GPUs are busy (a process has them open): the partitions pods hold, packed onto
/// the GPUs from GPU 0 up (a choice of the simulator: AMD's plugin does not say which
/// devices it hands out first), and every GPU while a host process holds them.
std::vector<bool> busy_gpu_map(const std::vector<std::string>& gpu_modes, int held_partitions,
                               bool host_holds_all);

/// The ConfigMap a DCM pod mounts at /etc/config-manager: the configMap volume of a volume
/// mount at that path (with or without a trailing slash); "" if none.
std::string mounted_dcm_config(
    const std::vector<std::pair<std::string, std::string>>& volumes, // volume, ConfigMap
    const std::vector<std::pair<std::string, std::string>>& mounts); // volume, mountPath

/// Whether a pod's labels make it one of DCM's pods: the GPU operator's
/// (app.kubernetes.io/name=device-config-manager) or standalone DCM's
/// (app=amdgpu-device-config-manager).
bool is_dcm_pod(const std::map<std::string, std::string>& labels);

/// The outcome of one attempt of a run, decided when it starts: success; refused before
/// any GPU was touched (not retried); failed in a set call (a busy GPU, a mode the kernel
/// refuses: retried every minute for 30 minutes).
enum class attempt_outcome { success, refused, failed };

/// One GPU's part of an attempt, as DCM's Event lists it in GPUStatus.
struct gpu_result {
  int id = 0;
  std::string type;   // the requested mode, "CPX-NPS4"
  std::string status; // Success or Failure
  std::string message;
};

/// The simulator's memory of one node: the hardware's modes, DCM's runs, the plugin.
struct node_memory {
  bool seen = false;
  /// Each GPU's mode, "CPX/NPS4".
  std::vector<std::string> gpu_modes;

  // -- DCM --
  /// DCM's pod on the node ("" if none): a pod that starts runs the label it finds.
  std::string dcm_pod;
  /// The profile label value DCM last acted on (a re-write of it does nothing).
  std::string last_profile;
  std::uint64_t profile_changes_seen = 0;
  std::uint64_t config_generation_seen = 0;
  /// A run is under way: an attempt in flight, or a wait between attempts.
  bool running = false;
  bool between_attempts = false;
  /// DCM's queue, each trigger with the profile read when it fired: one the worker holds
  /// while the run it cancelled ends, and one more in its channel; a third is dropped.
  std::optional<std::string> waiting;
  std::optional<std::string> queued;
  std::string run_profile;
  sim_time due{};
  sim_time retry_until{};
  /// This run has said PartitionRetrying (DCM says it on the first retry only).
  bool said_retrying = false;
  attempt_outcome outcome = attempt_outcome::success;
  dcm_failure failure;
  /// Each GPU's mode once the attempt in flight is done.
  std::vector<std::string> target_modes;
  std::vector<gpu_result> gpu_results;
  /// The profile of the last attempt that reached PartitionGPU: DCM's global status still
  /// names it when RetryPartition cannot read the file.
  std::string status_profile;
  /// When the attempt in flight says newer DCM's KMM recovery Event (none: it does not).
  std::optional<sim_time> kmm_event_at;

  // -- device plugin (or DRA kubelet plugin) and node labeller --
  /// The API the plugin runs as: a change stops it, and the other one starts.
  gpu_api api = gpu_api::device_plugin;
  /// The plugin (on a DRA node, the DRA driver's kubelet plugin) is registered with kubelet.
  bool plugin_up = false;
  bool plugin_restarting = false;
  sim_time plugin_ready_at{};
  sim_time plugin_down_since{};
  bool capacity_dropped = false;
  /// On a DRA node, the uid of the driver pod the plugin last ran in (or starts in): ""
  /// until a driver pod is seen on the node, and while it is the plugin follows the taint
  /// alone. Once set the plugin is up only while such a pod runs, and another pod is a
  /// new driver: the plugin restarts and reads the GPUs again.
  std::string driver_pod{};
  /// Every amd.com/ resource the plugin has advertised (a name no longer advertised is
  /// written as 0, as kubelet keeps it).
  std::set<std::string> advertised;
  bool labelled_once = false;
};

struct sim_event {
  std::string type; // Normal or Warning
  std::string reason;
  /// DCM's PartitionStatus as JSON.
  std::string message;
};

/// What to write for a node: label and annotation changes (nullopt removes), the amd.com/
/// resources for capacity and allocatable, Events about its DCM pod.
struct node_actions {
  std::map<std::string, std::optional<std::string>> labels;
  std::map<std::string, std::optional<std::string>> annotations;
  std::optional<std::map<std::string, long long>> allocatable;
  std::optional<std::map<std::string, long long>> capacity;
  std::vector<sim_event> events;
  /// How far the node's clock is off: its Events' timestamps are shifted by this.
  std::chrono::seconds clock_skew{0};
  /// Cluster-wide pod LISTs DCM made (one per attempt past amd-smi's init: GetPods lists
  /// every pod of the cluster). Counted, not made.
  int pod_lists = 0;
  bool empty() const {
    return labels.empty() && annotations.empty() && !allocatable && !capacity && events.empty();
  }
};

/// The simulated DCM, device plugin and node labeller for one node: observed state and
/// time in, writes out. On a DRA node the plugin is the DRA driver's kubelet plugin: it goes
/// down and comes back as the device plugin does, advertises no amd.com/ resource (any left
/// from a device plugin are written as 0 once), and dra_model publishes its devices. Once a
/// driver pod was seen on the node it also follows that pod (node_memory::driver_pod).
node_actions step_node(node_memory& memory, const observed_node& node, const observed_world& world,
                       sim_time now, const sim_timing& timing, const stack_options& stack = {});

/// DCM's Event as createEventObject makes it: a new object each time (generateName = the
/// reason: the API server takes it as it is, Event names are not DNS-validated; it keeps
/// 58 characters of it), about DCM's pod, source component amd-device-config-manager and
/// host the node, count 1, first and last timestamp `at` (the node's clock); no
/// reportingComponent, no eventTime.
std::string dcm_event_object(const sim_event& event, const std::string& ns, const std::string& pod,
                             const std::string& node, std::chrono::system_clock::time_point at);

/// When step_node next needs to run for this node, if nothing changes before.
std::optional<sim_time> next_due(const node_memory& memory);

/// The amd.com/ resources the device plugin advertises for GPUs in these modes; nothing
/// when it cannot start (single strategy on GPUs of different styles: it exits).
std::optional<std::map<std::string, long long>>
plugin_resources(const std::vector<std::string>& gpu_modes, resource_strategy strategy,
                 bool wrong_count);

/// The labeller's amd.com/gpu.compute-memory-partition value ("cpx_nps4"): only when
/// every GPU has one style.
std::optional<std::string> partition_style(const std::vector<std::string>& gpu_modes);

} // namespace gpu_partitioner::sim
