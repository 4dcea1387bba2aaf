#pragma once

// Plain HTTP on the loopback, for tests that talk to the operator's (or Prometheus')
// endpoint: a free port, and one GET.
#include <string>

namespace gpu_partitioner::test_support {

/// A port nothing listens on now (the kernel's choice for a socket bound to port 0).
int free_port();
/// A free port other than `taken` (two calls of free_port() may give the same port).
int another_free_port(int taken);

struct http_response {
  int code = 0; // 0: no answer
  std::string head;
  std::string body;
};

/// One HTTP/1.0 GET to 127.0.0.1:port; the server closes the connection after the body.
/// Gives up after `timeout_seconds` without progress.
http_response http_get(int port, const std::string& target, int timeout_seconds = 10);

} // namespace gpu_partitioner::test_support
