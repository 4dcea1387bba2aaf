#pragma once

// Nodes whose GPUs are published through Dynamic Resource Allocation (resource.k8s.io/v1):
// AMD's DRA driver (ROCm/k8s-gpu-dra-driver, driver gpu.amd.com) lists a node's GPUs, or
// the partitions DCM made of them, as devices in ResourceSlices instead of amd.com/
// extended resources, and pods get them through ResourceClaims. What the decisions read of
// those objects, and the rules: which node is in DRA mode, which pods and claims hold its
// GPUs, and whether its devices show a profile.

#include "protocol/partitioning_profile.hpp"
#include "protocol/timestamp.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gpu_partitioner::controller {

/// One device of a ResourceSlice: its name and attributes (each value as text: a string,
/// a whole number, true or false, a version).
struct dra_device {
  std::string name;
  std::map<std::string, std::string> attributes;
  /// It draws on the slice pool's shared counters: a partition the driver would carve
  /// itself (KEP-4815, partitionable devices).
  bool consumes_counters = false;
  bool operator==(const dra_device& o) const {
    return name == o.name && attributes == o.attributes && consumes_counters == o.consumes_counters;
  }
};

/// A ResourceSlice of one node (spec.nodeName set).
struct resource_slice_info {
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string driver;
  std::string node;
  std::string pool;
  std::int64_t generation = 0;
  std::int64_t slice_count = 1;
  /// spec.sharedCounters: counter sets the pool's devices draw on.
  bool shared_counters = false;
  std::vector<dra_device> devices;
  bool operator==(const resource_slice_info& o) const {
    return uid == o.uid && resource_version == o.resource_version;
  }
};

/// A ResourceClaim allocated on one node's devices.
struct resource_claim_info {
  std::string ns;
  std::string name;
  /// The node its allocation is bound to (status.allocation.nodeSelector, a single
  /// metadata.name match).
  std::string node;
  struct device {
    std::string driver;
    std::string pool;
    std::string name;
  };
  /// status.allocation.devices.results.
  std::vector<device> devices;
  /// status.reservedFor: the pods (uid, name) it is reserved for.
  std::vector<std::pair<std::string, std::string>> reserved_for;
};

/// What a node publishes of one driver.
struct dra_publication {
  /// Some slice of the driver names the node.
  bool publishes = false;
  /// The driver partitions the GPUs itself (its slices carry shared counters, or devices
  /// that consume them): DCM must not change them under it.
  bool dynamic = false;
  /// Every pool's newest generation has all its slices (a pool being republished does not).
  bool complete = false;
  /// The slices of each pool's newest generation.
  std::vector<const resource_slice_info*> current;
};

/// What `slices` (a node's) publish of `driver`.
dra_publication publication_of(const std::vector<resource_slice_info>& slices,
                               const std::string& driver);

/// The node publishes its GPUs through AMD's DRA driver.
bool publishes_gpus(const std::vector<resource_slice_info>& slices);

/// How status.dra records a slice: "<uid>@<resourceVersion>" (an update in place keeps the
/// uid and, for AMD's one-slice pool, the generation: only the resourceVersion moves).
std::string slice_mark(const resource_slice_info& slice);

/// The devices of `slices` that `want` counts: of its driver, with every attribute equal.
std::int64_t matching_devices(const std::vector<const resource_slice_info*>& slices,
                              const protocol::expected_device& want);

/// kubelet deletes a stopped driver's slices this long after its plugin went (kubelet's
/// defaultWipingDelay, 30 s), with room for its retries: unchanged slices still there this
/// long after the taint went belong to a driver that came back.
inline constexpr std::chrono::seconds driver_back_after{60};

/// Why the node's devices do not show `expected` yet ("gpu.amd.com: 63 devices with
/// partitionProfile=cpx_nps4, type=amdgpu-partition, expected 64"; gaps joined by "; "),
/// or "" when they do. With `before` (the slices recorded before DCM ran), slices still
/// bearing one of those marks count only once `driver_back` (the driver is known to have
/// come back without republishing).
std::string devices_gap(const std::vector<resource_slice_info>& slices,
                        const std::vector<protocol::expected_device>& expected,
                        const std::vector<std::string>* before = nullptr, bool driver_back = true);

