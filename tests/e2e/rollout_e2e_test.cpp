// When and how far a rollout may go (issue 24), end to end on the real control plane with
// gpu-sim: a change window that opens after the plan is applied, a canary promoted
// automatically and one promoted with `kubectl partitioning promote`, a canary whose node
// fails, and a failure budget that lets the rest complete.
#include "tests/e2e/support/e2e.hpp"

#include "protocol/timestamp.hpp"

#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace gpu_partitioner;
using namespace gpu_partitioner::e2e;
using namespace std::chrono_literals;
namespace utf = boost::unit_test;

namespace {

const char* cpx_nps4 = R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX",)"
                       R"("memoryPartition":"NPS4","numGPUsAssigned":8}]})";

const char* spx_nps1 = R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"SPX",)"
                       R"("memoryPartition":"NPS1","numGPUsAssigned":8}]})";

node_spec with_fault(const std::string& fault) {
  node_spec s;
  s.fault = fault;
  return s;
}

std::string profile_spec(const e2e_cluster& c) {
  return R"({"targetSelector":{"matchLabels":{"gpu.vendor":"amd","gpu.family":"mi300x"}},)"
         R"("expectedResources":[{"name":"amd.com/gpu","count":64}],)"
         R"("verification":{"timeoutSeconds":20},"operatorPayload":{"kind":"ConfigMap",)"
         R"("name":"cpx","namespace":)" +
         quoted(c.ns) + R"(,"profileName":)" + quoted("e2e-cpx-" + c.key) + "}}";
}

/// A profile of whole GPUs (SPX, NPS1): 8 per node.
std::string spx_profile_spec(const e2e_cluster& c) {
  return R"({"targetSelector":{"matchLabels":{"gpu.vendor":"amd","gpu.family":"mi300x"}},)"
         R"("expectedResources":[{"name":"amd.com/gpu","count":8}],)"
         R"("verification":{"timeoutSeconds":20},"operatorPayload":{"kind":"ConfigMap",)"
         R"("name":"spx","namespace":)" +
         quoted(c.ns) + R"(,"profileName":)" + quoted("e2e-spx-" + c.key) + "}}";
}

/// The merge patch that points the plan's one entry at `profile`.
std::string point_at(const e2e_cluster& c, const std::string& profile) {
  return R"({"spec":{"partitionings":[{"name":"all","selector":)" + c.selector() +
         R"(,"profileRef":{"kind":"PartitioningProfile","name":)" + quoted(profile) + "}}]}}";
}

