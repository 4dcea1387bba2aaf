#pragma once

#include "protocol/api_group.hpp"
#include "protocol/codec/equality.hpp"
#include "protocol/codec/field.hpp"
#include "protocol/condition.hpp"
#include "protocol/drain_policy.hpp"
#include "protocol/object_meta.hpp"
#include "protocol/plan_verification.hpp"
#include "protocol/profile_reference.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace gpu_partitioner::protocol {

/// The owning plan, by name and uid (a recreated plan of the same name is another plan).
struct plan_reference {
  std::string name;
  std::string uid;
};

constexpr auto describe(codec::tag<plan_reference>) {
  using T = plan_reference;
  return std::make_tuple(codec::field("name", &T::name).required().min_length(1),
                         codec::field("uid", &T::uid).required().min_length(1));
}

struct node_partitioning_spec {
  plan_reference plan_ref;
  std::string node_name;
  /// desired_hash() of the profile spec, drain policy and verification.
  std::string desired_hash;
  /// payload_hash() of the profile's payload as last read ("" until it was): a payload
  /// edited after a node ran is a new run for it, as a new spec is.
  std::string payload_hash;
  profile_reference profile_ref;
  drain_policy drain;
  plan_verification verification;
  bool dry_run = false;
  /// How long the node must stay verified and healthy after it succeeded, holding its
  /// token (the plan's nodeSoakSeconds, or its canary's soak for a canary node). Not part
  /// of desiredHash: a longer soak is not a new profile.
  std::optional<std::int64_t> soak_seconds{};
  /// One of the plan's canary nodes.
  bool canary = false;
};

constexpr auto describe(codec::tag<node_partitioning_spec>) {
  using T = node_partitioning_spec;
  return std::make_tuple(
      codec::field("planRef", &T::plan_ref).required(),
      codec::field("nodeName", &T::node_name)
          .required()
          .min_length(1)
          .max_length(253)
          .matching(codec::dns1123_subdomain),
      codec::field("desiredHash", &T::desired_hash).required().matching(codec::desired_hash_format),
      codec::field("payloadHash", &T::payload_hash).matching(codec::desired_hash_format),
      codec::field("profileRef", &T::profile_ref).required(),
      codec::field("drainPolicy", &T::drain), codec::field("verification", &T::verification),
      codec::field("dryRun", &T::dry_run),
      codec::field("soakSeconds", &T::soak_seconds).minimum(0).seconds(),
      codec::field("canary", &T::canary));
}

/// DESIGN.md section 4: Pending -> Draining -> Applying -> WaitingOperator -> Verifying
/// -> Succeeded, or Failed.
enum class node_phase {
  pending,
  draining,
  applying,
  waiting_operator,
  verifying,
  succeeded,
  failed
};

constexpr auto enum_names(codec::tag<node_phase>) {
  using E = node_phase;
  return std::array<codec::enum_name<E>, 7>{{{E::pending, "Pending"},
                                             {E::draining, "Draining"},
                                             {E::applying, "Applying"},
                                             {E::waiting_operator, "WaitingOperator"},
                                             {E::verifying, "Verifying"},
                                             {E::succeeded, "Succeeded"},
                                             {E::failed, "Failed"}}};
}

/// A namespaced object (pod, PodDisruptionBudget) named in status.
struct namespaced_name {
  std::string namespace_;
  std::string name;
};

constexpr auto describe(codec::tag<namespaced_name>) {
  using T = namespaced_name;
  return std::make_tuple(codec::field("namespace", &T::namespace_).required().min_length(1),
                         codec::field("name", &T::name).required().min_length(1));
}

/// What holds a pod on a draining node.
enum class pod_hold {
  /// A PodDisruptionBudget refuses its eviction now.
  budget,
  /// The drain policy refuses to evict it (podSelector, force, deleteEmptyDirData).
  policy,
  /// Its eviction failed with another error than a budget's refusal; retried with backoff.
  eviction_error,
  /// Evicted, and still terminating past its grace period.
  terminating,
  /// Let finish (waitForCompletion) until its timeout.
  waiting_for_completion,
  /// A DaemonSet's pod holding GPUs: not evicted; DCM retries until it is gone.
  daemon_set,
};

constexpr auto enum_names(codec::tag<pod_hold>) {
  using E = pod_hold;
  return std::array<codec::enum_name<E>, 6>{{{E::budget, "Budget"},
                                             {E::policy, "Policy"},
                                             {E::eviction_error, "EvictionError"},
                                             {E::terminating, "Terminating"},
                                             {E::waiting_for_completion, "WaitingForCompletion"},
                                             {E::daemon_set, "DaemonSet"}}};
}

