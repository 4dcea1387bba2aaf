// The soak: one large rollout (SOAK_NODES, default 1,000 nodes) with a fault injected every
// few seconds (SOAK_FAULT_EVERY, default 5 s) until it completes, the operator's resident
// memory sampled every second. Not part of CI: built into //tests/faults:faults_test but
// disabled, it runs only when named (tools/soak: --run_test=soak); the README reports it.
//
// The faults: the API server frozen for 3 s; gpu-sim (DCM, the device plugin, kubelet)
// frozen for 3 s; DCM failing on a node about to start (the soak retries the node once it
// failed, as an admin would); a node in flight (drained) deleted and created again; at most once
// a minute a heavy one: the API server restarted, or stopped while etcd is compacted (every
// watch relists), or etcd restarted. The operator itself is
// not killed (tests/faults does that): its memory is measured across the whole rollout, in
// one process.
//
//   SOAK_NODES (1000)  SOAK_FAULT_EVERY (5)  SOAK_SEED (random)  SOAK_MINUTES (100, the bound)
//   SOAK_TIME_SCALE (0.05)
#include "tests/faults/support/fleet.hpp"

#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

using namespace gpu_partitioner;
using namespace gpu_partitioner::faults;
using namespace std::chrono_literals;
using e2e::e2e_cluster;
using e2e::eventually;
namespace utf = boost::unit_test;

#define SOAK_NOTE(what) FAULTS_PROGRESS("soak", what)

namespace {

using clock_type = std::chrono::steady_clock;

struct rss_sample {
  double t; // seconds since the plan was created
  long long kib;
  int succeeded;
};

/// Least-squares slope of kib over t, in KiB per minute.
double slope_per_minute(const std::vector<rss_sample>& s) {
  if (s.size() < 2)
    return 0;
  double mt = 0, mk = 0;
  for (const auto& x : s) {
    mt += x.t;
    mk += static_cast<double>(x.kib);
  }
  mt /= s.size();
  mk /= s.size();
  double num = 0, den = 0;
  for (const auto& x : s) {
    num += (x.t - mt) * (static_cast<double>(x.kib) - mk);
    den += (x.t - mt) * (x.t - mt);
  }
  return den > 0 ? num / den * 60 : 0;
}

/// A merge patch that may fail while the control plane is being faulted; true if it took.
bool try_patch(e2e_cluster& c, const kube::resource& r, const std::string& name,
               const std::string& patch) {
  return c.api.patch(r, "", name, kube::patch_type::merge, patch).ok();
}

/// Waits (up to 60 s) until the API server answers.
void await_api(e2e_cluster& c) {
  eventually([&] { return c.api.get(kube::resources::namespaces(), "", c.ns).ok(); }, 60s, 250ms);
}

long long median_kib(std::vector<rss_sample> s) {
  if (s.empty())
    return 0;
  std::sort(s.begin(), s.end(), [](const auto& a, const auto& b) { return a.kib < b.kib; });
  return s[s.size() / 2].kib;
}

} // namespace

// Disabled: runs only when named (--run_test=soak), as tools/soak does.
BOOST_AUTO_TEST_SUITE(soak, *utf::disabled())

