#pragma once

// Plain HTTP on the loopback, for tests that talk to the operator's (or Prometheus')
// endpoint: the port a server bound itself, and one GET.
//
// A server under test is given port 0 and reports the port the kernel chose: a port
// picked by the test and closed before the server binds it can be taken in between.
#include <chrono>
#include <functional>
#include <string>

namespace gpu_partitioner::test_support {

/// The port of "HOST:PORT"; 0 when there is none.
int port_of(const std::string& address);

/// A path under $TEST_TMPDIR (else /tmp), in a new directory of its own, where no file is
/// yet: for a file a process the test starts will write (the operator's
/// --bound-addresses-file). `name` is the file's name.
std::string fresh_path(const std::string& name);

/// The port the operator's --bound-addresses-file `file` reports for `listener`
/// ("metrics" or "health"), once the file appears; 0 when it has not appeared within
/// `timeout`, names no such listener, or `running` (if given) turns false first.
int bound_port(const std::string& file, const std::string& listener,
               std::chrono::milliseconds timeout = std::chrono::seconds(30),
               const std::function<bool()>& running = {});

struct http_response {
  int code = 0; // 0: no answer
  std::string head;
  std::string body;
};

/// One HTTP/1.0 GET to 127.0.0.1:port; the server closes the connection after the body.
/// Gives up after `timeout_seconds` without progress.
http_response http_get(int port, const std::string& target, int timeout_seconds = 10);

} // namespace gpu_partitioner::test_support
