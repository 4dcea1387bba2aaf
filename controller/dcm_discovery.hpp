#pragma once

// Which DCM answers a node, and what it reads: the DCM pod on the node, the ConfigMap it
// mounts at /etc/config-manager, and its version (its image's tag). The pod is the only
// certain answer: the GPU operator mounts the ConfigMap its DeviceConfig names (default
// default-dcm-config; AMD's docs use config-manager-config), DCM's own chart mounts
// dcm-st, and a site may run either.

#include "controller/observed.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gpu_partitioner::controller {

struct dcm_version {
  int major = 0;
  int minor = 0;
  int patch = 0;
  bool operator<=(const dcm_version& o) const {
    if (major != o.major)
      return major < o.major;
    if (minor != o.minor)
      return minor < o.minor;
    return patch <= o.patch;
  }
  std::string text() const;
};

/// DCM's version from its container image's tag ("rocm/device-config-manager:v1.3.0",
/// "...:1.4.1-beta@sha256:..."); nothing for a tag that is not a version ("latest").
std::optional<dcm_version> dcm_version_of_image(const std::string& image);

/// The last DCM whose source is public (ROCm/device-config-manager v1.3): it reads a group
/// without numGPUsAssigned as 0 GPUs and retries a mode the kernel refuses for 30 minutes.
inline constexpr dcm_version last_public_dcm{1, 3, 99};

/// The DCM of one node, as its pods show it.
struct node_dcm {
  /// namespace/name of its DCM pod; "" when none is there.
  std::string pod;
  /// The pod is Running and not being deleted: DCM answers the label.
  bool running = false;
  /// The ConfigMap (in DCM's namespace) the pod mounts as DCM's config.
  std::string config_map;
  std::string image;
  std::optional<dcm_version> version;
  /// Why what DCM reads cannot be told (two DCM pods, nothing mounted); the ConfigMap is
  /// then "".
  std::string problem;
};

/// The DCM of the node whose pods are `pods` (DCM pods are found by is_dcm_pod). A pod
/// being deleted counts only while no other DCM pod is there (a DaemonSet's update).
node_dcm find_node_dcm(const std::vector<const pod_info*>& pods, const std::string& dcm_namespace);

} // namespace gpu_partitioner::controller
