// The operator's HTTP endpoint: /metrics in the text format, /healthz, and /readyz's 503
// with the reason until the operator is ready, over real sockets; the health address
// answers the probes and nothing else.
#include "metrics/server.hpp"
#include "tests/support/loopback.hpp"

#include <boost/test/unit_test.hpp>

#include <memory>
#include <mutex>
#include <string>

using namespace gpu_partitioner::metrics;

namespace {

using gpu_partitioner::test_support::another_free_port;
using gpu_partitioner::test_support::free_port;

// One GET, which must be answered.
gpu_partitioner::test_support::http_response get(int port, const std::string& path) {
  auto r = gpu_partitioner::test_support::http_get(port, path);
  BOOST_REQUIRE_MESSAGE(r.code != 0, "no HTTP answer for " << path);
  return r;
}

struct fixture {
  registry metrics;
  std::mutex m;
  std::string reason = "caches not synced yet";
  std::unique_ptr<server> http;
  int port = free_port();
  int health_port = another_free_port(port);
  fixture() {
    http = std::make_unique<server>(metrics, [this] {
      std::lock_guard<std::mutex> lock(m);
      return reason;
    });
    const std::string error =
        http->start("127.0.0.1:" + std::to_string(port), routes::metrics_and_probes);
    BOOST_REQUIRE_MESSAGE(error.empty(), error);
    const std::string health_error =
        http->start("127.0.0.1:" + std::to_string(health_port), routes::probes);
    BOOST_REQUIRE_MESSAGE(health_error.empty(), health_error);
  }
  void set_reason(const std::string& r) {
    std::lock_guard<std::mutex> lock(m);
    reason = r;
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(endpoint, fixture)

BOOST_AUTO_TEST_CASE(readyz_answers_503_with_the_reason_until_ready_then_200) {
  // On the health address, and on the metrics address for probes that still point there.
  for (const int p : {health_port, port}) {
    BOOST_TEST_CONTEXT("port " << (p == port ? "metrics" : "health")) {
      set_reason("caches not synced yet");
      auto r = get(p, "/readyz");
      BOOST_TEST(r.code == 503);
      BOOST_TEST(r.body == "caches not synced yet\n");
      set_reason("leadership not known yet");
      r = get(p, "/readyz");
      BOOST_TEST(r.code == 503);
      BOOST_TEST(r.body == "leadership not known yet\n");
      set_reason("");
      r = get(p, "/readyz");
      BOOST_TEST(r.code == 200);
      BOOST_TEST(r.body == "ok\n");
      // Readiness can be lost again (a watch that stops syncing).
      set_reason("caches not synced yet");
      BOOST_TEST(get(p, "/readyz").code == 503);
    }
  }
}

BOOST_AUTO_TEST_CASE(healthz_answers_while_not_ready) {
  for (const int p : {health_port, port}) {
    const auto r = get(p, "/healthz");
    BOOST_TEST(r.code == 200);
    BOOST_TEST(r.body == "ok\n");
  }
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

BOOST_AUTO_TEST_CASE(the_health_address_serves_the_probes_and_nothing_else) {
  BOOST_TEST(get(health_port, "/metrics").code == 404);
  BOOST_TEST(get(health_port, "/").code == 404);
  BOOST_TEST(get(health_port, "/healthzz").code == 404);
  BOOST_TEST(get(health_port, "/readyz/anything").code == 404);
}

BOOST_AUTO_TEST_CASE(a_port_in_use_is_an_error_naming_the_address) {
  server second(metrics, [] { return std::string(); });
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const std::string error = second.start(address, routes::probes);
  BOOST_TEST(error.find(address) != std::string::npos, error);
}

BOOST_AUTO_TEST_SUITE_END()
