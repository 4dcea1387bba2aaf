#pragma once

// Equality of wire types, from their field tables: two values are equal when every
// field in the table is. Declared in namespace protocol so that ADL finds it for every
// described type (and inside std::vector / std::optional comparisons).

#include "protocol/codec/field.hpp"

#include <type_traits>

namespace gpu_partitioner::protocol {

template <class T, class = std::enable_if_t<codec::is_described_v<T>>>
bool operator==(const T& a, const T& b) {
  return codec::all_fields<T>([&](const auto& f) { return a.*f.member == b.*f.member; });
}

template <class T, class = std::enable_if_t<codec::is_described_v<T>>>
bool operator!=(const T& a, const T& b) {
  return !(a == b);
}

} // namespace gpu_partitioner::protocol
