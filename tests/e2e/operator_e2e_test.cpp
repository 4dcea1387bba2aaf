// The operator end to end: the gpu-partitioner binary and gpu-sim (the simulated AMD GPU
// stack and kubelet) as child processes against the real local control plane. Each case
// has its own namespace (DCM's ConfigMap, payloads, workloads), its own nodes (e2e=<id>,
// kept to themselves by an e2e=<id>:NoSchedule taint), profiles and plans, and removes
// them at the end (tests/e2e/support). gpu-sim runs at --time-scale 0.02: a memory-mode
// change takes 2.8 s, a compute change 0.2 s, the device plugin's restart 0.1 s.
//
// The operator acts on every plan in the cluster, so the target is tagged exclusive.
#include "tests/e2e/support/e2e.hpp"

#include "kube/optimistic.hpp"

#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

using namespace gpu_partitioner;
using namespace gpu_partitioner::e2e;
using namespace std::chrono_literals;
namespace utf = boost::unit_test;

namespace {

using clock_type = std::chrono::steady_clock;

node_spec training(const std::string& fault = {}) {
  node_spec s;
  s.pool = "training-gpu";
  s.fault = fault;
  return s;
}

node_spec inference() {
  node_spec s;
  s.pool = "inference-gpu";
  return s;
}

/// A profile spec over a payload ConfigMap in the test's namespace.
std::string profile_spec(const e2e_cluster& c, const std::string& payload,
                         const std::string& dcm_name, long long gpus, int timeout_seconds = 60) {
  return R"({"displayName":"e2e )" + dcm_name +
         R"(","targetSelector":{"matchLabels":{"gpu.vendor":"amd","gpu.family":"mi300x"}},)"
         R"("expectedResources":[{"name":"amd.com/gpu","count":)" +
         std::to_string(gpus) +
         R"(}],"verification":{"readyLabel":"amd.com/gpu.ready","timeoutSeconds":)" +
         std::to_string(timeout_seconds) + R"(},"operatorPayload":{"kind":"ConfigMap","name":)" +
         quoted(payload) + R"(,"namespace":)" + quoted(c.ns) + R"(,"profileName":)" +
         quoted(dcm_name) + "}}";
}

// The sample payloads, as the cluster fixture copied them into the test's namespace.
const char* cpx_payload = "dcm-profile-cpx-nps4";
const char* spx_payload = "dcm-profile-spx-nps1";
const char* cpx_nps4_json = R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX",)"
                            R"("memoryPartition":"NPS4","numGPUsAssigned":8}]})";

struct entry {
  std::string name;
  std::string selector; // JSON
  std::string profile;
};

struct plan_options {
  int max_parallel = 1;
  std::string max_unavailable = "1"; // a JSON value: 2 or "\"34%\""
  int drain_timeout = 120;
  int verification_timeout = 120;
  bool paused = false;
  bool dry_run = false;
  std::string ready_label = "amd.com/gpu.ready";
  std::vector<entry> entries;
};

std::string plan_spec(const plan_options& o) {
  std::string parts;
  for (const auto& e : o.entries)
    parts += std::string(parts.empty() ? "" : ",") + R"({"name":)" + quoted(e.name) +
             R"(,"selector":)" + e.selector +
             R"(,"profileRef":{"kind":"PartitioningProfile",)"
             R"("name":)" +
             quoted(e.profile) + "}}";
  return std::string(R"({"paused":)") + (o.paused ? "true" : "false") + R"(,"dryRun":)" +
         (o.dry_run ? "true" : "false") + R"(,"rollout":{"maxParallel":)" +
         std::to_string(o.max_parallel) + R"(,"maxUnavailable":)" + o.max_unavailable +
         R"(,"drainPolicy":{"enabled":true,"timeoutSeconds":)" + std::to_string(o.drain_timeout) +
         R"(,"evictionKind":"Eviction","respectPDB":true}},)"
         R"("verification":{"gpuReadyLabel":)" +
         quoted(o.ready_label) + R"(,"requirePluginResources":["amd.com/gpu"],"timeoutSeconds":)" +
         std::to_string(o.verification_timeout) + R"(},"partitionings":[)" + parts + "]}";
}

/// The node is back in service with `profile` in place and `gpus` partitions.
void expect_partitioned(e2e_cluster& c, const std::string& name, const std::string& profile,
                        long long gpus, bool cordoned = false) {
  const auto n = c.node(name);
  BOOST_TEST_CONTEXT("node " << name) {
    BOOST_TEST(n.unschedulable == cordoned);
    BOOST_TEST(!n.dcm_taint);
    BOOST_TEST(n.label(profile_label) == profile);
    BOOST_TEST(n.label(state_label) == "success");
    BOOST_TEST(n.label(ready_label) == "true");
    BOOST_TEST(n.gpus == gpus);
    BOOST_TEST(!n.has_annotation(was_unschedulable));
  }
}

/// Neither cordoned nor tainted, no mark of ours left.
void expect_untouched_or_returned(e2e_cluster& c, const std::string& name) {
  const auto n = c.node(name);
  BOOST_TEST_CONTEXT("node " << name) {
    BOOST_TEST(!n.unschedulable);
    BOOST_TEST(!n.dcm_taint);
    BOOST_TEST(!n.has_annotation(was_unschedulable));
  }
}

