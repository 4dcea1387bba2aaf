#include "controller/gate_wake.hpp"

#include <algorithm>

namespace gpu_partitioner::controller {

namespace {

using namespace std::chrono_literals;

// A timer fires a little after its wake, so the wall clock has passed it when read.
constexpr std::chrono::milliseconds slack = 5ms;

} // namespace

std::chrono::milliseconds gate_wake::start(protocol::wall_clock::time_point wall_now,
                                           steady_time steady_now) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*at_ - wall_now);
  const auto delay = std::max(left, std::chrono::milliseconds(1)) + slack;
  fires_ = steady_now + delay;
  return delay;
}

std::optional<std::chrono::milliseconds> gate_wake::arm(protocol::wall_clock::time_point at,
                                                        protocol::wall_clock::time_point wall_now,
                                                        steady_time steady_now) {
  if (at_ && *at_ <= at && steady_now < fires_)
    return std::nullopt;
  at_ = at;
  return start(wall_now, steady_now);
}

gate_wake::tick_result gate_wake::tick(protocol::wall_clock::time_point wall_now,
                                       steady_time steady_now) {
  tick_result out;
  if (!at_)
    return out;
  if (wall_now >= *at_) {
    at_.reset();
    out.due = true;
    return out;
  }
  if (steady_now >= fires_)
    out.again = start(wall_now, steady_now);
  return out;
}

} // namespace gpu_partitioner::controller
