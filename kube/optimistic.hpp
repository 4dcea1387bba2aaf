#pragma once

// The operator's one retry policy for read-modify-write updates (optimistic concurrency):
// read the object, change it, write it under the resourceVersion read; when another
// writer got there first, read again and redo the change. Writes that fail for any other
// reason are not retried here: the caller's next step (a worker's back-off, the status
// writer's flush) decides when to try again.

#include "kube/error.hpp"

#include <optional>
#include <utility>

namespace gpu_partitioner::kube {

/// How many times one read-modify-write is tried before it gives up on a busy object.
inline constexpr int conflict_attempts = 5;

/// The write lost a race: the object changed since it was read (409 Conflict, or 422
/// Invalid from a JSON patch whose `test` of the resourceVersion failed).
inline bool lost_race(const failure& e) {
  return e.kind == error_kind::conflict || e.kind == error_kind::invalid;
}

/// Runs `attempt(i)` for i = 0, 1, ... until it returns an outcome, at most
/// `conflict_attempts` times. An attempt returns std::nullopt when its write lost a race,
/// and then runs again on a fresh read. Returns the first outcome, or `exhausted()` when
/// every attempt lost.
template <class Attempt, class Exhausted>
auto retry_on_conflict(Attempt attempt, Exhausted exhausted) -> decltype(exhausted()) {
  for (int i = 0; i < conflict_attempts; ++i)
    if (auto outcome = attempt(i))
      return std::move(*outcome);
  return exhausted();
}

} // namespace gpu_partitioner::kube
