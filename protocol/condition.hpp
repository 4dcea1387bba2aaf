#pragma once

#include "protocol/codec/equality.hpp"
#include "protocol/codec/field.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

namespace gpu_partitioner::protocol {

enum class condition_status { true_, false_, unknown };

constexpr auto enum_names(codec::tag<condition_status>) {
  using E = condition_status;
  return std::array<codec::enum_name<E>, 3>{
      {{E::true_, "True"}, {E::false_, "False"}, {E::unknown, "Unknown"}}};
}

/// metav1.Condition, with the validation Kubernetes' own CRDs give it.
struct condition {
  std::string type;
  condition_status status = condition_status::unknown;
  std::optional<std::int64_t> observed_generation;
  std::string last_transition_time;
  std::string reason;
  std::string message;
};

constexpr auto describe(codec::tag<condition>) {
  using T = condition;
  return std::make_tuple(
      codec::field("type", &T::type).required().max_length(316).matching(codec::condition_type),
      codec::field("status", &T::status).required(),
      codec::field("observedGeneration", &T::observed_generation).minimum(0),
      codec::field("lastTransitionTime", &T::last_transition_time).required().date_time(),
      codec::field("reason", &T::reason)
          .required()
          .min_length(1)
          .max_length(1024)
          .matching(codec::condition_reason),
      codec::field("message", &T::message).required().max_length(32768));
}

} // namespace gpu_partitioner::protocol