std::string last_reason(const item_view& i) {
  return i.reasons.empty() ? std::string{} : i.reasons.back();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void expect_no_violations(sampler& s) {
  const auto found = s.stop();
  BOOST_TEST(s.samples() > 0);
  std::string all;
  for (const auto& v : found)
    all += "\n  " + v;
  BOOST_TEST(found.empty(), "the sampler saw:" << all);
}

/// The rollout limits as the sampler sees them: items between Draining and Verifying,
/// and nodes cordoned or tainted, among the test's nodes.
struct limits_check {
  int max_parallel;
  int max_unavailable;
  std::shared_ptr<std::atomic<int>> peak_in_flight = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<std::atomic<int>> peak_unavailable = std::make_shared<std::atomic<int>>(0);

  sampler::check_fn fn() const {
    return [*this](const sample& s, std::vector<std::string>& v) {
      int flying = 0;
      std::string which;
      for (const auto& i : s.items)
        if (i.in_flight()) {
          ++flying;
          which += " " + i.node + "(" + i.phase + ")";
        }
      int down = 0;
      std::string nodes;
      for (const auto& n : s.nodes)
        if (n.unavailable()) {
          ++down;
          nodes += " " + n.name + (n.unschedulable ? "(cordoned" : "(") +
                   (n.dcm_taint ? ",tainted)" : ")");
        }
      if (flying > *peak_in_flight)
        *peak_in_flight = flying;
      if (down > *peak_unavailable)
        *peak_unavailable = down;
      if (flying > max_parallel)
        v.push_back(std::to_string(flying) + " items in flight > maxParallel " +
                    std::to_string(max_parallel) + ":" + which);
      if (down > max_unavailable)
        v.push_back(std::to_string(down) + " nodes unavailable > maxUnavailable " +
                    std::to_string(max_unavailable) + ":" + nodes);
    };
  }
};

/// Items of the plan other than `except` never leave Pending.
sampler::check_fn only_node_starts(const std::string& except) {
  return [except](const sample& s, std::vector<std::string>& v) {
    for (const auto& i : s.items)
      if (i.node != except && i.phase_or_pending() != "Pending")
        v.push_back("item " + i.name + " left Pending: " + i.phase);
  };
}

/// The operator's decision to start no node but `except` is on record: the plan's status,
/// written for its current spec, has condition `type` saying `says`, and every other item
/// has asked for a token and was told to wait. Only then does "no other node starts for a
/// while" tell a decision from a slow operator.
bool holds_the_others(e2e_cluster& c, const std::string& plan, const std::string& except,
                      const std::string& type, const std::string& says) {
  if (!c.plan_status_current(plan) || !contains(c.plan_condition(plan, type), says))
    return false;
  for (const auto& i : c.plan_items(plan)) {
    if (i.node == except)
      continue;
    const auto started = i.conditions.find("Started");
    if (i.phase_or_pending() != "Pending" || started == i.conditions.end() ||
        !contains(started->second, "False/WaitingForToken"))
      return false;
  }
  return true;
}

/// The operator's decision to start no node but `except` is on record (holds_the_others,
/// with condition `type` saying `says`), and then, for a while, no other node starts.
void expect_the_others_held(e2e_cluster& c, const std::string& plan, const std::string& except,
                            const std::string& type, const std::string& says) {
  E2E_REQUIRE(eventually([&] { return holds_the_others(c, plan, except, type, says); }, 30s, 200ms),
              c.plan_condition(plan, type) << "\n"
                                           << c.describe(plan));
  E2E_CHECK(!eventually(
                [&] {
                  for (const auto& i : c.plan_items(plan))
                    if (i.node != except && i.phase_or_pending() != "Pending")
                      return true;
                  return false;
                },
                4s, 200ms),
            c.describe(plan));
}

/// After `first` failed: the plan turns Degraded and, once the operator has said so, no
/// further node starts.
void expect_degraded_and_no_further_start(e2e_cluster& c, const std::string& plan,
                                          const std::string& first) {
  E2E_CHECK(c.await_plan_phase(plan, "Degraded", 10s), c.describe(plan));
  expect_the_others_held(c, plan, first, "Degraded", "no further nodes start");
}

sampler::check_fn both(sampler::check_fn a, sampler::check_fn b) {
  return [a, b](const sample& s, std::vector<std::string>& v) {
    a(s, v);
    b(s, v);
  };
}

/// Counts "caches synced" lines: the operator (re)started and sees the cluster.
std::size_t syncs(const e2e_cluster& c) {
  const auto log = c.operator_log(100000);
  std::size_t n = 0;
  for (auto at = log.find("caches synced"); at != std::string::npos;
       at = log.find("caches synced", at + 1))
    ++n;
  return n;
}

/// The operator's updates of DCM's ConfigMap in `ns` that the API server refused, oldest
/// first (its user agent names the process; the test's own client names none).
std::vector<audit_event> refused_dcm_updates(const std::vector<audit_event>& events,
                                             const std::string& ns) {
  std::vector<audit_event> out;
  for (const auto& e : events)
    if (e.verb == "update" && e.resource == "configmaps" && e.ns == ns &&
        e.name == dcm_config_name && e.code >= 400 &&
        e.user_agent.rfind("gpu-partitioner/", 0) == 0 &&
        e.user_agent.find('(') != std::string::npos)
      out.push_back(e);
  std::stable_sort(out.begin(), out.end(), [](const audit_event& a, const audit_event& b) {
    return a.received_us < b.received_us;
  });
  return out;
}

/// Each refusal's time after the one before from the same process, for messages.
std::string gaps_text(const std::vector<audit_event>& refused) {
  std::map<std::string, long long> last;
  std::ostringstream out;
  for (const auto& e : refused) {
    out << "\n  " << e.code << " from " << e.user_agent;
    if (auto it = last.find(e.user_agent); it != last.end())
      out << ", " << (e.received_us - it->second) / 1000 << " ms after the one before";
    last[e.user_agent] = e.received_us;
  }
  return out.str();
}

/// The longest time from one process's first refusal to its last, in microseconds.
long long longest_refusal_us(const std::vector<audit_event>& refused) {
  std::map<std::string, std::pair<long long, long long>> first_and_last;
  for (const auto& e : refused) {
    auto [it, first] = first_and_last.try_emplace(e.user_agent, e.received_us, e.received_us);
    if (!first)
      it->second.second = e.received_us;
  }
  long long longest = 0;
  for (const auto& [agent, times] : first_and_last)
    longest = std::max(longest, times.second - times.first);
  return longest;
}

/// "" when each operator process's refusals back off: one that kept being refused for 4 s
/// or more paused at least 2 s between two of them (a retry every 0.5 s, or a tight loop,
/// never does). Needs one such process, or there is nothing to judge.
std::string backoff_problem(const std::vector<audit_event>& refused) {
  std::map<std::string, std::pair<long long, long long>> first_and_last;
  std::map<std::string, long long> longest_pause;
  for (const auto& e : refused) {
    auto [it, first] = first_and_last.try_emplace(e.user_agent, e.received_us, e.received_us);
    if (!first) {
      auto& pause = longest_pause[e.user_agent];
      pause = std::max(pause, e.received_us - it->second.second);
      it->second.second = e.received_us;
    }
  }
  std::string problem;
  bool judged = false;
  for (const auto& [agent, times] : first_and_last) {
    if (times.second - times.first < 4'000'000)
      continue;
    judged = true;
    if (longest_pause[agent] < 2'000'000)
      problem += "\n  " + agent + " was refused for " +
                 std::to_string((times.second - times.first) / 1000) +
                 " ms and never paused 2 s (at most " +
                 std::to_string(longest_pause[agent] / 1000) + " ms)";
  }
  return judged ? problem : "\n  no operator process was refused for 4 s or more";
}

long long json_int(const std::string& json, const char* member) {
  if (json.empty())
    return 0;
  auto d = parse_json(json);
  return d.HasMember(member) && d[member].IsInt64() ? d[member].GetInt64() : 0;
}

} // namespace

BOOST_AUTO_TEST_SUITE(operator_e2e)

// 1. The seed's plan shape with the seed's profiles (CPX count corrected to 64).
BOOST_AUTO_TEST_CASE(seed_plan_partitions_training_to_cpx_and_inference_to_spx_and_completes,
                     *utf::timeout(240)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  c.add_nodes({{"t1", training()},
               {"t2", training()},
               {"t3", training()},
               {"t4", training()},
               {"i1", inference()},
               {"i2", inference()}});
  c.start_simulator();
  c.start_operator();
  const auto cpx =
      c.create_sample_profile("cpx", "profile-mi300x-cpx-nps4.yaml", [](rapidjson::Document& d) {
        d["spec"]["expectedResources"][0]["count"].SetInt64(64);
      });
  const auto spx = c.create_sample_profile("spx", "profile-mi300x-spx-nps1.yaml");
  // 50% of 6 nodes: 3 unavailable at most; maxParallel 2 from the sample.
  limits_check limits{2, 3};
  sampler s(c, {c.id + "-seed"}, limits.fn());
  const auto plan = c.create_sample_plan(
      "seed", {{"mi300x-cpx-nps4", cpx}, {"mi300x-spx-nps1", spx}},
      [](rapidjson::Document& d) { d["spec"]["rollout"]["maxUnavailable"].SetString("50%"); });
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 150s), c.describe(plan));
  expect_no_violations(s);

  const auto items = c.plan_items(plan);
  BOOST_TEST(items.size() == 6u);
  for (const auto& i : items)
    BOOST_TEST(i.phase == "Succeeded", i.name << " " << i.phase << " " << i.last_error);
  for (const auto& n : c.nodes) {
    const bool is_training = contains(n, "-t");
    // The samples name no profileName: DCM's names are the profiles' own.
    expect_partitioned(c, n, is_training ? cpx : spx, is_training ? 64 : 8);
  }
  auto p = c.get(plans, plan);
  BOOST_REQUIRE(p);
  const auto* total = kube::find_path(*p, {"status", "nodes", "total"});
  const auto* succeeded = kube::find_path(*p, {"status", "nodes", "succeeded"});
  BOOST_REQUIRE(total != nullptr && succeeded != nullptr);
  BOOST_TEST(total->GetInt() == 6);
  BOOST_TEST(succeeded->GetInt() == total->GetInt());
  BOOST_TEST(*limits.peak_in_flight <= 2);
  E2E_NOTE("seed plan: 6 nodes in " << seconds_since(t0) << " s; peak in flight "
                                    << *limits.peak_in_flight << ", peak unavailable "
                                    << *limits.peak_unavailable);
}

