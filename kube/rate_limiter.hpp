#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>

namespace gpu_partitioner::kube {

/// A client-side limit on requests to the API server, as client-go's rest.Config QPS and
/// Burst: on average at most `qps` requests a second, and at most `burst` at once after a
/// quiet spell. `qps` 0 is no limit.
struct rate_limit {
  double qps = 0;
  int burst = 1;
};

/// A token bucket: `qps` tokens a second flow in, up to `burst`; each request takes one.
/// A request that finds none reserves the next one to come (`tokens` goes negative), so
/// requests go in the order they asked, each as soon as its token exists, and the wait of
/// each is fixed when it asks. That is golang.org/x/time/rate's reservation (client-go's
/// limiter), and equivalent to GCRA with an emission interval of 1/qps.
struct token_bucket {
  double qps = 0;
  /// At least 1 (a bucket that holds no token would let nothing through).
  double burst = 1;
  /// As of `last`; negative when requests have reserved tokens still to come.
  double tokens = 0;
  std::chrono::steady_clock::time_point last{};
};

/// A bucket that starts full at `now`: the first `burst` requests go at once.
token_bucket full_bucket(const rate_limit& limit, std::chrono::steady_clock::time_point now);

/// Takes one token for a request made at `now` and returns how long after `now` the
/// request may go: zero when a token is there. The tokens that flowed in since the last
/// take are added first, never beyond `burst`. A `now` earlier than the last take (two
/// threads that read the clock in one order and took in the other) adds nothing and waits
/// from the later time. No limit (`qps` 0) never waits.
std::chrono::nanoseconds take_token(token_bucket& bucket,
                                    std::chrono::steady_clock::time_point now);

/// The token bucket that every API client of a process shares (connection_config::limiter):
/// each request, each retry of one and each watch's opening takes a token, and the thread
/// that sends it sleeps until the token exists. A watch already open is not limited: its
/// events are the server's to send. Thread-safe.
///
/// The wait is a sleep on the caller's thread, so callers must be threads of their own,
/// never a thread pool's that others share (an actor scheduler's): a wait there would stall
/// everything queued behind it. Each waiting thread holds one reservation, so a wait lasts
/// at most (threads that send) / qps.
class rate_limiter {
public:
  using clock = std::function<std::chrono::steady_clock::time_point()>;
  using sleeper = std::function<void(std::chrono::nanoseconds)>;
  using observer = std::function<void(std::chrono::nanoseconds)>;

  /// `now` and `sleep` are for tests (an injected clock); they default to steady_clock and
  /// std::this_thread::sleep_for.
  explicit rate_limiter(rate_limit limit, clock now = {}, sleeper sleep = {});

  /// Takes a token and sleeps until it exists; returns the time waited (zero when a token
  /// was there). The observer, if any, hears every wait, zero ones included.
  std::chrono::nanoseconds wait();

  /// Hears each wait's length (for a metric). Set it before the limiter is shared.
  void set_observer(observer o) { observer_ = std::move(o); }

  const rate_limit& limit() const { return limit_; }

  /// Tokens taken so far, and the total of the waits they imposed.
  std::uint64_t taken() const;
  std::chrono::nanoseconds waited() const;

private:
  rate_limit limit_;
  clock now_;
  sleeper sleep_;
  observer observer_;
  mutable std::mutex mutex_;
  token_bucket bucket_;
  std::uint64_t taken_ = 0;
  std::chrono::nanoseconds waited_{0};
};

} // namespace gpu_partitioner::kube
