// Slow clients ("slow loris": connections that open and never finish their request
// head) against the real endpoint over real sockets: on the metrics address they cannot
// delay the probes on the health address, and on either address the server closes them
// once they exceed the request timeout, so the address answers again.
#include "metrics/server.hpp"
#include "tests/support/loopback.hpp"

#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace gpu_partitioner::metrics;
using gpu_partitioner::test_support::http_get;
using gpu_partitioner::test_support::port_of;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr int slow_count = 50;

/// `count` connections to 127.0.0.1:port that never complete a request head: a third
/// send nothing, a third half a request line, a third a request line and then one more
/// header byte every 200 ms. A thread of its own notes each one the server closes.
class slow_clients {
public:
  slow_clients(int port, int count) : started_(clock_type::now()) {
    for (int i = 0; i < count; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      BOOST_REQUIRE(fd >= 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<std::uint16_t>(port));
      BOOST_REQUIRE_MESSAGE(::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0,
                            "slow client " << i << " cannot connect: errno " << errno);
      const kind k = static_cast<kind>(i % 3);
      const std::string start = k == kind::silent         ? ""
                                : k == kind::half_request ? "GET /metr"
                                                          : "GET /metrics HTTP/1.1\r\nX-Slow: ";
      if (!start.empty())
        BOOST_REQUIRE(::send(fd, start.data(), start.size(), MSG_NOSIGNAL) ==
                      static_cast<ssize_t>(start.size()));
      clients_.push_back({fd, k});
    }
    watcher_ = std::thread([this] { watch(); });
  }
  ~slow_clients() {
    stop_ = true;
    watcher_.join();
    for (const auto& c : clients_)
      if (c.fd >= 0)
        ::close(c.fd);
  }
  slow_clients(const slow_clients&) = delete;
  slow_clients& operator=(const slow_clients&) = delete;

  /// The connections the server has not closed yet.
  int open() const {
    std::lock_guard<std::mutex> lock(m_);
    return open_locked();
  }
  /// Waits until the server has closed every connection; false after `bound`.
  bool await_all_closed(clock_type::duration bound) const {
    while (clock_type::now() - started_ < bound) {
      if (open() == 0)
        return true;
      std::this_thread::sleep_for(50ms);
    }
    return open() == 0;
  }
  /// Seconds from the connects to the server closing the last one.
  double seconds_to_last_close() const {
    std::lock_guard<std::mutex> lock(m_);
    return std::chrono::duration<double>(last_close_ - started_).count();
  }

private:
  enum class kind { silent, half_request, trickle };
  struct client {
    int fd = -1;
    kind how = kind::silent;
    bool closed = false;
  };

  int open_locked() const {
    int n = 0;
    for (const auto& c : clients_)
      n += c.closed ? 0 : 1;
    return n;
  }

  // Reads whatever the server sends (civetweb answers a timed-out request head with an
  // error page); end of stream or an error is the server's close.
  static bool closed_by_server(int fd) {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0)
        continue;
      return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    }
  }

  void watch() {
    auto next_byte = clock_type::now();
    while (!stop_) {
      std::vector<pollfd> fds;
      {
        std::lock_guard<std::mutex> lock(m_);
        for (const auto& c : clients_)
          if (!c.closed)
            fds.push_back({c.fd, POLLIN | POLLRDHUP, 0});
      }
      if (fds.empty()) {
        std::this_thread::sleep_for(50ms);
        continue;
      }
      ::poll(fds.data(), fds.size(), 50);
      const bool trickle = clock_type::now() >= next_byte;
      if (trickle)
        next_byte += 200ms;
      std::lock_guard<std::mutex> lock(m_);
      for (auto& c : clients_) {
        if (c.closed)
          continue;
        bool gone = closed_by_server(c.fd);
        if (!gone && trickle && c.how == kind::trickle)
          gone = ::send(c.fd, "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN &&
                 errno != EWOULDBLOCK;
        if (gone) {
          c.closed = true;
          last_close_ = clock_type::now();
        }
      }
    }
  }

  const clock_type::time_point started_;
  std::vector<client> clients_;
  mutable std::mutex m_;
  clock_type::time_point last_close_{};
  std::atomic<bool> stop_{false};
  std::thread watcher_;
};

/// How long the server takes at most to close `count` slow connections: each holds one
/// of the listener's workers for up to its request timeout, the rest wait their turn.
/// The margin is for a loaded machine; the point is that the closing happens at all.
clock_type::duration close_bound(const listener_limits& limits, int count) {
  const int waves = (count + limits.threads - 1) / limits.threads;
  return waves * limits.request_timeout + 15s;
}

