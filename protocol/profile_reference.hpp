#pragma once

#include "protocol/codec/equality.hpp"
#include "protocol/codec/field.hpp"

#include <array>
#include <string>
#include <tuple>

namespace gpu_partitioner::protocol {

/// The kinds a profileRef may name; an enum so another kind can be added later.
enum class profile_kind { partitioning_profile };

constexpr auto enum_names(codec::tag<profile_kind>) {
  return std::array<codec::enum_name<profile_kind>, 1>{
      {{profile_kind::partitioning_profile, "PartitioningProfile"}}};
}

/// A reference to a (cluster-scoped) PartitioningProfile.
struct profile_reference {
  profile_kind kind = profile_kind::partitioning_profile;
  std::string name;
};

constexpr auto describe(codec::tag<profile_reference>) {
  using T = profile_reference;
  return std::make_tuple(
      codec::field("kind", &T::kind),
      codec::field("name", &T::name).required().max_length(253).matching(codec::dns1123_subdomain));
}

} // namespace gpu_partitioner::protocol
