// The client-side rate limiter against a real kube-apiserver (tools/cluster): clients on
// several threads that share one limiter together take at least (N - burst) / qps for N
// requests, and a watch, once open, takes no token for the events it streams.
#include "kube/rate_limiter.hpp"
#include "tests/integration/support/cluster.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace gpu_partitioner;
using namespace gpu_partitioner::testing;

namespace {

std::string config_map(const std::string& ns, const std::string& name) {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
         R"(","namespace":")" + ns + R"("},"data":{"k":"v"}})";
}

} // namespace

BOOST_AUTO_TEST_SUITE(rate_limiter_against_the_api_server)

BOOST_AUTO_TEST_CASE(clients_sharing_a_limiter_take_at_least_n_minus_burst_over_qps) {
  constexpr double qps = 20;
  constexpr int burst = 5, threads = 3, each = 15, n = threads * each;
  auto config = cluster::admin();
  config.limiter = std::make_shared<kube::rate_limiter>(kube::rate_limit{qps, burst});

  std::mutex m;
  std::vector<int> codes;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      // One connection per thread, each a copy of the configuration: one shared bucket.
      connection conn(config);
      conn.http.set_observer([&](const kube::request_record& r) {
        std::lock_guard<std::mutex> lock(m);
        codes.push_back(r.code);
      });
      for (int i = 0; i < each; ++i)
        (void)conn.api.get(kube::resources::namespaces(), "", "default");
    });
  for (auto& t : pool)
    t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // Every request was answered, each through the limiter once.
  BOOST_TEST(codes.size() == static_cast<std::size_t>(n));
  BOOST_TEST(std::count(codes.begin(), codes.end(), 200) == n);
  BOOST_TEST(config.limiter->taken() == static_cast<std::uint64_t>(n));
  // Burst at once, the other 40 one every 1/qps: at least 2 s in all.
  const double bound = (n - burst) / qps;
  BOOST_TEST(elapsed >= bound, elapsed << " s for " << n << " requests; at least " << bound);
  BOOST_TEST(std::chrono::duration<double>(config.limiter->waited()).count() >= bound);
}

BOOST_AUTO_TEST_CASE(an_open_watch_takes_no_token_for_its_events) {
  scratch_namespace ns("rate-it");
  constexpr int objects = 12;
  auto config = cluster::admin();
  // So slow that a token per event would show: one token, then one a minute.
  config.limiter = std::make_shared<kube::rate_limiter>(kube::rate_limit{1.0 / 60, 1});

  std::atomic<bool> stop{false};
  std::atomic<int> added{0};
  std::thread watch([&] {
    connection conn(config);
    kube::http_request req;
    req.path = "/api/v1/namespaces/" + ns.name + "/configmaps?watch=1&allowWatchBookmarks=false";
    req.timeout = std::chrono::milliseconds(0);
    std::string pending;
    (void)conn.http.stream(
        req,
        [&](std::string_view chunk) {
          pending.append(chunk);
          for (auto end = pending.find('\n'); end != std::string::npos; end = pending.find('\n')) {
            if (pending.compare(0, 15, R"({"type":"ADDED")") == 0)
              ++added;
            pending.erase(0, end + 1);
          }
          return !stop.load();
        },
        stop, std::chrono::seconds(60));
  });
  // Objects made before the watch reaches the server come to it as ADDED all the same
  // (a watch from no resourceVersion starts with what exists).
  BOOST_REQUIRE(eventually([&] { return config.limiter->taken() == 1; }));
  for (int i = 0; i < objects; ++i) {
    auto made = ns.conn.api.create(kube::resources::config_maps(), ns.name,
                                   config_map(ns.name, "cm-" + std::to_string(i)));
    BOOST_REQUIRE_MESSAGE(made.ok(), (made.ok() ? "" : made.error().describe()));
  }
  const bool all = eventually([&] { return added.load() >= objects; });
  stop = true;
  watch.join();
  BOOST_TEST(all, added.load() << " of " << objects << " ADDED events");
  // One token, for the opening; the events came without any.
  BOOST_TEST(config.limiter->taken() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
