#pragma once

// Built-in objects as the decisions see them, read from the API server's JSON. Used by
// the Watcher only: what leaves it are the plain structs.

#include "controller/cluster_view.hpp"
#include "controller/observed.hpp"

#include <rapidjson/document.h>

#include <map>
#include <string>

namespace gpu_partitioner::actors {

using controller::config_changed_key;
using controller::config_created_key;
using controller::config_written_key;

controller::node_info decode_node(const rapidjson::Value& node);
controller::pod_info decode_pod(const rapidjson::Value& pod);
controller::pdb_info decode_pdb(const rapidjson::Value& pdb);
/// What the operator reads of a ConfigMap's data (config.json, profile.json), plus its
/// creation and our annotation under the keys of controller/cluster_view.hpp.
std::map<std::string, std::string> decode_config_map_data(const rapidjson::Value& config_map);
/// One of DCM's Events: its source host, what it is about, and what it says (with the
/// profile it answers, SelectedProfile of the PartitionStatus JSON in its message).
controller::dcm_event decode_dcm_event(const rapidjson::Value& event);
/// A ResourceSlice: its pool, driver, node, and devices with their attributes as text.
controller::resource_slice_info decode_resource_slice(const rapidjson::Value& slice);
/// A ResourceClaim: the devices allocated, the node they bind it to, the pods it is
/// reserved for (an unallocated claim has none of these).
controller::resource_claim_info decode_resource_claim(const rapidjson::Value& claim);
/// A DeviceTaintRule (resource.k8s.io/v1alpha3): its name, node annotation, selector and
/// effect.
controller::device_taint_rule_info decode_device_taint_rule(const rapidjson::Value& rule);

} // namespace gpu_partitioner::actors
