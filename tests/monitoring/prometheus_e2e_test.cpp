// A real Prometheus (Debian's, from PATH) scrapes the real operator every second through a
// real rollout on simulated nodes (tests/e2e/support: gpu-sim and the operator binary on
// the local control plane). One plan completes, moving pods by eviction; another fails
// its node on a drain that a PodDisruptionBudget never allows. Then: the scrape passes
// `promtool check metrics`; every PromQL expression of the dashboard and of the rule file
// evaluates through Prometheus's HTTP API, and the dashboard's show the rollout; the rules
// Prometheus loaded are healthy and the ones that should fire (and only those) do; a
// restarted operator shows its finished plan again; a stopped one raises the down alert.
//
// Prometheus gets its own temporary directory and a port it binds itself (port 0; its log
// names the port), as the operator does (--bound-addresses-file); the test stops it and
// removes the directory.
#include "tests/e2e/support/e2e.hpp"
#include "tests/monitoring/support/expressions.hpp"
#include "tests/support/loopback.hpp"

#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

using namespace gpu_partitioner;
using namespace gpu_partitioner::e2e;
using namespace gpu_partitioner::monitoring;
using namespace std::chrono_literals;
namespace utf = boost::unit_test;
namespace fs = std::filesystem;

#define MONITORING_NOTE(what)                                                                      \
  do {                                                                                             \
    std::ostringstream note_;                                                                      \
    note_ << what;                                                                                 \
    std::cerr << "monitoring: " << note_.str() << std::endl;                                       \
  } while (false)

namespace {

// -- plain HTTP on the loopback --

using gpu_partitioner::test_support::bound_port;
using gpu_partitioner::test_support::fresh_path;
using gpu_partitioner::test_support::http_get;
using gpu_partitioner::test_support::port_of;

std::string url_encode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

/// An executable on PATH (the tests' PATH is restricted; Debian installs to /usr/bin).
std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0)
      return dir + "/" + name;
  BOOST_FAIL(name << " is not on PATH (" << (path != nullptr ? path : "") << "): tools/setup "
                  << "installs Debian's prometheus package");
  return {};
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string outputs_dir() {
  const char* dir = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR");
  return dir != nullptr ? dir : "/tmp";
}

// -- Prometheus --

/// A Prometheus server of the test's own: a temporary directory for its configuration
/// and data, a port on 127.0.0.1 it binds itself (it logs which), one scrape job for the
/// operator every second, the rule file evaluated every second. Stopped and removed at
/// the end.
class prometheus_server {
public:
  prometheus_server(int operator_port, const std::string& rules) : rules_(rules) {
    const char* tmp = std::getenv("TEST_TMPDIR");
    std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/prometheus-XXXXXX";
    BOOST_REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    dir_ = pattern;
    write_config(operator_port);
    const std::string log = outputs_dir() + "/prometheus.log";
    const auto log_before = fs::exists(log) ? fs::file_size(log) : 0;
    started_at = unix_now();
    process_ = std::make_unique<child_process>(
        std::vector<std::string>{on_path("prometheus"), "--config.file=" + dir_ + "/prometheus.yml",
                                 "--storage.tsdb.path=" + dir_ + "/data",
                                 "--web.listen-address=127.0.0.1:0"},
        log);
    // Its web server's log line, once it listens: msg="Listening on" address=HOST:PORT.
    BOOST_REQUIRE_MESSAGE(eventually(
                              [&] {
                                port = listening_port(log, log_before);
                                return port != 0 || !process_->alive();
                              },
                              30s, 50ms) &&
                              port != 0,
                          "Prometheus reported no port:\n"
                              << process_->tail());
    BOOST_REQUIRE_MESSAGE(
        eventually([&] { return http_get(port, "/-/ready").code == 200; }, 30s, 100ms),
        "Prometheus did not become ready:\n"
            << process_->tail());
  }

  /// Scrapes the operator on `operator_port` from now on, instead of where it did.
  void retarget(int operator_port) {
    write_config(operator_port);
    BOOST_REQUIRE(::kill(process_->pid(), SIGHUP) == 0);
  }

