#pragma once

// Built-in objects as the decisions see them, read from the API server's JSON. Used by
// the Watcher only: what leaves it are the plain structs.

#include "controller/observed.hpp"

#include <rapidjson/document.h>

#include <map>
#include <string>

namespace gpu_partitioner::actors {

controller::node_info decode_node(const rapidjson::Value& node);
controller::pod_info decode_pod(const rapidjson::Value& pod);
controller::pdb_info decode_pdb(const rapidjson::Value& pdb);
/// A ConfigMap's data, plus (under these keys, which no data key can be) our annotation of
/// when DCM's config.json last changed and the ConfigMap's creation time.
inline constexpr const char* config_written_key = "@written-at";
inline constexpr const char* config_created_key = "@created";
/// Set by the operator's root on DCM's ConfigMap when it saw config.json change.
inline constexpr const char* config_changed_key = "@changed-at";
std::map<std::string, std::string> decode_config_map_data(const rapidjson::Value& config_map);

} // namespace gpu_partitioner::actors
