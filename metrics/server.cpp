#include "metrics/server.hpp"

#include <civetweb.h>

#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace gpu_partitioner::metrics {

namespace {

void reply(mg_connection* conn, int code, const char* reason, const char* type,
           const std::string& body) {
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
            code, reason, type, body.size());
  mg_write(conn, body.data(), body.size());
}

int on_metrics(mg_connection* conn, void* data) {
  auto* s = static_cast<server*>(data);
  reply(conn, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", s->metrics().expose());
  return 200;
}

int on_healthz(mg_connection* conn, void*) {
  reply(conn, 200, "OK", "text/plain", "ok\n");
  return 200;
}

int on_readyz(mg_connection* conn, void* data) {
  auto* s = static_cast<server*>(data);
  const std::string why = s->not_ready_reason();
  if (why.empty()) {
    reply(conn, 200, "OK", "text/plain", "ok\n");
    return 200;
  }
  reply(conn, 503, "Service Unavailable", "text/plain", why + "\n");
  return 503;
}

// Where `ctx`, started on `asked`, listens: the host as asked (civetweb listens on every
// IPv4 address for a bare port) and the port it bound, which differs for port 0.
std::string bound_address(const mg_context* ctx, const std::string& asked) {
  mg_server_port port{};
  if (mg_get_server_ports(ctx, 1, &port) != 1)
    return asked;
  const auto colon = asked.rfind(':');
  const std::string host = colon == std::string::npos ? "0.0.0.0" : asked.substr(0, colon);
  return host + ":" + std::to_string(port.port);
}

} // namespace

server::server(registry& metrics, std::function<std::string()> not_ready_reason)
    : metrics_(metrics), not_ready_(std::move(not_ready_reason)) {}

server::~server() {
  stop();
}

listener_start server::start(const std::string& address, routes what) {
  return start(address, what, what == routes::probes ? probe_limits : metrics_limits);
}

listener_start server::start(const std::string& address, routes what,
                             const listener_limits& limits) {
  // request_timeout_ms bounds both the read of a request head (from the moment a worker
  // takes the connection) and each wait to send; keep-alive stays off, so a worker is
  // free again as soon as its answer is written.
  const std::pair<const char*, std::string> settings[] = {
      {"listening_ports", address},
      {"num_threads", std::to_string(limits.threads)},
      {"request_timeout_ms", std::to_string(limits.request_timeout.count())},
      {"enable_keep_alive", "no"},
  };
  std::vector<const char*> options;
  for (const auto& [name, value] : settings) {
    options.push_back(name);
    options.push_back(value.c_str());
  }
  options.push_back(nullptr);
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof callbacks);
  mg_init_library(0);
  mg_context* ctx = mg_start(&callbacks, this, options.data());
  if (ctx == nullptr)
    return {{}, "cannot listen on " + address + " (in use, or not HOST:PORT)"};
  // Exact paths ("$"): civetweb matches a handler's URI as a prefix, which would answer
  // /metricsfoo or /readyz/x too.
  if (what == routes::metrics_and_probes)
    mg_set_request_handler(ctx, "/metrics$", on_metrics, this);
  mg_set_request_handler(ctx, "/healthz$", on_healthz, this);
  mg_set_request_handler(ctx, "/readyz$", on_readyz, this);
  contexts_.push_back(ctx);
  return {bound_address(ctx, address), {}};
}

void server::stop() {
  // mg_stop returns once its listener's thread wakes from its poll, up to two seconds
  // later: the listeners stop side by side, so that stopping takes that long only once.
  std::vector<std::thread> stopping;
  for (void* ctx : contexts_)
    stopping.emplace_back([ctx] { mg_stop(static_cast<mg_context*>(ctx)); });
  for (auto& t : stopping)
    t.join();
  contexts_.clear();
}

} // namespace gpu_partitioner::metrics
