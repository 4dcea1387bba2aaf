#pragma once

// How often a plan supervisor works its plan out again for news that may wait: a walk over
// every node and item of the plan, which at thousands of nodes costs tens of milliseconds,
// while the views come twenty times a second.

#include <algorithm>
#include <chrono>

namespace gpu_partitioner::controller {

/// News that may wait (its own items made or changed in their metadata, whose turn and
/// labels can follow a moment later) is worked on at most once per `factor` times the last
/// walk's CPU time, so that walking takes at most about 1/factor of a core, and never later
/// than `cap` after the previous walk. A walk under `floor` (a plan of a few hundred nodes)
/// never waits. News that may not wait (the plan, a profile or a selection changed, a
/// flight that concerns the plan, a node without its item going down) walks at once.
class recompute_pace {
public:
  using clock = std::chrono::steady_clock;

  explicit recompute_pace(double factor = 10, clock::duration floor = std::chrono::milliseconds(2),
                          clock::duration cap = std::chrono::seconds(1))
      : factor_(factor), floor_(floor), cap_(cap) {}

  /// A walk that took `cost` of CPU time ended at `end`.
  void ran(clock::duration cost, clock::time_point end) {
    spacing_ = cost < floor_
                   ? clock::duration::zero()
                   : std::min(cap_, std::chrono::duration_cast<clock::duration>(cost * factor_));
    last_end_ = end;
  }

  /// How long news that may wait must wait at `now` (zero: walk now).
  clock::duration wait(clock::time_point now) const {
    const auto due = last_end_ + spacing_;
    return now >= due ? clock::duration::zero() : due - now;
  }

private:
  double factor_;
  clock::duration floor_;
  clock::duration cap_;
  clock::duration spacing_{};
  clock::time_point last_end_{};
};

/// The CPU time the calling thread has used: a walk's cost, whatever else the machine
/// runs meanwhile.
std::chrono::nanoseconds thread_cpu_time();

} // namespace gpu_partitioner::controller