// 2. The seed's CPX profile as written expects 63 partitions; the node reports 64.
BOOST_AUTO_TEST_CASE(seed_cpx_profile_expecting_63_fails_verification_when_the_node_reports_64,
                     *utf::timeout(180)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  c.add_nodes({{"t1", training()}});
  c.start_simulator();
  c.start_operator();
  // As written, except the verification timeout (600 s in the seed) and the payload's
  // namespace.
  const auto cpx =
      c.create_sample_profile("cpx", "profile-mi300x-cpx-nps4.yaml", [](rapidjson::Document& d) {
        d["spec"]["verification"]["timeoutSeconds"].SetInt64(5);
      });
  const auto spx = c.create_sample_profile("spx", "profile-mi300x-spx-nps1.yaml");
  const auto plan =
      c.create_sample_plan("seed63", {{"mi300x-cpx-nps4", cpx}, {"mi300x-spx-nps1", spx}});
  const auto& node = c.nodes[0];
  E2E_REQUIRE(c.await_items(plan, 1, "Failed", 60s), c.describe(plan));
  const auto item = c.item(plan, node);
  BOOST_REQUIRE(item);
  BOOST_TEST(contains(item->last_error, "expected amd.com/gpu=63, found 64"), item->last_error);
  BOOST_TEST(last_reason(*item) == "VerificationFailed");
  E2E_CHECK(c.await_plan_phase(plan, "Degraded", 10s), c.describe(plan));
  // Failed after Applying: the node stays cordoned, the taint is gone.
  const auto n = c.node(node);
  BOOST_TEST(n.unschedulable);
  BOOST_TEST(!n.dcm_taint);
  BOOST_TEST(n.gpus == 64);
  E2E_NOTE("count 63: failed in " << seconds_since(t0) << " s");
}

// 3. maxParallel and maxUnavailable hold over a 6-node rollout, as a count and as a
// percentage.
BOOST_AUTO_TEST_CASE(rollouts_never_exceed_max_parallel_or_max_unavailable, *utf::timeout(300)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  c.add_nodes({{"n1", training()},
               {"n2", training()},
               {"n3", training()},
               {"n4", training()},
               {"n5", training()},
               {"n6", training()}});
  c.start_simulator();
  c.start_operator();
  const auto cpx = c.create_profile("cpx", profile_spec(c, cpx_payload, "cpx-nps4", 64));
  const auto spx = c.create_profile("spx", profile_spec(c, spx_payload, "spx-nps1", 8));

  // maxParallel 2, maxUnavailable 2.
  {
    limits_check limits{2, 2};
    sampler s(c, {c.id + "-count"}, limits.fn());
    plan_options o;
    o.max_parallel = 2;
    o.max_unavailable = "2";
    o.entries = {{"all", c.selector(), cpx}};
    const auto plan = c.create_plan("count", plan_spec(o));
    E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 120s), c.describe(plan));
    expect_no_violations(s);
    BOOST_TEST(*limits.peak_in_flight == 2, "the rollout never used its 2 slots");
    for (const auto& n : c.nodes)
      expect_partitioned(c, n, "cpx-nps4", 64);
    E2E_NOTE("maxUnavailable 2: peak in flight " << *limits.peak_in_flight << ", peak unavailable "
                                                 << *limits.peak_unavailable);
    c.delete_plan(plan);
    BOOST_REQUIRE(eventually([&] { return c.plan_items(plan).empty(); }, 30s));
  }
  // maxUnavailable "34%" of 6 is 2 (rounded down); maxParallel 3 would allow more, so
  // the percentage is what holds the rollout.
  {
    limits_check limits{3, 2};
    sampler s(c, {c.id + "-percent"}, limits.fn());
    plan_options o;
    o.max_parallel = 3;
    o.max_unavailable = R"("34%")";
    o.entries = {{"all", c.selector(), spx}};
    const auto plan = c.create_plan("percent", plan_spec(o));
    E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 120s), c.describe(plan));
    expect_no_violations(s);
    BOOST_TEST(*limits.peak_in_flight <= 2);
    for (const auto& n : c.nodes)
      expect_partitioned(c, n, "spx-nps1", 8);
    E2E_NOTE("maxUnavailable 34%: peak in flight "
             << *limits.peak_in_flight << ", peak unavailable " << *limits.peak_unavailable);
  }
  E2E_NOTE("limits: two 6-node rollouts in " << seconds_since(t0) << " s");
}

// 3b. DESIGN.md section 5: "the order of nodes is deterministic (by name)".
BOOST_AUTO_TEST_CASE(nodes_start_one_at_a_time_in_the_order_of_their_names, *utf::timeout(180)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  c.add_nodes({{"n1", training()}, {"n2", training()}, {"n3", training()}, {"n4", training()}});
  c.start_simulator();
  c.start_operator();
  const auto cpx = c.create_profile("cpx", profile_spec(c, cpx_payload, "cpx-nps4", 64));
  // The order in which items are first seen in flight (or done).
  auto order = std::make_shared<std::vector<std::string>>();
  auto record = [order](const sample& s, std::vector<std::string>&) {
    for (const auto& i : s.items)
      if ((i.in_flight() || i.phase == "Succeeded") &&
          std::find(order->begin(), order->end(), i.node) == order->end())
        order->push_back(i.node);
  };
  limits_check limits{1, 1};
  sampler s(c, {c.id + "-order"}, both(limits.fn(), record));
  plan_options o;
  o.entries = {{"all", c.selector(), cpx}};
  const auto plan = c.create_plan("order", plan_spec(o));
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 120s), c.describe(plan));
  expect_no_violations(s);
  std::string seen;
  for (const auto& n : *order)
    seen += " " + n.substr(c.id.size() + 1);
  BOOST_TEST(*order == c.nodes, "nodes started in the order" << seen);
  E2E_NOTE("start order:" << seen << "; " << seconds_since(t0) << " s");
}

// 4a. A PDB allowing one disruption is respected throughout the drain.
BOOST_AUTO_TEST_CASE(drains_keep_healthy_replicas_at_or_above_the_pdb_min_available,
                     *utf::timeout(300)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  c.add_nodes({{"n1", training()}, {"n2", training()}, {"n3", training()}, {"n4", training()}});
  c.start_simulator();
  c.await_default_service_account();
  const int replicas = 6;
  c.create_deployment("gpu-work", replicas);
  c.create_pdb("gpu-work", "gpu-work", replicas - 1);
  BOOST_REQUIRE_MESSAGE(
      eventually([&] { return c.healthy_pods("gpu-work") == replicas; }, 60s, 200ms),
      "the Deployment's pods did not become Ready");
  std::set<std::string> used;
  for (const auto& p : c.pods("app=gpu-work"))
    used.insert(p.node);
  E2E_NOTE("gpu-work runs on " << used.size() << " of 4 nodes");
  c.start_operator();
  const auto cpx = c.create_profile("cpx", profile_spec(c, cpx_payload, "cpx-nps4", 64));

  limits_check limits{2, 2};
  auto lowest = std::make_shared<std::atomic<int>>(replicas);
  auto pdb_check = [lowest, replicas](const sample& s, std::vector<std::string>& v) {
    int healthy = 0;
    for (const auto& p : s.pods)
      if (p.labels.count("app") && p.labels.at("app") == "gpu-work" && p.healthy())
        ++healthy;
    if (healthy < *lowest)
      *lowest = healthy;
    if (healthy < replicas - 1)
      v.push_back("only " + std::to_string(healthy) + " healthy gpu-work replicas, minAvailable " +
                  std::to_string(replicas - 1));
  };
  sampler s(c, {c.id + "-pdb"}, both(limits.fn(), pdb_check), true);
  plan_options o;
  o.max_parallel = 2;
  o.max_unavailable = "2";
  o.entries = {{"all", c.selector(), cpx}};
  const auto plan = c.create_plan("pdb", plan_spec(o));
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 200s), c.describe(plan));
  expect_no_violations(s);
  long long evicted = 0;
  for (const auto& i : c.plan_items(plan))
    evicted += json_int(i.drain, "podsEvicted");
  BOOST_TEST(evicted >= static_cast<long long>(replicas), "pods evicted: " << evicted);
  for (const auto& n : c.nodes)
    expect_partitioned(c, n, "cpx-nps4", 64);
  BOOST_TEST(eventually([&] { return c.healthy_pods("gpu-work") == replicas; }, 30s));
  E2E_NOTE("PDB minAvailable " << replicas - 1 << ": lowest healthy " << *lowest << ", " << evicted
                               << " evictions, " << seconds_since(t0) << " s");
}

