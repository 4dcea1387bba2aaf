#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>

namespace gpu_partitioner::kube {

/// A client-side limit on requests to the API server, as client-go's rest.Config QPS and
/// Burst: on average at most `qps` requests a second, and at most `burst` at once after a
/// quiet spell. `qps` 0 is no limit.
struct rate_limit {
  double qps = 0;
  int burst = 1;
};

/// The limit of the Events' own bucket beside one of `all`: a fifth of it (10 a second,
/// bursts of 20, beside the default 50 and 100). A rollout makes about ten Events a node,
/// most as a wave starts and ends; a fifth keeps them near their moment at the default
/// pace of a wave while the API server's load grows by at most that fifth.
rate_limit events_share(rate_limit all);

/// What a request is for, which decides who gets the next token when several wait: the
/// most urgent lane first, and within a lane the order they asked. A node's step waits
/// on its request, a user on a status or an Event; so a wave's untaints never queue behind
/// a burst of status flushes, and a plan's thousand item creates never ahead of a cordon.
enum class request_lane : std::uint8_t {
  /// A node's return to service: its untaint and uncordon, and the statuses that record
  /// it on its way back (Verifying, Succeeded, Failed). They go before the next nodes'
  /// cordons and evictions: capacity comes back before more is taken, and a node's end
  /// frees the token the next start waits for.
  restore,
  /// A node's critical path otherwise: its cordon, evictions, taint, DCM's label, the
  /// status a worker persists before it changes the node, and the lists and watches the
  /// operator reacts through.
  rollout,
  /// The supervisors' writes of NodePartitionings and DeviceClasses.
  items,
  /// Coalesced statuses of items and plans.
  status,
  /// Events.
  events,
};
inline constexpr std::size_t request_lane_count = 5;
inline constexpr std::array<request_lane, request_lane_count> request_lanes{
    request_lane::restore, request_lane::rollout, request_lane::items, request_lane::status,
    request_lane::events};

std::string_view to_string(request_lane lane);

/// A token bucket: `qps` tokens a second flow in, up to `burst`; each request takes one.
/// Kept as GCRA (virtual scheduling) keeps it, in time rather than tokens: `tat` is when
/// the bucket would be empty again, and a request may go once `tat` is no more than
/// (burst - 1) / qps ahead. Times are nanoseconds after `origin`, in doubles, so that an
/// interval that is no whole number of nanoseconds (1/3 s) adds up without drift.
struct token_bucket {
  double qps = 0;
  /// At least 1 (a bucket that holds no token would let nothing through).
  double burst = 1;
  std::chrono::steady_clock::time_point origin{};
  double tat = 0;
  /// The latest time a caller gave (a clock read out of order counts as this).
  double last = 0;
};

/// A bucket that starts full at `now`: the first `burst` requests go at once.
token_bucket full_bucket(const rate_limit& limit, std::chrono::steady_clock::time_point now);

/// Takes a token if one is there at `now`, and returns nothing; or takes none and returns
/// the instant the next token exists (rounded up to a nanosecond, so that one is there
/// then). A `now` earlier than the latest call (two threads that read the clock in one
/// order and called in the other) counts as the latest. No limit (`qps` 0): always a token.
std::optional<std::chrono::steady_clock::time_point>
take_or_next(token_bucket& bucket, std::chrono::steady_clock::time_point now);

/// The requests waiting for a token, in the order they are served: the oldest of the most
/// urgent lane that has any goes first.
class lane_queue {
public:
  using ticket = std::uint64_t;

  /// A new waiter at the back of `lane`.
  ticket join(request_lane lane);
  /// Whose turn it is; nothing when nobody waits.
  std::optional<ticket> first() const;
  /// Removes the waiter whose turn it is (first()), and returns its lane.
  request_lane pop_first();
  /// Removes a waiter that stops waiting before its turn (one that ran out of patience).
  void leave(ticket t);
  std::size_t waiting(request_lane lane) const;
  bool empty() const;

private:
  std::array<std::deque<ticket>, request_lane_count> lanes_;
  ticket next_ = 0;
};

/// The token bucket that every API client of a process shares (connection_config::limiter):
/// each request, each retry of one and each watch's opening takes a token, and the thread
/// that sends it sleeps until the token is its own: when several wait, the most urgent
/// lane's oldest gets each token as it comes (lane_queue). A watch already open is not
/// limited: its events are the server's to send. Thread-safe.
///
/// The wait is a sleep on the caller's thread, so callers must be threads of their own,
/// never a thread pool's that others share (an actor scheduler's): a wait there would stall
/// everything queued behind it.
class rate_limiter {
public:
  using clock = std::function<std::chrono::steady_clock::time_point()>;
  using sleeper = std::function<void(std::chrono::nanoseconds)>;
  using observer = std::function<void(request_lane, std::chrono::nanoseconds)>;
  using depth_observer = std::function<void(request_lane, std::size_t)>;

  /// `now` and `sleep` are for tests (an injected clock); they default to steady_clock and
  /// std::this_thread::sleep_for.
  explicit rate_limiter(rate_limit limit, clock now = {}, sleeper sleep = {});

  /// Waits in `lane` until a token is this request's, and returns the time waited (zero
  /// when a token was there and nobody waited ahead). The observer, if any, hears every
  /// wait, zero ones included.
  std::chrono::nanoseconds wait(request_lane lane = request_lane::rollout);

  /// As wait(), but gives up when the token cannot be this request's within `patience`
  /// (nothing, then: no token is taken, and the waiter leaves the queue). A low lane's
  /// request on a thread that also serves urgent work waits this way, so the urgent work
  /// that arrives meanwhile is not held up behind a lane that may starve for seconds.
  std::optional<std::chrono::nanoseconds> wait_for(request_lane lane,
                                                   std::chrono::nanoseconds patience);

  /// Hears each wait's lane and length (for a metric). Set it before the limiter is shared.
  void set_observer(observer o) { observer_ = std::move(o); }
  /// Hears a lane's count of waiters each time it changes (for a gauge). Set it before the
  /// limiter is shared.
  void set_depth_observer(depth_observer o) { depth_observer_ = std::move(o); }

  const rate_limit& limit() const { return limit_; }

  /// Tokens taken so far, the total of the waits, and the waits given up.
  std::uint64_t taken() const;
  std::chrono::nanoseconds waited() const;
  std::uint64_t given_up() const;
  /// Requests waiting in `lane` now.
  std::size_t waiting(request_lane lane) const;

private:
  std::optional<std::chrono::nanoseconds>
  acquire(request_lane lane, std::optional<std::chrono::steady_clock::time_point> deadline);

  rate_limit limit_;
  clock now_;
  sleeper sleep_;
  observer observer_;
  depth_observer depth_observer_;
  mutable std::mutex mutex_;
  std::condition_variable turn_changed_;
  token_bucket bucket_;
  lane_queue queue_;
  std::uint64_t taken_ = 0;
  std::chrono::nanoseconds waited_{0};
  std::uint64_t given_up_ = 0;
};

} // namespace gpu_partitioner::kube
