// The drain's pod policies and what holds a drain, end to end on the real control plane
// with gpu-sim playing the nodes' kubelets (issue 23). Each case asserts where every pod
// went, what the status and the Events said, and each node's final state.
#include "tests/e2e/support/e2e.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

using namespace gpu_partitioner;
using namespace gpu_partitioner::e2e;
using namespace std::chrono_literals;
namespace utf = boost::unit_test;

namespace {

const kube::resource deployments_{"apps", "v1", "deployments", true};

const char* cpx_nps4 = R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX",)"
                       R"("memoryPartition":"NPS4","numGPUsAssigned":8}]})";

node_spec training() {
  node_spec s;
  s.pool = "training-gpu";
  return s;
}

std::string profile_spec(const e2e_cluster& c, const std::string& payload,
                         const std::string& dcm_name) {
  return R"({"targetSelector":{"matchLabels":{"gpu.vendor":"amd","gpu.family":"mi300x"}},)"
         R"("expectedResources":[{"name":"amd.com/gpu","count":64}],)"
         R"("verification":{"timeoutSeconds":60},"operatorPayload":{"kind":"ConfigMap","name":)" +
         quoted(payload) + R"(,"namespace":)" + quoted(c.ns) + R"(,"profileName":)" +
         quoted(dcm_name) + "}}";
}

/// One entry over the test's nodes, one at a time; `drain` is more of drainPolicy.
std::string plan_spec(const e2e_cluster& c, const std::string& profile,
                      const std::string& drain = {}, bool dry_run = false) {
  return R"({"dryRun":)" + std::string(dry_run ? "true" : "false") +
         R"(,"rollout":{"maxParallel":1,"maxUnavailable":1,"drainPolicy":{"timeoutSeconds":120)" +
         (drain.empty() ? "" : "," + drain) +
         R"(}},"verification":{"requirePluginResources":["amd.com/gpu"],"timeoutSeconds":60},)"
         R"("partitionings":[{"name":"all","selector":)" +
         c.selector() + R"(,"profileRef":{"kind":"PartitioningProfile","name":)" + quoted(profile) +
         "}}]}";
}

/// A pod spec's common part: on the test's nodes, tolerating its own taint, 1 s of grace.
std::string pod_spec(const e2e_cluster& c, const std::string& extra) {
  return R"({"automountServiceAccountToken":false,"terminationGracePeriodSeconds":1,)"
         R"("nodeSelector":{"e2e":)" +
         quoted(c.key) + R"(},"tolerations":[{"key":"e2e","operator":"Equal","value":)" +
         quoted(c.key) + R"(,"effect":"NoSchedule"}],)" + extra +
         R"("containers":[{"name":"c","image":"x:sim"}]})";
}

/// A Deployment of one pod labelled app=<name> (plus `labels`, a JSON object's members),
/// its pods annotated with `annotations` (likewise).
void deployment(e2e_cluster& c, const std::string& name, const std::string& extra_spec = {},
                const std::string& labels = {}, const std::string& annotations = {}) {
  const std::string all = R"("app":)" + quoted(name) + (labels.empty() ? "" : "," + labels);
  auto r = c.api.create(
      deployments_, c.ns,
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":)" + quoted(name) +
          R"(},"spec":{"replicas":1,"selector":{"matchLabels":{"app":)" + quoted(name) +
          R"(}},"template":{"metadata":{"labels":{)" + all + R"(},"annotations":{)" + annotations +
          R"(}},"spec":)" + pod_spec(c, extra_spec) + "}}}");
  BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().describe()));
}

/// A pod no controller owns, bound to `node`, labelled app=<name> (plus `labels`, a JSON
/// object's members); `extra_meta` is more of its metadata.
void bare_pod(e2e_cluster& c, const std::string& name, const std::string& node,
              const std::string& extra_meta = {}, const std::string& labels = {}) {
  auto r = c.api.create(
      kube::resources::pods(), c.ns,
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":)" + quoted(name) +
          R"(,"labels":{"app":)" + quoted(name) + (labels.empty() ? "" : "," + labels) + "}" +
          extra_meta + R"(},"spec":)" + pod_spec(c, R"("nodeName":)" + quoted(node) + ",") + "}");
  BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().describe()));
}