// 4b. A PDB that never allows an eviction: the drain times out and is rolled back.
BOOST_AUTO_TEST_CASE(a_pdb_that_never_allows_eviction_times_out_the_drain_and_stops_the_rollout,
                     *utf::timeout(180)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  c.add_nodes({{"a", training()}, {"b", training()}, {"c", training()}});
  c.start_simulator();
  c.await_default_service_account();
  const auto& first = c.nodes[0];
  c.create_deployment("pinned", 1, {{"kubernetes.io/hostname", first}});
  c.create_pdb("pinned-pdb", "pinned", 1);
  BOOST_REQUIRE(eventually([&] { return c.healthy_pods("pinned") == 1; }, 60s, 200ms));
  c.start_operator();
  const auto cpx = c.create_profile("cpx", profile_spec(c, cpx_payload, "cpx-nps4", 64));
  sampler s(c, {c.id + "-blocked"}, only_node_starts(first));
  plan_options o;
  o.max_parallel = 1;
  o.max_unavailable = "1";
  o.drain_timeout = 10;
  o.entries = {{"all", c.selector(), cpx}};
  const auto plan = c.create_plan("blocked", plan_spec(o));

  E2E_REQUIRE(eventually(
                  [&] {
                    auto i = c.item(plan, first);
                    return i && i->phase == "Failed";
                  },
                  60s, 200ms),
              c.describe(plan));
  const auto item = c.item(plan, first);
  BOOST_REQUIRE(item);
  BOOST_TEST(last_reason(*item) == "DrainTimeout");
  BOOST_TEST(contains(item->last_error, c.ns + "/pinned-pdb"), item->last_error);
  BOOST_TEST(c.back_in_service(first));
  expect_untouched_or_returned(c, first);
  expect_degraded_and_no_further_start(c, plan, first);
  expect_no_violations(s);
  BOOST_TEST(c.healthy_pods("pinned") == 1);
  E2E_NOTE("drain timeout: " << seconds_since(t0) << " s");
}

// 5a. DCM reports failure: the node stays cordoned and the rollout stops.
BOOST_AUTO_TEST_CASE(a_dcm_failure_fails_the_node_keeps_it_cordoned_and_stops_the_rollout,
                     *utf::timeout(180)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  c.add_nodes({{"a", training("dcm-failure")}, {"b", training()}, {"c", training()}});
  c.start_simulator();
  c.start_operator();
  const auto& first = c.nodes[0];
  const auto cpx = c.create_profile("cpx", profile_spec(c, cpx_payload, "cpx-nps4", 64));
  sampler s(c, {c.id + "-dcmfail"}, only_node_starts(first));
  plan_options o;
  o.entries = {{"all", c.selector(), cpx}};
  const auto plan = c.create_plan("dcmfail", plan_spec(o));
  E2E_REQUIRE(eventually(
                  [&] {
                    auto i = c.item(plan, first);
                    return i && i->phase == "Failed";
                  },
                  60s, 200ms),
              c.describe(plan));
  const auto item = c.item(plan, first);
  BOOST_REQUIRE(item);
  BOOST_TEST(last_reason(*item) == "OperatorFailed");
  BOOST_TEST(contains(item->last_error, "DCM reported failure"), item->last_error);
  // DCM's own Event is quoted (the simulator's reason for this fault).
  BOOST_TEST(contains(item->last_error, "AMDSMIAPIFailure"), item->last_error);
  expect_degraded_and_no_further_start(c, plan, first);
  const auto n = c.node(first);
  BOOST_TEST(n.unschedulable, "the failed node was uncordoned");
  BOOST_TEST(eventually([&] { return !c.node(first).dcm_taint; }, 10s));
  expect_no_violations(s);
  E2E_NOTE("DCM failure: " << seconds_since(t0) << " s");
}

// 5b. DCM never answers: the wait is bounded by the plan's verification timeout.
BOOST_AUTO_TEST_CASE(dcm_never_answering_fails_the_node_with_operator_timeout, *utf::timeout(180)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  c.add_nodes({{"a", training("dcm-stuck")}});
  c.start_simulator();
  // DCM may retry for 20 s after the label (not its 30 minutes, scaled): the node is held
  // tainted that long after the 10 s timeout, then the taint goes.
  c.start_operator_with({"--dcm-retry-seconds", "20"});
  const auto cpx = c.create_profile("cpx", profile_spec(c, cpx_payload, "cpx-nps4", 64));
  plan_options o;
  // Long enough for Applying's wait for DCM's file (the harness's --dcm-config-sync, 3.2 s
  // at time scale 0.02) after the config write: the timeout bounds each phase.
  o.verification_timeout = 10;
  o.entries = {{"all", c.selector(), cpx}};
  const auto plan = c.create_plan("stuck", plan_spec(o));
  E2E_REQUIRE(c.await_items(plan, 1, "Failed", 60s), c.describe(plan));
  const auto item = c.item(plan, c.nodes[0]);
  BOOST_REQUIRE(item);
  BOOST_TEST(last_reason(*item) == "OperatorTimeout");
  BOOST_TEST(contains(item->last_error, "within 10 s"), item->last_error);
  // The history shows how long it waited.
  BOOST_TEST(std::count(item->phases.begin(), item->phases.end(), "WaitingOperator") == 1);
  BOOST_TEST(c.node(c.nodes[0]).unschedulable);
  // DCM never said it gave up: the node stays out of service until it surely has.
  BOOST_TEST(!item->dcm_may_change_until.empty());
  BOOST_TEST(c.node(c.nodes[0]).dcm_taint);
  E2E_CHECK(c.await_plan_phase(plan, "Degraded", 10s), c.describe(plan));
  E2E_CHECK(eventually([&] { return !c.node(c.nodes[0]).dcm_taint; }, 40s), c.describe(plan));
  BOOST_TEST(c.node(c.nodes[0]).unschedulable);
  E2E_NOTE("DCM stuck: " << seconds_since(t0) << " s");
}

// 6. An admin's cordon is kept, and counts against maxUnavailable.
BOOST_AUTO_TEST_CASE(an_admin_cordoned_node_is_partitioned_stays_cordoned_and_holds_the_others,
                     *utf::timeout(240)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  node_spec cordoned = training();
  cordoned.cordoned = true;
  c.add_nodes({{"a", training()}, {"b", cordoned}, {"c", training()}});
  c.start_simulator();
  c.start_operator();
  const auto& admin = c.nodes[1];
  const auto cpx = c.create_profile("cpx", profile_spec(c, cpx_payload, "cpx-nps4", 64));
  auto never_uncordoned = [admin](const sample& s, std::vector<std::string>& v) {
    for (const auto& n : s.nodes)
      if (n.name == admin && !n.unschedulable)
        v.push_back("the admin-cordoned node " + admin + " was uncordoned");
  };
  // With maxUnavailable 1 and the admin's node cordoned, only that node may start (it is
  // unavailable already, so starting it takes nothing more down).
  limits_check limits{1, 1};
  sampler s(c, {c.id + "-admin"},
            both(limits.fn(), both(never_uncordoned, only_node_starts(admin))));
  plan_options o;
  o.max_parallel = 1;
  o.max_unavailable = "1";
  o.entries = {{"all", c.selector(), cpx}};
  const auto plan = c.create_plan("admin", plan_spec(o));
  E2E_REQUIRE(eventually(
                  [&] {
                    auto i = c.item(plan, admin);
                    return i && i->phase == "Succeeded";
                  },
                  60s, 200ms),
              c.describe(plan));
  BOOST_TEST(eventually([&] { return !c.node(admin).has_annotation(was_unschedulable); }, 10s));
  expect_partitioned(c, admin, "cpx-nps4", 64, /*cordoned=*/true);
  // Still cordoned, so still unavailable: the others keep waiting. Once the operator has
  // counted the success and told them to wait, watch for a while.
  expect_the_others_held(c, plan, admin, "Completed", "1/3 nodes succeeded");
  expect_no_violations(s);
  // The admin uncordons: the rest of the rollout proceeds.
  c.patch(kube::resources::nodes(), admin, R"({"spec":{"unschedulable":false}})");
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 90s), c.describe(plan));
  for (const auto& n : c.nodes)
    expect_partitioned(c, n, "cpx-nps4", 64);
  E2E_NOTE("admin cordon: " << seconds_since(t0) << " s");
}