double seconds(clock_type::duration d) {
  return std::chrono::duration<double>(d).count();
}

// A listener on a port the kernel chooses: the port it reports.
int listen_anywhere(server& http, routes what, const listener_limits& limits) {
  const auto started = http.start("127.0.0.1:0", what, limits);
  BOOST_REQUIRE_MESSAGE(started.error.empty(), started.error);
  const int port = port_of(started.address);
  BOOST_REQUIRE_MESSAGE(port != 0, "no port in " << started.address);
  return port;
}

struct endpoint {
  registry metrics;
  server http{metrics, [] { return std::string("caches not synced yet"); }};
  int metrics_port = 0;
  int health_port = 0;

  endpoint(const listener_limits& metrics_limits, const listener_limits& health_limits) {
    metrics_port = listen_anywhere(http, routes::metrics_and_probes, metrics_limits);
    health_port = listen_anywhere(http, routes::probes, health_limits);
    metrics.counter("gp_probe_test_total", "A series to serve.", {}).add({}, 1);
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(slow_clients_suite)

BOOST_AUTO_TEST_CASE(healthz_answers_throughout_while_slow_clients_hold_every_metrics_worker) {
  // The metrics listener's own threads, with a request timeout of 1 s instead of 5 s so
  // that its fifty slow clients are through in seconds; the probes' listener as shipped.
  const listener_limits metrics_short{metrics_limits.threads, 1000ms};
  endpoint e(metrics_short, probe_limits);
  slow_clients slow(e.metrics_port, slow_count);

  // The premise: the metrics address is stalled behind them.
  BOOST_TEST(http_get(e.metrics_port, "/metrics", 1).code == 0,
             "a GET of /metrics was answered at once behind " << slow_count << " slow clients");

  // The probes answer, each within 2 s (the chart's probe timeout), for as long as the
  // slow clients are there and at least 5 s.
  const auto start = clock_type::now();
  int answered = 0;
  int failed = 0;
  double slowest = 0;
  while (clock_type::now() - start < 5s ||
         (slow.open() > 0 && clock_type::now() - start < close_bound(metrics_short, slow_count))) {
    const auto t = clock_type::now();
    const auto r = http_get(e.health_port, answered % 2 == 0 ? "/healthz" : "/readyz", 2);
    const double took = seconds(clock_type::now() - t);
    slowest = std::max(slowest, took);
    const int want = answered % 2 == 0 ? 200 : 503;
    if (r.code == want && took < 2.0)
      ++answered;
    else if (++failed <= 5)
      BOOST_ERROR("probe " << answered + failed << " after " << seconds(t - start) << " s: HTTP "
                           << r.code << " in " << took << " s");
    std::this_thread::sleep_for(100ms);
  }
  BOOST_TEST(failed == 0);
  BOOST_TEST(answered >= 20, answered << " probes answered");
  BOOST_TEST_MESSAGE(answered << " probes answered, the slowest in " << slowest << " s, over "
                              << seconds(clock_type::now() - start) << " s");

  // The server closed every slow client, and /metrics answers again.
  BOOST_TEST(slow.await_all_closed(close_bound(metrics_short, slow_count)),
             slow.open() << " slow clients still open");
  BOOST_TEST_MESSAGE("the last slow client closed after " << slow.seconds_to_last_close() << " s");
  const auto r = http_get(e.metrics_port, "/metrics", 5);
  BOOST_TEST(r.code == 200);
  BOOST_TEST(r.body == e.metrics.expose());
}

BOOST_AUTO_TEST_CASE(healthz_answers_again_once_slow_clients_on_the_health_port_time_out) {
  // Slow clients on the health address itself hold its workers (one connection each, a
  // thread per connection) until their request timeout; probes wait behind them. The
  // listener as shipped closes all fifty and answers again.
  endpoint e(metrics_limits, probe_limits);
  slow_clients slow(e.health_port, slow_count);
  // The metrics address is not in their way.
  BOOST_TEST(http_get(e.metrics_port, "/metrics", 5).code == 200);
  BOOST_TEST(slow.await_all_closed(close_bound(probe_limits, slow_count)),
             slow.open() << " slow clients still open");
  BOOST_TEST_MESSAGE("the last slow client closed after " << slow.seconds_to_last_close() << " s");
  const auto r = http_get(e.health_port, "/healthz", 2);
  BOOST_TEST(r.code == 200);
  BOOST_TEST(r.body == "ok\n");
}

BOOST_AUTO_TEST_SUITE_END()
