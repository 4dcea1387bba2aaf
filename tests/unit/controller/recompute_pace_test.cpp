// controller::recompute_pace: news that may wait is worked on at most once per ten times
// the last walk's cost, within a cap, and a cheap walk never waits.
#include "controller/recompute_pace.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <thread>

namespace gc = gpu_partitioner::controller;
using namespace std::chrono_literals;
using clock_type = gc::recompute_pace::clock;

BOOST_AUTO_TEST_SUITE(recompute_pace)

BOOST_AUTO_TEST_CASE(a_walk_is_followed_by_a_pause_of_ten_times_its_cost) {
  gc::recompute_pace pace;
  const clock_type::time_point t0{std::chrono::hours(1)};
  BOOST_TEST((pace.wait(t0) == clock_type::duration::zero()), "nothing walked yet");
  pace.ran(30ms, t0);
  BOOST_TEST((pace.wait(t0) == 300ms));
  BOOST_TEST((pace.wait(t0 + 100ms) == 200ms));
  BOOST_TEST((pace.wait(t0 + 300ms) == clock_type::duration::zero()));
  BOOST_TEST((pace.wait(t0 + 5s) == clock_type::duration::zero()));
}

BOOST_AUTO_TEST_CASE(a_cheap_walk_never_waits_and_a_dear_one_waits_at_most_the_cap) {
  gc::recompute_pace pace;
  const clock_type::time_point t0{std::chrono::hours(1)};
  pace.ran(1900us, t0);
  BOOST_TEST((pace.wait(t0) == clock_type::duration::zero()), "under the 2 ms floor");
  pace.ran(400ms, t0);
  BOOST_TEST((pace.wait(t0) == 1s), "capped at 1 s");
  pace.ran(2ms, t0 + 1s);
  BOOST_TEST((pace.wait(t0 + 1s) == 20ms), "each walk sets the next pause");
}

BOOST_AUTO_TEST_CASE(the_threads_cpu_time_counts_work_not_sleep) {
  const auto before = gc::thread_cpu_time();
  volatile unsigned long sink = 0;
  for (unsigned long i = 0; i < 20000000ul; ++i)
    sink = sink + i;
  const auto worked = gc::thread_cpu_time();
  BOOST_TEST((worked > before));
  std::this_thread::sleep_for(50ms);
  BOOST_TEST((gc::thread_cpu_time() - worked < 40ms), "sleeping costs no CPU time");
}

BOOST_AUTO_TEST_SUITE_END()