  ~prometheus_server() {
    if (process_)
      process_->stop();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  prometheus_server(const prometheus_server&) = delete;
  prometheus_server& operator=(const prometheus_server&) = delete;

  /// GET /api/v1/...: the answer's JSON; `error` holds why if it is not a success.
  rapidjson::Document api(const std::string& target, std::string& error) {
    const auto r = http_get(port, target);
    rapidjson::Document d;
    d.Parse(r.body.c_str());
    if (r.code != 200 || d.HasParseError() || !d.IsObject() || !d.HasMember("status") ||
        std::string(d["status"].GetString()) != "success")
      error = "HTTP " + std::to_string(r.code) + ": " + r.body.substr(0, 400);
    else
      error.clear();
    return d;
  }

  /// An instant query at `time` (now if 0): the result vector, failing the test on error.
  rapidjson::Document query(const std::string& expr, double time = 0) {
    std::string error;
    auto d = api("/api/v1/query?query=" + url_encode(expr) +
                     (time > 0 ? "&time=" + std::to_string(time) : std::string{}),
                 error);
    BOOST_TEST(error.empty(), expr << ": " << error);
    return d;
  }

  /// The values of an instant query's result, "" if it has none.
  std::vector<double> values(const std::string& expr) {
    auto d = query(expr);
    std::vector<double> out;
    if (d.HasMember("data") && d["data"]["result"].IsArray())
      for (const auto& s : d["data"]["result"].GetArray())
        out.push_back(std::strtod(s["value"][1].GetString(), nullptr));
    return out;
  }

  /// The single value of an instant query, NaN if it has none or several.
  double value(const std::string& expr) {
    const auto v = values(expr);
    return v.size() == 1 ? v[0] : std::nan("");
  }

  std::string log() const { return process_->tail(40); }

  int port = 0;
  double started_at = 0;

private:
  void write_config(int operator_port) {
    std::ofstream config(dir_ + "/prometheus.yml", std::ios::trunc);
    config << "global:\n"
              "  scrape_interval: 1s\n"
              "  scrape_timeout: 1s\n"
              "  evaluation_interval: 1s\n"
              "rule_files:\n"
              "  - "
           << fs::absolute(rules_).string()
           << "\n"
              "scrape_configs:\n"
              "  - job_name: gpu-partitioner\n"
              "    static_configs:\n"
              "      - targets: [\"127.0.0.1:"
           << operator_port << "\"]\n";
  }

  /// The port of the first "Listening on" line of `log` past its first `from` bytes; 0
  /// while there is none.
  static int listening_port(const std::string& log, std::uintmax_t from) {
    std::ifstream in(log);
    in.seekg(static_cast<std::streamoff>(from));
    const std::string key = "address=";
    for (std::string line; std::getline(in, line);) {
      if (line.find("msg=\"Listening on\"") == std::string::npos)
        continue;
      const auto at = line.find(key);
      if (at == std::string::npos)
        continue;
      const auto start = at + key.size();
      return port_of(line.substr(start, line.find(' ', start) - start));
    }
    return 0;
  }

  std::string rules_;
  std::string dir_;
  std::unique_ptr<child_process> process_;
};

std::size_t result_size(const rapidjson::Document& d) {
  if (!d.IsObject() || !d.HasMember("data") || !d["data"].HasMember("result") ||
      !d["data"]["result"].IsArray())
    return 0;
  return d["data"]["result"].Size();
}

std::string label_of(const rapidjson::Value& series, const char* label) {
  const auto& m = series["metric"];
  return m.HasMember(label) ? m[label].GetString() : "";
}

// -- the cluster's objects --

std::string profile_spec(const e2e_cluster& c) {
  return R"({"displayName":"monitoring cpx-nps4",)"
         R"("targetSelector":{"matchLabels":{"gpu.vendor":"amd","gpu.family":"mi300x"}},)"
         R"("expectedResources":[{"name":"amd.com/gpu","count":64}],)"
         R"("verification":{"readyLabel":"amd.com/gpu.ready","timeoutSeconds":60},)"
         R"("operatorPayload":{"kind":"ConfigMap","name":"dcm-profile-cpx-nps4",)"
         R"("namespace":)" +
         quoted(c.ns) + R"(,"profileName":"cpx-nps4"}})";
}

std::string plan_spec(const std::string& selector, const std::string& profile, int drain_timeout) {
  return R"({"paused":false,"dryRun":false,"rollout":{"maxParallel":1,"maxUnavailable":1,)"
         R"("drainPolicy":{"enabled":true,"timeoutSeconds":)" +
         std::to_string(drain_timeout) +
         R"(,"evictionKind":"Eviction","respectPDB":true}},)"
         R"("verification":{"gpuReadyLabel":"amd.com/gpu.ready",)"
         R"("requirePluginResources":["amd.com/gpu"],"timeoutSeconds":120},)"
         R"("partitionings":[{"name":"all","selector":)" +
         selector + R"(,"profileRef":{"kind":"PartitioningProfile","name":)" + quoted(profile) +
         "}}]}";
}

node_spec in_group(const std::string& group) {
  node_spec s;
  s.labels = {{"monitoring-group", group}};
  return s;
}

/// Dashboard panels whose queries may rightly be empty after a healthy run.
const std::set<std::string> may_be_empty{
    "API errors", // 5xx, 401, 403 or no answer: none, with luck
};

} // namespace

