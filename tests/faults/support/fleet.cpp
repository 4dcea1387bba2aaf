#include "tests/faults/support/fleet.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

namespace gpu_partitioner::faults {

using namespace std::chrono_literals;
using e2e::quoted;

namespace {

const char* qpx_json = R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"QPX",)"
                       R"("memoryPartition":"NPS1","numGPUsAssigned":8}]})";

std::string profile_spec(const e2e::e2e_cluster& c, const std::string& payload,
                         const std::string& dcm_name, long long gpus) {
  return R"({"displayName":"faults )" + dcm_name +
         R"(","targetSelector":{"matchLabels":{"gpu.vendor":"amd","gpu.family":"mi300x"}},)"
         R"("expectedResources":[{"name":"amd.com/gpu","count":)" +
         std::to_string(gpus) +
         R"(}],"verification":{"readyLabel":"amd.com/gpu.ready","timeoutSeconds":600},)"
         R"("operatorPayload":{"kind":"ConfigMap","name":)" +
         quoted(payload) + R"(,"namespace":)" + quoted(c.ns) + R"(,"profileName":)" +
         quoted(dcm_name) + "}}";
}

std::string numbered(char prefix, int i) {
  char b[16];
  std::snprintf(b, sizeof b, "%c%04d", prefix, i);
  return b;
}

} // namespace

fleet::fleet(e2e::e2e_cluster& c, fleet_options o) : cluster(c), options(std::move(o)) {
  const int n = std::max(2, options.nodes);
  std::vector<std::pair<std::string, e2e::node_spec>> specs;
  for (int i = 1; i <= n; ++i) {
    e2e::node_spec s;
    const bool is_training = i <= (n + 1) / 2;
    s.pool = is_training ? "training-gpu" : "inference-gpu";
    const std::string suffix = numbered(is_training ? 't' : 'i', i);
    specs.emplace_back(suffix, s);
    (is_training ? training : inference).push_back(c.id + "-" + suffix);
  }
  c.add_nodes(specs);
  c.start_simulator(options.time_scale);
  c.create_payload("faults-qpx-nps1", qpx_json);
  cpx_profile = c.create_profile("cpx", profile_spec(c, "dcm-profile-cpx-nps4", "cpx-nps4", 64));
  qpx_profile = c.create_profile("qpx", profile_spec(c, "faults-qpx-nps1", "qpx-nps1", 32));

  const int pods = options.pods > 0    ? options.pods
                   : options.pods == 0 ? std::max(options.replicas, n / 2)
                                       : 0;
  const int apps = (pods + options.replicas - 1) / options.replicas;
  if (apps > 0) {
    c.await_default_service_account();
    for (int a = 0; a < apps; ++a) {
      const std::string name = "work-" + std::to_string(a);
      c.create_deployment(name, options.replicas, {}, 5);
      c.create_pdb(name, name, options.replicas - 1);
      budgets[name] = options.replicas - 1;
    }
    BOOST_REQUIRE_MESSAGE(e2e::eventually(
                              [&] {
                                int healthy = 0;
                                for (const auto& p : c.pods())
                                  healthy += p.healthy();
                                return healthy == apps * options.replicas;
                              },
                              std::chrono::seconds(120 + n / 5), 500ms),
                          "the GPU workloads did not become Ready");
  }
}

void fleet::create_plan(const std::string& suffix) {
  auto entry = [&](const std::string& name, const std::string& pool, const std::string& profile) {
    return R"({"name":)" + quoted(name) + R"(,"selector":)" +
           cluster.selector({{"nodepool", pool}}) +
           R"(,"profileRef":{"kind":"PartitioningProfile","name":)" + quoted(profile) + "}}";
  };
  const std::string spec = std::string(R"({"paused":)") + (options.paused ? "true" : "false") +
                           R"(,"rollout":{"maxParallel":)" + std::to_string(options.max_parallel) +
                           R"(,"maxUnavailable":)" + std::to_string(options.max_unavailable) +
                           R"(,"drainPolicy":{"enabled":true,"timeoutSeconds":)" +
                           std::to_string(options.drain_timeout) +
                           R"(,"evictionKind":"Eviction","respectPDB":true}},)"
                           R"("verification":{"gpuReadyLabel":"amd.com/gpu.ready",)"
                           R"("requirePluginResources":["amd.com/gpu"],"timeoutSeconds":)" +
                           std::to_string(options.verification_timeout) + R"(},"partitionings":[)" +
                           entry("training", "training-gpu", cpx_profile) + "," +
                           entry("inference", "inference-gpu", qpx_profile) + "]}";
  plan = cluster.create_plan(suffix, spec);
}