/// A pod the drain could not evict yet, and why (e.g. the PDB that refused).
struct blocking_pod {
  std::string namespace_;
  std::string name;
  std::string reason;
  std::optional<pod_hold> cause{};
};

constexpr auto describe(codec::tag<blocking_pod>) {
  using T = blocking_pod;
  return std::make_tuple(codec::field("namespace", &T::namespace_).required().min_length(1),
                         codec::field("name", &T::name).required().min_length(1),
                         codec::field("reason", &T::reason), codec::field("cause", &T::cause));
}

/// status.drain: progress of the eviction pass.
struct drain_progress {
  std::int32_t pods_total = 0;
  std::int32_t pods_evicted = 0;
  std::int32_t pods_blocked = 0;
  std::vector<namespaced_name> blocking_pdbs;
  std::vector<blocking_pod> blocking_pods;
};

constexpr auto describe(codec::tag<drain_progress>) {
  using T = drain_progress;
  return std::make_tuple(codec::field("podsTotal", &T::pods_total).minimum(0),
                         codec::field("podsEvicted", &T::pods_evicted).minimum(0),
                         codec::field("podsBlocked", &T::pods_blocked).minimum(0),
                         codec::field("blockingPDBs", &T::blocking_pdbs),
                         codec::field("blockingPods", &T::blocking_pods));
}

/// One phase transition in status.history.
struct node_transition {
  node_phase phase = node_phase::pending;
  std::string time;
  std::string reason;
  std::string message;
};

constexpr auto describe(codec::tag<node_transition>) {
  using T = node_transition;
  return std::make_tuple(codec::field("phase", &T::phase).required(),
                         codec::field("time", &T::time).required().date_time(),
                         codec::field("reason", &T::reason), codec::field("message", &T::message));
}

/// status.preview of a dry run: what a real run would do to the node.
/// What a drain of the node would do now, pod by pod (a pod may be in several lists: one
/// evicted that loses its emptyDir data, say).
struct dry_run_preview {
  /// Evicted at once.
  std::vector<namespaced_name> pods_to_evict;
  std::vector<namespaced_name> blocking_pdbs;
  bool already_in_target_state = false;
  /// Preflight findings, e.g. `ProfileNotFound: ...`.
  std::vector<std::string> findings;
  /// Let finish first (waitForCompletion), then evicted at its timeout.
  std::vector<namespaced_name> pods_to_wait_for;
  /// Refused by the drain policy, with why: each blocks the drain.
  std::vector<blocking_pod> pods_refused;
  /// Evicted (or waited for), losing their emptyDir data.
  std::vector<namespaced_name> pods_losing_empty_dir_data;
  /// Evicted (or waited for) with no controller to recreate them (force).
  std::vector<namespaced_name> unmanaged_pods;
  /// Their eviction a budget refuses now.
  std::vector<namespaced_name> pods_blocked_by_budget;
  /// Drains that may not finish: a pod under a budget whose replacement could run only on
  /// nodes of this plan (drained together, they wait on each other).
  std::vector<std::string> warnings;
};

constexpr auto describe(codec::tag<dry_run_preview>) {
  using T = dry_run_preview;
  return std::make_tuple(codec::field("podsToEvict", &T::pods_to_evict),
                         codec::field("blockingPDBs", &T::blocking_pdbs),
                         codec::field("alreadyInTargetState", &T::already_in_target_state),
                         codec::field("findings", &T::findings),
                         codec::field("podsToWaitFor", &T::pods_to_wait_for),
                         codec::field("podsRefused", &T::pods_refused),
                         codec::field("podsLosingEmptyDirData", &T::pods_losing_empty_dir_data),
                         codec::field("unmanagedPods", &T::unmanaged_pods),
                         codec::field("podsBlockedByBudget", &T::pods_blocked_by_budget),
                         codec::field("warnings", &T::warnings));
}

/// status.dra: the run is on a node that publishes its GPUs through Dynamic Resource
/// Allocation, and what it published before DCM ran.
struct dra_run {
  std::string driver;
  /// The node's ResourceSlices of the driver ("<uid>@<resourceVersion>") when the taint
  /// had taken the driver down: slices still bearing one of these were not published after
  /// the change.
  std::vector<std::string> slices_before_dcm;
  /// The run cordons the GPUs only (drainPolicy.cordon Devices): the DeviceTaintRule on
  /// the devices of the driver's pool (the node's, `pool`); "" when the node is cordoned.
  std::string device_taint_rule{};
  std::string pool{};
  /// Devices mode: when the driver's pods on the node were deleted after DCM, so that the
  /// driver starts again and publishes the new partitions, and their uids.
  std::string driver_restarted_at{};
  std::vector<std::string> restarted_driver_pods{};
};