// 7a. A paused plan starts nothing; resumed, it completes.
BOOST_AUTO_TEST_CASE(a_paused_plan_starts_no_node_until_resumed, *utf::timeout(180)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  c.add_nodes({{"a", training()}, {"b", training()}});
  c.start_simulator();
  c.start_operator();
  const auto cpx = c.create_profile("cpx", profile_spec(c, cpx_payload, "cpx-nps4", 64));
  auto nothing_moves = [](const sample& s, std::vector<std::string>& v) {
    for (const auto& i : s.items)
      if (i.phase_or_pending() != "Pending")
        v.push_back("paused, yet item " + i.name + " is " + i.phase);
    for (const auto& n : s.nodes)
      if (n.unavailable())
        v.push_back("paused, yet node " + n.name + " is cordoned or tainted");
  };
  sampler s(c, {c.id + "-paused"}, nothing_moves);
  plan_options o;
  o.max_parallel = 2;
  o.max_unavailable = "2";
  o.paused = true;
  o.entries = {{"all", c.selector(), cpx}};
  const auto plan = c.create_plan("paused", plan_spec(o));
  E2E_REQUIRE(eventually([&] { return c.plan_items(plan).size() == 2u; }, 20s), c.describe(plan));
  E2E_CHECK(c.await_plan_phase(plan, "Paused", 10s), c.describe(plan));
  // The operator has decided on the paused spec: its status says so, and both nodes were
  // told to wait. Then the sampler watches that nothing happens.
  E2E_REQUIRE(eventually([&] { return holds_the_others(c, plan, "", "Paused", "True/Paused"); },
                         30s, 200ms),
              c.plan_condition(plan, "Paused") << "\n"
                                               << c.describe(plan));
  std::this_thread::sleep_for(5s);
  expect_no_violations(s);
  BOOST_TEST(c.plan_phase(plan) == "Paused");
  c.patch(plans, plan, R"({"spec":{"paused":false}})");
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 60s), c.describe(plan));
  for (const auto& n : c.nodes)
    expect_partitioned(c, n, "cpx-nps4", 64);
  E2E_NOTE("pause and resume: " << seconds_since(t0) << " s");
}

// 7b. A dry run shows what would happen and changes no node.
BOOST_AUTO_TEST_CASE(a_dry_run_previews_each_node_and_changes_none, *utf::timeout(180)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  c.add_nodes({{"a", training()}, {"b", training()}});
  c.start_simulator();
  c.await_default_service_account();
  c.create_deployment("previewed", 2);
  c.create_pdb("previewed-pdb", "previewed", 2);
  BOOST_REQUIRE(eventually([&] { return c.healthy_pods("previewed") == 2; }, 60s, 200ms));
  c.start_operator();
  const auto cpx = c.create_profile("cpx", profile_spec(c, cpx_payload, "cpx-nps4", 64));
  auto fingerprint = [](const node_view& n) {
    node_view copy = n;
    copy.annotations.erase("node.alpha.kubernetes.io/ttl"); // the TTL controller's
    return copy.fingerprint();
  };
  std::map<std::string, std::string> before;
  for (const auto& n : c.test_nodes())
    before[n.name] = fingerprint(n);
  BOOST_REQUIRE_EQUAL(before.size(), 2u);
  auto unchanged = [before, fingerprint](const sample& s, std::vector<std::string>& v) {
    for (const auto& n : s.nodes) {
      auto it = before.find(n.name);
      if (it != before.end() && fingerprint(n) != it->second)
        v.push_back("dry run, yet node " + n.name + " changed:\n" + fingerprint(n) + "\nwas\n" +
                    it->second);
    }
    for (const auto& i : s.items)
      if (i.phase_or_pending() != "Pending")
        v.push_back("dry run, yet item " + i.name + " is " + i.phase);
  };
  sampler s(c, {c.id + "-dry"}, unchanged);
  plan_options o;
  o.max_parallel = 2;
  o.max_unavailable = "2";
  o.dry_run = true;
  o.entries = {{"all", c.selector(), cpx}};
  const auto plan = c.create_plan("dry", plan_spec(o));
  E2E_REQUIRE(eventually(
                  [&] {
                    auto all = c.plan_items(plan);
                    return all.size() == 2u &&
                           std::all_of(all.begin(), all.end(),
                                       [](const item_view& i) { return !i.preview.empty(); });
                  },
                  30s, 200ms),
              c.describe(plan));
  std::this_thread::sleep_for(5s); // the sampler watches that no node changes
  expect_no_violations(s);
  for (const auto& n : c.test_nodes())
    BOOST_TEST(fingerprint(n) == before[n.name], "node " << n.name);

  std::map<std::string, int> pods_per_node;
  for (const auto& p : c.pods("app=previewed"))
    ++pods_per_node[p.node];
  std::size_t previewed_pods = 0;
  for (const auto& i : c.plan_items(plan)) {
    auto preview = parse_json(i.preview);
    BOOST_TEST_CONTEXT("item " << i.name << " preview " << i.preview) {
      const auto& evict = preview["podsToEvict"];
      BOOST_TEST(evict.Size() == static_cast<unsigned>(pods_per_node[i.node]));
      previewed_pods += evict.Size();
      if (pods_per_node[i.node] > 0) {
        bool names_pdb = false;
        if (preview.HasMember("blockingPDBs"))
          for (const auto& b : preview["blockingPDBs"].GetArray())
            names_pdb = names_pdb || kube::string_at(b, "name") == "previewed-pdb";
        BOOST_TEST(names_pdb);
      }
      BOOST_TEST(preview.HasMember("alreadyInTargetState"));
      BOOST_TEST(!preview["alreadyInTargetState"].GetBool());
    }
  }
  BOOST_TEST(previewed_pods == 2u);
  BOOST_TEST(c.healthy_pods("previewed") == 2);
  E2E_NOTE("dry run: " << seconds_since(t0) << " s");
}

// 7c. A node already in the target state is not disrupted.
BOOST_AUTO_TEST_CASE(a_node_already_in_the_target_state_succeeds_without_being_cordoned,
                     *utf::timeout(180)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  node_spec done = training();
  done.labels = {{profile_label, "cpx-nps4"}, {state_label, "success"}};
  done.annotations = {{partition_annotation, "CPX/NPS4"}}; // gpu-sim: the GPUs are in CPX/NPS4
  c.add_nodes({{"a", done}, {"b", training()}});
  c.start_simulator();
  const auto& ready = c.nodes[0];
  BOOST_REQUIRE_EQUAL(c.node(ready).gpus, 64);
  c.start_operator();
  const auto cpx = c.create_profile("cpx", profile_spec(c, cpx_payload, "cpx-nps4", 64));
  auto undisturbed = [ready](const sample& s, std::vector<std::string>& v) {
    for (const auto& n : s.nodes)
      if (n.name == ready && n.unavailable())
        v.push_back("node " + ready + " already in the target state was cordoned or tainted");
    for (const auto& i : s.items)
      if (i.node == ready && i.in_flight())
        v.push_back("node " + ready + " already in the target state went " + i.phase);
  };
  sampler s(c, {c.id + "-target"}, undisturbed);
  plan_options o;
  o.entries = {{"all", c.selector(), cpx}};
  const auto plan = c.create_plan("target", plan_spec(o));
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 60s), c.describe(plan));
  expect_no_violations(s);
  const auto item = c.item(plan, ready);
  BOOST_REQUIRE(item);
  BOOST_TEST(item->phase == "Succeeded");
  BOOST_TEST(last_reason(*item) == "AlreadyInTargetState");
  BOOST_TEST(std::count(item->phases.begin(), item->phases.end(), "Draining") == 0);
  const auto other = c.item(plan, c.nodes[1]);
  BOOST_REQUIRE(other);
  BOOST_TEST(std::count(other->phases.begin(), other->phases.end(), "Draining") == 1);
  for (const auto& n : c.nodes)
    expect_partitioned(c, n, "cpx-nps4", 64);
  E2E_NOTE("already in target state: " << seconds_since(t0) << " s");
}