BOOST_AUTO_TEST_SUITE(prometheus_e2e)

BOOST_AUTO_TEST_CASE(prometheus_scrapes_a_rollout_and_every_dashboard_and_rule_expression_evaluates,
                     *utf::timeout(300)) {
  const auto t0 = std::chrono::steady_clock::now();
  e2e_cluster c;
  c.add_nodes({{"ok1", in_group("ok")}, {"ok2", in_group("ok")}, {"bad1", in_group("bad")}});
  c.start_simulator();
  c.await_default_service_account();
  // Pods for the drains to evict on the "ok" nodes; on the "bad" node, one whose budget
  // never allows its eviction.
  c.create_deployment("moved", 2, {{"monitoring-group", "ok"}});
  c.create_deployment("held", 1, {{"monitoring-group", "bad"}});
  c.create_pdb("held", "held", 1);
  BOOST_REQUIRE_MESSAGE(
      eventually([&] { return c.healthy_pods("moved") == 2 && c.healthy_pods("held") == 1; }, 60s,
                 200ms),
      "the Deployments' pods did not become Ready");

  // The operator binds ports the kernel chooses and reports them: a new pair each start.
  int metrics_port = 0;
  int health_port = 0;
  const auto start_operator = [&] {
    const auto addresses = fresh_path("operator-addresses");
    c.start_operator({"--kubeconfig", std::getenv("KUBECONFIG"), "--dcm-config",
                      c.ns + "/" + dcm_config_name, "--dcm-config-sync", c.dcm_config_sync(),
                      "--log-level", "debug", "--metrics-addr", "127.0.0.1:0", "--health-addr",
                      "127.0.0.1:0", "--bound-addresses-file", addresses});
    const auto running = [&] { return c.operator_process().alive(); };
    metrics_port = bound_port(addresses, "metrics", 30s, running);
    health_port = bound_port(addresses, "health", 30s, running);
    E2E_REQUIRE(metrics_port != 0 && health_port != 0,
                "the operator reported no metrics or health port\n"
                    << c.operator_log());
  };
  start_operator();
  E2E_REQUIRE(eventually([&] { return http_get(health_port, "/healthz").code == 200; }, 10s, 50ms),
              c.operator_log());
  E2E_REQUIRE(eventually(
                  [&] {
                    const auto r = http_get(health_port, "/readyz");
                    return r.code == 200 && r.body == "ok\n";
                  },
                  30s, 50ms),
              c.operator_log());

  prometheus_server prom(metrics_port, rules_path);
  BOOST_REQUIRE_MESSAGE(
      eventually([&] { return prom.value(R"(up{job="gpu-partitioner"})") == 1; }, 20s, 200ms),
      "Prometheus does not scrape the operator:\n"
          << prom.log());
  MONITORING_NOTE("Prometheus scraping after " << seconds_since(t0) << " s");

  const auto profile = c.create_profile("cpx", profile_spec(c));
  const auto ok = c.create_plan(
      "ok", plan_spec(c.selector({{"monitoring-group", "ok"}}), profile, /*drain_timeout=*/120));
  const auto bad = c.create_plan(
      "bad", plan_spec(c.selector({{"monitoring-group", "bad"}}), profile, /*drain_timeout=*/5));
  E2E_REQUIRE(c.await_plan_phase(ok, "Completed", 120s), c.describe(ok));
  E2E_REQUIRE(c.await_items(bad, 1, "Failed", 60s), c.describe(bad));
  MONITORING_NOTE("rollouts done after " << seconds_since(t0) << " s");

  // Prometheus has seen the end of both.
  const std::string ok_sel = "{plan=" + quoted(ok) + "}";
  const std::string bad_sel = "{plan=" + quoted(bad) + "}";
  BOOST_REQUIRE_MESSAGE(eventually(
                            [&] {
                              return prom.value("gpu_partitioner_plan_progress_ratio" + ok_sel) ==
                                         1 &&
                                     prom.value(R"(gpu_partitioner_nodes{plan=)" + quoted(bad) +
                                                R"(,phase="Failed"})") == 1;
                            },
                            20s, 250ms),
                        "Prometheus did not see the plans finish:\n"
                            << prom.log());

  // -- a real scrape passes promtool check metrics --
  const auto scrape = http_get(metrics_port, "/metrics");
  BOOST_REQUIRE_EQUAL(scrape.code, 200);
  const std::string scrape_file = outputs_dir() + "/metrics.txt";
  std::ofstream(scrape_file) << scrape.body;
  const std::string lint_file = outputs_dir() + "/promtool-check-metrics.txt";
  const int lint = std::system(
      (on_path("promtool") + " check metrics < " + scrape_file + " > " + lint_file + " 2>&1")
          .c_str());
  BOOST_TEST((WIFEXITED(lint) && WEXITSTATUS(lint) == 0),
             "promtool check metrics: " << read_text(lint_file));
  BOOST_TEST(scrape.body.find("gpu_partitioner_phase_duration_seconds_bucket{phase=\"Draining\","
                              "le=\"+Inf\"} ") != std::string::npos);

  // -- what Prometheus recorded of the rollout --
  BOOST_TEST(prom.value("gpu_partitioner_plan_progress_ratio" + bad_sel) == 0);
  BOOST_TEST(prom.value(R"(gpu_partitioner_plan_phase{plan=)" + quoted(ok) +
                        R"(,phase="Completed"})") == 1);
  BOOST_TEST(prom.value(R"(gpu_partitioner_plan_phase{plan=)" + quoted(bad) +
                        R"(,phase="Degraded"})") == 1);
  BOOST_TEST(prom.value(R"(gpu_partitioner_phase_transitions_total{plan=)" + quoted(ok) +
                        R"(,phase="Succeeded"})") == 2);
  // ok1 and ok2 left Draining for Applying, bad1 for Failed.
  BOOST_TEST(prom.value(R"(gpu_partitioner_phase_duration_seconds_count{phase="Draining"})") >= 3);
  // Both "moved" pods sat on nodes that were drained.
  BOOST_TEST(prom.value(R"(gpu_partitioner_evictions_total{result="evicted"})") >= 2);
  // The held pod's budget never allowed a disruption: it was never asked (no pdb_blocked
  // eviction), and the gauge showed it held.
  const std::string range = std::to_string(static_cast<long>(unix_now() - prom.started_at) + 60);
  BOOST_TEST(prom.value("max_over_time(gpu_partitioner_drain_blocked_pods" + bad_sel + "[" + range +
                        "s])") >= 1);
  BOOST_TEST(prom.value("gpu_partitioner_drain_blocked_pods" + bad_sel) == 0);
  BOOST_TEST(prom.value("gpu_partitioner_leader") == 1);

  // -- every expression of the dashboard and the rules evaluates --
  const double end = unix_now();
  const std::map<std::string, std::string> grafana{
      {"__rate_interval", "10s"}, {"__interval", "1s"}, {"__range", range + "s"}, {"plan", ".*"}};
  const auto dashboard = dashboard_expressions(read_dashboard());
  BOOST_REQUIRE(!dashboard.empty());
  for (const auto& e : dashboard) {
    const auto expr = substitute(e.expr, grafana);
    BOOST_TEST_CONTEXT(e.where << ": " << expr) {
      BOOST_TEST(expr.find('$') == std::string::npos, "a variable left");
      std::string error;
      const auto d =
          e.instant
              ? prom.api("/api/v1/query?query=" + url_encode(expr) + "&time=" + std::to_string(end),
                         error)
              : prom.api("/api/v1/query_range?query=" + url_encode(expr) +
                             "&start=" + std::to_string(prom.started_at) +
                             "&end=" + std::to_string(end) + "&step=1",
                         error);
      BOOST_TEST(error.empty(), error);
      if (!may_be_empty.count(e.panel))
        BOOST_TEST(result_size(d) > 0u, "no data");
    }
  }

  // Alert expressions that hold now, with the plans they name ("" for none); plans of
  // other tests, if any were left behind, do not count.
  const auto rules = rule_expressions(read_rules());
  std::map<std::string, std::set<std::string>> active;
  for (const auto& e : rules) {
    BOOST_TEST_CONTEXT(e.where) {
      const auto d = prom.query(e.expr, end);
      if (result_size(d) > 0)
        for (const auto& s : d["data"]["result"].GetArray())
          if (const auto plan = label_of(s, "plan"); plan.empty() || plan == ok || plan == bad)
            active[e.rule].insert(plan);
    }
  }
  for (const auto& [rule, plans] : active)
    MONITORING_NOTE("holds now: " << rule << " (" << plans.size() << ")");
  // One completed plan and one failed node: of the rollout's and the operator's alerts,
  // only the failed node's holds. (Load-dependent ones, API latency say, are not judged.)
  const std::map<std::string, std::set<std::string>> expected{{"GpuPartitionerNodeFailed", {bad}}};
  for (const char* rule :
       {"GpuPartitionerRolloutStalled", "GpuPartitionerNodeFailed", "GpuPartitionerDrainBlocked",
        "GpuPartitionerPlanDegraded", "GpuPartitionerDown", "GpuPartitionerNoLeader",
        "GpuPartitionerMultipleLeaders", "GpuPartitionerEvictionErrors"}) {
    const auto want = expected.count(rule) ? expected.at(rule) : std::set<std::string>{};
    const auto have = active.count(rule) ? active.at(rule) : std::set<std::string>{};
    BOOST_TEST(have == want,
               rule << " holds for " << have.size() << " plan(s), expected " << want.size());
  }

  // The rules Prometheus loaded evaluate without error, and the failed node's alert is
  // pending or firing.
  {
    std::string error;
    const auto d = prom.api("/api/v1/rules", error);
    BOOST_REQUIRE_MESSAGE(error.empty(), error);
    std::size_t loaded = 0;
    for (const auto& g : d["data"]["groups"].GetArray())
      for (const auto& r : g["rules"].GetArray()) {
        ++loaded;
        BOOST_TEST(std::string(r["health"].GetString()) == "ok",
                   r["name"].GetString()
                       << ": " << (r.HasMember("lastError") ? r["lastError"].GetString() : ""));
      }
    BOOST_TEST(loaded == rules.size());
  }
  auto alert_state = [&](const std::string& name, const std::string& plan) {
    std::string error;
    const auto d = prom.api("/api/v1/alerts", error);
    if (!error.empty())
      return std::string{};
    for (const auto& a : d["data"]["alerts"].GetArray())
      if (std::string(a["labels"]["alertname"].GetString()) == name &&
          (plan.empty() ||
           (a["labels"].HasMember("plan") && plan == a["labels"]["plan"].GetString())))
        return std::string(a["state"].GetString());
    return std::string{};
  };
  BOOST_TEST(eventually([&] { return !alert_state("GpuPartitionerNodeFailed", bad).empty(); }, 10s,
                        200ms));

  // -- a restarted operator shows its finished plan again --
  c.operator_process().stop();
  start_operator();
  BOOST_TEST(eventually(
                 [&] {
                   const auto body = http_get(metrics_port, "/metrics").body;
                   return body.find("gpu_partitioner_plan_progress_ratio{plan=" + quoted(ok) +
                                    "} 1\n") != std::string::npos &&
                          body.find("gpu_partitioner_plan_phase{plan=" + quoted(ok) +
                                    ",phase=\"Completed\"} 1\n") != std::string::npos;
                 },
                 30s, 200ms),
             "after a restart, /metrics lacks plan " << ok << ":\n"
                                                     << http_get(metrics_port, "/metrics").body);

  // -- an operator that is gone raises GpuPartitionerDown --
  // Prometheus scrapes the restarted operator, on its new port, until the alert the
  // restart's gap raised is gone; then that operator stops.
  prom.retarget(metrics_port);
  const std::string scraped =
      R"(up{job="gpu-partitioner",instance="127.0.0.1:)" + std::to_string(metrics_port) + R"("})";
  BOOST_REQUIRE_MESSAGE(
      eventually(
          [&] { return prom.value(scraped) == 1 && alert_state("GpuPartitionerDown", "").empty(); },
          30s, 250ms),
      "Prometheus does not scrape the restarted operator:\n"
          << prom.log());
  c.operator_process().stop();
  BOOST_TEST(eventually([&] { return !alert_state("GpuPartitionerDown", "").empty(); }, 20s, 250ms),
             prom.log());
  MONITORING_NOTE("done after " << seconds_since(t0) << " s; " << dashboard.size()
                                << " dashboard and " << rules.size() << " rule expressions");
}

BOOST_AUTO_TEST_SUITE_END()