/// One entry over the test's nodes; `rollout` is more of spec.rollout.
std::string plan_spec(const e2e_cluster& c, const std::string& profile, int max_parallel,
                      const std::string& rollout, const std::string& drain = {}) {
  return R"({"rollout":{"maxParallel":)" + std::to_string(max_parallel) +
         R"(,"maxUnavailable":3,"drainPolicy":{"timeoutSeconds":120)" +
         (drain.empty() ? "" : "," + drain) + "}" + (rollout.empty() ? "" : "," + rollout) +
         R"(},"verification":{"requirePluginResources":["amd.com/gpu"],"timeoutSeconds":20},)"
         R"("partitionings":[{"name":"all","selector":)" +
         c.selector() + R"(,"profileRef":{"kind":"PartitioningProfile","name":)" + quoted(profile) +
         "}}]}";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The plan's status member at `path` as text ("" if absent).
std::string plan_status(e2e_cluster& c, const std::string& plan,
                        std::initializer_list<const char*> path) {
  auto p = c.get(plans, plan);
  if (!p)
    return {};
  const rapidjson::Value* v = kube::find_path(*p, {"status"});
  for (const char* key : path) {
    if (!v || !v->IsObject() || !v->HasMember(key))
      return {};
    v = &(*v)[key];
  }
  if (v->IsString())
    return v->GetString();
  if (v->IsBool())
    return v->GetBool() ? "true" : "false";
  if (v->IsArray()) {
    std::string out;
    for (const auto& x : v->GetArray())
      out += (out.empty() ? "" : ",") + std::string(x.IsString() ? x.GetString() : "?");
    return out;
  }
  return {};
}

/// The reasons of the Events about the plan.
std::vector<std::string> plan_events(e2e_cluster& c, const std::string& plan) {
  std::vector<std::string> out;
  kube::list_options about;
  about.field_selector = "involvedObject.kind=PartitioningPlan,involvedObject.name=" + plan;
  if (auto events = c.api.list(kube::resources::events(), "", about); events.ok())
    for (const auto& e : events.value()["items"].GetArray())
      out.push_back(kube::string_at(e, "reason"));
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

/// Nodes of the plan that ever started (an item in flight, or with a startedAt).
std::vector<std::string> started(const std::vector<item_view>& items) {
  std::vector<std::string> out;
  for (const auto& i : items)
    if (!i.started_at.empty() || i.in_flight())
      out.push_back(i.node);
  return out;
}

struct plugin_result {
  int status = -1;
  std::string output;
};

/// kubectl-partitioning (the plugin binary) with `args`, against $KUBECONFIG.
plugin_result run_plugin(const std::vector<std::string>& args) {
  std::string command = runfile("cli/kubectl-partitioning");
  for (const auto& a : args)
    command += " '" + a + "'";
  command += " 2>&1";
  plugin_result r;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr)
    return r;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr)
    r.output += buf;
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

struct fixture {
  e2e_cluster c;
  std::string profile;
  void start(const std::vector<std::string>& faults) {
    std::vector<std::pair<std::string, node_spec>> specs;
    for (std::size_t i = 0; i < faults.size(); ++i)
      specs.push_back({std::string(1, static_cast<char>('a' + i)), with_fault(faults[i])});
    c.add_nodes(specs);
    c.start_simulator();
    c.start_operator();
    c.create_payload("cpx", cpx_nps4);
    profile = c.create_profile("cpx", profile_spec(c));
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(rollout)

// A window in Asia/Kolkata (UTC+05:30) opening on a minute boundary 25 to 85 s after the
// plan: nothing starts before it; the node that starts in it is held by its drain past
// the window's close and still finishes; the others wait for tomorrow's window.
BOOST_FIXTURE_TEST_CASE(a_window_gates_starts_and_lets_a_node_in_flight_finish, fixture,
                        *utf::timeout(420)) {
  start({"", "", ""});
  const auto a = c.nodes[0];
  // A pod on a that its drain lets run for 65 s: a is in flight when the one-minute window
  // closes.
  c.create_deployment("trainer", 1, {{"kubernetes.io/hostname", a}});
  E2E_REQUIRE(eventually([&] { return c.healthy_pods("trainer") == 1; }, 60s),
              "the trainer did not start");
  const auto now = std::chrono::system_clock::now();
  const auto minute = std::chrono::duration_cast<std::chrono::minutes>(now.time_since_epoch());
  // The first minute boundary at least 25 s away: time to see that nothing starts before.
  auto opens = std::chrono::system_clock::time_point(minute + 1min);
  if (opens - now < 25s)
    opens += 1min;
  const auto closes = opens + 1min;
  auto kolkata = [](std::chrono::system_clock::time_point t) {
    const std::time_t local = std::chrono::system_clock::to_time_t(t) + 5 * 3600 + 30 * 60;
    std::tm tm{};
    gmtime_r(&local, &tm);
    char buf[6];
    std::snprintf(buf, sizeof buf, "%02d:%02d", tm.tm_hour, tm.tm_min);
    return std::string(buf);
  };
  const auto plan = c.create_plan(
      "window", plan_spec(c, profile, 1,
                          R"("windows":[{"start":)" + quoted(kolkata(opens)) + R"(,"end":)" +
                              quoted(kolkata(closes)) + R"(,"timeZone":"Asia/Kolkata"}])",
                          R"("waitForCompletion":{"podSelector":{"matchLabels":{"app":"trainer"}},)"
                          R"("timeoutSeconds":65})"));
  E2E_REQUIRE(
      eventually([&] { return contains(c.plan_condition(plan, "OutsideWindow"), "True/"); }, 30s),
      c.describe(plan));
  BOOST_TEST(plan_status(c, plan, {"window", "nextStart"}) == protocol::format_time(opens));
  // Nothing starts before the window opens.
  while (std::chrono::system_clock::now() < opens - 2s) {
    BOOST_TEST_REQUIRE(started(c.plan_items(plan)).empty(), c.describe(plan));
    std::this_thread::sleep_for(1s);
  }
  E2E_REQUIRE(eventually([&] { return !started(c.plan_items(plan)).empty(); }, 30s),
              c.describe(plan));
  auto first = c.item(plan, a);
  BOOST_REQUIRE(first);
  BOOST_TEST(first->started_at >= protocol::format_time(opens), first->started_at);
  BOOST_TEST(eventually(
      [&] { return contains(c.plan_condition(plan, "OutsideWindow"), "False/InsideWindow"); },
      10s));
  // a finishes after the window closed; b and c never start.
  E2E_REQUIRE(eventually(
                  [&] {
                    auto i = c.item(plan, a);
                    return i && i->phase == "Succeeded";
                  },
                  240s),
              c.describe(plan));
  first = c.item(plan, a);
  BOOST_REQUIRE(first);
  BOOST_TEST(first->completed_at >= protocol::format_time(closes),
             "a finished at " << first->completed_at << ", the window closed at "
                              << protocol::format_time(closes));
  // The operator has taken a's success in, outside the window, and put b and c off to
  // tomorrow's: then watch for a while.
  E2E_REQUIRE(eventually(
                  [&] {
                    return c.plan_status_current(plan) &&
                           contains(c.plan_condition(plan, "Completed"), "1/3 nodes succeeded") &&
                           contains(c.plan_condition(plan, "OutsideWindow"),
                                    "True/OutsideWindow") &&
                           plan_status(c, plan, {"window", "nextStart"}) ==
                               protocol::format_time(opens + 24h);
                  },
                  30s),
              c.describe(plan) << c.plan_condition(plan, "OutsideWindow"));
  std::this_thread::sleep_for(5s);
  const auto items = c.plan_items(plan);
  BOOST_TEST(started(items) == std::vector<std::string>{a}, c.describe(plan));
  BOOST_TEST(contains(c.plan_condition(plan, "OutsideWindow"), "True/OutsideWindow"),
             c.plan_condition(plan, "OutsideWindow"));
  BOOST_TEST(plan_status(c, plan, {"window", "nextStart"}) == protocol::format_time(opens + 24h));
  BOOST_TEST(!c.node(a).unavailable());
}

// An automatic canary of one node with a soak: only it starts; once it has soaked (an
// operator restart in the middle neither resets nor skips the soak) the canary passes,
// an Event says so, and the rest follow.
BOOST_FIXTURE_TEST_CASE(a_canary_passes_its_soak_and_promotes_itself, fixture, *utf::timeout(300)) {
  start({"", "", ""});
  const auto plan =
      c.create_plan("canary", plan_spec(c, profile, 3, R"("canary":{"nodes":1,"soakSeconds":12})"));
  E2E_REQUIRE(eventually(
                  [&] {
                    return plan_status(c, plan, {"canary", "phase"}) == "InProgress";
                  },
                  30s),
              c.describe(plan));
  BOOST_TEST(plan_status(c, plan, {"canary", "nodes"}) == c.nodes[0]);
  // The canary node soaks; the operator restarts meanwhile.
  E2E_REQUIRE(eventually(
                  [&] {
                    auto i = c.item(plan, c.nodes[0]);
                    return i && contains(i->conditions["Soaked"], "False/Soaking");
                  },
                  120s),
              c.describe(plan));
  c.kill_operator();
  std::this_thread::sleep_for(2s);
  c.start_operator();
  // While the canary is out, no other node starts, even with room for three: the others
  // start no sooner than the canary passed (the status may show the pass after them).
  E2E_REQUIRE(eventually(
                  [&] {
                    return plan_status(c, plan, {"canary", "phase"}) == "Passed";
                  },
                  150s, 200ms),
              c.describe(plan));
  const auto passed_at = plan_status(c, plan, {"canary", "passedAt"});
  auto canary = c.item(plan, c.nodes[0]);
  BOOST_REQUIRE(canary);
  // It passed no sooner than its soak after it succeeded.
  const auto done = protocol::parse_time(canary->completed_at);
  const auto passed = protocol::parse_time(passed_at);
  BOOST_REQUIRE(done && passed);
  BOOST_TEST((*passed - *done >= 11s), canary->completed_at << " .. " << passed_at);
  BOOST_TEST(contains(canary->conditions["Soaked"], "True/Soaked"), canary->conditions["Soaked"]);
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 120s), c.describe(plan));
  for (const auto& i : c.plan_items(plan))
    if (i.node != c.nodes[0])
      BOOST_TEST(i.started_at >= passed_at, i.node << " started at " << i.started_at);
  BOOST_TEST(has(plan_events(c, plan), "CanaryPassed"));
  BOOST_TEST(contains(c.plan_condition(plan, "Canary"), "True/"));
}

// A manual canary waits after its soak until `kubectl partitioning promote`.
BOOST_FIXTURE_TEST_CASE(a_manual_canary_waits_for_promote, fixture, *utf::timeout(300)) {
  start({"", ""});
  const auto plan = c.create_plan(
      "manual", plan_spec(c, profile, 2, R"("canary":{"nodes":1,"promotion":"Manual"})"));
  E2E_REQUIRE(eventually(
                  [&] {
                    return plan_status(c, plan, {"canary", "phase"}) == "AwaitingPromotion";
                  },
                  120s),
              c.describe(plan));
  // It stays waiting: the other node does not start.
  std::this_thread::sleep_for(5s);
  BOOST_TEST(plan_status(c, plan, {"canary", "phase"}) == "AwaitingPromotion");
  BOOST_TEST(started(c.plan_items(plan)) == std::vector<std::string>{c.nodes[0]});
  BOOST_TEST(has(plan_events(c, plan), "CanaryAwaitingPromotion"));
  const auto out = run_plugin({"promote", plan});
  BOOST_TEST(out.status == 0, out.output);
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 120s), c.describe(plan));
  BOOST_TEST(plan_status(c, plan, {"canary", "phase"}) == "Passed");
}