// 7d. Changing one profile re-runs only the nodes that use it.
BOOST_AUTO_TEST_CASE(a_profile_change_reruns_only_the_nodes_using_that_profile,
                     *utf::timeout(240)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  c.add_nodes({{"t1", training()}, {"t2", training()}, {"i1", inference()}});
  c.start_simulator();
  c.start_operator();
  const auto cpx = c.create_profile("cpx", profile_spec(c, cpx_payload, "cpx-nps4", 64));
  const auto spx = c.create_profile("spx", profile_spec(c, spx_payload, "spx-nps1", 8));
  plan_options o;
  o.max_parallel = 2;
  o.max_unavailable = "2";
  o.entries = {{"training", c.selector({{"nodepool", "training-gpu"}}), cpx},
               {"inference", c.selector({{"nodepool", "inference-gpu"}}), spx}};
  const auto plan = c.create_plan("change", plan_spec(o));
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 90s), c.describe(plan));
  std::map<std::string, item_view> first;
  for (const auto& i : c.plan_items(plan))
    first[i.node] = i;
  BOOST_REQUIRE_EQUAL(first.size(), 3u);
  const std::string inference_node = c.nodes[2];

  auto inference_alone = [inference_node](const sample& s, std::vector<std::string>& v) {
    for (const auto& n : s.nodes)
      if (n.name == inference_node && n.unavailable())
        v.push_back("the inference node was cordoned or tainted after a CPX profile change");
    for (const auto& i : s.items)
      if (i.node == inference_node && i.phase != "Succeeded")
        v.push_back("the inference item went " + i.phase);
  };
  sampler s(c, {plan}, inference_alone);
  // A new DCM profile name for the same CPX/NPS4 definition: a new desiredHash.
  c.patch(profiles, cpx, R"({"spec":{"operatorPayload":{"profileName":"e2e-cpx-v2"}}})");
  E2E_REQUIRE(eventually(
                  [&] {
                    for (const auto& i : c.plan_items(plan)) {
                      if (i.node == inference_node)
                        continue;
                      const auto& was = first[i.node];
                      // Run again: a second Succeeded in the history (completedAt
                      // has whole seconds; a re-run may end in the same one).
                      if (i.desired_hash == was.desired_hash || i.observed_hash != i.desired_hash ||
                          i.phase != "Succeeded" ||
                          std::count(i.phases.begin(), i.phases.end(), "Succeeded") < 2)
                        return false;
                    }
                    return true;
                  },
                  90s, 200ms),
              c.describe(plan));
  E2E_CHECK(c.await_plan_phase(plan, "Completed", 20s), c.describe(plan));
  expect_no_violations(s);
  const auto again = c.item(plan, inference_node);
  BOOST_REQUIRE(again);
  BOOST_TEST(again->completed_at == first[inference_node].completed_at);
  BOOST_TEST(again->started_at == first[inference_node].started_at);
  BOOST_TEST(again->desired_hash == first[inference_node].desired_hash);
  BOOST_TEST(again->phases == first[inference_node].phases);
  BOOST_TEST(again->reasons == first[inference_node].reasons);
  for (const auto& n : c.nodes) {
    if (n == inference_node) {
      expect_partitioned(c, n, "spx-nps1", 8);
      continue;
    }
    expect_partitioned(c, n, "e2e-cpx-v2", 64);
    const auto i = c.item(plan, n);
    BOOST_REQUIRE_MESSAGE(i, "no item for " << n);
    BOOST_TEST(std::count(i->reasons.begin(), i->reasons.end(), "SpecChanged") == 1);
  }
  auto dcm = c.get(kube::resources::config_maps(), dcm_config_name, c.ns);
  BOOST_REQUIRE(dcm);
  BOOST_TEST(contains(str(*dcm, {"data", "config.json"}), "\"e2e-cpx-v2\""));
  E2E_NOTE("profile change: " << seconds_since(t0) << " s");
}

// 8. Deleting the plan while a node drains returns every untouched node to service.
BOOST_AUTO_TEST_CASE(deleting_the_plan_mid_drain_returns_the_nodes_and_removes_the_items,
                     *utf::timeout(180)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  c.add_nodes({{"a", training()}, {"b", training()}, {"c", training()}});
  c.start_simulator();
  c.await_default_service_account();
  const auto& first = c.nodes[0];
  c.create_deployment("pinned", 1, {{"kubernetes.io/hostname", first}});
  c.create_pdb("pinned-pdb", "pinned", 1);
  BOOST_REQUIRE(eventually([&] { return c.healthy_pods("pinned") == 1; }, 60s, 200ms));
  c.start_operator();
  const auto cpx = c.create_profile("cpx", profile_spec(c, cpx_payload, "cpx-nps4", 64));
  auto reached = std::make_shared<std::map<std::string, std::set<std::string>>>();
  auto record = [reached](const sample& s, std::vector<std::string>&) {
    for (const auto& i : s.items)
      (*reached)[i.node].insert(i.phase_or_pending());
  };
  sampler s(c, {c.id + "-deleted"}, both(record, only_node_starts(first)));
  plan_options o;
  o.entries = {{"all", c.selector(), cpx}};
  const auto plan = c.create_plan("deleted", plan_spec(o));
  E2E_REQUIRE(eventually(
                  [&] {
                    auto i = c.item(plan, first);
                    return i && i->phase == "Draining" && json_int(i->drain, "podsBlocked") > 0;
                  },
                  60s, 200ms),
              c.describe(plan));
  BOOST_REQUIRE(c.node(first).unschedulable);
  c.delete_plan(plan);
  E2E_REQUIRE(eventually([&] { return c.plan_items(plan).empty(); }, 30s, 200ms), c.describe(plan));
  BOOST_TEST(!c.get(plans, plan));
  s.stop();
  for (const auto& n : c.nodes) {
    const auto& phases = (*reached)[n];
    const bool touched_gpus =
        phases.count("Applying") || phases.count("WaitingOperator") || phases.count("Verifying");
    BOOST_TEST(!touched_gpus, "node " << n << " reached Applying");
    if (!touched_gpus)
      expect_untouched_or_returned(c, n);
    BOOST_TEST(c.node(n).label(profile_label).empty());
  }
  BOOST_TEST(c.healthy_pods("pinned") == 1);
  E2E_NOTE("plan deleted mid-drain: " << seconds_since(t0) << " s");
}

// 8b. Deleting the plan after the GPUs were touched: deletion is not blocked, and the node
// stays cordoned (its GPUs may be mid-change) with a Warning saying so.
BOOST_AUTO_TEST_CASE(deleting_the_plan_while_dcm_works_leaves_the_node_cordoned_and_says_so,
                     *utf::timeout(180)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  c.add_nodes({{"a", training("dcm-stuck")}});
  c.start_simulator();
  c.start_operator();
  const auto& node = c.nodes[0];
  const auto cpx = c.create_profile("cpx", profile_spec(c, cpx_payload, "cpx-nps4", 64));
  plan_options o;
  o.verification_timeout = 600;
  o.entries = {{"all", c.selector(), cpx}};
  const auto plan = c.create_plan("mid-dcm", plan_spec(o));
  E2E_REQUIRE(c.await_items(plan, 1, "WaitingOperator", 60s), c.describe(plan));
  c.delete_plan(plan);
  E2E_REQUIRE(eventually([&] { return c.plan_items(plan).empty(); }, 30s, 200ms), c.describe(plan));
  BOOST_TEST(eventually([&] { return !c.node(node).dcm_taint; }, 10s));
  const auto n = c.node(node);
  BOOST_TEST(n.unschedulable, "a node whose GPUs were mid-change was uncordoned");
  BOOST_TEST(n.label(profile_label) == "cpx-nps4");
  bool warned = false;
  kube::list_options by_node;
  by_node.field_selector = "involvedObject.kind=Node,involvedObject.name=" + node;
  BOOST_TEST(eventually(
      [&] {
        if (auto events = c.api.list(kube::resources::events(), "", by_node); events.ok())
          for (const auto& e : events.value()["items"].GetArray())
            warned = warned || (kube::string_at(e, "reason") == "LeftCordoned" &&
                                kube::string_at(e, "type") == "Warning");
        return warned;
      },
      10s, 200ms));
  E2E_NOTE("plan deleted while DCM works: " << seconds_since(t0) << " s");
}

