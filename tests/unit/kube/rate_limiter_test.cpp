// The client-side rate limiter: the token bucket's arithmetic on an injected clock (a full
// bucket's burst, the spacing after it, the refill and its cap, a clock read out of order,
// no limit), checked against an independent model (GCRA) on random arrivals, and the
// limiter that threads share: each caller sleeps for its own reservation.
#include "kube/rate_limiter.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace kube = gpu_partitioner::kube;
namespace bdata = boost::unit_test::data;
using namespace std::chrono_literals;
using time_point = std::chrono::steady_clock::time_point;

namespace {

const time_point t0 = time_point{} + 1000s;

// Every rate and burst the grid tests cover: fractional rates, rates whose interval is no
// whole number of nanoseconds, a burst of one (no burst) and large ones.
const std::vector<double> rates{0.5, 1, 3, 5, 20, 50, 1000};
const std::vector<int> bursts{1, 2, 10, 100};

// Rounding of the wait to a whole nanosecond, and of doubles.
constexpr double slack_ns = 2;

double ns(std::chrono::nanoseconds d) {
  return static_cast<double>(d.count());
}

} // namespace

BOOST_AUTO_TEST_SUITE(token_bucket_arithmetic)

BOOST_DATA_TEST_CASE(
    a_full_bucket_lets_burst_requests_go_at_once_and_spaces_the_rest_by_one_over_qps,
    bdata::make(rates) * bdata::make(bursts), qps, burst) {
  auto b = kube::full_bucket({qps, burst}, t0);
  for (int k = 0; k < burst + 30; ++k) {
    // Everyone asks at the same instant; the k-th goes once k - burst + 1 tokens flowed in.
    const double expected = k < burst ? 0 : (k - burst + 1) / qps * 1e9;
    const double waited = ns(kube::take_token(b, t0));
    BOOST_TEST_REQUIRE(std::fabs(waited - expected) <= slack_ns,
                       "request " << k << " waited " << waited << " ns, not " << expected);
  }
}

BOOST_DATA_TEST_CASE(tokens_flow_back_at_qps_and_never_beyond_burst,
                     bdata::make(rates) * bdata::make(bursts), qps, burst) {
  // Emptied at t0, then quiet for d: floor(d * qps) tokens are back, at most burst.
  for (double intervals : {0.5, 1.0, 1.5, 2.0, 7.0, 99.0, 100.0, 250.0, 10000.0}) {
    auto b = kube::full_bucket({qps, burst}, t0);
    for (int k = 0; k < burst; ++k)
      BOOST_TEST_REQUIRE(kube::take_token(b, t0).count() == 0);
    // Rounded up to a whole nanosecond: 1/3 s is not one.
    const time_point later =
        t0 + std::chrono::nanoseconds(static_cast<std::int64_t>(std::ceil(intervals / qps * 1e9)));
    int free = 0;
    while (kube::take_token(b, later).count() == 0)
      ++free;
    const int expected = std::min(burst, static_cast<int>(std::floor(intervals)));
    BOOST_TEST(free == expected,
               "after " << intervals << " intervals: " << free << " free, not " << expected);
  }
}

BOOST_AUTO_TEST_CASE(no_limit_never_waits) {
  auto b = kube::full_bucket({0, 1}, t0);
  for (int k = 0; k < 100000; ++k)
    BOOST_TEST_REQUIRE(kube::take_token(b, t0).count() == 0);
}

BOOST_AUTO_TEST_CASE(a_burst_below_one_holds_one_token) {
  auto b = kube::full_bucket({10, 0}, t0);
  BOOST_TEST(b.burst == 1);
  BOOST_TEST(kube::take_token(b, t0).count() == 0);
  BOOST_TEST(ns(kube::take_token(b, t0)) == 100e6, "the second waits 1/qps");
}

BOOST_AUTO_TEST_CASE(a_clock_read_out_of_order_adds_no_tokens_and_waits_from_the_later_time) {
  auto b = kube::full_bucket({10, 1}, t0);
  BOOST_TEST(kube::take_token(b, t0 + 1s).count() == 0);
  // A thread that read the clock 50 ms before the last take: nothing flowed in for it, and
  // its token comes 100 ms after that take, so 150 ms after the time it read.
  BOOST_TEST(ns(kube::take_token(b, t0 + 950ms)) == 150e6);
  // Time counted once: the next, at the later time, waits for the token after that.
  BOOST_TEST(ns(kube::take_token(b, t0 + 1s)) == 200e6);
}

BOOST_AUTO_TEST_CASE(a_request_after_its_token_came_goes_at_once_and_the_deficit_is_kept) {
  auto b = kube::full_bucket({4, 1}, t0);
  BOOST_TEST(kube::take_token(b, t0).count() == 0);
  BOOST_TEST(ns(kube::take_token(b, t0)) == 250e6);
  BOOST_TEST(ns(kube::take_token(b, t0)) == 500e6);
  // 600 ms on, the reservations at 250 and 500 ms are spent: the next token is at 750 ms.
  BOOST_TEST(ns(kube::take_token(b, t0 + 600ms)) == 150e6);
  // A second later the bucket is full again (burst 1): no wait, and no more than that.
  BOOST_TEST(kube::take_token(b, t0 + 1750ms).count() == 0);
  BOOST_TEST(ns(kube::take_token(b, t0 + 1750ms)) == 250e6);
}