const char* empty_dir = R"("volumes":[{"name":"scratch","emptyDir":{}}],)";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// "Type Reason: message" of the Events about the plan's item for `node`.
std::vector<std::string> item_events(e2e_cluster& c, const std::string& plan,
                                     const std::string& node) {
  std::vector<std::string> out;
  const auto item = c.item(plan, node);
  if (!item)
    return out;
  kube::list_options about;
  about.field_selector = "involvedObject.kind=NodePartitioning,involvedObject.name=" + item->name;
  if (auto events = c.api.list(kube::resources::events(), "", about); events.ok())
    for (const auto& e : events.value()["items"].GetArray())
      out.push_back(kube::string_at(e, "type") + " " + kube::string_at(e, "reason") + ": " +
                    kube::string_at(e, "message"));
  return out;
}

bool has_event(const std::vector<std::string>& events, const std::string& head,
               const std::string& part) {
  return std::any_of(events.begin(), events.end(), [&](const std::string& e) {
    return e.rfind(head, 0) == 0 && contains(e, part);
  });
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v)
    out += (out.empty() ? "" : " | ") + s;
  return out;
}

/// Waits until the item's status.drain holds `part`.
bool await_drain(e2e_cluster& c, const std::string& plan, const std::string& node,
                 const std::string& part, std::chrono::milliseconds timeout) {
  return eventually(
      [&] {
        auto i = c.item(plan, node);
        return i && contains(i->drain, part);
      },
      timeout, 200ms);
}

void expect_back_in_service(e2e_cluster& c, const std::string& node) {
  BOOST_TEST(c.back_in_service(node), node << " is left cordoned or tainted");
  BOOST_TEST(c.node(node).gpus == 64);
}

struct fixture {
  e2e_cluster c;
  std::string profile;
  void start(int nodes = 1) {
    std::vector<std::pair<std::string, node_spec>> specs;
    for (int i = 0; i < nodes; ++i)
      specs.push_back({std::string(1, static_cast<char>('a' + i)), training()});
    c.add_nodes(specs);
    c.start_simulator();
    c.await_default_service_account();
  }
  void operate() {
    c.start_operator();
    c.create_payload("cpx", cpx_nps4);
    profile = c.create_profile("cpx", profile_spec(c, "cpx", "e2e-cpx-" + c.key));
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(drain)

// The defaults: a pod with emptyDir data is evicted and the loss named; a pod no
// controller owns blocks the drain (status, Event) until an admin removes it.
BOOST_FIXTURE_TEST_CASE(defaults_evict_empty_dir_pods_and_refuse_unmanaged_ones, fixture,
                        *utf::timeout(240)) {
  start();
  const auto a = c.nodes[0];
  deployment(c, "scratch", empty_dir);
  bare_pod(c, "bare", a);
  E2E_REQUIRE(
      eventually([&] { return c.healthy_pods("scratch") == 1 && c.healthy_pods("bare") == 1; },
                 60s),
      "the pods did not start");
  operate();
  const auto plan = c.create_plan("defaults", plan_spec(c, profile));
  E2E_REQUIRE(await_drain(c, plan, a, R"("cause":"Policy")", 60s), c.describe(plan));
  auto item = c.item(plan, a);
  BOOST_REQUIRE(item);
  BOOST_TEST(contains(item->drain, R"("name":"bare")"), item->drain);
  BOOST_TEST(contains(item->drain, "drainPolicy.force"), item->drain);
  BOOST_TEST(contains(item->conditions["Drained"], "False/EvictionRefused"),
             item->conditions["Drained"]);
  BOOST_TEST(c.node(a).unschedulable);
  BOOST_TEST(!c.node(a).dcm_taint, "a refused pod holds the taint back");
  // The emptyDir pod went, its loss named; the bare one stays, named in a warning.
  BOOST_TEST(eventually([&] { return c.healthy_pods("scratch") == 0; }, 30s));
  std::vector<std::string> events;
  BOOST_TEST(eventually(
                 [&] {
                   events = item_events(c, plan, a);
                   return has_event(events, "Warning EmptyDirDataDeleted", "/scratch-") &&
                          has_event(events, "Warning DrainBlocked", "/bare");
                 },
                 30s, 500ms),
             joined(events));
  BOOST_TEST(c.healthy_pods("bare") == 1);
  // The admin deletes it: the drain goes on and the rollout completes.
  BOOST_REQUIRE(c.api.remove(kube::resources::pods(), c.ns, "bare"));
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 120s), c.describe(plan));
  expect_back_in_service(c, a);
  BOOST_TEST(eventually([&] { return c.healthy_pods("scratch") == 1; }, 60s),
             "the Deployment's pod came back on the uncordoned node");
  BOOST_TEST(c.pods("app=bare").empty());
}

