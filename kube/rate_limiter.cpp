#include "kube/rate_limiter.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

namespace gpu_partitioner::kube {

rate_limit events_share(rate_limit all) {
  if (all.qps <= 0)
    return all;
  return {all.qps / 5, std::max(1, all.burst / 5)};
}

std::string_view to_string(request_lane lane) {
  switch (lane) {
  case request_lane::restore:
    return "restore";
  case request_lane::rollout:
    return "rollout";
  case request_lane::items:
    return "items";
  case request_lane::status:
    return "status";
  case request_lane::events:
    return "events";
  }
  return "rollout";
}

token_bucket full_bucket(const rate_limit& limit, std::chrono::steady_clock::time_point now) {
  token_bucket b;
  b.qps = std::max(limit.qps, 0.0);
  b.burst = std::max(limit.burst, 1);
  b.origin = now;
  return b;
}

std::optional<std::chrono::steady_clock::time_point>
take_or_next(token_bucket& bucket, std::chrono::steady_clock::time_point now) {
  if (!(bucket.qps > 0))
    return std::nullopt;
  const double interval = 1e9 / bucket.qps;
  bucket.last = std::max(
      bucket.last,
      static_cast<double>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now - bucket.origin).count()));
  const double allowed = bucket.tat - (bucket.burst - 1) * interval;
  // Half a nanosecond of slack, below the clock's resolution: for the sums of doubles
  // behind `tat`, and for the caller that comes at the instant this returned, rounded up,
  // whose lateness must not push the next token back.
  constexpr double slack = 0.5;
  if (bucket.last + slack >= allowed) {
    bucket.tat = (bucket.last > bucket.tat + slack ? bucket.last : bucket.tat) + interval;
    return std::nullopt;
  }
  return bucket.origin +
         std::chrono::nanoseconds(static_cast<std::int64_t>(std::ceil(allowed - slack)));
}

lane_queue::ticket lane_queue::join(request_lane lane) {
  const ticket t = next_++;
  lanes_[static_cast<std::size_t>(lane)].push_back(t);
  return t;
}

std::optional<lane_queue::ticket> lane_queue::first() const {
  for (const auto& lane : lanes_)
    if (!lane.empty())
      return lane.front();
  return std::nullopt;
}

request_lane lane_queue::pop_first() {
  for (std::size_t i = 0; i < lanes_.size(); ++i)
    if (!lanes_[i].empty()) {
      lanes_[i].pop_front();
      return request_lanes[i];
    }
  return request_lanes.back();
}

void lane_queue::leave(ticket t) {
  for (auto& lane : lanes_) {
    const auto it = std::find(lane.begin(), lane.end(), t);
    if (it != lane.end()) {
      lane.erase(it);
      return;
    }
  }
}

std::size_t lane_queue::waiting(request_lane lane) const {
  return lanes_[static_cast<std::size_t>(lane)].size();
}

bool lane_queue::empty() const {
  return !first().has_value();
}

rate_limiter::rate_limiter(rate_limit limit, clock now, sleeper sleep)
    : limit_(limit), now_(now ? std::move(now) : clock(&std::chrono::steady_clock::now)),
      sleep_(sleep ? std::move(sleep)
                   : sleeper([](std::chrono::nanoseconds d) { std::this_thread::sleep_for(d); })),
      bucket_(full_bucket(limit, now_())) {}

std::chrono::nanoseconds rate_limiter::wait(request_lane lane) {
  return *acquire(lane, std::nullopt);
}

std::optional<std::chrono::nanoseconds> rate_limiter::wait_for(request_lane lane,
                                                               std::chrono::nanoseconds patience) {
  return acquire(lane, now_() + patience);
}

std::optional<std::chrono::nanoseconds>
rate_limiter::acquire(request_lane lane,
                      std::optional<std::chrono::steady_clock::time_point> deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  // The clock is read under the lock, so the bucket sees time in order.
  const auto asked = now_();
  const auto me = queue_.join(lane);
  if (depth_observer_)
    depth_observer_(lane, queue_.waiting(lane));
  auto give_up = [&] {
    queue_.leave(me);
    ++given_up_;
    if (depth_observer_)
      depth_observer_(lane, queue_.waiting(lane));
    lock.unlock();
    // The turn may have been this one's: whoever is first now must look again.
    turn_changed_.notify_all();
    return std::nullopt;
  };
  for (;;) {
    if (queue_.first() != me) {
      // Woken when a waiter ahead got its token (or gave up): the turn may be this one's.
      if (!deadline) {
        turn_changed_.wait(lock);
        continue;
      }
      const auto left = *deadline - now_();
      if (left <= std::chrono::steady_clock::duration::zero())
        return give_up();
      turn_changed_.wait_for(lock, left);
      continue;
    }
    const auto now = now_();
    const auto next = take_or_next(bucket_, now);
    if (!next)
      break;
    if (deadline && *next > *deadline)
      return give_up();
    // Sleeps without the lock: a more urgent request that comes meanwhile is first when
    // the token comes, and takes it; this one then waits for its turn again.
    lock.unlock();
    sleep_(std::max(std::chrono::nanoseconds{0},
                    std::chrono::duration_cast<std::chrono::nanoseconds>(*next - now)));
    lock.lock();
  }
  queue_.pop_first();
  const auto waited =
      std::max(std::chrono::nanoseconds{0},
               std::chrono::duration_cast<std::chrono::nanoseconds>(now_() - asked));
  ++taken_;
  waited_ += waited;
  if (depth_observer_)
    depth_observer_(lane, queue_.waiting(lane));
  lock.unlock();
  turn_changed_.notify_all();
  if (observer_)
    observer_(lane, waited);
  return waited;
}

std::uint64_t rate_limiter::taken() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return taken_;
}

std::chrono::nanoseconds rate_limiter::waited() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return waited_;
}

std::uint64_t rate_limiter::given_up() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return given_up_;
}

std::size_t rate_limiter::waiting(request_lane lane) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.waiting(lane);
}

} // namespace gpu_partitioner::kube