BOOST_AUTO_TEST_CASE(a_large_rollout_under_constant_faults_completes_with_no_stranded_node,
                     *utf::timeout(3 * 3600)) {
  const auto t0 = clock_type::now();
  const int n = static_cast<int>(std::max(4LL, env_number("SOAK_NODES", 1000)));
  const int every = static_cast<int>(std::max(1LL, env_number("SOAK_FAULT_EVERY", 5)));
  const auto minutes = std::chrono::minutes(std::max(5LL, env_number("SOAK_MINUTES", 100)));
  const auto seed = static_cast<std::uint64_t>(
      env_number("SOAK_SEED", static_cast<long long>(std::random_device{}() & 0x7fffffff)));
  const char* scale = std::getenv("SOAK_TIME_SCALE");
  std::mt19937_64 rng(seed);
  SOAK_NOTE(n << " nodes, a fault every ~" << every << " s, seed " << seed << ", bound "
              << minutes.count() << " min");

  e2e_cluster c;
  fleet_options o;
  o.nodes = n;
  o.max_parallel = std::max(2, n / 20);
  o.max_unavailable = o.max_parallel;
  o.time_scale = scale != nullptr && *scale ? scale : "0.05";
  fleet f(c, o);
  SOAK_NOTE("fleet ready in " << seconds_text(e2e::seconds_since(t0)) << " s: " << n << " nodes, "
                              << f.budgets.size() * o.replicas << " GPU pods under "
                              << f.budgets.size() << " PDBs");
  const auto addresses = fresh_path("operator-addresses");
  c.start_operator_with({"--log-level", "info", "--metrics-addr", "127.0.0.1:0", "--health-addr",
                         "127.0.0.1:0", "--bound-addresses-file", addresses});
  const pid_t pid = c.operator_process().pid();
  const auto running = [&] { return c.operator_process().alive(); };
  const int port = bound_port(addresses, "metrics", 60s, running);
  const int health_port = bound_port(addresses, "health", 60s, running);
  BOOST_REQUIRE_MESSAGE(port != 0 && health_port != 0,
                        "the operator reported no metrics or health port\n"
                            << c.operator_log());
  BOOST_REQUIRE_MESSAGE(
      eventually([&] { return http_get(health_port, "/readyz").find("ok") != std::string::npos; },
                 120s, 500ms),
      "the operator never became ready");
  const long long rss_idle = rss_kib(pid);
  fleet_invariants inv(f);
  e2e::sampler s(c, {c.id + "-soak"}, inv.fn(), true, 1000ms);
  const auto rollout_start = clock_type::now();
  f.create_plan("soak");

  // Memory, every second, in its own thread.
  std::vector<rss_sample> rss;
  std::mutex rss_mutex;
  std::atomic<int> succeeded_now{0};
  std::atomic<bool> done{false};
  std::thread memory([&] {
    while (!done) {
      const long long kib = rss_kib(pid);
      if (kib > 0) {
        std::lock_guard<std::mutex> lock(rss_mutex);
        rss.push_back({e2e::seconds_since(rollout_start), kib, succeeded_now.load()});
      }
      std::this_thread::sleep_for(1s);
    }
  });

  // Faults until the plan completes.
  std::map<std::string, int> injected;
  std::set<std::string> dcm_faulted;
  std::vector<std::string> all = f.training;
  all.insert(all.end(), f.inference.begin(), f.inference.end());
  // Light faults every few seconds; a heavy one (the API server restarted, or stopped for
  // a compaction, or etcd restarted) at most once a minute: after each, the scheduler and
  // controllers back off for a while, and a rollout hit by nothing else would not move.
  std::uniform_int_distribution<int> pick(0, 7);
  auto last_heavy = clock_type::now() - std::chrono::minutes(1);
  std::uniform_int_distribution<int> gap_ms(every * 500, every * 1500);
  bool completed = false;
  int deleted_nodes = 0;
  while (!completed && clock_type::now() - t0 < minutes) {
    const auto items = c.plan_items(f.plan);
    std::vector<std::string> pending, drained;
    int succeeded = 0;
    for (const auto& i : items) {
      const auto p = i.phase_or_pending();
      succeeded += p == "Succeeded";
      if (p == "Pending")
        pending.push_back(i.node);
      // In flight, past its drain: no workload left to lose with the node (deleting a node
      // that still runs pods is an involuntary disruption no PDB protects against).
      if (p == "Applying" || p == "WaitingOperator" || p == "Verifying")
        drained.push_back(i.node);
      // A node that failed from the injected DCM failure: fix it and retry, as an admin would.
      if (p == "Failed" && dcm_faulted.count(i.node) &&
          try_patch(c, kube::resources::nodes(), i.node,
                    R"({"metadata":{"labels":{")" + std::string(e2e::fault_label) +
                        R"(":null}}})") &&
          try_patch(c, e2e::items, i.name,
                    R"({"metadata":{"annotations":{"infrastructure.silogen.ai/retry":"soak"}}})")) {
        dcm_faulted.erase(i.node);
        ++injected["retried after the DCM failure"];
      }
    }
    succeeded_now = succeeded;
    completed = !items.empty() && succeeded == n && c.plan_phase(f.plan) == "Completed";
    if (completed)
      break;
    std::string what;
    int fault = pick(rng);
    if (fault <= 3 && fault != 1 && clock_type::now() - last_heavy < std::chrono::minutes(1))
      fault = 4 + fault % 2; // a light one instead: gpu-sim frozen, or DCM failing on a node
    if (fault == 0 || fault == 2 || fault == 3)
      last_heavy = clock_type::now();
    switch (fault) {
    case 0:
      what = "API server restarted";
      cluster_request("restart kube-apiserver");
      break;
    case 1:
      what = "API server frozen 3 s";
      cluster_request("freeze kube-apiserver 3");
      break;
    case 2:
      what = "etcd compacted, API server down meanwhile";
      cluster_request("stop kube-apiserver");
      cluster_request("compact");
      cluster_request("start kube-apiserver");
      break;
    case 3:
      what = "etcd restarted";
      cluster_request("restart etcd");
      break;
    case 4:
      what = "gpu-sim frozen 3 s";
      c.simulator().signal(SIGSTOP);
      std::this_thread::sleep_for(3s);
      c.simulator().signal(SIGCONT);
      break;
    case 5:
    case 6:
      if (!pending.empty()) {
        what = "DCM failing on a node";
        const auto& node =
            pending[std::uniform_int_distribution<std::size_t>(0, pending.size() - 1)(rng)];
        if (try_patch(c, kube::resources::nodes(), node,
                      R"({"metadata":{"labels":{")" + std::string(e2e::fault_label) +
                          R"(":"dcm-failure"}}})"))
          dcm_faulted.insert(node);
      }
      break;
    case 7:
      if (!drained.empty()) {
        what = "a node in flight (drained) deleted and created again";
        const auto node =
            drained[std::uniform_int_distribution<std::size_t>(0, drained.size() - 1)(rng)];
        await_api(c);
        (void)c.api.remove(kube::resources::nodes(), "", node);
        eventually([&] { return !c.get(kube::resources::nodes(), node); }, 20s, 200ms);
        e2e::node_spec spec;
        spec.pool = std::count(f.training.begin(), f.training.end(), node) ? "training-gpu"
                                                                           : "inference-gpu";
        await_api(c);
        c.add_nodes({{node.substr(c.id.size() + 1), spec}});
        ++deleted_nodes;
      }
      break;
    }
    await_api(c);
    if (!what.empty()) {
      ++injected[what];
      SOAK_NOTE(seconds_text(e2e::seconds_since(rollout_start))
                << " s: " << what << " (" << succeeded << "/" << n << " succeeded, RSS "
                << rss_kib(pid) / 1024 << " MiB)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms(rng)));
  }
  const double rollout_s = e2e::seconds_since(rollout_start);
  done = true;
  memory.join();
  expect_no_violations(s, "soak");
  E2E_REQUIRE(completed, "the rollout did not complete within "
                             << minutes.count() << " min: " << c.describe(f.plan).substr(0, 4000));
  BOOST_TEST(c.operator_process().alive());
  BOOST_TEST(c.operator_process().pid() == pid);
  const int checked = expect_fleet_partitioned(f);
  BOOST_TEST(checked == n);
  expect_none_stranded(f);

  // Memory: flat once the caches hold the cluster. The first 10% of the rollout is the
  // warm-up; the median of the last third must stay within 20% (and 16 MiB) of the
  // median of the first third of the rest.
  std::vector<rss_sample> steady;
  for (const auto& x : rss)
    if (x.t >= rollout_s * 0.1)
      steady.push_back(x);
  const std::size_t third = steady.size() / 3;
  const std::vector<rss_sample> first(steady.begin(), steady.begin() + third);
  const std::vector<rss_sample> last(steady.end() - third, steady.end());
  const long long first_kib = median_kib(first), last_kib = median_kib(last);
  long long peak = 0;
  for (const auto& x : rss)
    peak = std::max(peak, x.kib);
  const double slope = slope_per_minute(steady);
  BOOST_TEST(third > 0u);
  BOOST_TEST(last_kib <= first_kib + std::max(first_kib / 5, 16LL * 1024),
             "RSS grew from " << first_kib / 1024 << " MiB to " << last_kib / 1024 << " MiB");

  // The series, for the README's figure.
  const char* outputs = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR");
  const std::string csv = std::string(outputs != nullptr ? outputs : "/tmp") + "/soak-rss.csv";
  {
    std::ofstream out(csv);
    out << "seconds,rss_kib,succeeded\n";
    for (const auto& x : rss)
      out << x.t << "," << x.kib << "," << x.succeeded << "\n";
  }
  std::string faults_text;
  int total = 0;
  for (const auto& [what, count] : injected) {
    faults_text += "\n    " + std::to_string(count) + " x " + what;
    if (what != "retried after the DCM failure")
      total += count;
  }
  const std::string metrics = http_get(port, "/metrics");
  SOAK_NOTE(
      "done: " << n << " nodes in " << seconds_text(rollout_s) << " s with " << total << " faults ("
               << deleted_nodes << " nodes deleted and re-created):" << faults_text
               << "\n  operator pid " << pid << " throughout; RSS idle " << rss_idle / 1024
               << " MiB, first third " << first_kib / 1024 << " MiB, last third " << last_kib / 1024
               << " MiB, peak " << peak / 1024 << " MiB, slope " << static_cast<long long>(slope)
               << " KiB/min over " << steady.size() << " samples (" << csv << ")"
               << "\n  watch relists "
               << metric_sum(metrics, "gpu_partitioner_watch_restarts_total", {{"kind", "relist"}})
               << ", reconnects "
               << metric_sum(metrics, "gpu_partitioner_watch_restarts_total",
                             {{"kind", "reconnect"}})
               << "; peak in flight " << *inv.peak_in_flight << "/" << o.max_parallel
               << ", peak unavailable " << *inv.peak_unavailable << "/" << o.max_unavailable
               << ", lowest PDB headroom " << *inv.lowest_headroom << ", " << s.samples()
               << " samples; " << seconds_text(e2e::seconds_since(t0)) << " s in all");
}

BOOST_AUTO_TEST_SUITE_END()