// force evicts the unmanaged pod (named); deleteEmptyDirData false refuses the emptyDir
// one; podSelector leaves an unselected pod to block; the grace override applies.
BOOST_FIXTURE_TEST_CASE(force_empty_dir_and_pod_selector_decide_each_pod, fixture,
                        *utf::timeout(240)) {
  start();
  const auto a = c.nodes[0];
  deployment(c, "scratch", empty_dir, R"("drain":"yes")");
  deployment(c, "unselected");
  bare_pod(c, "bare", a, {}, R"("drain":"yes")");
  E2E_REQUIRE(eventually(
                  [&] {
                    return c.healthy_pods("scratch") == 1 && c.healthy_pods("bare") == 1 &&
                           c.healthy_pods("unselected") == 1;
                  },
                  60s),
              "the pods did not start");
  operate();
  const auto plan = c.create_plan(
      "policies", plan_spec(c, profile,
                            R"("force":true,"deleteEmptyDirData":false,"gracePeriodSeconds":0,)"
                            R"("podSelector":{"matchLabels":{"drain":"yes"}})"));
  E2E_REQUIRE(await_drain(c, plan, a, "deleteEmptyDirData", 60s) &&
                  await_drain(c, plan, a, "podSelector does not select it", 10s),
              c.describe(plan));
  // The forced pod is gone, and said to be.
  BOOST_TEST(eventually([&] { return c.pods("app=bare").empty(); }, 30s));
  std::vector<std::string> events;
  BOOST_TEST(eventually(
                 [&] {
                   events = item_events(c, plan, a);
                   return has_event(events, "Warning UnmanagedPodEvicted", "/bare");
                 },
                 30s, 500ms),
             joined(events));
  BOOST_TEST(c.healthy_pods("scratch") == 1, "deleteEmptyDirData false keeps it");
  BOOST_TEST(c.healthy_pods("unselected") == 1, "podSelector does not drain it");
  auto item = c.item(plan, a);
  BOOST_REQUIRE(item);
  BOOST_TEST(contains(item->drain, R"("podsBlocked":2)"), item->drain);
  // What blocks goes away (their owners scale them to zero): the drain finishes.
  c.patch(deployments_, "scratch", R"({"spec":{"replicas":0}})", c.ns);
  c.patch(deployments_, "unselected", R"({"spec":{"replicas":0}})", c.ns);
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 120s), c.describe(plan));
  expect_back_in_service(c, a);
}