std::string fleet::target_profile(const std::string& node) const {
  return std::count(training.begin(), training.end(), node) ? "cpx-nps4" : "qpx-nps1";
}

long long fleet::target_gpus(const std::string& node) const {
  return std::count(training.begin(), training.end(), node) ? 64 : 32;
}

int fleet::succeeded() {
  int n = 0;
  for (const auto& i : cluster.plan_items(plan))
    n += i.phase == "Succeeded";
  return n;
}

std::map<std::string, int> fleet::phases() {
  std::map<std::string, int> out;
  for (const auto& i : cluster.plan_items(plan))
    ++out[i.phase_or_pending()];
  return out;
}

// -- invariants --

fleet_invariants::fleet_invariants(const fleet& f)
    : max_parallel(f.options.max_parallel), max_unavailable(f.options.max_unavailable),
      budgets(f.budgets) {}

e2e::sampler::check_fn fleet_invariants::fn() const {
  return [*this](const e2e::sample& s, std::vector<std::string>& v) {
    int flying = 0;
    for (const auto& i : s.items)
      flying += i.in_flight();
    int down = 0;
    std::string which;
    for (const auto& n : s.nodes)
      if (n.unavailable()) {
        ++down;
        if (down <= 8)
          which += " " + n.name;
      }
    if (flying > *peak_in_flight)
      *peak_in_flight = flying;
    if (down > *peak_unavailable)
      *peak_unavailable = down;
    if (flying > max_parallel)
      v.push_back(std::to_string(flying) + " items in flight > maxParallel " +
                  std::to_string(max_parallel));
    if (down > max_unavailable)
      v.push_back(std::to_string(down) + " nodes unavailable > maxUnavailable " +
                  std::to_string(max_unavailable) + ":" + which);
    if (budgets.empty())
      return;
    std::map<std::string, int> healthy;
    std::map<std::string, std::string> seen; // app -> each pod as the sample saw it
    for (const auto& p : s.pods)
      if (auto app = p.labels.find("app"); app != p.labels.end()) {
        if (p.healthy())
          ++healthy[app->second];
        seen[app->second] += " " + p.name + "@" + (p.node.empty() ? "-" : p.node) + "=" +
                             (p.deleting ? "deleting"
                              : p.ready  ? "ready"
                                         : "unready");
      }
    for (const auto& [app, min] : budgets) {
      const int headroom = healthy[app] - min;
      if (headroom < *lowest_headroom)
        *lowest_headroom = headroom;
      // The pods as sampled, so that a failure says which one was down and why.
      if (headroom < 0)
        v.push_back("PDB " + app + " violated: " + std::to_string(healthy[app]) +
                    " healthy pods, minAvailable " + std::to_string(min) + ";" + seen[app]);
    }
  };
}

void expect_no_violations(e2e::sampler& s, const std::string& what) {
  const auto found = s.stop();
  BOOST_TEST(s.samples() > 0, what << ": the sampler never got a sample");
  std::string all;
  for (const auto& v : found)
    all += "\n  " + v;
  BOOST_TEST(found.empty(), what << ": the sampler saw:" << all);
}

// -- final state --

