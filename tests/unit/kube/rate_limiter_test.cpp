// The client-side rate limiter: the token bucket's arithmetic on an injected clock (a full
// bucket's burst, the spacing after it, the refill and its cap, a clock read out of order,
// no limit); the lanes, played as discrete events on random arrivals against GCRA's closed
// form, computed apart: the tokens come as fast as the limit allows whoever waits, and each goes to
// the most urgent lane's oldest waiter; and the limiter that threads share.
#include "kube/rate_limiter.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
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

// Rounding of an instant up to a whole nanosecond, and of doubles.
constexpr double slack_ns = 2;

double ns(std::chrono::nanoseconds d) {
  return static_cast<double>(d.count());
}

double ns_after_t0(time_point t) {
  return ns(t - t0);
}

struct arrival {
  double at_ns = 0; // after t0
  kube::request_lane lane = kube::request_lane::rollout;
};

// The limiter's rule played as discrete events, as rate_limiter::wait applies it: arrivals
// join their lane; whenever the bucket has a token, the waiter whose turn it is
// (lane_queue::first) takes it. Returns when each request went, in ns after t0.
std::vector<double> serve(double qps, int burst, const std::vector<arrival>& arrivals) {
  auto bucket = kube::full_bucket({qps, burst}, t0);
  kube::lane_queue queue;
  std::map<kube::lane_queue::ticket, std::size_t> request_of;
  std::vector<double> released(arrivals.size(), -1);
  std::size_t next = 0, done = 0;
  double now = 0;
  while (done < arrivals.size()) {
    while (next < arrivals.size() && arrivals[next].at_ns <= now) {
      request_of[queue.join(arrivals[next].lane)] = next;
      ++next;
    }
    double token_at = std::numeric_limits<double>::infinity();
    if (auto turn = queue.first()) {
      const auto at = t0 + std::chrono::nanoseconds(static_cast<std::int64_t>(now));
      if (auto later = kube::take_or_next(bucket, at)) {
        token_at = ns_after_t0(*later);
      } else {
        queue.pop_first();
        released[request_of.at(*turn)] = now;
        ++done;
        continue;
      }
    }
    const double arrival_at =
        next < arrivals.size() ? arrivals[next].at_ns : std::numeric_limits<double>::infinity();
    now = std::min(token_at, arrival_at);
  }
  return released;
}

std::vector<arrival> at_once(int n, kube::request_lane lane = kube::request_lane::rollout) {
  return std::vector<arrival>(static_cast<std::size_t>(n), arrival{0, lane});
}

} // namespace

BOOST_AUTO_TEST_SUITE(token_bucket_arithmetic)

BOOST_DATA_TEST_CASE(
    a_full_bucket_lets_burst_requests_go_at_once_and_spaces_the_rest_by_one_over_qps,
    bdata::make(rates) * bdata::make(bursts), qps, burst) {
  const auto released = serve(qps, burst, at_once(burst + 30));
  for (int k = 0; k < burst + 30; ++k) {
    // Everyone asks at the same instant; the k-th goes once k - burst + 1 tokens flowed in.
    const double expected = k < burst ? 0 : (k - burst + 1) / qps * 1e9;
    const double went = released[static_cast<std::size_t>(k)];
    BOOST_TEST_REQUIRE(std::fabs(went - expected) <= slack_ns,
                       "request " << k << " went at " << went << " ns, not " << expected);
  }
}

BOOST_DATA_TEST_CASE(tokens_flow_back_at_qps_and_never_beyond_burst,
                     bdata::make(rates) * bdata::make(bursts), qps, burst) {
  // Emptied at t0, then quiet for d: floor(d * qps) tokens are back, at most burst.
  for (double intervals : {0.5, 1.0, 1.5, 2.0, 7.0, 99.0, 100.0, 250.0, 10000.0}) {
    auto b = kube::full_bucket({qps, burst}, t0);
    for (int k = 0; k < burst; ++k)
      BOOST_TEST_REQUIRE(!kube::take_or_next(b, t0).has_value());
    // Rounded up to a whole nanosecond: 1/3 s is not one.
    const time_point later =
        t0 + std::chrono::nanoseconds(static_cast<std::int64_t>(std::ceil(intervals / qps * 1e9)));
    int free = 0;
    while (!kube::take_or_next(b, later).has_value())
      ++free;
    const int expected = std::min(burst, static_cast<int>(std::floor(intervals)));
    BOOST_TEST(free == expected,
               "after " << intervals << " intervals: " << free << " free, not " << expected);
  }
}

