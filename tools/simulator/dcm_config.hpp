#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpu_partitioner::sim {

/// One entry of a DCM profile's `profiles` list: this many GPUs in this mode.
struct gpu_group {
  std::string compute; // SPX, DPX, QPX, CPX
  std::string memory;  // NPS1, NPS2, NPS4
  int gpus = 0;
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

/// DCM's config (`config.json` of its ConfigMap), parsed. Profiles that are not even
/// objects make the whole config invalid, as DCM's unmarshalling does.
struct dcm_config {
  std::map<std::string, dcm_profile> profiles;
};

/// Parses `config.json`; the error is DCM's InvalidJSONInConfigMap.
std::optional<dcm_config> parse_dcm_config(const std::string& text, dcm_failure& error);

/// Parses one profile object (also used for the payload ConfigMaps' `profile.json`).
std::optional<dcm_profile> parse_dcm_profile(const std::string& text, dcm_failure& error);

/// DCM's validation of a profile for a node with `gpu_count` GPUs: the GPUs assigned
/// plus the skipped ones must be all of them; modes must be known; one memory mode per
/// profile; a memory mode may not split a GPU more than its compute mode (NPS4 needs CPX).
std::optional<dcm_failure> validate_profile(const dcm_profile& profile, int gpu_count);

/// Compute partitions per GPU: SPX 1, DPX 2, QPX 4, CPX 8; 0 for an unknown mode.
int partitions_per_gpu(const std::string& compute);

/// Memory partitions per GPU: NPS1 1, NPS2 2, NPS4 4; 0 for an unknown mode.
int memory_partitions(const std::string& memory);

/// The device plugin's `amd.com/gpu` count for a node in this profile.
int gpu_resources(const dcm_profile& profile);

/// The mode the node's GPUs end up in ("CPX" / "NPS4"), taken from the first group.
std::string compute_mode(const dcm_profile& profile);
std::string memory_mode(const dcm_profile& profile);

} // namespace gpu_partitioner::sim