// GCRA (virtual scheduling), the bucket stated in time instead of tokens: a request at a
// goes at max(a, tat - (burst - 1) / qps), and the theoretical arrival time tat moves on
// by 1 / qps from max(tat, a). The two must agree on every arrival sequence.
BOOST_DATA_TEST_CASE(every_wait_matches_the_gcra_model_and_releases_conform,
                     bdata::xrange(20) * bdata::make(rates) * bdata::make(bursts), seed, qps,
                     burst) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(seed) * 7919 + static_cast<std::uint64_t>(burst));
  // Gaps from nothing (a crowd) to several intervals (a quiet spell), in nanoseconds.
  const double interval = 1e9 / qps;
  std::uniform_real_distribution<double> gap(0, 4 * interval);
  std::bernoulli_distribution crowd(0.6);
  auto b = kube::full_bucket({qps, burst}, t0);
  double tat = 0; // ns after t0
  double arrival = 0;
  std::vector<double> releases;
  for (int i = 0; i < 300; ++i) {
    if (!crowd(rng))
      arrival += std::floor(gap(rng));
    const time_point now = t0 + std::chrono::nanoseconds(static_cast<std::int64_t>(arrival));
    const double release = arrival + ns(kube::take_token(b, now));
    const double model = std::max(arrival, tat - (burst - 1) * interval);
    tat = std::max(tat, arrival) + interval;
    if (std::fabs(release - model) > slack_ns || release < arrival)
      BOOST_FAIL("request " << i << " at " << arrival << " ns goes at " << release
                            << " ns; GCRA says " << model);
    releases.push_back(release);
  }
  // In the order asked, and never more than burst + qps * t in any span t.
  for (std::size_t i = 1; i < releases.size(); ++i)
    if (releases[i] + slack_ns < releases[i - 1])
      BOOST_FAIL("request " << i << " goes before request " << i - 1);
  for (std::size_t i = 0; i < releases.size(); ++i)
    for (std::size_t j = i; j < releases.size(); ++j)
      if (static_cast<double>(j - i + 1) >
          burst + qps * (releases[j] - releases[i] + slack_ns) / 1e9 + 1e-9)
        BOOST_FAIL("requests " << i << " to " << j << " go within " << releases[j] - releases[i]
                               << " ns");
  BOOST_TEST(releases.size() == 300u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(shared_limiter)

namespace {

// A clock that moves only when someone sleeps on it.
struct fake_time {
  std::atomic<std::int64_t> ns{0};
  time_point now() const { return t0 + std::chrono::nanoseconds(ns.load()); }
};

} // namespace

BOOST_AUTO_TEST_CASE(one_caller_sleeps_for_each_reservation_and_the_observer_hears_every_wait) {
  fake_time clock;
  std::vector<std::chrono::nanoseconds> heard;
  kube::rate_limiter limiter(
      {20, 5}, [&] { return clock.now(); },
      [&](std::chrono::nanoseconds d) { clock.ns += d.count(); });
  limiter.set_observer([&](std::chrono::nanoseconds d) { heard.push_back(d); });
  for (int i = 0; i < 45; ++i)
    limiter.wait();
  // 45 requests, 5 at once and 40 at 20 a second: two seconds of sleeping, no more.
  BOOST_TEST(clock.ns.load() == 2'000'000'000);
  BOOST_TEST(limiter.taken() == 45u);
  BOOST_TEST(limiter.waited().count() == 2'000'000'000);
  BOOST_REQUIRE(heard.size() == 45u);
  BOOST_TEST(std::count(heard.begin(), heard.end(), 0ns) == 5);
  for (std::size_t i = 5; i < heard.size(); ++i)
    BOOST_TEST(heard[i].count() == 50'000'000, "wait " << i);
}

BOOST_AUTO_TEST_CASE(threads_sharing_a_limiter_each_get_a_distinct_reservation) {
  // The clock stands still, so the waits are the reservations themselves: whatever the
  // interleaving, one each of 0 (burst times) and 1/qps, 2/qps, ... for the rest.
  constexpr int threads = 8, each = 25, burst = 10;
  constexpr double qps = 50;
  std::mutex m;
  std::vector<std::int64_t> waits;
  kube::rate_limiter limiter(
      {qps, burst}, [] { return t0; }, [](std::chrono::nanoseconds) {});
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (int i = 0; i < each; ++i) {
        const auto d = limiter.wait();
        std::lock_guard<std::mutex> lock(m);
        waits.push_back(d.count());
      }
    });
  for (auto& t : pool)
    t.join();
  std::sort(waits.begin(), waits.end());
  BOOST_REQUIRE(waits.size() == static_cast<std::size_t>(threads * each));
  for (std::size_t k = 0; k < waits.size(); ++k) {
    const double expected = k < burst ? 0 : (static_cast<double>(k) - burst + 1) / qps * 1e9;
    BOOST_TEST_REQUIRE(std::fabs(static_cast<double>(waits[k]) - expected) <= slack_ns);
  }
  BOOST_TEST(limiter.taken() == static_cast<std::uint64_t>(threads * each));
}

BOOST_AUTO_TEST_CASE(without_a_limit_nobody_sleeps) {
  int slept = 0;
  kube::rate_limiter limiter(
      {0, 1}, [] { return t0; }, [&](std::chrono::nanoseconds) { ++slept; });
  for (int i = 0; i < 1000; ++i)
    BOOST_TEST_REQUIRE(limiter.wait().count() == 0);
  BOOST_TEST(slept == 0);
  BOOST_TEST(limiter.taken() == 1000u);
}

BOOST_AUTO_TEST_SUITE_END()