// waitForCompletion: a matching pod is let run until the wait's timeout, shown as
// waited for, then evicted; the others go at once.
BOOST_FIXTURE_TEST_CASE(a_pod_let_finish_is_evicted_at_the_waits_timeout, fixture,
                        *utf::timeout(240)) {
  start();
  const auto a = c.nodes[0];
  deployment(c, "trainer", {}, R"("job":"train")");
  deployment(c, "web");
  E2E_REQUIRE(
      eventually([&] { return c.healthy_pods("trainer") == 1 && c.healthy_pods("web") == 1; }, 60s),
      "the pods did not start");
  operate();
  const auto plan = c.create_plan(
      "wait", plan_spec(c, profile,
                        R"("waitForCompletion":{"podSelector":{"matchLabels":{"job":"train"}},)"
                        R"("timeoutSeconds":15})"));
  const auto t0 = std::chrono::steady_clock::now();
  E2E_REQUIRE(await_drain(c, plan, a, R"("cause":"WaitingForCompletion")", 60s), c.describe(plan));
  BOOST_TEST(eventually([&] { return c.healthy_pods("web") == 0; }, 20s), "web goes at once");
  BOOST_TEST(c.healthy_pods("trainer") == 1);
  auto item = c.item(plan, a);
  BOOST_REQUIRE(item);
  BOOST_TEST(contains(item->conditions["Drained"], "False/WaitingForCompletion"),
             item->conditions["Drained"]);
  E2E_REQUIRE(eventually([&] { return c.healthy_pods("trainer") == 0; }, 60s), c.describe(plan));
  const auto waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  BOOST_TEST(waited >= 10.0, "evicted after " << waited << " s, before the wait's timeout");
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 120s), c.describe(plan));
  expect_back_in_service(c, a);
}

// The dry run lists, per node, the pods in each class, and touches nothing.
BOOST_FIXTURE_TEST_CASE(the_dry_run_lists_each_pods_class, fixture, *utf::timeout(180)) {
  start();
  const auto a = c.nodes[0];
  deployment(c, "scratch", empty_dir, R"("job":"train")");
  deployment(c, "web");
  bare_pod(c, "bare", a);
  c.create_pdb("web-pdb", "web", 1);
  E2E_REQUIRE(eventually(
                  [&] {
                    return c.healthy_pods("scratch") == 1 && c.healthy_pods("bare") == 1 &&
                           c.healthy_pods("web") == 1;
                  },
                  60s),
              "the pods did not start");
  const auto before = c.node(a).fingerprint();
  operate();
  const auto plan = c.create_plan(
      "dry", plan_spec(c, profile,
                       R"("waitForCompletion":{"podSelector":{"matchLabels":{"job":"train"}},)"
                       R"("timeoutSeconds":600})",
                       true));
  E2E_REQUIRE(eventually(
                  [&] {
                    auto i = c.item(plan, a);
                    return i && contains(i->preview, "podsRefused");
                  },
                  60s, 200ms),
              c.describe(plan));
  const auto previewed = c.item(plan, a);
  BOOST_REQUIRE(previewed);
  const auto preview = previewed->preview;
  auto listed = [&](const std::string& list, const std::string& pod) {
    const auto at = preview.find("\"" + list + "\":[");
    if (at == std::string::npos)
      return false;
    const auto end = preview.find(']', at);
    return preview.substr(at, end - at).find(pod) != std::string::npos;
  };
  BOOST_TEST(listed("podsToEvict", "\"web-"), preview);
  BOOST_TEST(listed("podsBlockedByBudget", "\"web-"), preview);
  BOOST_TEST(listed("podsToWaitFor", "\"scratch-"), preview);
  BOOST_TEST(listed("podsLosingEmptyDirData", "\"scratch-"), preview);
  BOOST_TEST(listed("podsRefused", "\"bare\""), preview);
  BOOST_TEST(!listed("podsToEvict", "\"bare\""), preview);
  BOOST_TEST(contains(preview, "web-pdb"), preview);
  BOOST_TEST(c.node(a).fingerprint() == before, "a dry run changed the node");
  BOOST_TEST(c.healthy_pods("web") == 1);
}