BOOST_AUTO_TEST_CASE(the_events_bucket_is_a_fifth_of_the_other_and_holds_a_token) {
  const auto d = kube::events_share({50, 100});
  BOOST_TEST(d.qps == 10.0);
  BOOST_TEST(d.burst == 20);
  const auto small = kube::events_share({2, 3});
  BOOST_TEST(small.qps == 0.4);
  BOOST_TEST(small.burst == 1, "a bucket that holds no token would never let one go");
  BOOST_TEST(kube::events_share({0, 1}).qps == 0.0, "no limit: none for Events either");
}

BOOST_AUTO_TEST_CASE(no_limit_never_waits) {
  auto b = kube::full_bucket({0, 1}, t0);
  for (int k = 0; k < 100000; ++k)
    BOOST_TEST_REQUIRE(!kube::take_or_next(b, t0).has_value());
}

BOOST_AUTO_TEST_CASE(a_burst_below_one_holds_one_token) {
  auto b = kube::full_bucket({10, 0}, t0);
  BOOST_TEST(b.burst == 1);
  BOOST_TEST(!kube::take_or_next(b, t0).has_value());
  const auto next = kube::take_or_next(b, t0);
  BOOST_REQUIRE(next.has_value());
  BOOST_TEST(ns(*next - t0) == 100e6, "the next token comes 1/qps later");
}

BOOST_AUTO_TEST_CASE(a_clock_read_out_of_order_adds_no_tokens) {
  auto b = kube::full_bucket({10, 1}, t0);
  BOOST_TEST(!kube::take_or_next(b, t0 + 1s).has_value());
  // A thread that read the clock 50 ms before the last call: nothing flowed in for it, and
  // the next token still comes 100 ms after that call.
  auto next = kube::take_or_next(b, t0 + 950ms);
  BOOST_REQUIRE(next.has_value());
  BOOST_TEST(ns(*next - t0) == 1100e6);
  // At that instant it is there, once.
  BOOST_TEST(!kube::take_or_next(b, *next).has_value());
  BOOST_TEST(kube::take_or_next(b, *next).has_value());
}

BOOST_AUTO_TEST_CASE(a_token_not_taken_is_kept_up_to_the_burst) {
  auto b = kube::full_bucket({4, 1}, t0);
  BOOST_TEST(!kube::take_or_next(b, t0).has_value());
  // 600 ms on, two tokens and a half flowed in, but the bucket holds one.
  BOOST_TEST(!kube::take_or_next(b, t0 + 600ms).has_value());
  auto next = kube::take_or_next(b, t0 + 600ms);
  BOOST_REQUIRE(next.has_value());
  BOOST_TEST(ns(*next - t0) == 850e6);
}

// GCRA (virtual scheduling), the bucket stated in time instead of tokens: a request at a
// goes at max(a, tat - (burst - 1) / qps), and the theoretical arrival time tat moves on
// by 1 / qps from max(tat, a). With one lane the limiter must agree with it on every
// arrival sequence; with four, the instants tokens are handed out are the same (the
// limiter never holds a token while anyone waits), whoever gets them.
BOOST_DATA_TEST_CASE(tokens_go_when_gcra_says_whichever_lanes_wait,
                     bdata::xrange(20) * bdata::make(rates) * bdata::make(bursts), seed, qps,
                     burst) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(seed) * 7919 + static_cast<std::uint64_t>(burst));
  // Gaps from nothing (a crowd) to several intervals (a quiet spell), in nanoseconds.
  const double interval = 1e9 / qps;
  std::uniform_real_distribution<double> gap(0, 4 * interval);
  std::bernoulli_distribution crowd(0.6);
  std::uniform_int_distribution<int> lane(0, static_cast<int>(kube::request_lane_count) - 1);
  std::vector<arrival> one_lane, lanes;
  double at = 0;
  for (int i = 0; i < 300; ++i) {
    if (!crowd(rng))
      at += std::floor(gap(rng));
    one_lane.push_back({at, kube::request_lane::rollout});
    lanes.push_back({at, kube::request_lanes[static_cast<std::size_t>(lane(rng))]});
  }
  std::vector<double> model;
  double tat = 0;
  for (const auto& a : one_lane) {
    model.push_back(std::max(a.at_ns, tat - (burst - 1) * interval));
    tat = std::max(tat, a.at_ns) + interval;
  }
  const auto fifo = serve(qps, burst, one_lane);
  for (std::size_t i = 0; i < fifo.size(); ++i)
    if (std::fabs(fifo[i] - model[i]) > slack_ns || fifo[i] < one_lane[i].at_ns)
      BOOST_FAIL("request " << i << " at " << one_lane[i].at_ns << " ns goes at " << fifo[i]
                            << " ns; GCRA says " << model[i]);
  auto mixed = serve(qps, burst, lanes);
  for (std::size_t i = 0; i < mixed.size(); ++i)
    BOOST_TEST_REQUIRE(mixed[i] >= lanes[i].at_ns);
  std::sort(mixed.begin(), mixed.end());
  for (std::size_t i = 0; i < mixed.size(); ++i)
    if (std::fabs(mixed[i] - model[i]) > slack_ns)
      BOOST_FAIL("token " << i << " handed out at " << mixed[i] << " ns with lanes, at " << model[i]
                          << " ns in GCRA");
  // Never more than burst + qps * t in any span t.
  for (std::size_t i = 0; i < mixed.size(); ++i)
    for (std::size_t j = i; j < mixed.size(); ++j)
      if (static_cast<double>(j - i + 1) >
          burst + qps * (mixed[j] - mixed[i] + slack_ns) / 1e9 + 1e-9)
        BOOST_FAIL("requests " << i << " to " << j << " go within " << mixed[j] - mixed[i]
                               << " ns");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(lanes)

