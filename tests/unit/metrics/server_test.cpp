// The operator's HTTP endpoint: /metrics in the text format, /healthz, and /readyz's 503
// with the reason until the operator is ready, over real sockets; the health address
// answers the probes and nothing else; port 0 binds a port the kernel chooses, reported.
#include "metrics/server.hpp"
#include "tests/support/loopback.hpp"

#include <boost/test/unit_test.hpp>

#include <memory>
#include <mutex>
#include <string>

using namespace gpu_partitioner::metrics;

namespace {

using gpu_partitioner::test_support::port_of;

// One GET, which must be answered.
gpu_partitioner::test_support::http_response get(int port, const std::string& path) {
  auto r = gpu_partitioner::test_support::http_get(port, path);
  BOOST_REQUIRE_MESSAGE(r.code != 0, "no HTTP answer for " << path);
  return r;
}

// A listener on a port the kernel chooses: the port it reports.
int listen_anywhere(server& http, routes what) {
  const auto started = http.start("127.0.0.1:0", what);
  BOOST_REQUIRE_MESSAGE(started.error.empty(), started.error);
  const int port = port_of(started.address);
  BOOST_REQUIRE_MESSAGE(port != 0, "no port in " << started.address);
  return port;
}

struct fixture {
  registry metrics;
  std::mutex m;
  std::string reason = "caches not synced yet";
  std::unique_ptr<server> http;
  int port = 0;
  int health_port = 0;
  fixture() {
    http = std::make_unique<server>(metrics, [this] {
      std::lock_guard<std::mutex> lock(m);
      return reason;
    });
    port = listen_anywhere(*http, routes::metrics_and_probes);
    health_port = listen_anywhere(*http, routes::probes);
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

BOOST_AUTO_TEST_CASE(port_0_listens_on_a_port_the_kernel_chose_and_reports_it) {
  server more(metrics, [] { return std::string(); });
  const auto first = more.start("127.0.0.1:0", routes::probes);
  const auto second = more.start("127.0.0.1:0", routes::metrics_and_probes);
  BOOST_REQUIRE(first.error.empty());
  BOOST_REQUIRE(second.error.empty());
  // The host as asked, the port as bound: a distinct one each.
  BOOST_TEST(first.address.rfind("127.0.0.1:", 0) == 0u, first.address);
  BOOST_TEST(port_of(first.address) != 0, first.address);
  BOOST_TEST(port_of(second.address) != 0, second.address);
  BOOST_TEST(port_of(first.address) != port_of(second.address));
  // The reported ports are the ones that answer, each with its own routes.
  BOOST_TEST(get(port_of(first.address), "/healthz").code == 200);
  BOOST_TEST(get(port_of(first.address), "/metrics").code == 404);
  BOOST_TEST(get(port_of(second.address), "/metrics").code == 200);
}

BOOST_AUTO_TEST_CASE(a_port_in_use_is_an_error_naming_the_address) {
  server second(metrics, [] { return std::string(); });
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const auto started = second.start(address, routes::probes);
  BOOST_TEST(started.error.find(address) != std::string::npos, started.error);
  BOOST_TEST(started.address.empty());
}

BOOST_AUTO_TEST_SUITE_END()
