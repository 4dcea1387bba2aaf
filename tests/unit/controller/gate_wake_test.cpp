// controller::gate_wake: the plan gate's wake-up (a window opening or closing, a soak
// ending) against the wall clock the gate reads, on a timer that runs on a steady clock.
// Whatever the wall clock does while the timer runs, the gate is decided once the wall
// clock reaches the wake.
#include "controller/gate_wake.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;
using namespace std::chrono_literals;

namespace {

const gp::wall_clock::time_point t0 = gp::wall_clock::from_time_t(1800000000);
const gc::gate_wake::steady_time s0{};

} // namespace

BOOST_AUTO_TEST_SUITE(gate_wake)

BOOST_AUTO_TEST_CASE(a_wake_starts_one_timer_and_is_due_when_the_wall_clock_reaches_it) {
  gc::gate_wake w;
  const auto delay = w.arm(t0 + 60s, t0, s0);
  BOOST_TEST_REQUIRE(delay.has_value());
  BOOST_TEST(delay->count() == 60005);
  // Asked again for the same or a later instant (every view asks): the timer covers it.
  BOOST_TEST(!w.arm(t0 + 60s, t0 + 1s, s0 + 1s));
  BOOST_TEST(!w.arm(t0 + 90s, t0 + 1s, s0 + 1s));
  // An earlier one needs a timer of its own.
  BOOST_TEST(w.arm(t0 + 30s, t0 + 1s, s0 + 1s).value_or(0ms).count() == 29005);
  // Another tick (a retry) before it: nothing.
  const auto early = w.tick(t0 + 10s, s0 + 10s);
  BOOST_TEST(!early.due);
  BOOST_TEST(!early.again);
  const auto fired = w.tick(t0 + 30s + 5ms, s0 + 30s + 5ms);
  BOOST_TEST(fired.due);
  BOOST_TEST(!w.pending());
}

// The wall clock set back ten minutes while the timer ran: the timer fires ten minutes
// before the wall clock reaches the wake. The wake is armed again, and a view arriving in
// between (which asks for the same wake) does not take the running timer for its own.
BOOST_AUTO_TEST_CASE(a_wall_clock_set_back_while_the_timer_runs_arms_the_wake_again) {
  gc::gate_wake w;
  BOOST_TEST_REQUIRE(w.arm(t0 + 60s, t0, s0).has_value());
  const auto back = 600s;
  const auto fired = w.tick(t0 + 60s + 5ms - back, s0 + 60s + 5ms);
  BOOST_TEST(!fired.due);
  BOOST_TEST_REQUIRE(fired.again.has_value());
  BOOST_TEST(fired.again->count() == 600000); // 599,995 ms left, and the slack
  // The gate, decided on the view the tick sends, asks for the same wake: covered.
  BOOST_TEST(!w.arm(t0 + 60s, t0 + 60s + 5ms - back, s0 + 60s + 6ms));
  const auto later = w.tick(t0 + 60s + 10ms, s0 + 660s + 10ms);
  BOOST_TEST(later.due);
}

// Without a timer running (it fired while the wall clock was behind, and nobody re-armed
// it), asking for the same wake starts one: a wake that merely looks pending is not.
BOOST_AUTO_TEST_CASE(a_wake_whose_timer_ran_out_is_armed_again_when_asked) {
  gc::gate_wake w;
  BOOST_TEST_REQUIRE(w.arm(t0 + 60s, t0, s0).has_value());
  BOOST_TEST(w.arm(t0 + 60s, t0 - 540s, s0 + 61s).has_value());
}

BOOST_AUTO_TEST_CASE(a_wall_clock_set_forward_makes_the_wake_due_at_the_next_tick) {
  gc::gate_wake w;
  BOOST_TEST_REQUIRE(w.arm(t0 + 3600s, t0, s0).has_value());
  BOOST_TEST(w.tick(t0 + 3600s, s0 + 10s).due); // any tick once the wall clock is past it
}

BOOST_AUTO_TEST_SUITE_END()
