#pragma once

// AMD's DRA driver for one simulated node (ROCm/k8s-gpu-dra-driver, cmd/gpu-kubeletplugin,
// driver gpu.amd.com): the devices its GPUs publish, the ResourceSlice writes of the
// publishing helper it uses (k8s.io/dynamic-resource-allocation/resourceslice), and
// kubelet's wipe of the slices of a driver that has gone. The driver's plugin is up while
// step_node says so (node_memory::plugin_up on a DRA node). A pure step, like step_node:
// observed state and time in, writes out. tools/simulator/README.md cites the source of
// each rule.

#include "tools/simulator/node_model.hpp"

#include <rapidjson/document.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpu_partitioner::sim {

inline constexpr const char* dra_driver = "gpu.amd.com";

// -- what a ResourceSlice holds (resource.k8s.io/v1) --

/// A device attribute: exactly one of int, bool, string, version.
struct device_attribute {
  enum class kind { integer, boolean, string, version };
  kind type = kind::string;
  long long integer = 0;
  bool boolean = false;
  /// The string or the version.
  std::string text;

  static device_attribute of_int(long long v) { return {kind::integer, v, false, {}}; }
  static device_attribute of_string(std::string v) {
    return {kind::string, 0, false, std::move(v)};
  }
  static device_attribute of_version(std::string v) {
    return {kind::version, 0, false, std::move(v)};
  }
  bool operator==(const device_attribute& o) const;
  bool operator!=(const device_attribute& o) const { return !(*this == o); }
};

/// Quantities by name ("memory" -> "24Gi"), as the API server writes them back.
using quantities = std::map<std::string, std::string>;

/// What a device takes from one counter set of its pool when it is allocated.
struct counter_consumption {
  std::string counter_set;
  quantities counters;
  bool operator==(const counter_consumption& o) const {
    return counter_set == o.counter_set && counters == o.counters;
  }
};

/// One device, flat as in v1 (no `basic:` wrapper).
struct dra_device {
  std::string name;
  std::map<std::string, device_attribute> attributes;
  quantities capacity;
  std::vector<counter_consumption> consumes_counters;
  bool operator==(const dra_device& o) const {
    return name == o.name && attributes == o.attributes && capacity == o.capacity &&
           consumes_counters == o.consumes_counters;
  }
};

/// A named set of counters that devices of the pool consume (KEP-4815).
struct counter_set {
  std::string name;
  quantities counters;
  bool operator==(const counter_set& o) const { return name == o.name && counters == o.counters; }
};

/// One slice's content: devices or shared counters, never both (resource.k8s.io/v1).
struct slice_content {
  std::vector<dra_device> devices;
  std::vector<counter_set> shared_counters;
  bool operator==(const slice_content& o) const {
    return devices == o.devices && shared_counters == o.shared_counters;
  }
  bool operator!=(const slice_content& o) const { return !(*this == o); }
};

/// A pool as the driver wants it published: one content per slice, in order.
using pool_content = std::vector<slice_content>;

// -- the devices the driver publishes --

/// MI300X, per GPU.
inline constexpr long long gpu_memory_gib = 192;
inline constexpr long long gpu_compute_units = 304;
inline constexpr long long gpu_simd_units = 1216;

/// The API server's limits on one slice (resource.k8s.io/v1 in Kubernetes 1.35).
inline constexpr std::size_t max_devices_per_slice = 128;
inline constexpr std::size_t max_counter_devices_per_slice = 64;
inline constexpr std::size_t max_counter_sets_per_slice = 8;

/// Devices at most under the wrong-count fault: the BMC's video driver takes one of the 64
/// DRM render minors, so the 64th partition has no render node.
inline constexpr std::size_t wrong_count_devices = 63;

/// The devices the driver discovers on GPUs in these modes ("CPX/NPS4"), in DRM order: a GPU
/// in SPX is one `amdgpu` device, one in DPX/QPX/CPX only its partitions (`amdgpu-partition`,
/// each with its own DRM card and render node, a share of the GPU's capacity). Named
/// gpu-<card>-<render>, cards numbered from 1 and render nodes from 128 over the node.
std::vector<dra_device> static_devices(const std::vector<std::string>& gpu_modes,
                                       bool wrong_count = false);

/// The dynamic mode's pool for `gpus` GPUs: slices of shared counters (one set per GPU, at
/// most 8 per slice), then slices of every partition the driver could carve (per GPU the
/// whole GPU, 2 DPX, 4 QPX and 8 CPX devices, each consuming its GPU's counters; 4 GPUs, 60
/// devices, per slice).
pool_content dynamic_pool(int gpus);

