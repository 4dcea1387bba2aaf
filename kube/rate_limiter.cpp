#include "kube/rate_limiter.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

namespace gpu_partitioner::kube {

token_bucket full_bucket(const rate_limit& limit, std::chrono::steady_clock::time_point now) {
  token_bucket b;
  b.qps = std::max(limit.qps, 0.0);
  b.burst = std::max(limit.burst, 1);
  b.tokens = b.burst;
  b.last = now;
  return b;
}

std::chrono::nanoseconds take_token(token_bucket& bucket,
                                    std::chrono::steady_clock::time_point now) {
  if (!(bucket.qps > 0))
    return std::chrono::nanoseconds{0};
  if (now > bucket.last) {
    const double elapsed = std::chrono::duration<double>(now - bucket.last).count();
    bucket.tokens = std::min(bucket.burst, bucket.tokens + elapsed * bucket.qps);
    bucket.last = now;
  }
  bucket.tokens -= 1;
  // The token exists once the deficit has flowed in, counted from `last`.
  const auto ready =
      bucket.last +
      std::chrono::nanoseconds(std::llround(std::max(-bucket.tokens, 0.0) / bucket.qps * 1e9));
  return std::max(std::chrono::nanoseconds{0},
                  std::chrono::duration_cast<std::chrono::nanoseconds>(ready - now));
}

rate_limiter::rate_limiter(rate_limit limit, clock now, sleeper sleep)
    : limit_(limit), now_(now ? std::move(now) : clock(&std::chrono::steady_clock::now)),
      sleep_(sleep ? std::move(sleep)
                   : sleeper([](std::chrono::nanoseconds d) { std::this_thread::sleep_for(d); })),
      bucket_(full_bucket(limit, now_())) {}

std::chrono::nanoseconds rate_limiter::wait() {
  std::chrono::nanoseconds delay{0};
  {
    // The clock is read under the lock, so takes see time in order.
    std::lock_guard<std::mutex> lock(mutex_);
    delay = take_token(bucket_, now_());
    ++taken_;
    waited_ += delay;
  }
  if (delay.count() > 0)
    sleep_(delay);
  if (observer_)
    observer_(delay);
  return delay;
}

std::uint64_t rate_limiter::taken() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return taken_;
}

std::chrono::nanoseconds rate_limiter::waited() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return waited_;
}

} // namespace gpu_partitioner::kube
