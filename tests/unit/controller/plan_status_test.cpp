// controller::aggregate_plan_status: the plan's conditions say what is wrong in words a
// user can act on, and stay within the 32 KiB a condition message may hold however many
// nodes a plan has.
#include "controller/plan_status.hpp"
#include "controller/rollout_governor.hpp"
#include "protocol/json.hpp"

#include <boost/test/unit_test.hpp>

#include <map>
#include <string>
#include <vector>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;

namespace {

const gp::wall_clock::time_point t0 = gp::wall_clock::from_time_t(1800000000);

gp::partitioning_plan plan() {
  gp::partitioning_plan p;
  p.metadata.name = "p";
  p.metadata.generation = 3;
  return p;
}

const gp::condition* condition(const gp::partitioning_plan_status& st, const std::string& type) {
  for (const auto& c : st.conditions)
    if (c.type == type)
      return &c;
  return nullptr;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

constexpr std::size_t message_limit = 32768; // the CRD's maxLength

} // namespace

BOOST_AUTO_TEST_SUITE(plan_status)

BOOST_AUTO_TEST_CASE(entries_selecting_no_node_show_as_nodes_selected_false) {
  gc::plan_resolution r;
  r.unmatched = {"spec.partitionings[1] (typo) selects no node"};
  auto st = gc::aggregate_plan_status(plan(), r, {}, {}, t0);
  const auto* c = condition(st, "NodesSelected");
  BOOST_TEST_REQUIRE(c != nullptr);
  BOOST_TEST((c->status == gp::condition_status::false_));
  BOOST_TEST(c->reason == "NoNodesSelected");
  BOOST_TEST(c->message == "spec.partitionings[1] (typo) selects no node");

  r.unmatched.clear();
  st = gc::aggregate_plan_status(plan(), r, {}, st, t0);
  c = condition(st, "NodesSelected");
  BOOST_TEST_REQUIRE(c != nullptr);
  BOOST_TEST((c->status == gp::condition_status::true_));
}

BOOST_AUTO_TEST_CASE(an_invalid_plan_says_nothing_starts) {
  gc::plan_resolution r;
  r.problems = {"spec.verification.gpuReadyLabel: \"ggg...\" (1048576 characters) is not a "
                "node label key or key=value"};
  auto st = gc::aggregate_plan_status(plan(), r, {}, {}, t0);
  const auto* c = condition(st, "Invalid");
  BOOST_TEST_REQUIRE(c != nullptr);
  BOOST_TEST((c->status == gp::condition_status::true_));
  BOOST_TEST(contains(c->message, "spec.verification.gpuReadyLabel"));
  BOOST_TEST(contains(c->message, "no node starts until it is fixed"));
  BOOST_TEST((*st.phase == gp::plan_phase::degraded));
}

// A plan that does not decode is judged at a generation: its status says which, not the
// last generation that did decode.
BOOST_AUTO_TEST_CASE(an_undecodable_plans_status_names_the_generation_judged) {
  gp::partitioning_plan_status previous;
  previous.observed_generation = 2;
  previous.phase = gp::plan_phase::progressing;
  const auto st =
      gc::invalid_plan_status(previous, "spec.rollout.maxParallel: must be at least 1", 5, t0);
  BOOST_TEST(st.observed_generation == 5);
  const auto* c = condition(st, "Invalid");
  BOOST_TEST_REQUIRE(c != nullptr);
  BOOST_TEST(c->observed_generation.value_or(-1) == 5);
  BOOST_TEST((*st.phase == gp::plan_phase::degraded));
}

BOOST_AUTO_TEST_CASE(thousands_of_conflicts_fit_one_condition_message) {
  gc::plan_resolution r;
  for (int i = 0; i < 5000; ++i)
    r.conflicts.push_back({"gpu-node-" + std::to_string(i) + std::string(200, 'x'),
                           "also selected by plan " + std::string(253, 'o')});
  auto st = gc::aggregate_plan_status(plan(), r, {}, {}, t0);
  const auto* c = condition(st, "Conflict");
  BOOST_TEST_REQUIRE(c != nullptr);
  BOOST_TEST(c->message.size() < message_limit);
  BOOST_TEST(contains(c->message, "5000 node(s) left alone: gpu-node-0"));
  BOOST_TEST(contains(c->message, "more"));
  // status.conflicts names the first of them, and counts them all.
  BOOST_TEST(st.conflicts.size() == gp::partitioning_plan_status::conflicts_limit);
  BOOST_TEST(st.conflict_count == 5000);
}

BOOST_AUTO_TEST_CASE(thousands_of_failed_nodes_fit_one_condition_message) {
  std::vector<gp::node_partitioning> items(3000);
  std::map<std::string, const gp::node_partitioning*> by_name;
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto& item = items[i];
    item.metadata.name = "p-gpu-" + std::to_string(i);
    item.spec.node_name = "gpu-" + std::to_string(i);
    item.status.phase = gp::node_phase::failed;
    item.status.last_error = "PayloadInvalid: " + std::string(500, 'e');
    by_name[item.metadata.name] = &item;
  }
  auto st = gc::aggregate_plan_status(plan(), {}, by_name, {}, t0);
  const auto* c = condition(st, "Degraded");
  BOOST_TEST_REQUIRE(c != nullptr);
  BOOST_TEST(c->message.size() < message_limit);
  BOOST_TEST(contains(c->message, "failed: gpu-0 (PayloadInvalid"));
  BOOST_TEST(contains(c->message, "more; no further nodes start"));
  BOOST_TEST(st.nodes.failed == 3000);
}

