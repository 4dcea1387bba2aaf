#pragma once

// DCM's config ConfigMap (key config.json): does it hold a profile, and the config with
// a profile added or replaced, every other key kept.

#include <optional>
#include <string>

namespace gpu_partitioner::controller {

/// Whether `config_json` has `gpu-config-profiles.<name>` equal (as JSON, key order
/// aside) to `profile_json`.
bool dcm_config_has(const std::string& config_json, const std::string& name,
                    const std::string& profile_json);

/// `config_json` with `gpu-config-profiles.<name>` set to `profile_json`; an empty
/// config starts from `{}`. Nothing if either text is not a JSON object.
std::optional<std::string> dcm_config_with(const std::string& config_json, const std::string& name,
                                           const std::string& profile_json);

/// Checks a payload's profile.json is one DCM profile object that DCM would accept on any
/// node (modes, counts, one memory mode); the problem in words otherwise.
std::optional<std::string> payload_problem(const std::string& profile_json);

} // namespace gpu_partitioner::controller