/// What the driver publishes for a node of this API whose GPUs are in these modes (empty for
/// the device plugin: no DRA driver runs there); a `dra` slice lists its devices by name.
pool_content desired_pool(gpu_api api, const std::vector<std::string>& gpu_modes,
                          bool wrong_count = false);

// -- the slices as they are --

/// One ResourceSlice of the driver on the node, as the watch shows it.
struct observed_slice {
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string node;
  std::string pool;
  long long generation = 0;
  long long slice_count = 0;
  slice_content content;
};

/// Reads a ResourceSlice object; nullopt if it is not one of a node (no spec.nodeName).
std::optional<observed_slice> parse_slice(const rapidjson::Value& object);

// -- the driver's pods --

/// The label AMD's chart puts on its kubelet plugin DaemonSet's pods (container `plugin`).
inline constexpr const char* kubeletplugin_label = "app.kubernetes.io/component";
inline constexpr const char* kubeletplugin_label_value = "kubeletplugin";
/// The driver's image, by its repository's last path segment (rocm/k8s-gpu-dra-driver).
inline constexpr const char* dra_driver_image = "k8s-gpu-dra-driver";

/// A Pod object is one of the DRA driver's kubelet plugin pods: owned by a DaemonSet, with a
/// container of the driver's image (any registry, path, tag or digest) or AMD's chart's
/// label app.kubernetes.io/component=kubeletplugin. A node's driver runs in such a pod
/// (observed_node::driver_pod).
bool dra_driver_pod(const rapidjson::Value& pod);

// -- the writes --

struct slice_write {
  enum class kind {
    /// POST with generateName <node>-gpu.amd.com-, owned by the Node.
    create,
    /// The slice `name` gets the pool and content, with `resource_version` as precondition.
    update,
    /// DELETE `name`; with the uid and resourceVersion as preconditions when they are set.
    remove,
  };
  kind what = kind::create;
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string pool;
  long long generation = 0;
  long long slice_count = 0;
  slice_content content;
};

/// The publishing helper's sync of one pool (resourceslicecontroller.go, syncPool): slices of
/// an older generation are obsolete; a single existing slice matches a single desired one,
/// otherwise slices match when they hold the same device names; unmatched ones are deleted,
/// missing ones created. The generation stays when at most one update is needed and nothing
/// is created (a one-slice pool is updated in place), else it goes up by one and every slice
/// is rewritten; a pool created from nothing starts at 1. Identical content: no write.
std::vector<slice_write> sync_pool(const std::string& pool, const pool_content& desired,
                                   const std::vector<observed_slice>& existing);

/// kubelet's wipe: every slice of the driver on the node goes, without preconditions.
std::vector<slice_write> wipe_slices(const std::vector<observed_slice>& existing);

/// The ResourceSlice a create writes, as JSON.
std::string slice_object_json(const slice_write& w, const std::string& node,
                              const std::string& node_uid);

/// The merge patch an update writes: pool and content, with the resourceVersion seen.
std::string slice_patch_json(const slice_write& w);

// -- one node's driver and kubelet --

struct dra_timing {
  /// kubelet wipes a driver's slices this long after its plugin unregistered
  /// (pkg/kubelet/cm/dra/manager.go, defaultWipingDelay); scaled.
  std::chrono::milliseconds wipe_delay{30000};
  /// How long writes may take to show in the watch before they are asked for again.
  std::chrono::milliseconds resend_after{3000};
};

struct dra_memory {
  bool seen = false;
  /// The driver's plugin is registered with kubelet.
  bool up = false;
  sim_time down_since{};
  /// The API the driver started as.
  gpu_api api = gpu_api::device_plugin;
  /// The pool as the driver discovered it when it started (it reads the GPUs at its start,
  /// as the device plugin does).
  pool_content discovered;
  /// Writes asked for and not yet seen in the watch, and the pool they lead to.
  std::optional<sim_time> asked_at;
  pool_content asked_for;
  /// The slices (names and resourceVersions) last found to need no write while up.
  std::optional<std::string> in_sync;
};

/// The driver and kubelet for one node: while the driver is up, its pool is synced; from
/// `wipe_delay` after it went down, kubelet deletes its slices. `slices` are the driver's
/// slices on the node (spec.nodeName), from a synced watch. Writes asked for are not asked
/// again until they show or resend_after passes.
std::vector<slice_write> step_dra(dra_memory& memory, const node_memory& node_state,
                                  const observed_node& node,
                                  const std::vector<observed_slice>& slices, sim_time now,
                                  const sim_timing& timing, const dra_timing& dra = {});

} // namespace gpu_partitioner::sim
