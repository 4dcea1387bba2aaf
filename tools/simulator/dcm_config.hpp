#pragma once

// DCM's config file (config.json of its ConfigMap), read as DCM reads it: Go's
// encoding/json into the structs of ROCm/device-config-manager (gen/partition, protobuf
// generated), then DCM's validation (pkg/partition/utils). See tools/simulator/README.md.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpu_partitioner::sim {

/// Which DCM the simulator plays: 1.3 (the default, the last public source) or a newer one
/// (1.4, 1.5: AMD's images and docs), which behave alike here ("newer DCM").
enum class dcm_version { v1_3, v1_4, v1_5 };

/// DCM after 1.3: one group without numGPUsAssigned takes the remaining GPUs, modes the
/// part does not support are InvalidProfileInfo up front.
inline bool newer_dcm(dcm_version v) {
  return v != dcm_version::v1_3;
}

/// One entry of a DCM profile's `profiles` list: this many GPUs in this mode.
struct gpu_group {
  std::string compute; // SPX, DPX, QPX, CPX
  std::string memory;  // NPS1, NPS2, NPS4
  int gpus = 0;
  /// numGPUsAssigned was in the file (Go reads a missing one as 0).
  bool count_given = true;
};

/// A DCM profile: `{"skippedGPUs":{"ids":[...]},"profiles":[...]}`.
struct dcm_profile {
  std::vector<int> skipped_gpus;
  std::vector<gpu_group> groups;
};

/// Why DCM refuses or fails a run, as DCM reports it: the reason is the name of DCM's
/// Event (PartitionFailure, NonExistentProfile, ...), the message says what is wrong.
struct dcm_failure {
  std::string reason;
  std::string message;
};

/// DCM's config, parsed.
struct dcm_config {
  std::map<std::string, dcm_profile> profiles;
  /// gpuClientSystemdServices.names: host services DCM stops before a run and restarts
  /// after (each costs time, present on the host or not).
  std::vector<std::string> host_services;
};

/// Parses `config.json` as Go's encoding/json would into DCM's structs: member names
/// match case-insensitively, unknown members are ignored, a missing or null member is
/// zero. A value of the wrong JSON type anywhere (a string count, a negative or fractional
/// one, a profile that is not an object) fails the whole file: the error is DCM's
/// InvalidJSONInConfigMap, which every node then gets.
/// `not_json` (if given) says whether the text is no JSON at all (a syntax error), which
/// DCM's first read of the file (its host services) already fails on.
std::optional<dcm_config> parse_dcm_config(const std::string& text, dcm_failure& error,
                                           bool* not_json = nullptr);

/// Parses one profile object the same way (the payload ConfigMaps' `profile.json`).
std::optional<dcm_profile> parse_dcm_profile(const std::string& text, dcm_failure& error);

/// DCM's validation of a profile for a node with `gpu_count` GPUs (names and counts only;
/// whether the kernel takes a mode is found when it is applied, see mode_supported): the
/// GPUs assigned plus the skipped ones must be all of them, one memory mode per profile.
/// Newer DCM gives one group without a count the GPUs the others leave.
std::optional<dcm_failure> validate_profile(const dcm_profile& profile, int gpu_count,
                                            dcm_version version = dcm_version::v1_3);

/// The mode each GPU ends in ("CPX/NPS4"), by index, after a run of a valid profile; a
/// skipped GPU keeps its mode from `current`.
std::vector<std::string> apply_profile(const dcm_profile& profile,
                                       const std::vector<std::string>& current,
                                       dcm_version version = dcm_version::v1_3);

/// Whether MI300X's kernel driver takes this compute and memory mode together: SPX with
/// NPS1; DPX with NPS1 or NPS2; QPX with NPS1 or NPS4; CPX with NPS1 or NPS4 (CPX with NPS2
/// only on virtual functions); never NPS8.
bool mode_supported(const std::string& compute, const std::string& memory);

/// Compute partitions per GPU: SPX 1, DPX 2, QPX 4, CPX 8; 0 for an unknown mode.
int partitions_per_gpu(const std::string& compute);

/// Memory partitions per GPU: NPS1 1, NPS2 2, NPS4 4; 0 for an unknown mode.
int memory_partitions(const std::string& memory);

} // namespace gpu_partitioner::sim
