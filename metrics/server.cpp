#include "metrics/server.hpp"

#include <civetweb.h>

#include <cstring>

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

} // namespace

server::server(registry& metrics, std::function<std::string()> not_ready_reason)
    : metrics_(metrics), not_ready_(std::move(not_ready_reason)) {}

server::~server() {
  stop();
}

std::string server::start(const std::string& address) {
  const char* options[] = {"listening_ports", address.c_str(), "num_threads", "2", nullptr};
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof callbacks);
  mg_init_library(0);
  mg_context* ctx = mg_start(&callbacks, this, options);
  if (ctx == nullptr)
    return "cannot listen on " + address + " (in use, or not HOST:PORT)";
  // Exact paths ("$"): civetweb matches a handler's URI as a prefix, which would answer
  // /metricsfoo or /readyz/x too.
  mg_set_request_handler(ctx, "/metrics$", on_metrics, this);
  mg_set_request_handler(ctx, "/healthz$", on_healthz, this);
  mg_set_request_handler(ctx, "/readyz$", on_readyz, this);
  context_ = ctx;
  return {};
}

void server::stop() {
  if (context_ != nullptr) {
    mg_stop(static_cast<mg_context*>(context_));
    context_ = nullptr;
  }
}

} // namespace gpu_partitioner::metrics
