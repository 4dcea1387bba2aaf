#pragma once

#include "protocol/codec/equality.hpp"
#include "protocol/codec/field.hpp"

#include <array>
#include <cstdint>
#include <tuple>

namespace gpu_partitioner::protocol {

/// How pods leave a node: through the Eviction API (PDBs can refuse), or by deletion.
enum class eviction_kind { eviction, delete_pods };

constexpr auto enum_names(codec::tag<eviction_kind>) {
  using E = eviction_kind;
  return std::array<codec::enum_name<E>, 2>{
      {{E::eviction, "Eviction"}, {E::delete_pods, "Delete"}}};
}

/// rollout.drainPolicy of a plan, copied into each NodePartitioning.
struct drain_policy {
  /// false: no eviction pass; the NoExecute taint removes pods, disregarding PDBs.
  bool enabled = true;
  std::int64_t timeout_seconds = 600;
  eviction_kind kind = eviction_kind::eviction;
  bool respect_pdb = true;
};

constexpr auto describe(codec::tag<drain_policy>) {
  using T = drain_policy;
  return std::make_tuple(codec::field("enabled", &T::enabled),
                         codec::field("timeoutSeconds", &T::timeout_seconds).minimum(1),
                         codec::field("evictionKind", &T::kind),
                         codec::field("respectPDB", &T::respect_pdb));
}

} // namespace gpu_partitioner::protocol
