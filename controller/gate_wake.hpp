#pragma once

// When a plan's gate must be decided again though nothing in the cluster changes: a change
// window opening or closing, a soak ending. The gate reads the wall clock; the timer that
// wakes it runs on a steady clock. A wall clock set back while the timer runs makes it fire
// before the wall clock reaches the wake, and a wake is then armed again for what is left:
// it is never dropped for looking like one still pending.

#include "protocol/timestamp.hpp"

#include <chrono>
#include <optional>

namespace gpu_partitioner::controller {

class gate_wake {
public:
  using steady_time = std::chrono::steady_clock::time_point;

  /// Asks to be woken at `at` (wall clock). Returns the delay of a timer to start, or
  /// nullopt when a timer already running wakes the gate no later (the gate, decided again
  /// then, asks for its next wake itself).
  std::optional<std::chrono::milliseconds> arm(protocol::wall_clock::time_point at,
                                               protocol::wall_clock::time_point wall_now,
                                               steady_time steady_now);

  struct tick_result {
    /// The wake is reached by the wall clock: decide the gate.
    bool due = false;
    /// Its timer ran out short of it (the wall clock went back): start this one.
    std::optional<std::chrono::milliseconds> again;
  };
  /// A timer fired (this wake's or another's).
  tick_result tick(protocol::wall_clock::time_point wall_now, steady_time steady_now);

  /// The wake asked for, if one is pending.
  std::optional<protocol::wall_clock::time_point> pending() const { return at_; }

private:
  std::chrono::milliseconds start(protocol::wall_clock::time_point wall_now,
                                  steady_time steady_now);

  std::optional<protocol::wall_clock::time_point> at_;
  /// When the timer started for at_ runs out.
  steady_time fires_{};
};

} // namespace gpu_partitioner::controller