BOOST_AUTO_TEST_CASE(the_queue_serves_the_most_urgent_lane_first_and_each_lane_in_order) {
  kube::lane_queue q;
  BOOST_TEST(!q.first().has_value());
  const auto e1 = q.join(kube::request_lane::events);
  const auto s1 = q.join(kube::request_lane::status);
  const auto e2 = q.join(kube::request_lane::events);
  const auto r1 = q.join(kube::request_lane::rollout);
  const auto i1 = q.join(kube::request_lane::items);
  const auto r2 = q.join(kube::request_lane::rollout);
  const auto back = q.join(kube::request_lane::restore);
  BOOST_TEST(q.waiting(kube::request_lane::events) == 2u);
  BOOST_TEST(q.waiting(kube::request_lane::rollout) == 2u);
  std::vector<kube::lane_queue::ticket> order;
  std::vector<kube::request_lane> lanes;
  while (auto t = q.first()) {
    order.push_back(*t);
    lanes.push_back(q.pop_first());
  }
  BOOST_TEST(order == (std::vector<kube::lane_queue::ticket>{back, r1, r2, i1, s1, e1, e2}));
  BOOST_TEST(lanes ==
             (std::vector<kube::request_lane>{
                 kube::request_lane::restore, kube::request_lane::rollout,
                 kube::request_lane::rollout, kube::request_lane::items, kube::request_lane::status,
                 kube::request_lane::events, kube::request_lane::events}));
  BOOST_TEST(q.empty());
}

BOOST_AUTO_TEST_CASE(a_cordon_behind_a_thousand_events_waits_one_token) {
  // A wave's thousand Events queued at 50 a second; a node's untaint asks 2 s later and
  // goes with the next token, not 18 s later behind them.
  auto arrivals = at_once(1000, kube::request_lane::events);
  arrivals.push_back({2e9, kube::request_lane::rollout});
  const auto released = serve(50, 100, arrivals);
  const double untaint = released.back();
  BOOST_TEST(untaint >= 2e9);
  BOOST_TEST(untaint - 2e9 <= 20e6 + slack_ns,
             "the untaint waited " << (untaint - 2e9) / 1e6 << " ms");
  // The Events still go at the limit's pace, the one token less.
  const double last_event = *std::max_element(released.begin(), released.end() - 1);
  BOOST_TEST(std::fabs(last_event - 901 / 50.0 * 1e9) <= slack_ns);
}

