// The operator holds what its decisions need, not the cluster: ConfigMaps and pods that
// no plan touches do not grow its memory. A tenant who can create ConfigMaps must not be
// able to run it out of memory (the chart's limit is 256 MiB). On the real local control
// plane, with the operator a child process and its resident memory read from /proc.
#include "tests/e2e/support/e2e.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>

using namespace gpu_partitioner;
using namespace gpu_partitioner::e2e;
using namespace std::chrono_literals;
namespace utf = boost::unit_test;

namespace {

constexpr int config_maps = 1000;
constexpr std::size_t config_map_bytes = 100 * 1024;
constexpr int pods = 5000;
constexpr int other_nodes = 25;
/// What the operator may grow by while all of that appears and a plan rolls out: the
/// pods' watch still carries the unrelated pods (a few hundred bytes each once decoded),
/// and a rollout fills caches of its own. The ConfigMaps alone are 100 MiB of data.
constexpr long long bound_kib = 24 * 1024;

long long rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stoll(line.substr(6));
  return -1;
}

/// The highest resident memory seen between start and stop, sampled every 200 ms.
class peak_sampler {
public:
  explicit peak_sampler(pid_t pid) : pid_(pid), thread_([this] { run(); }) {}
  ~peak_sampler() { stop(); }
  long long stop() {
    done_ = true;
    if (thread_.joinable())
      thread_.join();
    return peak_;
  }

private:
  void run() {
    while (!done_) {
      peak_ = std::max(peak_.load(), rss_kib(pid_));
      std::this_thread::sleep_for(200ms);
    }
  }
  pid_t pid_;
  std::atomic<bool> done_{false};
  std::atomic<long long> peak_{0};
  std::thread thread_;
};

std::string padding(std::size_t n) {
  std::string s(n, 'x');
  for (std::size_t i = 0; i < n; i += 61)
    s[i] = static_cast<char>('a' + i % 26);
  return s;
}

} // namespace

BOOST_AUTO_TEST_CASE(unrelated_config_maps_and_pods_do_not_grow_the_operators_memory,
                     *utf::timeout(900)) {
  e2e_cluster c;
  c.add_nodes({{"a", {}}, {"b", {}}});
  c.start_simulator();
  c.start_operator();
  c.await_default_service_account();
  const pid_t pid = c.operator_process().pid();
  // Settled: caches listed, nothing to do.
  std::this_thread::sleep_for(5s);
  std::vector<long long> idle;
  for (int i = 0; i < 5; ++i) {
    idle.push_back(rss_kib(pid));
    std::this_thread::sleep_for(500ms);
  }
  std::sort(idle.begin(), idle.end());
  const long long baseline = idle[idle.size() / 2];
  BOOST_REQUIRE(baseline > 0);
  peak_sampler peak(pid);

  // Nodes outside every plan (no e2e label: gpu-sim leaves them alone, so their pods stay
  // Pending), removed at the end.
  std::vector<std::string> others;
  struct remove_nodes {
    kube::client& api;
    std::vector<std::string>& names;
    ~remove_nodes() {
      for (const auto& n : names)
        (void)api.remove(kube::resources::nodes(), "", n);
    }
  } cleanup{c.api, others};
  for (int i = 0; i < other_nodes; ++i) {
    const std::string name = c.id + "-other-" + std::to_string(i);
    auto made = c.api.create(kube::resources::nodes(), "",
                             R"({"apiVersion":"v1","kind":"Node","metadata":{"name":)" +
                                 quoted(name) + R"(,"labels":{"pool":"cpu"}}})");
    BOOST_REQUIRE_MESSAGE(made.ok(), (made.ok() ? "" : made.error().describe()));
    others.push_back(name);
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < pods; ++i) {
    const std::string body =
        R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"unrelated-)" + std::to_string(i) +
        R"(","labels":{"app":"web","tier":"frontend","team":"checkout","release":"r)" +
        std::to_string(i % 7) + R"("}},"spec":{"nodeName":)" + quoted(others[i % other_nodes]) +
        R"(,"tolerations":[{"operator":"Exists"}],)"
        R"("containers":[{"name":"web","image":"registry.invalid/web:1"}]}})";
    auto made = c.api.create(kube::resources::pods(), c.ns, body);
    BOOST_REQUIRE_MESSAGE(made.ok(),
                          "pod " << i << ": " << (made.ok() ? "" : made.error().describe()));
  }
  const std::string data = padding(config_map_bytes);
  for (int i = 0; i < config_maps; ++i) {
    const std::string body =
        R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"unrelated-)" +
        std::to_string(i) + R"("},"data":{"blob":")" + data + R"("}})";
    auto made = c.api.create(kube::resources::config_maps(), c.ns, body);
    BOOST_REQUIRE_MESSAGE(made.ok(),
                          "ConfigMap " << i << ": " << (made.ok() ? "" : made.error().describe()));
  }
  E2E_NOTE(pods << " pods and " << config_maps << " ConfigMaps of " << config_map_bytes / 1024
                << " KiB created in "
                << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
                << " s");
  // A workload created after all of them: its pod comes last in the operator's watch of
  // pods, and the plan's drain evicts it. That eviction shows the operator has received
  // every unrelated pod before the memory is judged.
  c.create_deployment("marker", 1, {}, 1);
  E2E_REQUIRE(eventually([&] { return c.healthy_pods("marker") == 1; }, 60s, 200ms),
              "the marker's pod never ran");

  // The operator still does its work: a profile created now has its payload ConfigMap
  // (in the namespace of the thousand) watched from then on, and the plan completes.
  const auto cpx =
      c.create_sample_profile("cpx", "profile-mi300x-cpx-nps4.yaml", [](rapidjson::Document& d) {
        d["spec"]["expectedResources"][0]["count"].SetInt64(64);
      });
  const auto spx = c.create_sample_profile("spx", "profile-mi300x-spx-nps1.yaml");
  const auto plan =
      c.create_sample_plan("mem", {{"mi300x-cpx-nps4", cpx}, {"mi300x-spx-nps1", spx}});
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 120s), c.describe(plan));
  long long evicted = 0;
  for (const auto& i : c.plan_items(plan))
    if (const auto d = i.drain; !d.empty()) {
      const auto counts = parse_json(d);
      if (counts.HasMember("podsEvicted") && counts["podsEvicted"].IsInt64())
        evicted += counts["podsEvicted"].GetInt64();
    }
  E2E_REQUIRE(evicted >= 1, "the drains evicted no pod: the operator never saw the marker's, "
                            "so the unrelated pods may not have reached it either\n"
                                << c.describe(plan));
  // The last sample is taken now that the load has surely arrived.
  const long long grown = std::max(peak.stop(), rss_kib(pid)) - baseline;
  E2E_NOTE("operator RSS: " << baseline / 1024.0 << " MiB idle, grew by at most " << grown / 1024.0
                            << " MiB (bound " << bound_kib / 1024 << " MiB)");
  BOOST_TEST(grown < bound_kib, "the operator's RSS grew by " << grown << " KiB");
}