// An eviction the API server refuses with another error than a budget's 429 (a pod two
// budgets cover: 500) is shown with the server's message, retried, and the drain goes on
// once the cause is gone.
BOOST_FIXTURE_TEST_CASE(an_eviction_error_is_shown_with_the_servers_message, fixture,
                        *utf::timeout(240)) {
  start();
  const auto a = c.nodes[0];
  deployment(c, "web");
  c.create_pdb("web-pdb", "web", 0);
  c.create_pdb("web-pdb-2", "web", 0);
  E2E_REQUIRE(eventually([&] { return c.healthy_pods("web") == 1; }, 60s), "web did not start");
  operate();
  const auto plan = c.create_plan("errors", plan_spec(c, profile));
  E2E_REQUIRE(await_drain(c, plan, a, R"("cause":"EvictionError")", 60s), c.describe(plan));
  auto item = c.item(plan, a);
  BOOST_REQUIRE(item);
  BOOST_TEST(contains(item->drain, "more than one PodDisruptionBudget"), item->drain);
  BOOST_TEST(!contains(item->drain, R"("cause":"Budget")"), item->drain);
  BOOST_TEST(contains(item->conditions["Drained"], "False/EvictionFailed"),
             item->conditions["Drained"]);
  BOOST_TEST(c.healthy_pods("web") == 1);
  BOOST_REQUIRE(c.api.remove(kube::resources::pod_disruption_budgets(), c.ns, "web-pdb-2"));
  // The budget left may keep the status it had beside its twin (0 allowed, so 429s) until
  // it changes: seen for over 2 minutes. Touched, kube-controller-manager's disruption
  // controller computes it again.
  c.patch(kube::resources::pod_disruption_budgets(), "web-pdb",
          R"({"metadata":{"annotations":{"e2e/touched":"1"}}})", c.ns);
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 120s), c.describe(plan));
  expect_back_in_service(c, a);
}

// A pod evicted but stuck terminating (a finalizer nobody removes) is reported as such,
// not blamed on the budget that covers it; the drain finishes once it is gone.
BOOST_FIXTURE_TEST_CASE(a_pod_stuck_terminating_is_reported_as_such, fixture, *utf::timeout(240)) {
  start();
  const auto a = c.nodes[0];
  bare_pod(c, "stuck", a, R"(,"finalizers":["e2e.gpu-partitioner.io/hold"])");
  c.create_pdb("stuck-pdb", "stuck", 0);
  E2E_REQUIRE(eventually([&] { return c.healthy_pods("stuck") == 1; }, 60s), "did not start");
  operate();
  // maxUnavailable of 1 lets the eviction through; minAvailable 0 above allows it too.
  const auto plan = c.create_plan("stuck", plan_spec(c, profile, R"("force":true)"));
  E2E_REQUIRE(await_drain(c, plan, a, R"("cause":"Terminating")", 90s), c.describe(plan));
  auto item = c.item(plan, a);
  BOOST_REQUIRE(item);
  BOOST_TEST(contains(item->drain, "its kubelet has not confirmed it gone"), item->drain);
  BOOST_TEST(!contains(item->drain, "stuck-pdb"), item->drain);
  BOOST_TEST(contains(item->conditions["Drained"], "False/PodsStuckTerminating"),
             item->conditions["Drained"]);
  c.patch(kube::resources::pods(), "stuck", R"({"metadata":{"finalizers":null}})", c.ns);
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 120s), c.describe(plan));
  expect_back_in_service(c, a);
  BOOST_TEST(c.pods("app=stuck").empty());
}

