// The message to show when a result a test needed is an error. Boost.Test evaluates a
// check's message even when the check passes, so it must not touch error() of a value.
#pragma once

#include "kube/error.hpp"

#include <string>

namespace gpu_partitioner::kube::testing {

template <class T>
std::string problem(const result<T>& r) {
  return r.ok() ? std::string() : r.error().describe();
}

} // namespace gpu_partitioner::kube::testing