// A plan's second rollout has a canary and a promotion of its own: a manual canary passes
// and is promoted, the plan completes; then it names another profile. A new canary is
// chosen, only its node is run again, and the rest wait for a promotion of this rollout
// (the first promotion, still on the plan, does not count).
BOOST_FIXTURE_TEST_CASE(a_second_rollout_has_a_canary_and_a_promotion_of_its_own, fixture,
                        *utf::timeout(420)) {
  start({"", "", ""});
  const auto plan = c.create_plan(
      "again", plan_spec(c, profile, 3, R"("canary":{"nodes":1,"promotion":"Manual"})"));
  auto awaiting = [&] {
    return c.plan_status_current(plan) &&
           plan_status(c, plan, {"canary", "phase"}) == "AwaitingPromotion";
  };
  E2E_REQUIRE(eventually(awaiting, 120s), c.describe(plan));
  auto out = run_plugin({"promote", plan});
  BOOST_TEST_REQUIRE(out.status == 0, out.output);
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 120s), c.describe(plan));
  const auto first_key = plan_status(c, plan, {"canary", "key"});
  std::map<std::string, std::string> first_start;
  for (const auto& i : c.plan_items(plan))
    first_start[i.node] = i.started_at;
  BOOST_TEST_REQUIRE(first_start.size() == 3u);

  c.create_payload("spx", spx_nps1);
  const auto spx = c.create_profile("spx", spx_profile_spec(c));
  c.patch(plans, plan, point_at(c, spx));
  E2E_REQUIRE(eventually(
                  [&] {
                    return awaiting() && plan_status(c, plan, {"canary", "key"}) != first_key;
                  },
                  180s),
              c.describe(plan) << plan_status(c, plan, {"canary", "message"}));
  const auto canary = plan_status(c, plan, {"canary", "nodes"});
  BOOST_TEST(canary == c.nodes[0]);
  // Held: only the canary ran again.
  std::this_thread::sleep_for(5s);
  BOOST_TEST(plan_status(c, plan, {"canary", "phase"}) == "AwaitingPromotion");
  for (const auto& i : c.plan_items(plan)) {
    if (i.node == canary) {
      BOOST_TEST(i.started_at > first_start[i.node], i.node << " " << i.started_at);
      BOOST_TEST(i.phase == "Succeeded");
    } else {
      BOOST_TEST(i.started_at == first_start[i.node], i.node << " started again");
      BOOST_TEST(i.phase_or_pending() == "Pending", i.node << " is " << i.phase);
    }
  }
  out = run_plugin({"promote", plan});
  BOOST_TEST_REQUIRE(out.status == 0, out.output);
  E2E_REQUIRE(eventually(
                  [&] {
                    return c.plan_status_current(plan) && c.plan_phase(plan) == "Completed" &&
                           c.await_items(plan, 3, "Succeeded", 1s);
                  },
                  150s),
              c.describe(plan));
  for (const auto& i : c.plan_items(plan))
    BOOST_TEST(i.started_at > first_start[i.node], i.node << " was not run again");
  BOOST_TEST(plan_status(c, plan, {"canary", "phase"}) == "Passed");
}