// 9. The operator killed (SIGKILL) in each phase and restarted finishes the rollout.
//
// Each phase is held open by something the test controls, so the kill lands in it:
// Draining by a PDB that allows no eviction (deleted after the restart); Applying by an
// immutable DCM ConfigMap that the operator cannot add the profile to (replaced after the
// restart); WaitingOperator by stopping gpu-sim (SIGSTOP: DCM does not answer; SIGCONT after
// the restart); Verifying by the plan's gpuReadyLabel, a label the test sets after the
// restart.
BOOST_AUTO_TEST_CASE(an_operator_killed_in_every_phase_and_restarted_completes_the_rollout,
                     *utf::timeout(300)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  const std::string gate = "e2e.silogen.ai/verified";
  node_spec open = training();
  open.labels = {{gate, "yes"}};
  // The site's labeller has the gate on every node; on a, not yet "yes".
  node_spec shut = training();
  shut.labels = {{gate, "no"}};
  c.add_nodes({{"a", shut}, {"b", open}});
  c.start_simulator();
  c.await_default_service_account();
  const auto& a = c.nodes[0];
  c.create_deployment("pinned", 1, {{"kubernetes.io/hostname", a}});
  c.create_pdb("pinned-pdb", "pinned", 1);
  BOOST_REQUIRE(eventually([&] { return c.healthy_pods("pinned") == 1; }, 60s, 200ms));
  // DCM's ConfigMap cannot be changed: the operator stays in Applying.
  auto original = c.get(kube::resources::config_maps(), dcm_config_name, c.ns);
  BOOST_REQUIRE(original);
  const std::string dcm_config = str(*original, {"data", "config.json"});
  c.patch(kube::resources::config_maps(), dcm_config_name, R"({"immutable":true})", c.ns);

  // The API server's own record of the operator's writes (its user agent names it).
  audit_log audit;
  c.start_operator();
  // A DCM profile name that is not in DCM's config yet, so Applying has to write it.
  const std::string dcm_name = "e2e-cpx-" + c.key;
  c.create_payload("kill-cpx", cpx_nps4_json);
  const auto cpx = c.create_profile("cpx", profile_spec(c, "kill-cpx", dcm_name, 64));

  // Once the operator cordoned a node, it stays cordoned until its item succeeded. The
  // uncordon and the Succeeded status are separate writes (the status is written up to
  // 100 ms later), so only an uncordoned node whose item stays short of Succeeded for a
  // second counts.
  auto held = std::make_shared<std::set<std::string>>();
  auto early = std::make_shared<std::map<std::string, clock_type::time_point>>();
  auto never_released_early = [held, early](const sample& s, std::vector<std::string>& v) {
    std::map<std::string, std::string> phase;
    for (const auto& i : s.items)
      phase[i.node] = i.phase_or_pending();
    for (const auto& n : s.nodes) {
      if (n.unschedulable && phase[n.name] != "Succeeded")
        held->insert(n.name);
      if (!held->count(n.name) || n.unschedulable || phase[n.name] == "Succeeded") {
        early->erase(n.name);
        continue;
      }
      auto since = early->emplace(n.name, s.at).first->second;
      if (s.at - since >= 1s)
        v.push_back("node " + n.name + " uncordoned while its item is " + phase[n.name]);
    }
  };
  limits_check limits{1, 1};
  sampler s(c, {c.id + "-kill"}, both(limits.fn(), never_released_early));
  plan_options o;
  o.ready_label = gate + "=yes";
  o.drain_timeout = 300;
  o.verification_timeout = 300;
  o.entries = {{"all", c.selector(), cpx}};
  const auto plan = c.create_plan("kill", plan_spec(o));

  auto phase_of = [&](const std::string& node) {
    auto i = c.item(plan, node);
    return i ? i->phase_or_pending() : std::string("<none>");
  };
  auto await_phase = [&](const std::string& node, const std::string& phase,
                         const std::function<bool(const item_view&)>& also = {}) {
    E2E_REQUIRE(eventually(
                    [&] {
                      auto i = c.item(plan, node);
                      return i && i->phase == phase && (!also || also(*i));
                    },
                    60s, 20ms),
                "waiting for " << phase << "\n"
                               << c.describe(plan));
  };
  // SIGKILL in `phase`, `meanwhile` (with no operator running), restart, and wait until the
  // new operator sees the cluster. Unless `moves_on`, the item must still be in `phase`.
  auto restart = [&](const std::string& phase, const std::function<void()>& meanwhile = {},
                     bool moves_on = false) {
    BOOST_REQUIRE_EQUAL(phase_of(a), phase);
    const auto before = syncs(c);
    c.kill_operator();
    E2E_NOTE("operator killed in " << phase);
    if (meanwhile)
      meanwhile();
    c.start_operator();
    BOOST_REQUIRE_MESSAGE(eventually([&] { return syncs(c) > before; }, 30s, 100ms),
                          "the restarted operator never synced");
    if (moves_on)
      return;
    // Give the new operator a moment on the item; it must not move it anywhere.
    std::this_thread::sleep_for(1s);
    BOOST_TEST(phase_of(a) == phase, "after the restart in " << phase << ": " << phase_of(a));
    BOOST_TEST(c.node(a).unschedulable);
  };

  // Draining: the PDB allows nothing.
  await_phase(a, "Draining",
              [](const item_view& i) { return json_int(i.drain, "podsBlocked") > 0; });
  restart("Draining");
  BOOST_TEST(c.node(a).unschedulable);
  (void)c.api.remove(kube::resources::pod_disruption_budgets(), c.ns, "pinned-pdb");

  // Applying: DCM's ConfigMap refuses the profile.
  await_phase(a, "Applying");
  // A write that keeps failing is retried, but not in a tight loop against the API server:
  // judged by the API server's record of each refused update, and when it came, once one
  // process has been refused for 4 s (the drain may have been short). A write is one
  // read-modify-write of up to kube::conflict_attempts requests (the 422 refusing an
  // immutable ConfigMap reads as a lost race).
  std::vector<audit_event> refused;
  eventually(
      [&] {
        refused = refused_dcm_updates(audit.read(), c.ns);
        return longest_refusal_us(refused) >= 4'000'000;
      },
      30s, 500ms);
  BOOST_TEST(phase_of(a) == "Applying");
  E2E_REQUIRE(refused.size() >= 2u, refused.size()
                                        << " refused updates of DCM's ConfigMap in the audit "
                                           "log: the operator never retried its write");
  BOOST_TEST(refused.size() <= std::size_t(20 * kube::conflict_attempts),
             refused.size() << " refused updates of DCM's ConfigMap while held in Draining and "
                               "Applying: more than 20 writes, no backoff"
                            << gaps_text(refused));
  const auto backoff = backoff_problem(refused);
  BOOST_TEST(backoff.empty(), "no backoff between refused updates of DCM's ConfigMap:"
                                  << backoff << gaps_text(refused));
  // While the operator is down, an admin replaces the ConfigMap with a writable one (same
  // content); the restarted operator adds the profile and goes on.
  restart(
      "Applying",
      [&] {
        (void)c.api.remove(kube::resources::config_maps(), c.ns, dcm_config_name);
        BOOST_REQUIRE(eventually(
            [&] { return !c.get(kube::resources::config_maps(), dcm_config_name, c.ns); }, 10s));
        auto made = c.api.create(kube::resources::config_maps(), c.ns,
                                 R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":)" +
                                     quoted(dcm_config_name) + R"(},"data":{"config.json":)" +
                                     quoted(dcm_config) + "}}");
        BOOST_REQUIRE_MESSAGE(made.ok(), (made.ok() ? "" : made.error().describe()));
      },
      /*moves_on=*/true);

  // WaitingOperator: DCM is frozen (a memory change takes 2.8 s, so it has not answered).
  await_phase(a, "WaitingOperator");
  c.simulator().signal(SIGSTOP);
  BOOST_TEST(c.node(a).label(state_label).empty(), "DCM answered before it was frozen");
  restart("WaitingOperator");
  c.simulator().signal(SIGCONT);

  // Verifying: the gate label says "no".
  await_phase(a, "Verifying");
  restart("Verifying");
  BOOST_TEST(!c.node(a).dcm_taint);
  c.patch(kube::resources::nodes(), a, R"({"metadata":{"labels":{")" + gate + R"(":"yes"}}})");

  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 90s), c.describe(plan));
  expect_no_violations(s);
  for (const auto& n : c.nodes) {
    expect_partitioned(c, n, dcm_name, 64);
    BOOST_TEST(c.node(n).label(gate) == "yes");
  }
  const auto item = c.item(plan, a);
  BOOST_REQUIRE(item);
  for (const char* p : {"Draining", "Applying", "WaitingOperator", "Verifying", "Succeeded"})
    BOOST_TEST(std::count(item->phases.begin(), item->phases.end(), p) == 1,
               "phase " << p << " entered more than once or never");
  E2E_NOTE("four kills: " << seconds_since(t0) << " s");
}