// A crash-looping pod under a budget that wants it healthy: the API server refuses its
// eviction (IfHealthyBudget) and the status says why and what would let it go; the drain
// times out and the node is returned. The admin sets AlwaysAllow and changes the plan:
// the Failed node starts over by itself and the pod goes.
BOOST_FIXTURE_TEST_CASE(an_unhealthy_pod_under_its_budget_and_a_failed_node_given_a_new_spec,
                        fixture, *utf::timeout(300)) {
  start();
  const auto a = c.nodes[0];
  deployment(c, "crashing", {}, {}, R"("sim.gpu-partitioner.io/crash-loop":"true")");
  c.create_pdb("crashing-pdb", "crashing", 1);
  E2E_REQUIRE(eventually([&] { return !c.pods("app=crashing").empty(); }, 60s), "no pod");
  operate();
  auto spec = plan_spec(c, profile);
  spec.replace(spec.find(R"("timeoutSeconds":120)"), 20, R"("timeoutSeconds":20)");
  const auto plan = c.create_plan("unhealthy", spec);
  E2E_REQUIRE(await_drain(c, plan, a, "the pod is not Ready", 60s), c.describe(plan));
  auto item = c.item(plan, a);
  BOOST_REQUIRE(item);
  BOOST_TEST(contains(item->drain, R"("cause":"Budget")"), item->drain);
  BOOST_TEST(contains(item->drain, "AlwaysAllow lets it go"), item->drain);
  E2E_REQUIRE(c.await_items(plan, 1, "Failed", 60s), c.describe(plan));
  item = c.item(plan, a);
  BOOST_REQUIRE(item);
  BOOST_TEST((!item->reasons.empty() && item->reasons.back() == "DrainTimeout"), c.describe(plan));
  BOOST_TEST(contains(item->last_error, "crashing-pdb"), item->last_error);
  BOOST_TEST(c.back_in_service(a), "a drain that timed out gives the node back");
  BOOST_TEST(c.pods("app=crashing").size() == 1u);
  // AlwaysAllow on the budget; a longer drain timeout on the plan: a new spec.
  c.patch(kube::resources::pod_disruption_budgets(), "crashing-pdb",
          R"({"spec":{"unhealthyPodEvictionPolicy":"AlwaysAllow"}})", c.ns);
  c.patch(plans, plan, R"({"spec":{"rollout":{"drainPolicy":{"timeoutSeconds":120}}}})");
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 120s), c.describe(plan));
  item = c.item(plan, a);
  BOOST_REQUIRE(item);
  BOOST_TEST(std::count(item->reasons.begin(), item->reasons.end(), "SpecChanged") == 1);
  expect_back_in_service(c, a);
}

// A pod stuck terminating is waited for while its node is Ready; once the node's kubelet
// stops (NotReady once the node-lifecycle controller's 50 s grace has passed, deletions
// never confirmed), pods deleted longer ago than skipWaitForDeleteTimeoutSeconds are not,
// and the drain goes on.
BOOST_FIXTURE_TEST_CASE(a_not_ready_node_does_not_wait_for_pods_deleted_long_ago, fixture,
                        *utf::timeout(360)) {
  start();
  const auto a = c.nodes[0];
  bare_pod(c, "stuck", a, R"(,"finalizers":["e2e.gpu-partitioner.io/hold"])");
  E2E_REQUIRE(eventually([&] { return c.healthy_pods("stuck") == 1; }, 60s), "did not start");
  operate();
  const auto plan = c.create_plan(
      "notready", plan_spec(c, profile, R"("force":true,"skipWaitForDeleteTimeoutSeconds":5)"));
  E2E_REQUIRE(await_drain(c, plan, a, R"("cause":"Terminating")", 90s), c.describe(plan));
  const auto waiting = c.item(plan, a);
  BOOST_REQUIRE(waiting);
  BOOST_TEST(waiting->phase == "Draining", "a Ready node's pods are waited for");
  c.patch(kube::resources::nodes(), a,
          R"({"metadata":{"labels":{"sim.gpu-partitioner.io/fault":"kubelet-stopped"}}})");
  E2E_REQUIRE(eventually(
                  [&] {
                    auto i = c.item(plan, a);
                    return i && i->phase != "Draining" && i->phase != "Pending";
                  },
                  120s, 200ms),
              c.describe(plan));
  auto item = c.item(plan, a);
  BOOST_REQUIRE(item);
  BOOST_TEST(std::count(item->phases.begin(), item->phases.end(), "Applying") == 1,
             "the drain ended without the stuck pod: " << c.describe(plan));
  BOOST_TEST(c.pods("app=stuck").size() == 1u, "the pod is still there, terminating");
  // The kubelet comes back: the rollout completes.
  c.patch(kube::resources::nodes(), a,
          R"({"metadata":{"labels":{"sim.gpu-partitioner.io/fault":null}}})");
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 120s), c.describe(plan));
  expect_back_in_service(c, a);
  c.patch(kube::resources::pods(), "stuck", R"({"metadata":{"finalizers":null}})", c.ns);
}

