#pragma once

#include "protocol/api_group.hpp"
#include "protocol/codec/equality.hpp"
#include "protocol/codec/field.hpp"
#include "protocol/condition.hpp"
#include "protocol/label_selector.hpp"
#include "protocol/object_meta.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace gpu_partitioner::protocol {

/// An extended resource the node must report in status.allocatable after the change.
struct expected_resource {
  std::string name; // e.g. amd.com/gpu
  std::int64_t count = 0;
};

constexpr auto describe(codec::tag<expected_resource>) {
  using T = expected_resource;
  return std::make_tuple(codec::field("name", &T::name).required().min_length(1),
                         codec::field("count", &T::count).required().minimum(0));
}

/// The DRA driver whose devices a profile's expectedDevices count by default: AMD's
/// (ROCm/k8s-gpu-dra-driver).
inline constexpr const char* amd_dra_driver = "gpu.amd.com";

/// Devices a node whose GPUs are published through Dynamic Resource Allocation must show in
/// its ResourceSlices after the change: those of `driver` whose attributes equal every
/// entry of `attributes` (values compared as text: a string, a whole number, true or
/// false, a version), `count` of them.
struct expected_device {
  std::optional<std::string> driver;
  std::map<std::string, std::string> attributes;
  std::int64_t count = 0;
};

constexpr auto describe(codec::tag<expected_device>) {
  using T = expected_device;
  return std::make_tuple(codec::field("driver", &T::driver).min_length(1).max_length(63),
                         codec::field("attributes", &T::attributes),
                         codec::field("count", &T::count).required().minimum(0));
}

/// The driver of an expected device: its own, else AMD's.
inline std::string device_driver(const expected_device& d) {
  return d.driver.value_or(amd_dra_driver);
}

/// The profile's own readiness check.
struct profile_verification {
  std::string ready_label; // empty: none (AMD sets no such label)
  std::int64_t timeout_seconds = 600;
};

constexpr auto describe(codec::tag<profile_verification>) {
  using T = profile_verification;
  return std::make_tuple(
      codec::field("readyLabel", &T::ready_label).matching(codec::label_key_or_pair),
      codec::field("timeoutSeconds", &T::timeout_seconds).minimum(1).seconds());
}

enum class payload_kind { config_map };

constexpr auto enum_names(codec::tag<payload_kind>) {
  return std::array<codec::enum_name<payload_kind>, 1>{{{payload_kind::config_map, "ConfigMap"}}};
}

/// Where the DCM profile definition lives: data["profile.json"] of a ConfigMap.
struct payload_reference {
  payload_kind kind = payload_kind::config_map;
  std::string name;
  std::string namespace_;
  /// The DCM profile name (node label value, key in DCM's config); when absent, the
  /// PartitioningProfile's own name. See dcm_profile_name().
  std::optional<std::string> profile_name;
};

constexpr auto describe(codec::tag<payload_reference>) {
  using T = payload_reference;
  return std::make_tuple(
      codec::field("kind", &T::kind).required(),
      codec::field("name", &T::name)
          .required()
          .min_length(1)
          .max_length(253)
          .matching(codec::dns1123_subdomain),
      codec::field("namespace", &T::namespace_)
          .required()
          .min_length(1)
          .max_length(63)
          .matching(codec::dns1123_label),
      codec::field("profileName", &T::profile_name).matching(codec::label_value));
}

struct partitioning_profile_spec {
  std::string display_name;
  /// Nodes this profile is meant for; absent: any node.
  std::optional<label_selector> target_selector;
  std::vector<expected_resource> expected_resources;
  /// What a node in DRA mode (its GPUs in ResourceSlices, not extended resources) must
  /// show instead of expected_resources.
  std::vector<expected_device> expected_devices;
  profile_verification verification;
  payload_reference operator_payload;
  /// A DeviceClass the operator keeps selecting the devices of expected_devices, so that
  /// workloads can ask for this partition kind by class. Not part of desiredHash.
  std::optional<std::string> device_class_name{};
};

constexpr auto describe(codec::tag<partitioning_profile_spec>) {
  using T = partitioning_profile_spec;
  return std::make_tuple(codec::field("displayName", &T::display_name).max_length(256),
                         codec::field("targetSelector", &T::target_selector),
                         codec::field("expectedResources", &T::expected_resources).map_key("name"),
                         codec::field("expectedDevices", &T::expected_devices).max_items(16),
                         codec::field("verification", &T::verification),
                         codec::field("operatorPayload", &T::operator_payload).required(),
                         codec::field("deviceClassName", &T::device_class_name)
                             .max_length(253)
                             .matching(codec::dns1123_subdomain));
}

/// A GPU partition configuration that plans refer to by name (cluster-scoped).
struct partitioning_profile {
  static constexpr std::string_view kind_name = "PartitioningProfile";
  static constexpr std::string_view plural = "partitioningprofiles";

  std::string api_version{protocol::api_version};
  std::string kind{kind_name};
  object_meta metadata;
  partitioning_profile_spec spec;
};

constexpr auto describe(codec::tag<partitioning_profile>) {
  using T = partitioning_profile;
  return std::make_tuple(
      codec::field("apiVersion", &T::api_version).fixed(), codec::field("kind", &T::kind).fixed(),
      codec::field("metadata", &T::metadata), codec::field("spec", &T::spec).required());
}

/// The DCM profile name this profile applies: operatorPayload.profileName, defaulting
/// to the object's own name.
inline const std::string& dcm_profile_name(const partitioning_profile& p) {
  return p.spec.operator_payload.profile_name ? *p.spec.operator_payload.profile_name
                                              : p.metadata.name;
}

} // namespace gpu_partitioner::protocol