int expect_fleet_partitioned(fleet& f) {
  std::map<std::string, e2e::item_view> items;
  for (const auto& i : f.cluster.plan_items(f.plan))
    items[i.node] = i;
  int checked = 0;
  for (const auto& n : f.cluster.test_nodes()) {
    BOOST_TEST_CONTEXT("node " << n.name) {
      auto item = items.find(n.name);
      BOOST_TEST_REQUIRE((item != items.end()));
      BOOST_TEST(item->second.phase == "Succeeded",
                 item->second.phase << " " << item->second.last_error);
      BOOST_TEST(!n.unschedulable);
      BOOST_TEST(!n.dcm_taint);
      BOOST_TEST(n.label(e2e::profile_label) == f.target_profile(n.name));
      BOOST_TEST(n.label(e2e::state_label) == "success");
      BOOST_TEST(n.label(e2e::ready_label) == "true");
      BOOST_TEST(n.gpus == f.target_gpus(n.name));
      BOOST_TEST(!n.has_annotation(e2e::was_unschedulable));
    }
    ++checked;
  }
  return checked;
}

void expect_none_stranded(fleet& f) {
  std::map<std::string, std::string> phase;
  for (const auto& i : f.cluster.plan_items(f.plan))
    phase[i.node] = i.phase_or_pending();
  for (const auto& n : f.cluster.test_nodes())
    if (phase[n.name] != "Failed")
      BOOST_TEST(!n.unavailable(), "node " << n.name << " is left "
                                           << (n.unschedulable ? "cordoned " : "")
                                           << (n.dcm_taint ? "tainted " : "")
                                           << "while its item is " << phase[n.name]);
}

void expect_each_change_once(const node_history& h, const std::vector<std::string>& nodes) {
  // The plan's phase may be read before the node watch delivers the last node's untaint
  // and uncordon, made a moment earlier: wait for every node to be back in service there.
  (void)e2e::eventually(
      [&] {
        const auto now = h.states();
        return std::all_of(nodes.begin(), nodes.end(), [&](const std::string& n) {
          auto it = now.find(n);
          return it != now.end() && !it->second.empty() && !it->second.back().cordoned &&
                 !it->second.back().tainted;
        });
      },
      std::chrono::seconds(15));
  const auto all = h.states();
  for (const auto& n : nodes) {
    auto it = all.find(n);
    BOOST_TEST_CONTEXT("node " << n) {
      BOOST_TEST_REQUIRE((it != all.end()), "the watch never saw it");
      const auto c = count_changes(it->second);
      BOOST_TEST(c.cordons == 1);
      BOOST_TEST(c.uncordons == 1);
      BOOST_TEST(c.taints == 1);
      BOOST_TEST(c.untaints == 1);
      BOOST_TEST(c.relabels == 1);
    }
  }
}

void expect_each_phase_once(fleet& f) {
  for (const auto& i : f.cluster.plan_items(f.plan))
    for (const char* p : {"Draining", "Applying", "WaitingOperator", "Verifying", "Succeeded"}) {
      const auto times = std::count(i.phases.begin(), i.phases.end(), p);
      BOOST_TEST(times == 1, "item " << i.name << " entered " << p << " " << times << " times");
    }
}

std::map<std::string, int> expect_each_eviction_once(const std::vector<audit_event>& events,
                                                     const std::string& ns) {
  std::map<std::string, int> evicted;
  for (const auto& e : events)
    if (e.resource == "pods" && e.subresource == "eviction" && e.verb == "create" && e.ns == ns &&
        e.succeeded() && e.user_agent.rfind("gpu-partitioner/", 0) == 0 &&
        e.user_agent.find('(') != std::string::npos)
      ++evicted[e.name];
  for (const auto& [pod, times] : evicted)
    BOOST_TEST(times == 1, "pod " << ns << "/" << pod << " was evicted " << times << " times");
  return evicted;
}

std::string operator_identity(const std::string& log_text) {
  const std::string mark = " starting as ";
  const auto at = log_text.find(mark);
  if (at == std::string::npos)
    return {};
  const auto from = at + mark.size();
  const auto end = log_text.find(' ', from);
  return log_text.substr(from, end == std::string::npos ? std::string::npos : end - from);
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++n;
  return n;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

} // namespace gpu_partitioner::faults
