#pragma once

// Every message the operator's actors exchange, and the atoms that tag them. Payloads
// are plain structs (and shared pointers to immutable ones); no rapidjson type crosses
// an actor boundary.

#include "controller/cluster_view.hpp"
#include "controller/node_inputs.hpp"
#include "controller/node_machine.hpp"
#include "controller/observed.hpp"
#include "controller/rollout_governor.hpp"
#include "controller/shared_map.hpp"
#include "kube/rate_limiter.hpp"
#include "protocol/node_partitioning.hpp"
#include "protocol/partitioning_plan.hpp"
#include "protocol/partitioning_profile.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace gpu_partitioner::actors {

// -- what the Watcher observed --

using controller::config_map_data;

/// One change seen by a watch: an object of one kind, or its deletion (by key).
struct observation {
  enum class kind {
    node,
    pod,
    pdb,
    plan,
    profile,
    item,
    config_map,
    dcm_event,
    resource_slice,
    resource_claim,
    device_taint_rule,
    daemon_set
  };
  kind what = kind::node;
  bool deleted = false;
  /// name, or namespace/name for namespaced objects.
  std::string key;
  std::shared_ptr<const controller::node_info> node;
  std::shared_ptr<const controller::pod_info> pod;
  std::shared_ptr<const controller::pdb_info> pdb;
  std::shared_ptr<const protocol::partitioning_plan> plan;
  std::shared_ptr<const protocol::partitioning_profile> profile;
  std::shared_ptr<const protocol::node_partitioning> item;
  std::shared_ptr<const config_map_data> data;
  std::shared_ptr<const controller::dcm_event> event;
  std::shared_ptr<const controller::resource_slice_info> slice;
  std::shared_ptr<const controller::resource_claim_info> claim;
  std::shared_ptr<const controller::device_taint_rule_info> taint_rule;
  /// A DaemonSet's metadata.uid (all that is kept of it).
  std::string uid;
  /// An object that did not decode: the field and the problem, and its
  /// metadata.generation (0 if unreadable).
  std::string problem;
  std::int64_t generation = 0;
  /// When the watch delivered it (the start of a reaction to it).
  protocol::wall_clock::time_point received{};
};

using controller::in_flight;

/// How many resources the Watcher lists, each answered by one synced_atom: the view is
/// complete once every one has listed.
inline constexpr std::size_t watched_resources = 12;
using cluster_snapshot = controller::cluster_view;
using snapshot_ptr = std::shared_ptr<const cluster_snapshot>;

/// One node's share of a view, sent by its plan's supervisor to its worker.
using controller::node_slice_ptr;

// -- I/O requests, performed by the io executors --

/// The writes of one node step, done in order, plus item metadata changes.
struct node_io {
  std::string item;
  std::string node;
  std::optional<controller::node_patch> patch;
  std::optional<bool> taint;
  /// The rate limiter's lane of its requests: restore for an untaint or uncordon.
  kube::request_lane lane = kube::request_lane::rollout;
  /// Refuse the taint if the API server lists a pod on the node that it would remove.
  bool confirm_drained = false;
  /// Pods (uids) that refusal ignores: deleted long ago on a node that is not Ready.
  std::vector<std::string> not_awaited;
  /// The node as the step saw it (its version and taints): the taint is first written
  /// against that version, without reading the node again; only a failed test reads it.
  std::string known_version;
  std::vector<controller::taint> known_taints;
  std::vector<controller::pod_removal> removals;
  std::optional<controller::device_taint_write> device_taint;
  std::optional<controller::dcm_config_write> dcm;
  bool add_finalizer = false;
  bool remove_finalizer = false;
  bool clear_retry = false;
  /// Read the Node from the API server and answer with it (when the watch lags behind).
  bool read_node = false;
  /// Set when these writes answer an observed change of the node or its pods: when it
  /// arrived. The executor records the reaction latency as it starts writing.
  std::optional<protocol::wall_clock::time_point> reacting_to;
};