// The canary node fails verification (its plugin reports 63 partitions, not 64): the
// plan stops with CanaryFailed and no other node is touched.
BOOST_FIXTURE_TEST_CASE(a_failed_canary_stops_the_plan_untouched, fixture, *utf::timeout(300)) {
  start({"wrong-count", "", ""});
  const auto b = c.nodes[1];
  const auto cc = c.nodes[2];
  const auto before_b = c.node(b).fingerprint();
  const auto before_c = c.node(cc).fingerprint();
  const auto plan = c.create_plan("failing", plan_spec(c, profile, 3, R"("canary":{"nodes":1})"));
  E2E_REQUIRE(eventually(
                  [&] {
                    return plan_status(c, plan, {"canary", "phase"}) == "Failed";
                  },
                  120s),
              c.describe(plan));
  BOOST_TEST(contains(c.plan_condition(plan, "Degraded"), "True/CanaryFailed"),
             c.plan_condition(plan, "Degraded"));
  BOOST_TEST(contains(plan_status(c, plan, {"canary", "message"}), c.nodes[0]));
  std::this_thread::sleep_for(5s);
  BOOST_TEST(started(c.plan_items(plan)) == std::vector<std::string>{c.nodes[0]}, c.describe(plan));
  BOOST_TEST(c.node(b).fingerprint() == before_b);
  BOOST_TEST(c.node(cc).fingerprint() == before_c);
  BOOST_TEST(c.plan_phase(plan) == "Degraded");
  BOOST_TEST(has(plan_events(c, plan), "CanaryFailed"));
  // The failed node is relabelled out of the plan: its item goes, and the canary's verdict
  // stays. Nothing else starts.
  c.patch(kube::resources::nodes(), c.nodes[0], R"({"metadata":{"labels":{"e2e":null}}})");
  E2E_REQUIRE(eventually([&] { return !c.item(plan, c.nodes[0]); }, 60s), c.describe(plan));
  std::this_thread::sleep_for(5s);
  BOOST_TEST(c.plan_status_current(plan));
  BOOST_TEST(c.plan_phase(plan) == "Degraded", c.describe(plan));
  BOOST_TEST(plan_status(c, plan, {"canary", "phase"}) == "Failed");
  BOOST_TEST(plan_status(c, plan, {"canary", "failedNodes"}) == c.nodes[0]);
  BOOST_TEST(contains(c.plan_condition(plan, "Degraded"), "True/CanaryFailed"),
             c.plan_condition(plan, "Degraded"));
  BOOST_TEST(started(c.plan_items(plan)).empty(), c.describe(plan));
  BOOST_TEST(c.node(b).fingerprint() == before_b);
  BOOST_TEST(c.node(cc).fingerprint() == before_c);
}