// At every handout, nobody of a more urgent lane was waiting, and nobody of the same lane
// that asked earlier still waits: strict priority between lanes, FIFO within each.
BOOST_DATA_TEST_CASE(each_token_goes_to_the_most_urgent_lanes_oldest_waiter,
                     bdata::xrange(30) * bdata::make(std::vector<double>{5, 50, 1000}), seed, qps) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(seed) * 104729 + 17);
  const double interval = 1e9 / qps;
  std::uniform_real_distribution<double> gap(0, 2 * interval);
  std::bernoulli_distribution crowd(0.7);
  std::uniform_int_distribution<int> lane(0, static_cast<int>(kube::request_lane_count) - 1);
  std::vector<arrival> arrivals;
  double at = 0;
  for (int i = 0; i < 400; ++i) {
    if (!crowd(rng))
      at += std::floor(gap(rng));
    arrivals.push_back({at, kube::request_lanes[static_cast<std::size_t>(lane(rng))]});
  }
  const auto released = serve(qps, 5, arrivals);
  // Handouts while another lane's request waited: the cases the rule decides.
  std::size_t contested = 0;
  for (std::size_t i = 0; i < arrivals.size(); ++i)
    for (std::size_t j = 0; j < arrivals.size(); ++j) {
      if (i == j)
        continue;
      // j was waiting when i went: it had asked, and went later.
      const bool waiting = arrivals[j].at_ns <= released[i] && released[j] > released[i];
      if (!waiting)
        continue;
      if (arrivals[j].lane != arrivals[i].lane)
        ++contested;
      if (arrivals[j].lane < arrivals[i].lane)
        BOOST_FAIL("request " << i << " (" << kube::to_string(arrivals[i].lane) << ") went at "
                              << released[i] << " ns while " << j << " ("
                              << kube::to_string(arrivals[j].lane) << ") waited");
      if (arrivals[j].lane == arrivals[i].lane && j < i)
        BOOST_FAIL("request " << i << " overtook " << j << " in lane "
                              << kube::to_string(arrivals[i].lane));
    }
  BOOST_TEST(contested > 0u, "the arrivals never made two lanes wait at once");
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

BOOST_AUTO_TEST_CASE(one_caller_sleeps_for_each_token_and_the_observer_hears_every_wait) {
  fake_time clock;
  std::vector<std::pair<kube::request_lane, std::chrono::nanoseconds>> heard;
  kube::rate_limiter limiter(
      {20, 5}, [&] { return clock.now(); },
      [&](std::chrono::nanoseconds d) { clock.ns += d.count(); });
  limiter.set_observer(
      [&](kube::request_lane lane, std::chrono::nanoseconds d) { heard.emplace_back(lane, d); });
  for (int i = 0; i < 45; ++i)
    limiter.wait(i % 2 ? kube::request_lane::status : kube::request_lane::rollout);
  // 45 requests, 5 at once and 40 at 20 a second: two seconds of sleeping, no more.
  BOOST_TEST(clock.ns.load() == 2'000'000'000);
  BOOST_TEST(limiter.taken() == 45u);
  BOOST_TEST(limiter.waited().count() == 2'000'000'000);
  BOOST_REQUIRE(heard.size() == 45u);
  for (std::size_t i = 0; i < heard.size(); ++i) {
    BOOST_TEST(
        (heard[i].first == (i % 2 ? kube::request_lane::status : kube::request_lane::rollout)));
    BOOST_TEST(heard[i].second.count() == (i < 5 ? 0 : 50'000'000), "wait " << i);
  }
}

BOOST_AUTO_TEST_CASE(threads_sharing_a_limiter_together_keep_to_the_limit) {
  constexpr int threads = 8, each = 25, burst = 10;
  constexpr double qps = 1000;
  kube::rate_limiter limiter({qps, burst});
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = 0; i < each; ++i)
        limiter.wait(kube::request_lanes[static_cast<std::size_t>((t + i) % 4)]);
    });
  for (auto& t : pool)
    t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST(limiter.taken() == static_cast<std::uint64_t>(threads * each));
  const double bound = (threads * each - burst) / qps;
  BOOST_TEST(elapsed >= bound, elapsed << " s for " << threads * each << "; at least " << bound);
  for (const auto lane : kube::request_lanes)
    BOOST_TEST(limiter.waiting(lane) == 0u);
}

