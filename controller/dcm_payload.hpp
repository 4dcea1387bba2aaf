#pragma once

// DCM's config ConfigMap (key config.json): does it hold a profile, and the config with
// a profile added or replaced, every other key kept.

#include "controller/dcm_discovery.hpp"

#include <optional>
#include <string>

namespace gpu_partitioner::controller {

/// How deeply DCM's config and a payload may nest (DCM's own are 4 levels deep): deeper
/// text is refused rather than parsed, copied and written back recursively.
inline constexpr int dcm_json_max_depth = 64;

/// Whether `config_json` has `gpu-config-profiles.<name>` equal (as JSON, key order
/// aside) to `profile_json`.
bool dcm_config_has(const std::string& config_json, const std::string& name,
                    const std::string& profile_json);

/// `config_json` with `gpu-config-profiles.<name>` set to `profile_json`, written out
/// again (indented). Numbers other than 64-bit integers come out as RapidJSON 1.1 reads
/// them, which is not correctly rounded: 3.3e49 may come back a unit in the last place
/// off (fuzz/dcm_payload_fuzz.cpp found it; DCM's configs hold small integers). An empty
/// config starts from `{}`. Nothing if either text is not a JSON object (nested at most
/// dcm_json_max_depth levels) or holds a number beyond a double's range.
std::optional<std::string> dcm_config_with(const std::string& config_json, const std::string& name,
                                           const std::string& profile_json);

/// Checks a payload's profile.json is one DCM profile object that DCM would accept on any
/// node (modes, counts, one memory mode), nested at most dcm_json_max_depth levels,
/// without a key twice in one object or a number that is not a 64-bit integer (no config
/// holding either could be seen to equal it); the problem in words otherwise.
std::optional<std::string> payload_problem(const std::string& profile_json);

/// What makes DCM's config.json one the operator cannot read as DCM does or write into
/// (not a JSON object, too deep, a key twice in one object, a number beyond a double's
/// range, gpu-config-profiles not an object), in words after "config.json "; nothing if it
/// can. An empty text is `{}`.
std::optional<std::string> dcm_config_problem(const std::string& config_json);

/// What a node's DCM would refuse in a payload payload_problem accepts, in words: a mode
/// the kernel refuses on the node's part (known by its device id, the node labeller's
/// amd.com/gpu.device-id: MI300X, 74a1, takes SPX+NPS1, DPX+NPS1|NPS2, QPX+NPS1|NPS4,
/// CPX+NPS1|NPS4; DCM 1.3 retries such a mode for 30 minutes, newer DCM refuses it), and
/// on DCM 1.3 or older a group without numGPUsAssigned (read as 0). Nothing for an unknown
/// part or version.
std::optional<std::string> dcm_refusal(const std::string& profile_json,
                                       const std::string& device_id,
                                       const std::optional<dcm_version>& version);

/// Whether `config_json` has any entry `gpu-config-profiles.<name>`.
bool dcm_config_names(const std::string& config_json, const std::string& name);

/// Whether the payload's groups put GPUs in more than one style (compute and memory
/// mode): AMD's device plugin under its default single strategy exits on such a node.
bool payload_mixes_styles(const std::string& profile_json);

/// The style AMD's node labeller shows for a node in this profile ("cpx_nps4"): when every
/// GPU ends in one compute and memory mode (no skipped GPUs, one style). Nothing otherwise,
/// or for a payload that payload_problem refuses.
std::optional<std::string> payload_style(const std::string& profile_json);

} // namespace gpu_partitioner::controller
