#pragma once

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
inline constexpr const char* ready_label = "amd.com/gpu.ready";
inline constexpr const char* partition_label = "amd.com/gpu.compute-memory-partition";
inline constexpr const char* gpu_resource = "amd.com/gpu";
inline constexpr const char* dcm_component = "amd-device-config-manager";

// -- the simulator's own --
/// Comma-separated faults to inject on a node (a label, so `kubectl label` sets it):
/// dcm-failure, dcm-stuck, wrong-count, slow-plugin.
inline constexpr const char* fault_label = "sim.gpu-partitioner.io/fault";
/// The GPUs' actual mode ("CPX/NPS4"), kept on the node so a restarted simulator
/// remembers what the hardware is in.
inline constexpr const char* partition_annotation = "sim.gpu-partitioner.io/partition";
/// GPUs per node (default 8, an MI300X platform).
inline constexpr const char* gpu_count_annotation = "sim.gpu-partitioner.io/gpus";

/// The real stack's delays, all multiplied by `scale` (--time-scale).
struct sim_timing {
  double scale = 1.0;
  /// A compute-only change takes seconds; a memory (NPS) change reloads the driver.
  std::chrono::milliseconds compute_change{10000};
  std::chrono::milliseconds memory_change{140000};
  /// A request for the mode the GPUs are already in still answers `success`.
  std::chrono::milliseconds no_change{2000};
  /// Refusals (bad profile, GPU busy) come back quickly.
  std::chrono::milliseconds refusal{2000};
  /// From the taint going to the device plugin reporting again.
  std::chrono::milliseconds plugin_restart{5000};
  int slow_plugin_factor = 10;
  /// DCM retries a failed run this often, for this long.
  std::chrono::milliseconds retry_period{60000};
  std::chrono::milliseconds retry_window{30 * 60000};

  sim_clock::duration scaled(std::chrono::milliseconds d) const;
};

struct node_faults {
  bool dcm_failure = false;
  bool dcm_stuck = false;
  bool wrong_count = false;
  bool slow_plugin = false;
};

/// Parses the fault label; unknown words are ignored (and reported by the caller).
node_faults parse_faults(const std::string& text, std::vector<std::string>* unknown = nullptr);

/// What the simulator sees of a node now.
struct observed_node {
  std::string name;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  /// The node carries amd-dcm=up:NoExecute.
  bool dcm_taint = false;
  /// status.capacity["amd.com/gpu"], or nothing.
  std::optional<long long> gpu_capacity;
  /// Counts changes of the profile label seen on the watch (a removal and a re-add
  /// between two steps are two changes, as DCM's informer delivers both).
  std::uint64_t profile_changes = 0;
};

/// What the simulator sees of the rest: DCM's ConfigMap and the GPU pods per node.
struct observed_world {
  /// The parsed config, or why there is none (ConfigMapNotPresent, InvalidJSONInConfigMap).
  std::optional<dcm_config> config;
  dcm_failure config_problem{"ConfigMapNotPresent", "DCM's ConfigMap does not exist"};
  /// Pods using amd.com/gpu that still hold their GPUs, by node name.
  std::map<std::string, int> gpu_pods;
};

/// The simulator's memory of one node: the hardware's mode, DCM's run in progress,
/// the device plugin's state.
struct node_memory {
  bool seen = false;
  /// The profile label value DCM last acted on (a re-write of it does nothing).
  std::string last_profile;
  std::uint64_t profile_changes_seen = 0;
  std::string compute = "SPX";
  std::string memory = "NPS1";

  bool running = false;
  std::string run_profile;
  sim_time due{};
  bool stuck = false;
  std::optional<dcm_failure> outcome_failure;
  bool retryable = false;
  sim_time retry_until{};
  std::string target_compute;
  std::string target_memory;
  /// What the plugin will count after this run: skipped GPUs keep their mode.
  long long target_resources = -1;
  /// What the plugin counts now; -1 means every GPU in `compute`.
  long long resources = -1;
  bool no_change = false;

  bool plugin_up = true;
  bool plugin_restarting = false;
  sim_time plugin_ready_at{};
};

struct sim_event {
  std::string type; // Normal or Warning
  std::string reason;
  std::string message;
};

/// What to write for a node: label and annotation changes (nullopt removes), the GPU
/// resource count for capacity and allocatable, Events.
struct node_actions {
  std::map<std::string, std::optional<std::string>> labels;
  std::map<std::string, std::optional<std::string>> annotations;
  std::optional<long long> gpu_resources;
  std::vector<sim_event> events;
  bool empty() const {
    return labels.empty() && annotations.empty() && !gpu_resources && events.empty();
  }
};

/// The simulated DCM, device plugin and node labeller for one node: observed state and
/// time in, writes out.
node_actions step_node(node_memory& memory, const observed_node& node, const observed_world& world,
                       sim_time now, const sim_timing& timing);

/// When step_node next needs to run for this node, if nothing changes before.
std::optional<sim_time> next_due(const node_memory& memory);

} // namespace gpu_partitioner::sim