// 9b. The limits hold across restarts: a restarted operator must learn that a node is in
// flight before it grants another node a token.
BOOST_AUTO_TEST_CASE(a_restarted_operator_starts_no_other_node_while_one_is_in_flight,
                     *utf::timeout(180)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  c.add_nodes({{"a", training()}, {"b", training()}, {"c", training()}, {"d", training()}});
  c.start_simulator();
  c.await_default_service_account();
  const auto& first = c.nodes[0];
  c.create_deployment("pinned", 1, {{"kubernetes.io/hostname", first}});
  c.create_pdb("pinned-pdb", "pinned", 1);
  BOOST_REQUIRE(eventually([&] { return c.healthy_pods("pinned") == 1; }, 60s, 200ms));
  c.start_operator();
  const auto cpx = c.create_profile("cpx", profile_spec(c, cpx_payload, "cpx-nps4", 64));
  limits_check limits{1, 1};
  sampler s(c, {c.id + "-restarts"}, both(limits.fn(), only_node_starts(first)));
  plan_options o;
  o.drain_timeout = 300;
  o.entries = {{"all", c.selector(), cpx}};
  const auto plan = c.create_plan("restarts", plan_spec(o));
  E2E_REQUIRE(eventually(
                  [&] {
                    auto i = c.item(plan, first);
                    return i && i->phase == "Draining" && json_int(i->drain, "podsBlocked") > 0;
                  },
                  60s, 100ms),
              c.describe(plan));
  // Five restarts while the first node's drain is blocked by its PDB.
  for (int k = 0; k < 5; ++k) {
    const auto before = syncs(c);
    c.kill_operator();
    c.start_operator();
    BOOST_REQUIRE_MESSAGE(eventually([&] { return syncs(c) > before; }, 30s, 100ms),
                          "the restarted operator never synced");
    std::this_thread::sleep_for(1s);
  }
  const auto violations = s.stop();
  std::string all;
  for (const auto& v : violations)
    all += "\n  " + v;
  BOOST_TEST(violations.empty(), "during 5 restarts with " << first << " draining:" << all);
  const auto held = c.item(plan, first);
  BOOST_REQUIRE(held);
  BOOST_TEST(held->phase == "Draining");
  // The budget goes; the rollout completes.
  (void)c.api.remove(kube::resources::pod_disruption_budgets(), c.ns, "pinned-pdb");
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 90s), c.describe(plan));
  for (const auto& n : c.nodes)
    expect_partitioned(c, n, "cpx-nps4", 64);
  E2E_NOTE("five restarts mid-drain: " << seconds_since(t0) << " s");
}

// 10. A node selected by two plans is a conflict: neither touches it.
BOOST_AUTO_TEST_CASE(a_node_selected_by_two_plans_is_left_alone_and_both_report_the_conflict,
                     *utf::timeout(180)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  c.add_nodes({{"x", training()}, {"y", inference()}});
  c.start_simulator();
  c.start_operator();
  const auto& contested = c.nodes[0];
  const auto& free_node = c.nodes[1];
  const auto cpx = c.create_profile("cpx", profile_spec(c, cpx_payload, "cpx-nps4", 64));
  const auto spx = c.create_profile("spx", profile_spec(c, spx_payload, "spx-nps1", 8));
  auto untouched = [contested](const sample& s, std::vector<std::string>& v) {
    for (const auto& n : s.nodes)
      if (n.name == contested && (n.unavailable() || !n.label(profile_label).empty() ||
                                  n.has_annotation(was_unschedulable)))
        v.push_back("the contested node was touched");
    for (const auto& i : s.items)
      if (i.node == contested && i.phase_or_pending() != "Pending")
        v.push_back("an item for the contested node went " + i.phase);
  };
  sampler s(c, {c.id + "-all", c.id + "-training"}, untouched);
  // Both paused until both are known, so neither can start x in between.
  plan_options all;
  all.paused = true;
  all.entries = {{"all", c.selector(), spx}};
  const auto plan_all = c.create_plan("all", plan_spec(all));
  plan_options train;
  train.paused = true;
  train.entries = {{"training", c.selector({{"nodepool", "training-gpu"}}), cpx}};
  const auto plan_training = c.create_plan("training", plan_spec(train));

  auto reports_conflict = [&](const std::string& plan) {
    auto p = c.get(plans, plan);
    if (!p)
      return false;
    bool listed = false;
    if (const auto* conflicts = kube::find_path(*p, {"status", "conflicts"});
        conflicts && conflicts->IsArray())
      for (const auto& x : conflicts->GetArray())
        listed = listed || kube::string_at(x, "node") == contested;
    bool condition = false;
    if (const auto* conds = kube::find_path(*p, {"status", "conditions"});
        conds && conds->IsArray())
      for (const auto& x : conds->GetArray())
        condition = condition || (kube::string_at(x, "type") == "Conflict" &&
                                  kube::string_at(x, "status") == "True");
    return listed && condition;
  };
  E2E_REQUIRE(eventually([&] { return reports_conflict(plan_all); }, 30s, 200ms),
              c.describe(plan_all));
  E2E_REQUIRE(eventually([&] { return reports_conflict(plan_training); }, 30s, 200ms),
              c.describe(plan_training));
  c.patch(plans, plan_all, R"({"spec":{"paused":false}})");
  c.patch(plans, plan_training, R"({"spec":{"paused":false}})");
  E2E_REQUIRE(c.await_plan_phase(plan_all, "Completed", 60s), c.describe(plan_all));
  BOOST_TEST(!eventually([&] { return !c.node(contested).label(profile_label).empty(); }, 3s));
  expect_no_violations(s);
  BOOST_TEST(reports_conflict(plan_all));
  BOOST_TEST(reports_conflict(plan_training));
  BOOST_TEST(!c.item(plan_all, contested));
  BOOST_TEST(!c.item(plan_training, contested));
  expect_untouched_or_returned(c, contested);
  BOOST_TEST(c.node(contested).label(profile_label).empty());
  expect_partitioned(c, free_node, "spx-nps1", 8);
  E2E_NOTE("conflict: " << seconds_since(t0) << " s");
}

// Plan P with node Q-X and plan P-Q with node X both want the item name P-Q-X. The first
// item made keeps it; the other plan's item takes a derived name, and both plans complete.
// (Before: the second create met AlreadyExists for ever, and its plan never started.)
BOOST_AUTO_TEST_CASE(two_plans_whose_item_names_meet_both_complete, *utf::timeout(240)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  // Nodes <id>-q-<id>-x (training) and <id>-x (inference); plans <id>-p and <id>-p-<id>-q.
  c.add_nodes({{"q-" + c.id + "-x", training()}, {"x", inference()}});
  c.start_simulator();
  c.start_operator();
  const auto& first_node = c.nodes[0];
  const auto& second_node = c.nodes[1];
  const auto cpx = c.create_profile("cpx", profile_spec(c, cpx_payload, "cpx-nps4", 64));
  const auto spx = c.create_profile("spx", profile_spec(c, spx_payload, "spx-nps1", 8));
  plan_options first;
  first.entries = {{"training", c.selector({{"nodepool", "training-gpu"}}), cpx}};
  const auto plan_first = c.create_plan("p", plan_spec(first));
  const std::string shared_name = plan_first + "-" + first_node;
  E2E_REQUIRE(eventually([&] { return c.get(items, shared_name).has_value(); }, 30s, 200ms),
              c.describe(plan_first));
  plan_options second;
  second.entries = {{"inference", c.selector({{"nodepool", "inference-gpu"}}), spx}};
  const auto plan_second = c.create_plan("p-" + c.id + "-q", plan_spec(second));
  BOOST_TEST_REQUIRE(plan_second + "-" + second_node == shared_name);
  E2E_REQUIRE(c.await_plan_phase(plan_first, "Completed", 90s), c.describe(plan_first));
  E2E_REQUIRE(c.await_plan_phase(plan_second, "Completed", 90s), c.describe(plan_second));
  const auto mine = c.item(plan_first, first_node);
  BOOST_TEST_REQUIRE(mine.has_value());
  BOOST_TEST(mine->name == shared_name);
  const auto theirs = c.item(plan_second, second_node);
  BOOST_TEST_REQUIRE(theirs.has_value());
  BOOST_TEST(theirs->name != shared_name);
  BOOST_TEST(theirs->name.rfind(shared_name + "-", 0) == 0u, theirs->name);
  expect_partitioned(c, first_node, "cpx-nps4", 64);
  expect_partitioned(c, second_node, "spx-nps1", 8);
  E2E_NOTE("names that meet: " << seconds_since(t0) << " s");
}

BOOST_AUTO_TEST_SUITE_END()