constexpr auto describe(codec::tag<dra_run>) {
  using T = dra_run;
  return std::make_tuple(
      codec::field("driver", &T::driver).required().min_length(1),
      codec::field("slicesBeforeDCM", &T::slices_before_dcm).max_items(64),
      codec::field("deviceTaintRule", &T::device_taint_rule), codec::field("pool", &T::pool),
      codec::field("driverRestartedAt", &T::driver_restarted_at).date_time(),
      codec::field("restartedDriverPods", &T::restarted_driver_pods).max_items(16));
}

struct node_partitioning_status {
  /// The maximum number of entries in `history`; the writer drops the oldest.
  static constexpr std::size_t history_limit = 32;

  std::optional<node_phase> phase;
  /// The desiredHash the current phase works towards (or reached).
  std::string observed_hash;
  /// The payloadHash of the payload the current run gives DCM (or gave).
  std::string observed_payload_hash;
  std::vector<condition> conditions;
  drain_progress drain;
  std::vector<node_transition> history;
  std::string last_error;
  std::string started_at;
  std::string completed_at;
  /// The time, by the node's clock, of the newest of DCM's Events on the node that this run
  /// has accounted for: those there when it started, then those up to DCM's answer
  /// (1970-01-01T00:00:00Z: none). DCM stamps its Events with the node's clock, which is
  /// never compared with the operator's: DCM's answer, and a soak's DCM trouble, are the
  /// Events newer than this.
  std::string dcm_events_until;
  /// By the operator's clock: a run failed after DCM was asked, and DCM may go on retrying
  /// it until then (every minute for 30 minutes, the attempt under way completing): the
  /// node keeps the taint as well as the cordon until then, or until DCM says it is done.
  std::string dcm_may_change_until;
  std::optional<dry_run_preview> preview;
  std::optional<dra_run> dra{};
};

constexpr auto describe(codec::tag<node_partitioning_status>) {
  using T = node_partitioning_status;
  return std::make_tuple(
      codec::field("phase", &T::phase),
      codec::field("observedHash", &T::observed_hash).matching(codec::desired_hash_format),
      codec::field("observedPayloadHash", &T::observed_payload_hash)
          .matching(codec::desired_hash_format),
      codec::field("conditions", &T::conditions).map_key("type"), codec::field("drain", &T::drain),
      codec::field("history", &T::history).max_items(T::history_limit),
      codec::field("lastError", &T::last_error),
      codec::field("startedAt", &T::started_at).date_time(),
      codec::field("completedAt", &T::completed_at).date_time(),
      codec::field("dcmEventsUntil", &T::dcm_events_until).date_time(),
      codec::field("dcmMayChangeUntil", &T::dcm_may_change_until).date_time(),
      codec::field("preview", &T::preview), codec::field("dra", &T::dra));
}

/// The work item for one node of one plan, named `<plan>-<node>` (or, where another
/// object holds that, a name derived from it: controller/item_name.hpp) and owned by the
/// plan (cluster-scoped).
struct node_partitioning {
  static constexpr std::string_view kind_name = "NodePartitioning";
  static constexpr std::string_view plural = "nodepartitionings";

  std::string api_version{protocol::api_version};
  std::string kind{kind_name};
  object_meta metadata;
  node_partitioning_spec spec;
  node_partitioning_status status;
};

constexpr auto describe(codec::tag<node_partitioning>) {
  using T = node_partitioning;
  return std::make_tuple(
      codec::field("apiVersion", &T::api_version).fixed(), codec::field("kind", &T::kind).fixed(),
      codec::field("metadata", &T::metadata), codec::field("spec", &T::spec).required(),
      codec::field("status", &T::status));
}

/// The condition types of a NodePartitioning's status.
namespace node_condition {
inline constexpr const char* started = "Started";
inline constexpr const char* owned = "Owned";
inline constexpr const char* preflight = "Preflight";
inline constexpr const char* dry_run = "DryRun";
inline constexpr const char* node_cordoned = "NodeCordoned";
inline constexpr const char* drained = "Drained";
inline constexpr const char* node_tainted = "NodeTainted";
inline constexpr const char* profile_applied = "ProfileApplied";
inline constexpr const char* operator_succeeded = "OperatorSucceeded";
inline constexpr const char* verified = "Verified";
/// False (RetryNeeded) on a Failed node whose spec changed but that is not started over by
/// itself (its GPUs may be mid-change).
inline constexpr const char* up_to_date = "UpToDate";
/// With spec.soakSeconds: False while the node soaks, True once it has.
inline constexpr const char* soaked = "Soaked";
} // namespace node_condition

} // namespace gpu_partitioner::protocol