// maxFailures 1: the failing node is counted and the others complete, each soaking 3 s
// (holding the one token) before the next starts.
BOOST_FIXTURE_TEST_CASE(max_failures_one_lets_the_rest_complete, fixture, *utf::timeout(300)) {
  start({"", "dcm-failure", ""});
  const auto plan =
      c.create_plan("budget", plan_spec(c, profile, 1, R"("maxFailures":1,"nodeSoakSeconds":3)"));
  E2E_REQUIRE(eventually(
                  [&] {
                    const auto items = c.plan_items(plan);
                    int succeeded = 0, failed = 0;
                    for (const auto& i : items) {
                      succeeded += i.phase == "Succeeded";
                      failed += i.phase == "Failed";
                    }
                    return items.size() == 3 && succeeded == 2 && failed == 1;
                  },
                  180s),
              c.describe(plan));
  const auto failing = c.item(plan, c.nodes[1]);
  BOOST_REQUIRE(failing);
  BOOST_TEST(failing->phase == "Failed");
  E2E_REQUIRE(eventually([&] { return c.plan_phase(plan) == "Degraded"; }, 30s), c.describe(plan));
  BOOST_TEST(contains(c.plan_condition(plan, "Degraded"), "within maxFailures (1)"),
             c.plan_condition(plan, "Degraded"));
  BOOST_TEST(c.back_in_service(c.nodes[0]));
  BOOST_TEST(c.back_in_service(c.nodes[2]));
  const auto a = c.item(plan, c.nodes[0]);
  const auto b = c.item(plan, c.nodes[1]);
  BOOST_REQUIRE(a && b);
  auto soaked = a->conditions;
  BOOST_TEST(contains(soaked["Soaked"], "True/Soaked"), soaked["Soaked"]);
  // b started only once a had soaked.
  const auto a_done = protocol::parse_time(a->completed_at);
  const auto b_start = protocol::parse_time(b->started_at);
  BOOST_REQUIRE(a_done && b_start);
  BOOST_TEST((*b_start - *a_done >= 3s), a->completed_at << " .. " << b->started_at);
}

