#pragma once

#include "protocol/codec/equality.hpp"
#include "protocol/codec/field.hpp"

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace gpu_partitioner::protocol {

/// spec.verification of a plan, copied into each NodePartitioning: when a repartitioned
/// node counts as healthy again.
struct plan_verification {
  /// A label key that must be present, or key=value; empty: none (AMD sets no such label).
  std::string gpu_ready_label;
  /// Extended resources that must appear in the node's allocatable.
  std::vector<std::string> require_plugin_resources;
  std::int64_t timeout_seconds = 900;
};

constexpr auto describe(codec::tag<plan_verification>) {
  using T = plan_verification;
  return std::make_tuple(
      codec::field("gpuReadyLabel", &T::gpu_ready_label).matching(codec::label_key_or_pair),
      codec::field("requirePluginResources", &T::require_plugin_resources),
      codec::field("timeoutSeconds", &T::timeout_seconds).minimum(1).seconds());
}

} // namespace gpu_partitioner::protocol
