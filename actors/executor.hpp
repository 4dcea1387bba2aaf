#pragma once

// The blocking writes of one connection, shared by the io executors and the status
// writers: each owns one executor on a thread of its own.

#include "actors/io_executor.hpp"
#include "actors/messages.hpp"
#include "kube/client.hpp"
#include "kube/http_client.hpp"

#include <rapidjson/document.h>

#include <map>
#include <optional>
#include <string>

namespace gpu_partitioner::actors {

/// A string as a JSON string literal (quotes and escapes), for hand-built patch bodies.
std::string json_string(const std::string& s);

/// One connection's blocking writes to the API server: the node patch, DCM's ConfigMap,
/// the item's finalizer, a node step's writes in order, and the supervisors' item writes.
/// Read-modify-write updates lose races under kube/optimistic.hpp's one policy.
struct executor {
  io_config config;
  kube::http_client http;
  kube::client api;
  kube::patch_options manager;

  explicit executor(io_config c);

  // The node patch: cordon state, labels and annotations in one merge patch.
  kube::result<rapidjson::Document> patch_node(const std::string& node,
                                               const controller::node_patch& p);

  std::string write_dcm(const controller::dcm_config_write& w);

  std::string finalizer(const std::string& item, bool add);

  node_io_result perform(const node_io& io);

  std::string perform(const item_io& io);
  /// Makes the DeviceClass `name` from `json`, or brings one the operator made in line.
  std::string ensure_device_class(const std::string& name, const std::string& json);
  /// Makes, updates or deletes a node's DeviceTaintRule; a rule of that name that is not
  /// ours is left alone (an error).
  std::string write_device_taint(const controller::device_taint_write& w);
};

} // namespace gpu_partitioner::actors
