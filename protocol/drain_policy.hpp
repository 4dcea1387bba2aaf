#pragma once

#include "protocol/codec/equality.hpp"
#include "protocol/codec/field.hpp"
#include "protocol/label_selector.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <tuple>

namespace gpu_partitioner::protocol {

/// How pods leave a node: through the Eviction API (PDBs can refuse), or by deletion.
enum class eviction_kind { eviction, delete_pods };

constexpr auto enum_names(codec::tag<eviction_kind>) {
  using E = eviction_kind;
  return std::array<codec::enum_name<E>, 2>{
      {{E::eviction, "Eviction"}, {E::delete_pods, "Delete"}}};
}

/// What a run takes out of service: the whole node (cordoned, then the amd-dcm taint), or
/// on a node of AMD's DRA driver only its GPUs (a DeviceTaintRule on their devices), so
/// pods that use no GPU keep running.
enum class cordon_scope { node, devices };

constexpr auto enum_names(codec::tag<cordon_scope>) {
  using E = cordon_scope;
  return std::array<codec::enum_name<E>, 2>{{{E::node, "Node"}, {E::devices, "Devices"}}};
}

/// drainPolicy.waitForCompletion: pods that are let finish rather than evicted, up to a
/// bound, counted from the start of the drain.
struct wait_for_completion {
  label_selector pod_selector;
  std::int64_t timeout_seconds = 0;
};

constexpr auto describe(codec::tag<wait_for_completion>) {
  using T = wait_for_completion;
  return std::make_tuple(
      codec::field("podSelector", &T::pod_selector).required(),
      codec::field("timeoutSeconds", &T::timeout_seconds).required().minimum(1).seconds());
}

/// rollout.drainPolicy of a plan, copied into each NodePartitioning.
///
/// The pod policies are optional and have no default in the schema: an absent one hashes
/// as before (desiredHash covers this policy), and the operator applies its default.
struct drain_policy {
  /// false: no eviction pass; the NoExecute taint removes pods, disregarding PDBs.
  bool enabled = true;
  std::int64_t timeout_seconds = 600;
  eviction_kind kind = eviction_kind::eviction;
  bool respect_pdb = true;
  /// Evict pods that mount an emptyDir (its data is lost). Default true: on GPU nodes an
  /// emptyDir is scratch space and /dev/shm, which every training pod mounts.
  std::optional<bool> delete_empty_dir_data{};
  /// Evict pods that no controller owns (nothing recreates them). Default false.
  std::optional<bool> force{};
  /// Only the pods it selects are drained; any other pod that must leave blocks.
  std::optional<label_selector> pod_selector{};
  std::optional<wait_for_completion> wait{};
  /// Overrides the pods' own terminationGracePeriodSeconds on eviction.
  std::optional<std::int64_t> grace_period_seconds{};
  /// On a node that is not Ready, pods deleted longer ago than this are not waited for
  /// (its kubelet cannot confirm them gone). Default 60.
  std::optional<std::int64_t> skip_wait_for_delete_timeout_seconds{};
  /// Unset means Node. Devices applies where the node publishes its GPUs through DRA and
  /// the API server serves DeviceTaintRules; elsewhere the node is cordoned.
  std::optional<cordon_scope> cordon{};

  bool deletes_empty_dir_data() const { return delete_empty_dir_data.value_or(true); }
  bool forces() const { return force.value_or(false); }
  bool cordons_devices() const { return cordon == cordon_scope::devices; }
  std::int64_t skip_wait_seconds() const {
    return skip_wait_for_delete_timeout_seconds.value_or(60);
  }
};

constexpr auto describe(codec::tag<drain_policy>) {
  using T = drain_policy;
  return std::make_tuple(
      codec::field("enabled", &T::enabled),
      codec::field("timeoutSeconds", &T::timeout_seconds).minimum(1).seconds(),
      codec::field("evictionKind", &T::kind), codec::field("respectPDB", &T::respect_pdb),
      codec::field("deleteEmptyDirData", &T::delete_empty_dir_data),
      codec::field("force", &T::force), codec::field("podSelector", &T::pod_selector),
      codec::field("waitForCompletion", &T::wait),
      codec::field("gracePeriodSeconds", &T::grace_period_seconds).minimum(0).seconds(),
      codec::field("skipWaitForDeleteTimeoutSeconds", &T::skip_wait_for_delete_timeout_seconds)
          .minimum(0)
          .seconds(),
      codec::field("cordon", &T::cordon));
}

} // namespace gpu_partitioner::protocol
