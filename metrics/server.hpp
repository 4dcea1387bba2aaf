#pragma once

#include "metrics/registry.hpp"

#include <functional>
#include <string>

namespace gpu_partitioner::metrics {

/// The operator's HTTP endpoint (civetweb, from Debian): /metrics (the registry in the
/// text format 0.0.4), /healthz (the process answers), /readyz (caches synced and
/// leadership known; 503 with the reason otherwise).
class server {
public:
  server(registry& metrics, std::function<std::string()> not_ready_reason);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Listens on "HOST:PORT" (or "PORT"); the error in words otherwise.
  std::string start(const std::string& address);
  void stop();

  registry& metrics() { return metrics_; }
  std::string not_ready_reason() const { return not_ready_(); }

private:
  registry& metrics_;
  std::function<std::string()> not_ready_;
  void* context_ = nullptr;
};

} // namespace gpu_partitioner::metrics
