#pragma once

#include "metrics/registry.hpp"

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace gpu_partitioner::metrics {

/// What one listener answers.
enum class routes {
  /// /metrics, plus /healthz and /readyz: probes that point at the metrics port keep
  /// working, though clients of /metrics can delay them there.
  metrics_and_probes,
  /// /healthz and /readyz only: the kubelet's probes, on threads no client of /metrics
  /// can hold.
  probes,
};

/// How long one listener's clients may hold it. A connection holds a worker thread from
/// the moment a worker takes it until it closes; one that has not sent its whole request
/// head within `request_timeout` of being taken, or that accepts no part of the answer
/// for that long, is closed. Connections beyond `threads` wait, in order, for a worker.
struct listener_limits {
  int threads = 4;
  std::chrono::milliseconds request_timeout{5000};
};

/// /metrics: Prometheus sends its request at once and reads the answer within its scrape
/// timeout (10 s by default); four workers serve a Prometheus pair and a person.
inline constexpr listener_limits metrics_limits{4, std::chrono::milliseconds{5000}};
/// Probes: the kubelet sends its request as it connects and reads two lines back, so a
/// second is ample; kept short so that connections which send nothing pass through the
/// workers well within the liveness probe's failure window.
inline constexpr listener_limits probe_limits{4, std::chrono::milliseconds{1000}};

/// What start() did: the address the new listener listens on, "HOST:PORT" with the port the
/// kernel chose when the one asked for was 0 ("127.0.0.1:0" gives "127.0.0.1:41873"; a
/// bare "PORT" gives "0.0.0.0:PORT"); or, when it could not listen, why.
struct listener_start {
  std::string address;
  std::string error;
};

/// The operator's HTTP endpoints (civetweb, from Debian): /metrics (the registry in the
/// text format 0.0.4), /healthz (the process answers), /readyz (caches synced and
/// leadership known; 503 with the reason otherwise). Each listener has its own threads.
class server {
public:
  server(registry& metrics, std::function<std::string()> not_ready_reason);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Listens on "HOST:PORT" (or "PORT"; port 0 for one the kernel chooses) with the limits
  /// for `what`. Each call adds a listener.
  listener_start start(const std::string& address, routes what);
  listener_start start(const std::string& address, routes what, const listener_limits& limits);
  /// Closes every listener, waiting for the requests being served.
  void stop();

  registry& metrics() { return metrics_; }
  std::string not_ready_reason() const { return not_ready_(); }

private:
  registry& metrics_;
  std::function<std::string()> not_ready_;
  std::vector<void*> contexts_;
};

} // namespace gpu_partitioner::metrics
