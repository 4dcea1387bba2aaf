// controller::aggregate_plan_status: the plan's conditions say what is wrong in words a
// user can act on, and stay within the 32 KiB a condition message may hold however many
// nodes a plan has.
#include "controller/plan_status.hpp"

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
  BOOST_TEST(st.conflicts.size() == 5000u); // the full list stays in status.conflicts
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

BOOST_AUTO_TEST_SUITE_END()
