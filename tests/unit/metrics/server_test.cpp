// The operator's HTTP endpoint: /metrics in the text format, /healthz, and /readyz's 503
// with the reason until the operator is ready, over a real socket.
#include "metrics/server.hpp"

#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

using namespace gpu_partitioner::metrics;

namespace {

// A port nothing listens on now (the kernel's choice for a socket bound to port 0).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  BOOST_REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  BOOST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  BOOST_REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

struct response {
  int code = 0;
  std::string head;
  std::string body;
};

// One HTTP/1.0 GET; the whole answer, split at the blank line.
response get(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  BOOST_REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  BOOST_REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  BOOST_REQUIRE(::send(fd, request.data(), request.size(), 0) ==
                static_cast<ssize_t>(request.size()));
  std::string all;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
    all.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  response r;
  const auto split = all.find("\r\n\r\n");
  BOOST_REQUIRE_MESSAGE(split != std::string::npos, "no HTTP answer: " << all);
  r.head = all.substr(0, split);
  r.body = all.substr(split + 4);
  BOOST_REQUIRE(r.head.rfind("HTTP/1.", 0) == 0);
  r.code = std::stoi(r.head.substr(r.head.find(' ') + 1, 3));
  return r;
}

struct fixture {
  registry metrics;
  std::mutex m;
  std::string reason = "caches not synced yet";
  std::unique_ptr<server> http;
  int port = free_port();
  fixture() {
    http = std::make_unique<server>(metrics, [this] {
      std::lock_guard<std::mutex> lock(m);
      return reason;
    });
    const std::string error = http->start("127.0.0.1:" + std::to_string(port));
    BOOST_REQUIRE_MESSAGE(error.empty(), error);
  }
  void set_reason(const std::string& r) {
    std::lock_guard<std::mutex> lock(m);
    reason = r;
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(endpoint, fixture)

BOOST_AUTO_TEST_CASE(readyz_answers_503_with_the_reason_until_ready_then_200) {
  auto r = get(port, "/readyz");
  BOOST_TEST(r.code == 503);
  BOOST_TEST(r.body == "caches not synced yet\n");
  set_reason("leadership not known yet");
  r = get(port, "/readyz");
  BOOST_TEST(r.code == 503);
  BOOST_TEST(r.body == "leadership not known yet\n");
  set_reason("");
  r = get(port, "/readyz");
  BOOST_TEST(r.code == 200);
  BOOST_TEST(r.body == "ok\n");
  // Readiness can be lost again (a watch that stops syncing).
  set_reason("caches not synced yet");
  BOOST_TEST(get(port, "/readyz").code == 503);
}

BOOST_AUTO_TEST_CASE(healthz_answers_while_not_ready) {
  const auto r = get(port, "/healthz");
  BOOST_TEST(r.code == 200);
  BOOST_TEST(r.body == "ok\n");
}

BOOST_AUTO_TEST_CASE(metrics_serves_the_registry_in_the_text_format) {
  metrics.counter("gp_requests_total", "Requests.", {"code"}).add({"200"}, 3);
  const auto r = get(port, "/metrics");
  BOOST_TEST(r.code == 200);
  BOOST_TEST(r.head.find("Content-Type: text/plain; version=0.0.4") != std::string::npos, r.head);
  BOOST_TEST(r.body == metrics.expose());
  BOOST_TEST(r.body.find("gp_requests_total{code=\"200\"} 3\n") != std::string::npos, r.body);
}

BOOST_AUTO_TEST_CASE(other_paths_are_not_found) {
  BOOST_TEST(get(port, "/").code == 404);
  BOOST_TEST(get(port, "/metricsx").code == 404);
  BOOST_TEST(get(port, "/readyz/anything").code == 404);
  BOOST_TEST(get(port, "/healthzz").code == 404);
}

BOOST_AUTO_TEST_CASE(a_port_in_use_is_an_error_naming_the_address) {
  server second(metrics, [] { return std::string(); });
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const std::string error = second.start(address);
  BOOST_TEST(error.find(address) != std::string::npos, error);
}

BOOST_AUTO_TEST_SUITE_END()