// Three nodes drained at once, two pods each of a Deployment under a budget that allows one
// disruption: the first eviction goes, its replacement has nowhere to run but the three
// cordoned nodes, and every drain waits on the others. The dry run warns of it; the run
// names it within seconds (DrainDeadlocked) instead of at the timeout, on a control plane
// whose node-lifecycle controller shows each cordon as a taint, as a real one does.
BOOST_AUTO_TEST_CASE(drains_that_wait_on_each_other_are_named_a_deadlock, *utf::timeout(300)) {
  e2e_cluster c;
  std::vector<std::pair<std::string, node_spec>> specs;
  for (const char* n : {"a", "b", "c"}) {
    auto spec = training();
    spec.labels["e2e-host"] = n;
    specs.push_back({n, spec});
  }
  c.add_nodes(specs);
  c.start_simulator();
  c.await_default_service_account();
  auto r = c.api.create(
      deployments_, c.ns,
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"spread"},)"
      R"("spec":{"replicas":6,"selector":{"matchLabels":{"app":"spread"}},)"
      R"("template":{"metadata":{"labels":{"app":"spread"}},"spec":)" +
          pod_spec(c, R"("topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"e2e-host",)"
                      R"("whenUnsatisfiable":"DoNotSchedule",)"
                      R"("labelSelector":{"matchLabels":{"app":"spread"}}}],)") +
          "}}}");
  BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().describe()));
  c.create_pdb("spread-pdb", "spread", 5);
  E2E_REQUIRE(eventually([&] { return c.healthy_pods("spread") == 6; }, 90s), "not 6 pods");
  c.start_operator();
  c.create_payload("cpx", cpx_nps4);
  const auto profile = c.create_profile("cpx", profile_spec(c, "cpx", "e2e-cpx-" + c.key));
  auto spec = plan_spec(c, profile, {}, true);
  spec.replace(spec.find(R"("maxParallel":1,"maxUnavailable":1)"), 34,
               R"("maxParallel":3,"maxUnavailable":3)");
  const auto plan = c.create_plan("deadlock", spec);
  // The dry run warns, on every node.
  E2E_REQUIRE(eventually(
                  [&] {
                    const auto items = c.plan_items(plan);
                    return items.size() == 3u &&
                           std::all_of(items.begin(), items.end(), [](const item_view& i) {
                             return contains(i.preview, "wait on each other");
                           });
                  },
                  60s, 200ms),
              c.describe(plan));
  c.patch(plans, plan, R"({"spec":{"dryRun":false}})");
  const auto t0 = std::chrono::steady_clock::now();
  // The three nodes cordoned, each shows the cordon as the lifecycle controller's taint.
  E2E_REQUIRE(eventually(
                  [&] {
                    for (const auto& n : c.nodes) {
                      const auto v = c.node(n);
                      if (!v.unschedulable ||
                          std::find(v.taints.begin(), v.taints.end(),
                                    "node.kubernetes.io/unschedulable=:NoSchedule") ==
                              v.taints.end())
                        return false;
                    }
                    return true;
                  },
                  30s, 100ms),
              "not every node cordoned and tainted unschedulable: " << c.describe(plan));
  // The run names it within seconds, long before the 120 s drain timeout.
  E2E_REQUIRE(eventually(
                  [&] {
                    for (auto& i : c.plan_items(plan))
                      if (contains(i.conditions["Drained"], "False/DrainDeadlocked"))
                        return true;
                    return false;
                  },
                  30s, 200ms),
              c.describe(plan));
  const auto named_after =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  BOOST_TEST(named_after < 15.0);
  for (auto& i : c.plan_items(plan))
    if (contains(i.conditions["Drained"], "DrainDeadlocked"))
      BOOST_TEST(contains(i.drain, "wait on each other"), i.drain);
  // The admin lifts the budget: every drain finishes, every pod runs again.
  BOOST_REQUIRE(c.api.remove(kube::resources::pod_disruption_budgets(), c.ns, "spread-pdb"));
  E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 180s), c.describe(plan));
  for (const auto& n : c.nodes)
    expect_back_in_service(c, n);
  BOOST_TEST(eventually([&] { return c.healthy_pods("spread") == 6; }, 60s));
  E2E_NOTE("deadlock named " << named_after << " s after the run began");
}

BOOST_AUTO_TEST_SUITE_END()