/// A CEL selector for a DeviceClass that matches the devices `expected` counts (any of its
/// entries): the driver, and each attribute as a string, e.g. `device.driver ==
/// 'gpu.amd.com' && device.attributes['gpu.amd.com'].partitionProfile == 'cpx_nps4'`. An
/// attribute the device lacks does not match. "" when `expected` is empty.
std::string device_class_expression(const std::vector<protocol::expected_device>& expected);

/// The DeviceClass a profile asks for (spec.deviceClassName) as JSON, owned by the
/// profile and labelled as ours; "" when the profile names none or has no expected devices.
std::string device_class_json(const protocol::partitioning_profile& profile);

/// The label that marks a DeviceClass as the operator's (it changes no other).
inline constexpr const char* managed_by_label = "app.kubernetes.io/managed-by";
inline constexpr const char* managed_by_value = "gpu-partitioner";

/// The claims allocated on the node's devices of AMD's DRA driver.
std::vector<const resource_claim_info*> gpu_claims(const std::vector<resource_claim_info>& claims);

/// The pods (uids) the claims on the node's GPUs are reserved for, and how many of its
/// devices each holds.
std::map<std::string, int> claim_holders(const std::vector<resource_claim_info>& claims);

/// The devices of AMD's DRA driver a node publishes (its pools' newest generations) that
/// none of the claims allocated on the node holds: what a new claim could be given there.
/// Devices that draw on shared counters are each counted, so a driver that partitions GPUs
/// itself shows more than it could give at once.
std::int64_t free_gpu_devices(const std::vector<resource_slice_info>& slices,
                              const std::vector<resource_claim_info>& claims);

// -- drainPolicy.cordon Devices: the GPUs cordoned, not the node (KEP-5055, device taints) --

/// The plural the API server serves DeviceTaintRules under (resource.k8s.io/v1alpha3).
inline constexpr const char* kube_device_taint_rules_plural = "devicetaintrules";
inline constexpr const char* kube_resource_claims_plural = "resourceclaims";
/// The taint the operator's DeviceTaintRules put on a node's GPU devices.
inline constexpr const char* device_taint_key = "infrastructure.silogen.ai/partitioning";
/// On a DeviceTaintRule of ours: the node whose devices it taints.
inline constexpr const char* device_taint_node_annotation = "infrastructure.silogen.ai/node";

/// A DeviceTaintRule (resource.k8s.io/v1alpha3) the operator made.
struct device_taint_rule_info {
  std::string name;
  /// The node it was made for (device_taint_node_annotation).
  std::string node;
  std::string driver;
  std::string pool;
  /// NoSchedule, NoExecute (or None).
  std::string effect;
  /// Labelled as ours (managed_by_label).
  bool ours = false;
  bool operator==(const device_taint_rule_info& o) const {
    return name == o.name && node == o.node && driver == o.driver && pool == o.pool &&
           effect == o.effect && ours == o.ours;
  }
};

/// The name of the rule for `node`: "gpu-partitioner-<node>", shortened with a hash of the
/// node's name where that would pass 253 characters.
std::string device_taint_rule_name(const std::string& node);

/// The rule tainting the devices of AMD's DRA driver in `pool` with `effect`, as JSON.
std::string device_taint_rule_json(const std::string& name, const std::string& node,
                                   const std::string& pool, const std::string& effect);

/// The pool the node's devices of AMD's DRA driver are published in; "" when there is not
/// exactly one (a rule selects one pool).
std::string gpu_pool(const std::vector<resource_slice_info>& slices);

/// An image of AMD's DRA driver: its repository's last segment is k8s-gpu-dra-driver
/// ("rocm/k8s-gpu-dra-driver:v1.0", "registry/x/k8s-gpu-dra-driver@sha256:...").
bool dra_driver_image(const std::string& image);

} // namespace gpu_partitioner::controller