struct node_io_result {
  /// Set when a write failed: what, and why.
  std::string error;
  /// The Node as the last write left it (read-your-writes until the watch catches up).
  std::shared_ptr<const controller::node_info> node;
  /// Per pod (namespace/name): how its eviction went.
  std::map<std::string, controller::eviction_memory> evictions;
};

/// The supervisor's writes: its NodePartitioning objects, and the DeviceClasses its
/// profiles ask for.
struct item_io {
  /// label: a merge patch of the item's metadata.labels (item.metadata.labels).
  enum class op { create, update_spec, label, remove, ensure_device_class } what = op::create;
  protocol::node_partitioning item;
  /// ensure_device_class: the class (controller::device_class_json) and its name.
  std::string device_class{};
  std::string device_class_name{};
  /// Set by the supervisor once a newer resolution no longer wants this write: a write
  /// still queued then is dropped unsent and answered with item_io_superseded.
  std::shared_ptr<std::atomic<bool>> superseded{};
};

/// The answer to an item write dropped unsent because it was superseded (item_io).
inline const std::string item_io_superseded = "superseded";

/// Whether `io` was superseded (its supervisor no longer wants it sent).
inline bool is_superseded(const item_io& io) {
  return io.superseded && io.superseded->load();
}

/// An Event to record (aggregated by the writer).
struct event_io {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::string type;
  std::string reason;
  std::string message;
};

} // namespace gpu_partitioner::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(gpu_partitioner::actors::observation)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(gpu_partitioner::actors::snapshot_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(gpu_partitioner::actors::node_slice_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(gpu_partitioner::actors::node_io)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(gpu_partitioner::actors::node_io_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(gpu_partitioner::actors::item_io)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(gpu_partitioner::actors::event_io)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(gpu_partitioner::controller::governor_node)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(gpu_partitioner::controller::rollout_limits)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(gpu_partitioner::protocol::node_partitioning_status)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(gpu_partitioner::protocol::partitioning_plan_status)

// -- atoms --
CAF_ADD_ATOM(gpu_partitioner, gpu_partitioner::actors, observe_atom, "observe")
CAF_ADD_ATOM(gpu_partitioner, gpu_partitioner::actors, synced_atom, "synced")
CAF_ADD_ATOM(gpu_partitioner, gpu_partitioner::actors, tick_atom, "tick")
CAF_ADD_ATOM(gpu_partitioner, gpu_partitioner::actors, view_atom, "view")
CAF_ADD_ATOM(gpu_partitioner, gpu_partitioner::actors, report_atom, "report")
CAF_ADD_ATOM(gpu_partitioner, gpu_partitioner::actors, grant_atom, "grant")
CAF_ADD_ATOM(gpu_partitioner, gpu_partitioner::actors, limits_atom, "limits")
CAF_ADD_ATOM(gpu_partitioner, gpu_partitioner::actors, io_atom, "io")
CAF_ADD_ATOM(gpu_partitioner, gpu_partitioner::actors, status_atom, "status")
CAF_ADD_ATOM(gpu_partitioner, gpu_partitioner::actors, later_atom, "later")
CAF_ADD_ATOM(gpu_partitioner, gpu_partitioner::actors, plan_status_atom, "planstat")
CAF_ADD_ATOM(gpu_partitioner, gpu_partitioner::actors, event_atom, "event")
CAF_ADD_ATOM(gpu_partitioner, gpu_partitioner::actors, flush_atom, "flush")
CAF_ADD_ATOM(gpu_partitioner, gpu_partitioner::actors, stop_atom, "stop")
CAF_ADD_ATOM(gpu_partitioner, gpu_partitioner::actors, persist_atom, "persist")
CAF_ADD_ATOM(gpu_partitioner, gpu_partitioner::actors, payload_atom, "payload")
CAF_ADD_ATOM(gpu_partitioner, gpu_partitioner::actors, listed_atom, "listed")