namespace {

// Items in these phases (succeeded ones verified at t0, soaking for `soak` seconds).
struct items_of {
  std::vector<gp::node_partitioning> items;
  std::map<std::string, const gp::node_partitioning*> by_name() const {
    std::map<std::string, const gp::node_partitioning*> m;
    for (const auto& i : items)
      m[i.metadata.name] = &i;
    return m;
  }
  items_of& add(gp::node_phase phase, std::int64_t soak = 0) {
    gp::node_partitioning i;
    i.metadata.name = "p-n" + std::to_string(items.size());
    i.spec.plan_ref.name = "p";
    i.spec.node_name = "n" + std::to_string(items.size());
    i.status.phase = phase;
    if (soak > 0)
      i.spec.soak_seconds = soak;
    if (phase == gp::node_phase::succeeded) {
      i.status.completed_at = gp::format_time(t0);
      i.status.history = {{gp::node_phase::verifying, gp::format_time(t0), "", ""},
                          {gp::node_phase::succeeded, gp::format_time(t0), "Verified", ""}};
    }
    items.push_back(i);
    return *this;
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(failures_within_maxFailures_keep_the_plan_progressing) {
  items_of it;
  it.add(gp::node_phase::failed).add(gp::node_phase::succeeded).add(gp::node_phase::pending);
  gc::gate_decision gate;
  gate.max_failures = 1;
  auto st = gc::aggregate_plan_status(plan(), {}, it.by_name(), {}, t0, gate);
  BOOST_TEST((*st.phase == gp::plan_phase::progressing));
  const auto* c = condition(st, "Degraded");
  BOOST_TEST_REQUIRE(c != nullptr);
  BOOST_TEST(c->reason == "NodesFailed");
  BOOST_TEST(contains(c->message, "within maxFailures (1): the rollout goes on"));
  // The rest done: the plan ends Degraded, with its failure on record.
  it.items[2].status.phase = gp::node_phase::succeeded;
  st = gc::aggregate_plan_status(plan(), {}, it.by_name(), st, t0, gate);
  BOOST_TEST((*st.phase == gp::plan_phase::degraded));
  // Past the budget: Degraded at once.
  it.items[2].status.phase = gp::node_phase::failed;
  st = gc::aggregate_plan_status(plan(), {}, it.by_name(), st, t0, gate);
  BOOST_TEST(
      contains(condition(st, "Degraded")->message, "no further nodes start (maxFailures 1)"));
}

// kstatus (Flux, kpt, Argo CD's health checks) reads Ready, Reconciling and Stalled: one
// of them True at a time (none while paused), with the same polarity in every phase.
BOOST_AUTO_TEST_CASE(ready_reconciling_and_stalled_say_where_the_rollout_stands) {
  auto standing = [](const gp::partitioning_plan_status& st) {
    std::string out;
    for (const char* type : {"Ready", "Reconciling", "Stalled"}) {
      const auto* c = condition(st, type);
      BOOST_TEST_REQUIRE(c != nullptr, type);
      out += std::string(type) + "=" +
             (c->status == gp::condition_status::true_ ? "True" : "False") + "/" + c->reason + " ";
    }
    return out;
  };
  items_of it;
  it.add(gp::node_phase::draining).add(gp::node_phase::pending);
  gc::gate_decision gate;
  auto st = gc::aggregate_plan_status(plan(), {}, it.by_name(), {}, t0, gate);
  BOOST_TEST(standing(st) ==
             "Ready=False/Progressing Reconciling=True/Progressing Stalled=False/Progressing ");
  auto paused = plan();
  paused.spec.paused = true;
  it.items[0].status.phase = gp::node_phase::succeeded;
  st = gc::aggregate_plan_status(paused, {}, it.by_name(), st, t0, gate);
  BOOST_TEST(standing(st) == "Ready=False/Paused Reconciling=False/Paused Stalled=False/Paused ");
  it.items[1].status.phase = gp::node_phase::succeeded;
  st = gc::aggregate_plan_status(plan(), {}, it.by_name(), st, t0, gate);
  BOOST_TEST(standing(st) == "Ready=True/AllNodesSucceeded Reconciling=False/Completed "
                             "Stalled=False/Completed ");
  BOOST_TEST(condition(st, "Ready")->message == "2/2 nodes succeeded");
  BOOST_TEST((condition(st, "Ready")->observed_generation == 3));
  it.items[1].status.phase = gp::node_phase::failed;
  st = gc::aggregate_plan_status(plan(), {}, it.by_name(), st, t0, gate);
  BOOST_TEST(standing(st) ==
             "Ready=False/Degraded Reconciling=False/Stalled Stalled=True/NodesFailed ");
  st = gc::invalid_plan_status(st, "spec.partitionings[0]: bad", 4, t0);
  BOOST_TEST(standing(st) ==
             "Ready=False/Degraded Reconciling=False/Stalled Stalled=True/InvalidSpec ");
  BOOST_TEST(contains(condition(st, "Stalled")->message, "spec.partitionings[0]: bad"));
}

BOOST_AUTO_TEST_CASE(a_failed_canary_degrades_the_plan) {
  items_of it;
  it.add(gp::node_phase::failed).add(gp::node_phase::pending);
  gc::gate_decision gate;
  gate.max_failures = 5;
  gp::canary_status canary;
  canary.key = "k";
  canary.phase = gp::canary_phase::failed;
  canary.message = "canary node(s) failed: n0";
  gate.canary = canary;
  auto st = gc::aggregate_plan_status(plan(), {}, it.by_name(), {}, t0, gate);
  BOOST_TEST((*st.phase == gp::plan_phase::degraded));
  BOOST_TEST(condition(st, "Degraded")->reason == "CanaryFailed");
  BOOST_TEST(condition(st, "Canary")->reason == "CanaryFailed");
  BOOST_TEST((condition(st, "Canary")->status == gp::condition_status::false_));
  BOOST_TEST(st.canary->message == "canary node(s) failed: n0");
}

// Its failed node gone from the plan (relabelled, deleted), the canary's failure still
// degrades the plan, and names the node.
BOOST_AUTO_TEST_CASE(a_failed_canary_whose_node_left_still_degrades_the_plan) {
  items_of it;
  it.add(gp::node_phase::pending).add(gp::node_phase::pending);
  gc::gate_decision gate;
  gp::canary_status canary;
  canary.key = "k";
  canary.phase = gp::canary_phase::failed;
  canary.failed_nodes = {"gone-0"};
  canary.message = "canary node(s) failed: gone-0 (no longer in the plan)";
  gate.canary = canary;
  auto st = gc::aggregate_plan_status(plan(), {}, it.by_name(), {}, t0, gate);
  BOOST_TEST((*st.phase == gp::plan_phase::degraded));
  const auto* degraded = condition(st, "Degraded");
  BOOST_TEST_REQUIRE(degraded);
  BOOST_TEST((degraded->status == gp::condition_status::true_));
  BOOST_TEST(degraded->reason == "CanaryFailed");
  BOOST_TEST(contains(degraded->message, "the canary failed (gone-0)"), degraded->message);
}

// A selected node whose NodePartitioning cannot be made is named, with why, on the plan;
// the plan does not complete without it, and says so once it has it.
BOOST_AUTO_TEST_CASE(a_node_without_its_item_is_reported_and_keeps_the_plan_from_completing) {
  items_of it;
  it.add(gp::node_phase::succeeded).add(gp::node_phase::succeeded);
  const std::vector<gc::unmade_item> unmade{
      {"p-n2", "n2", "creating p-n2: 403 Forbidden: denied by webhook \"policy\""}};
  auto st = gc::aggregate_plan_status(plan(), {}, it.by_name(), {}, t0, {}, unmade);
  const auto* c = condition(st, "ItemsCreated");
  BOOST_TEST_REQUIRE(c != nullptr);
  BOOST_TEST((c->status == gp::condition_status::false_));
  BOOST_TEST(c->reason == "CreateFailed");
  BOOST_TEST(contains(c->message, "NodePartitioning p-n2 (node n2): creating p-n2: 403"));
  BOOST_TEST(c->observed_generation.value_or(0) == 3);
  BOOST_TEST((*st.phase != gp::plan_phase::completed));
  BOOST_TEST((condition(st, "Completed")->status == gp::condition_status::false_));
  // Made: the condition turns True, and the plan completes.
  st = gc::aggregate_plan_status(plan(), {}, it.by_name(), st, t0);
  BOOST_TEST((condition(st, "ItemsCreated")->status == gp::condition_status::true_));
  BOOST_TEST((*st.phase == gp::plan_phase::completed));
  // A plan that never missed one has no such condition.
  BOOST_TEST(
      !condition(gc::aggregate_plan_status(plan(), {}, it.by_name(), {}, t0), "ItemsCreated"));
}

// A dry run is waited for on the plan: DryRun turns True once every selected node's item
// holds its preview, and goes when the plan is no longer a dry run.
BOOST_AUTO_TEST_CASE(a_dry_run_plan_says_when_every_node_is_previewed) {
  auto dry = plan();
  dry.spec.dry_run = true;
  items_of it;
  it.add(gp::node_phase::pending).add(gp::node_phase::pending);
  gc::plan_resolution r;
  r.selected = {{"n0", "all", "cpx"}, {"n1", "all", "cpx"}};
  for (auto& i : it.items)
    i.spec.dry_run = true;
  it.items[0].status.preview = gp::dry_run_preview{};
  it.items[0].status.preview->pods_to_evict = {{"w", "job-a"}};
  auto st = gc::aggregate_plan_status(dry, r, it.by_name(), {}, t0);
  const auto* c = condition(st, "DryRun");
  BOOST_TEST_REQUIRE(c != nullptr);
  BOOST_TEST((c->status == gp::condition_status::false_));
  BOOST_TEST(c->reason == "Previewing");
  BOOST_TEST(contains(c->message, "1/2 node(s) previewed"));
  it.items[1].status.preview = gp::dry_run_preview{};
  it.items[1].status.preview->findings = {"ProfileNotFound: x"};
  st = gc::aggregate_plan_status(dry, r, it.by_name(), st, t0);
  c = condition(st, "DryRun");
  BOOST_TEST((c->status == gp::condition_status::true_));
  BOOST_TEST(c->reason == "Previewed");
  BOOST_TEST(contains(c->message, "2/2 node(s) previewed: 1 pod(s) would be evicted, 1 preflight"));
  // An item not yet turned into a dry run (its spec still a real run's) does not count.
  it.items[1].spec.dry_run = false;
  st = gc::aggregate_plan_status(dry, r, it.by_name(), st, t0);
  BOOST_TEST((condition(st, "DryRun")->status == gp::condition_status::false_));
  st = gc::aggregate_plan_status(plan(), r, it.by_name(), st, t0);
  BOOST_TEST(!condition(st, "DryRun"));
}

BOOST_AUTO_TEST_CASE(soaking_nodes_are_counted_and_keep_the_plan_from_completing) {
  items_of it;
  it.add(gp::node_phase::succeeded, 300).add(gp::node_phase::succeeded);
  auto st = gc::aggregate_plan_status(plan(), {}, it.by_name(), {}, t0 + std::chrono::seconds(10));
  BOOST_TEST(st.nodes.soaking == 1);
  BOOST_TEST((*st.phase == gp::plan_phase::progressing));
  BOOST_TEST(contains(condition(st, "Progressing")->message, "1 node(s) in flight"));
  st = gc::aggregate_plan_status(plan(), {}, it.by_name(), st, t0 + std::chrono::seconds(300));
  BOOST_TEST(st.nodes.soaking == 0);
  BOOST_TEST((*st.phase == gp::plan_phase::completed));
}

BOOST_AUTO_TEST_CASE(outside_the_windows_the_condition_says_when_nodes_may_start) {
  gc::gate_decision gate;
  gp::window_status w;
  w.next_start = "2026-12-02T22:00:00Z";
  gate.window = w;
  gate.outside_window = "outside every change window; nodes may start from 2026-12-02T22:00:00Z";
  gate.warnings = {"spec.rollout.windows[1] is never open for minWindowRemainingSeconds"};
  auto st = gc::aggregate_plan_status(plan(), {}, {}, {}, t0, gate);
  const auto* c = condition(st, "OutsideWindow");
  BOOST_TEST_REQUIRE(c != nullptr);
  BOOST_TEST((c->status == gp::condition_status::true_));
  BOOST_TEST(contains(c->message, "from 2026-12-02T22:00:00Z"));
  BOOST_TEST(contains(c->message, "windows[1] is never open"));
  BOOST_TEST(st.window->next_start == "2026-12-02T22:00:00Z");
  // Without windows the condition goes.
  st = gc::aggregate_plan_status(plan(), {}, {}, st, t0, {});
  BOOST_TEST(condition(st, "OutsideWindow") == nullptr);
  BOOST_TEST(!st.window);
}

BOOST_AUTO_TEST_CASE(devices_are_counted_per_profile_over_the_plans_dra_nodes) {
  gc::cluster_view v;
  auto profile = [&](const std::string& name, std::int64_t count) {
    auto p = std::make_shared<gp::partitioning_profile>();
    p->metadata.name = name;
    if (count > 0) {
      gp::expected_device d;
      d.attributes = {{"partitionProfile", "cpx_nps4"}};
      d.count = count;
      p->spec.expected_devices = {d};
    }
    v.profiles[name] = p;
  };
  auto slice = [&](const std::string& node, int cpx, int spx) {
    auto s = std::make_shared<gc::resource_slice_info>();
    s->name = node + "-gpu.amd.com-x";
    s->driver = gp::amd_dra_driver;
    s->node = node;
    s->pool = node;
    for (int i = 0; i < cpx + spx; ++i)
      s->devices.push_back({"gpu-" + std::to_string(i),
                            {{"partitionProfile", i < cpx ? "cpx_nps4" : "spx_nps1"}},
                            false});
    gc::cluster_view::edit(v.slices_by_node, node)[s->name] = s;
  };
  profile("cpx", 64);
  profile("plugin-only", 0);
  slice("a", 64, 0); // done
  slice("b", 0, 8);  // not yet
  gc::plan_resolution r;
  r.selected = {{"a", "e", "cpx"}, {"b", "e", "cpx"}, {"c", "e", "cpx"}, {"d", "f", "plugin-only"}};
  slice("d", 0, 8);
  // c publishes nothing (a device-plugin node); d's profile expects no devices.
  const auto devices = gc::devices_by_profile(r, v);
  BOOST_TEST_REQUIRE(devices.size() == 1u);
  BOOST_TEST(devices[0].profile == "cpx");
  BOOST_TEST(devices[0].nodes == 2);
  BOOST_TEST(devices[0].devices == 64);
  BOOST_TEST(devices[0].expected == 128);
}

// -- plans of thousands of nodes: the status stays small, its counts exact --

namespace {

constexpr int fleet = 5000;

// Names of `length` characters (63: a label value's limit, which names of cloud nodes
// often reach; 253: the longest object name), sorting as their number.
std::string node_name(int i, std::size_t length = 63) {
  const auto number = std::to_string(100000 + i);
  return std::string(length - number.size(), 'n') + number;
}
std::string plan_name(int i, std::size_t length = 63) {
  const auto number = std::to_string(100 + i);
  return std::string(length - number.size(), 'p') + number;
}

gp::partitioning_plan pool_plan(const std::string& name) {
  gp::partitioning_plan p;
  p.metadata.name = name;
  p.metadata.generation = 1;
  gp::partitioning e;
  e.name = "all";
  e.selector.match_labels = {{"pool", "gpu"}};
  e.profile_ref.name = "cpx";
  p.spec.partitionings = {e};
  return p;
}

gc::shared_map<gc::node_info> pool_nodes(std::size_t name_length = 63) {
  gc::shared_map<gc::node_info> nodes;
  for (int i = 0; i < fleet; ++i) {
    auto n = std::make_shared<gc::node_info>();
    n->name = node_name(i, name_length);
    n->labels = {{"pool", "gpu"}};
    nodes.set(n->name, n);
  }
  return nodes;
}

constexpr std::size_t status_bound = 64 * 1024;

} // namespace

BOOST_AUTO_TEST_CASE(a_plan_every_node_of_which_99_other_plans_select_has_a_small_status) {
  std::vector<gp::partitioning_plan> plans;
  for (int i = 0; i < 100; ++i)
    plans.push_back(pool_plan(plan_name(i)));
  const auto nodes = pool_nodes();
  const auto r = gc::resolve_plan(plans[0], plans, nodes);
  BOOST_TEST(r.selected.empty());
  BOOST_TEST(r.conflict_count == std::size_t(fleet));
  BOOST_TEST(r.conflicts.size() == gp::partitioning_plan_status::conflicts_limit);

  const auto st = gc::aggregate_plan_status(plans[0], r, {}, {}, t0);
  const auto json = gp::to_json(st);
  BOOST_TEST_MESSAGE("status of a plan of "
                     << fleet << " nodes in conflict with 99 plans: " << json.size() << " bytes");
  BOOST_TEST(json.size() < status_bound);
  BOOST_TEST(st.conflict_count == fleet);
  BOOST_TEST(st.order.empty());
  BOOST_TEST(st.order_count == 0);
  BOOST_TEST(st.conflicts.front().node == node_name(0));
  BOOST_TEST(st.conflicts.back().node == node_name(99));
  BOOST_TEST(st.conflicts.front().reason == "also selected by plan " + plan_name(1) + ", " +
                                                plan_name(2) + ", " + plan_name(3) +
                                                " and 96 more");
  const auto* c = condition(st, "Conflict");
  BOOST_TEST_REQUIRE(c != nullptr);
  BOOST_TEST(c->message.rfind("5000 node(s) left alone: " + node_name(0) + ": also selected", 0) ==
             0u);
  BOOST_TEST(contains(c->message, "... and 4990 more"));
  // What the operator writes, it reads back unchanged.
  const auto back = gp::from_json<gp::partitioning_plan>(
      R"({"spec":{"partitionings":[{"name":"a","selector":{"matchLabels":{"a":"b"}},)"
      R"("profileRef":{"name":"p"}}]},"status":)" +
      json + "}");
  BOOST_TEST_REQUIRE(back.ok(), (back.ok() ? "" : back.error().message()));
  BOOST_TEST((back.value().status == st));
}

// The same with names as long as Kubernetes allows: still far below etcd's 1.5 MiB.
BOOST_AUTO_TEST_CASE(with_names_of_253_characters_the_status_stays_under_256_KiB) {
  std::vector<gp::partitioning_plan> plans;
  for (int i = 0; i < 100; ++i)
    plans.push_back(pool_plan(plan_name(i, 253)));
  const auto r = gc::resolve_plan(plans[0], plans, pool_nodes(253));
  const auto st = gc::aggregate_plan_status(plans[0], r, {}, {}, t0);
  const auto json = gp::to_json(st);
  BOOST_TEST_MESSAGE("the same, names of 253 characters: " << json.size() << " bytes");
  BOOST_TEST(json.size() < 256 * 1024);
  BOOST_TEST(st.conflict_count == fleet);
  BOOST_TEST(st.conflicts.size() == gp::partitioning_plan_status::conflicts_limit);
  for (const auto& c : st.conditions)
    BOOST_TEST(c.message.size() < message_limit);
}

BOOST_AUTO_TEST_CASE(a_plan_selecting_5000_nodes_lists_the_first_100_to_come_as_granted) {
  const auto plan = pool_plan("p");
  const auto r = gc::resolve_plan(plan, {plan}, pool_nodes());
  BOOST_TEST_REQUIRE(r.selected.size() == std::size_t(fleet));
  BOOST_TEST(r.conflict_count == 0u);
  // The first 30 succeeded, the 31st failed, two are in flight, the rest wait.
  std::vector<gp::node_partitioning> items(fleet);
  std::map<std::string, const gp::node_partitioning*> by_name;
  for (int i = 0; i < fleet; ++i) {
    auto& item = items[i];
    item.metadata.name = "p-" + node_name(i);
    item.spec.plan_ref.name = "p";
    item.spec.node_name = node_name(i);
    item.status.phase = i < 30    ? gp::node_phase::succeeded
                        : i == 30 ? gp::node_phase::failed
                        : i < 33  ? gp::node_phase::draining
                                  : gp::node_phase::pending;
    by_name[item.metadata.name] = &item;
  }
  gc::gate_decision gate;
  gate.max_failures = 10;
  auto st = gc::aggregate_plan_status(plan, r, by_name, {}, t0, gate);
  BOOST_TEST_MESSAGE("status of a plan of " << fleet << " nodes: " << gp::to_json(st).size()
                                            << " bytes");
  BOOST_TEST(gp::to_json(st).size() < status_bound);
  BOOST_TEST(st.nodes.total == fleet);
  BOOST_TEST(st.order_count == fleet - 31);
  BOOST_TEST_REQUIRE(st.order.size() == gp::partitioning_plan_status::order_limit);
  BOOST_TEST(st.order.front() == node_name(31)); // in flight, then the next to start
  BOOST_TEST(st.order.back() == node_name(130));

  // The governor, told what the supervisor tells it, starts the first waiting ones.
  auto granted_first = [&](const std::optional<std::set<std::string>>& only) {
    gc::rollout_governor g;
    gc::rollout_limits limits;
    limits.max_parallel = 12;
    limits.max_unavailable = gp::int_or_percent::count(20);
    limits.max_failures = 10;
    limits.only = only;
    g.set_limits(limits);
    for (const auto& item : items) {
      gc::governor_node facts;
      const auto phase = *item.status.phase;
      facts.in_flight = phase == gp::node_phase::draining;
      facts.failed = phase == gp::node_phase::failed;
      facts.wants_token = phase == gp::node_phase::pending;
      g.observe(item.metadata.name, facts);
    }
    std::vector<std::string> nodes;
    for (const auto& name : g.grant())
      nodes.push_back(name.substr(2));
    return nodes;
  };
  const auto granted = granted_first(std::nullopt);
  BOOST_TEST_REQUIRE(granted.size() == 10u); // maxParallel 12, two in flight
  for (std::size_t i = 0; i < granted.size(); ++i)
    BOOST_TEST(granted[i] == st.order[i + 2]);

  // With a canary that has not passed, its nodes come first; the governor starts only them.
  gp::canary_status canary;
  canary.key = "k";
  canary.phase = gp::canary_phase::in_progress;
  canary.nodes = {node_name(4000), node_name(50), node_name(4999)};
  gate.canary = canary;
  st = gc::aggregate_plan_status(plan, r, by_name, st, t0, gate);
  BOOST_TEST(st.order_count == fleet - 31);
  BOOST_TEST_REQUIRE(st.order.size() == gp::partitioning_plan_status::order_limit);
  const std::vector<std::string> canary_first{node_name(50), node_name(4000), node_name(4999),
                                              node_name(31), node_name(32)};
  BOOST_TEST(std::vector<std::string>(st.order.begin(), st.order.begin() + 5) == canary_first,
             boost::test_tools::per_element());
  std::set<std::string> canary_items;
  for (const auto& n : canary.nodes)
    canary_items.insert("p-" + n);
  BOOST_TEST(granted_first(canary_items) ==
                 std::vector<std::string>(st.order.begin(), st.order.begin() + 3),
             boost::test_tools::per_element());
  // Once it passed, name order again.
  gate.canary->phase = gp::canary_phase::passed;
  st = gc::aggregate_plan_status(plan, r, by_name, st, t0, gate);
  BOOST_TEST(st.order.front() == node_name(31));
}

BOOST_AUTO_TEST_SUITE_END()