BOOST_AUTO_TEST_CASE(a_rollout_request_goes_ahead_of_events_already_waiting) {
  // Four tokens a second, one at a time: the bucket's token taken, three Events wait, then
  // a node's write asks. It gets the next token; the Events follow in their order.
  kube::rate_limiter limiter({4, 1});
  std::map<kube::request_lane, std::size_t> depth;
  std::mutex m;
  limiter.set_depth_observer([&](kube::request_lane lane, std::size_t n) {
    std::lock_guard<std::mutex> lock(m);
    depth[lane] = n;
  });
  limiter.wait(kube::request_lane::events);
  std::vector<std::string> order;
  auto ask = [&](kube::request_lane lane, std::string who) {
    return std::thread([&, lane, who] {
      limiter.wait(lane);
      std::lock_guard<std::mutex> lock(m);
      order.push_back(who);
    });
  };
  auto wait_until = [&](kube::request_lane lane, std::size_t n) {
    while (limiter.waiting(lane) < n)
      std::this_thread::sleep_for(1ms);
  };
  std::vector<std::thread> pool;
  pool.push_back(ask(kube::request_lane::events, "event 1"));
  wait_until(kube::request_lane::events, 1);
  pool.push_back(ask(kube::request_lane::events, "event 2"));
  wait_until(kube::request_lane::events, 2);
  pool.push_back(ask(kube::request_lane::events, "event 3"));
  wait_until(kube::request_lane::events, 3);
  {
    std::lock_guard<std::mutex> lock(m);
    BOOST_TEST(depth[kube::request_lane::events] == 3u);
  }
  pool.push_back(ask(kube::request_lane::rollout, "untaint"));
  for (auto& t : pool)
    t.join();
  // The first Event may have had its token before the untaint asked (250 ms is long on a
  // loaded machine); every Event still waiting then went after it.
  BOOST_REQUIRE(order.size() == 4u);
  const auto untaint = std::find(order.begin(), order.end(), "untaint") - order.begin();
  BOOST_TEST(untaint <= 1);
  std::vector<std::string> events;
  for (const auto& who : order)
    if (who != "untaint")
      events.push_back(who);
  BOOST_TEST(events == (std::vector<std::string>{"event 1", "event 2", "event 3"}));
  BOOST_TEST(depth[kube::request_lane::events] == 0u);
  BOOST_TEST(limiter.taken() == 5u);
}

BOOST_AUTO_TEST_CASE(a_patient_request_goes_when_its_token_comes_in_time_and_else_not_at_all) {
  // Ten a second, one at a time, on a clock that moves only when the limiter sleeps.
  fake_time clock;
  int slept = 0;
  kube::rate_limiter limiter(
      {10, 1}, [&] { return clock.now(); },
      [&](std::chrono::nanoseconds d) {
        ++slept;
        clock.ns += d.count();
      });
  BOOST_TEST(limiter.wait_for(kube::request_lane::status, 50ms)->count() == 0);
  // The next token is 100 ms away: 50 ms of patience gives up at once, without sleeping,
  // taking nothing and leaving nobody in the queue.
  BOOST_TEST(!limiter.wait_for(kube::request_lane::status, 50ms).has_value());
  BOOST_TEST(slept == 0);
  BOOST_TEST(limiter.given_up() == 1u);
  BOOST_TEST(limiter.taken() == 1u);
  BOOST_TEST(limiter.waiting(kube::request_lane::status) == 0u);
  // 100 ms of patience is enough: it sleeps for the token and takes it.
  BOOST_TEST(limiter.wait_for(kube::request_lane::status, 100ms)->count() == 100'000'000);
  BOOST_TEST(slept == 1);
  // The token a request gave up is still there for the next one: no time is lost.
  BOOST_TEST(!limiter.wait_for(kube::request_lane::status, 1ms).has_value());
  BOOST_TEST(limiter.wait(kube::request_lane::rollout).count() == 100'000'000);
  BOOST_TEST(clock.ns.load() == 200'000'000);
  BOOST_TEST(limiter.taken() == 3u);
  BOOST_TEST(limiter.given_up() == 2u);
}

BOOST_AUTO_TEST_CASE(a_patient_request_behind_others_leaves_the_queue_when_its_patience_ends) {
  // One token a second: the bucket's token taken, an untaint waits for the next. A status
  // write with 50 ms of patience waits behind it and gives up long before the token comes;
  // the untaint still gets it, and nobody is left waiting.
  kube::rate_limiter limiter({1, 1});
  limiter.wait(kube::request_lane::restore);
  std::thread untaint([&] { limiter.wait(kube::request_lane::restore); });
  while (limiter.waiting(kube::request_lane::restore) < 1)
    std::this_thread::sleep_for(1ms);
  const auto status = limiter.wait_for(kube::request_lane::status, 50ms);
  untaint.join();
  BOOST_TEST(!status.has_value());
  BOOST_TEST(limiter.given_up() == 1u);
  BOOST_TEST(limiter.taken() == 2u);
  for (const auto lane : kube::request_lanes)
    BOOST_TEST(limiter.waiting(lane) == 0u);
}

BOOST_AUTO_TEST_CASE(without_a_limit_nobody_sleeps) {
  int slept = 0;
  kube::rate_limiter limiter(
      {0, 1}, [] { return t0; }, [&](std::chrono::nanoseconds) { ++slept; });
  for (int i = 0; i < 1000; ++i)
    BOOST_TEST_REQUIRE(limiter.wait(kube::request_lane::events).count() == 0);
  BOOST_TEST(slept == 0);
  BOOST_TEST(limiter.taken() == 1000u);
}

BOOST_AUTO_TEST_SUITE_END()