// A dry run with a closed window and a canary: the status names the canary and when nodes
// may start; nothing starts and no node changes. A window of no length is refused first.
BOOST_FIXTURE_TEST_CASE(a_dry_run_previews_the_canary_and_the_window, fixture, *utf::timeout(180)) {
  start({"", "", ""});
  std::vector<std::string> before;
  for (const auto& n : c.nodes)
    before.push_back(c.node(n).fingerprint());
  // From twelve hours from now, for a minute, in UTC: the window is closed.
  auto clock_at = [](std::chrono::system_clock::time_point when) {
    const std::time_t t = std::chrono::system_clock::to_time_t(when);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char at[6];
    std::snprintf(at, sizeof at, "%02d:%02d", tm.tm_hour, tm.tm_min);
    return std::string(at);
  };
  const auto opens = std::chrono::system_clock::now() + 12h;
  const std::string start_at = clock_at(opens);
  const std::string end_at = clock_at(opens + 1min);
  auto window = [&](const std::string& end) {
    return R"("canary":{"nodes":2},"windows":[{"start":)" + quoted(start_at) + R"(,"end":)" +
           quoted(end) + "}]";
  };
  // A window of no length is refused at apply time (a CEL rule; the operator's own check,
  // for plans stored before it, is unit-tested).
  auto refused = c.api.create(plans, "",
                              R"({"apiVersion":"infrastructure.silogen.ai/v1alpha1","kind":)"
                              R"("PartitioningPlan","metadata":{"name":)" +
                                  quoted(c.id + "-empty-window") + R"(},"spec":)" +
                                  plan_spec(c, profile, 3, window(start_at)) + "}");
  BOOST_TEST_REQUIRE(!refused.ok());
  BOOST_TEST(refused.error().code == 422);
  BOOST_TEST(contains(refused.error().message,
                      "spec.rollout.windows[0]: Invalid value: start and end are the same time"));
  auto dry = plan_spec(c, profile, 3, window(end_at));
  dry.insert(1, R"("dryRun":true,)");
  const auto plan = c.create_plan("preview", dry);
  E2E_REQUIRE(eventually(
                  [&] {
                    return !plan_status(c, plan, {"canary", "nodes"}).empty();
                  },
                  60s),
              c.describe(plan));
  BOOST_TEST(plan_status(c, plan, {"canary", "nodes"}) == c.nodes[0] + "," + c.nodes[1]);
  BOOST_TEST(contains(plan_status(c, plan, {"canary", "message"}), "dry run"));
  BOOST_TEST(plan_status(c, plan, {"window", "open"}) == "false");
  BOOST_TEST(!plan_status(c, plan, {"window", "nextStart"}).empty());
  BOOST_TEST(contains(c.plan_condition(plan, "OutsideWindow"), "True/OutsideWindow"));
  std::this_thread::sleep_for(3s);
  BOOST_TEST(started(c.plan_items(plan)).empty());
  for (std::size_t i = 0; i < c.nodes.size(); ++i)
    BOOST_TEST(c.node(c.nodes[i]).fingerprint() == before[i]);
  // Each item carries its plan and node as labels; one without them (as an earlier version
  // made it) is labelled again by the next operator to run.
  const auto made = c.plan_items(plan);
  BOOST_TEST_REQUIRE(made.size() == c.nodes.size());
  for (const auto& item : made) {
    BOOST_TEST(item.labels.count("infrastructure.silogen.ai/plan") == 1u);
    BOOST_TEST(item.labels.count("infrastructure.silogen.ai/node") == 1u);
    BOOST_TEST(item.labels.at("infrastructure.silogen.ai/plan") == plan);
    BOOST_TEST(item.labels.at("infrastructure.silogen.ai/node") == item.node);
  }
  c.kill_operator();
  const auto stripped = made.front().name;
  c.patch(items, stripped,
          R"({"metadata":{"labels":{"infrastructure.silogen.ai/plan":null,)"
          R"("infrastructure.silogen.ai/node":null,"team":"ml"}}})");
  c.start_operator();
  E2E_REQUIRE(eventually(
                  [&] {
                    auto item = c.item(plan, made.front().node);
                    return item && item->labels.count("infrastructure.silogen.ai/plan") == 1u &&
                           item->labels.count("infrastructure.silogen.ai/node") == 1u;
                  },
                  60s),
              "item " + stripped + " was not labelled again");
  BOOST_TEST(c.item(plan, made.front().node)->labels.at("team") == "ml");
}

BOOST_AUTO_TEST_SUITE_END()
