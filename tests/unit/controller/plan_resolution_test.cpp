// controller::resolve_plan (DESIGN.md section 5): which nodes a plan selects, with which
// entry and profile, which it must leave alone as conflicts, and which plan problems
// stop it from selecting anything.
#include "controller/plan_resolution.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;
namespace bdata = boost::unit_test::data;

using labels = std::map<std::string, std::string>;
using node_map = std::map<std::string, gc::node_info>;

namespace {

constexpr auto in = gp::selector_operator::in;
constexpr auto not_in = gp::selector_operator::not_in;
constexpr auto exists = gp::selector_operator::exists;
constexpr auto does_not_exist = gp::selector_operator::does_not_exist;

gp::label_selector_requirement req(std::string key, gp::selector_operator op,
                                   std::vector<std::string> values = {}) {
  return {std::move(key), op, std::move(values)};
}

gp::label_selector sel(labels match_labels,
                       std::vector<gp::label_selector_requirement> expressions = {}) {
  return {std::move(match_labels), std::move(expressions)};
}

gp::partitioning entry(std::string name, gp::label_selector selector, std::string profile,
                       std::optional<gp::label_selector> exclude = std::nullopt) {
  gp::partitioning e;
  e.name = std::move(name);
  e.selector = std::move(selector);
  e.exclude = std::move(exclude);
  e.profile_ref.name = std::move(profile);
  return e;
}

gp::partitioning_plan plan(std::string name, std::vector<gp::partitioning> entries) {
  gp::partitioning_plan p;
  p.metadata.name = std::move(name);
  p.spec.partitionings = std::move(entries);
  return p;
}

node_map nodes(std::vector<std::pair<std::string, labels>> list) {
  node_map out;
  for (auto& [name, l] : list) {
    gc::node_info n;
    n.name = name;
    n.labels = std::move(l);
    out.emplace(name, std::move(n));
  }
  return out;
}

// resolve_plan takes the nodes as the operator's view holds them, shared and immutable.
gc::plan_resolution resolve(const gp::partitioning_plan& plan,
                            const std::vector<gp::partitioning_plan>& others, const node_map& nodes,
                            const std::map<std::string, std::string>& in_flight = {}) {
  gc::shared_map<gc::node_info> shared;
  for (const auto& [name, node] : nodes)
    shared.set(name, std::make_shared<const gc::node_info>(node));
  return gc::resolve_plan(plan, others, shared, in_flight);
}

// "node:entry:profile" per selected node, in the resolution's order.
std::string selected(const gc::plan_resolution& r) {
  std::string out;
  for (const auto& s : r.selected)
    out += (out.empty() ? "" : ",") + s.node + ":" + s.entry + ":" + s.profile;
  return out;
}

// Only the node names, in the resolution's order.
std::string selected_names(const gc::plan_resolution& r) {
  std::string out;
  for (const auto& s : r.selected)
    out += (out.empty() ? "" : ",") + s.node;
  return out;
}

std::string conflict_nodes(const gc::plan_resolution& r) {
  std::string out;
  for (const auto& c : r.conflicts)
    out += (out.empty() ? "" : ",") + c.node;
  return out;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A small GPU pool used by most cases.
const node_map pool = nodes({
    {"gpu-1", {{"gpu", "mi300x"}, {"pool", "training"}}},
    {"gpu-2", {{"gpu", "mi300x"}, {"pool", "inference"}}},
    {"gpu-3", {{"gpu", "mi250"}}},
    {"cpu-1", {{"cpu", "epyc"}}},
});

struct expression_row {
  const char* behaviour;
  gp::label_selector selector;
  const char* expected;
};

std::ostream& operator<<(std::ostream& os, const expression_row& r) {
  return os << r.behaviour;
}

const std::vector<expression_row> expression_rows{
    {"In selects nodes with a listed value", sel({}, {req("pool", in, {"training", "inference"})}),
     "gpu-1,gpu-2"},
    {"NotIn selects nodes with another value or without the key",
     sel({}, {req("pool", not_in, {"training"})}), "cpu-1,gpu-2,gpu-3"},
    {"Exists selects nodes carrying the key", sel({}, {req("gpu", exists)}), "gpu-1,gpu-2,gpu-3"},
    {"DoesNotExist selects nodes lacking the key", sel({}, {req("gpu", does_not_exist)}), "cpu-1"},
    {"expressions are ANDed", sel({}, {req("gpu", exists), req("pool", does_not_exist)}), "gpu-3"},
    {"matchLabels and expressions are ANDed",
     sel({{"gpu", "mi300x"}}, {req("pool", not_in, {"training"})}), "gpu-2"},
};

} // namespace

BOOST_AUTO_TEST_SUITE(plan_resolution)

BOOST_AUTO_TEST_CASE(match_labels_select_nodes_with_entry_and_profile) {
  auto r = resolve(plan("p", {entry("train", sel({{"gpu", "mi300x"}}), "cpx-nps4")}), {}, pool);
  BOOST_TEST(selected(r) == "gpu-1:train:cpx-nps4,gpu-2:train:cpx-nps4");
  BOOST_TEST(r.conflicts.empty());
  BOOST_TEST(r.problems.empty());
}

BOOST_DATA_TEST_CASE(match_expressions_select_nodes, bdata::make(expression_rows), row) {
  auto r = resolve(plan("p", {entry("e", row.selector, "prof")}), {}, pool);
  BOOST_TEST(selected_names(r) == row.expected, row.behaviour);
  BOOST_TEST(r.problems.empty());
  BOOST_TEST(r.conflicts.empty());
}

BOOST_AUTO_TEST_CASE(exclude_removes_nodes_the_selector_matches) {
  auto r = resolve(
      plan("p", {entry("e", sel({}, {req("gpu", exists)}), "prof", sel({{"pool", "inference"}}))}),
      {}, pool);
  BOOST_TEST(selected_names(r) == "gpu-1,gpu-3");
  BOOST_TEST(r.conflicts.empty());
  BOOST_TEST(r.problems.empty());
}

BOOST_AUTO_TEST_CASE(exclude_with_expressions_removes_nodes) {
  auto r = resolve(plan("p", {entry("e", sel({}, {req("gpu", exists)}), "prof",
                                    sel({}, {req("gpu", in, {"mi250"})}))}),
                   {}, pool);
  BOOST_TEST(selected_names(r) == "gpu-1,gpu-2");
}

BOOST_AUTO_TEST_CASE(empty_exclude_removes_no_node) {
  // `exclude: {}` is read as "nothing excluded", not "every node excluded".
  auto r =
      resolve(plan("p", {entry("e", sel({}, {req("gpu", exists)}), "prof", sel({}))}), {}, pool);
  BOOST_TEST(selected_names(r) == "gpu-1,gpu-2,gpu-3");
}

BOOST_AUTO_TEST_CASE(control_plane_nodes_are_never_selected_even_if_the_selector_matches) {
  auto cluster = nodes({
      {"cp-1", {{"gpu", "mi300x"}, {"node-role.kubernetes.io/control-plane", ""}}},
      {"master-1", {{"gpu", "mi300x"}, {"node-role.kubernetes.io/master", "true"}}},
      {"worker-1", {{"gpu", "mi300x"}}},
  });
  auto r = resolve(plan("p", {entry("e", sel({{"gpu", "mi300x"}}), "prof")}), {}, cluster);
  BOOST_TEST(selected_names(r) == "worker-1");
  BOOST_TEST(r.conflicts.empty());

  // Even a selector that names the control-plane role selects nothing.
  auto by_role = resolve(
      plan("p",
           {entry("cp", sel({}, {req("node-role.kubernetes.io/control-plane", exists)}), "prof"),
            entry("m", sel({{"node-role.kubernetes.io/master", "true"}}), "prof")}),
      {}, cluster);
  BOOST_TEST(by_role.selected.empty());
  BOOST_TEST(by_role.conflicts.empty());
  BOOST_TEST(by_role.problems.empty());
}

BOOST_AUTO_TEST_CASE(node_matched_by_two_entries_is_a_conflict_naming_both_and_not_selected) {
  auto r = resolve(plan("p", {entry("training", sel({{"pool", "training"}}), "cpx"),
                              entry("all-mi300x", sel({{"gpu", "mi300x"}}), "spx")}),
                   {}, pool);
  BOOST_TEST(selected(r) == "gpu-2:all-mi300x:spx");
  BOOST_TEST_REQUIRE(r.conflicts.size() == 1u);
  BOOST_TEST(r.conflicts[0].node == "gpu-1");
  BOOST_TEST(contains(r.conflicts[0].reason, "training"), r.conflicts[0].reason);
  BOOST_TEST(contains(r.conflicts[0].reason, "all-mi300x"), r.conflicts[0].reason);
  BOOST_TEST(r.problems.empty());
}

BOOST_AUTO_TEST_CASE(node_matched_by_two_plans_is_a_conflict_in_both_and_selected_by_neither) {
  auto a = plan("plan-a", {entry("training", sel({{"pool", "training"}}), "cpx")});
  auto b = plan("plan-b", {entry("mi300x", sel({{"gpu", "mi300x"}}), "spx")});
  auto cluster = pool;
  cluster["gpu-4"] = nodes({{"gpu-4", {{"gpu", "mi250"}, {"pool", "training"}}}}).at("gpu-4");

  auto ra = resolve(a, {a, b}, cluster);
  auto rb = resolve(b, {a, b}, cluster);

  BOOST_TEST(selected_names(ra) == "gpu-4");
  BOOST_TEST(selected_names(rb) == "gpu-2");
  BOOST_TEST_REQUIRE(ra.conflicts.size() == 1u);
  BOOST_TEST_REQUIRE(rb.conflicts.size() == 1u);
  BOOST_TEST(ra.conflicts[0].node == "gpu-1");
  BOOST_TEST(rb.conflicts[0].node == "gpu-1");
  BOOST_TEST(contains(ra.conflicts[0].reason, "plan-b"), ra.conflicts[0].reason);
  BOOST_TEST(contains(rb.conflicts[0].reason, "plan-a"), rb.conflicts[0].reason);
}

// A node every entry, or every plan, selects: its reason names three and counts the rest,
// so that it stays short however many there are.
BOOST_AUTO_TEST_CASE(a_conflict_names_three_entries_or_plans_and_counts_the_rest) {
  std::vector<gp::partitioning> entries;
  for (const char* name : {"e1", "e2", "e3", "e4", "e5"})
    entries.push_back(entry(name, sel({{"gpu", "mi300x"}}), "cpx"));
  auto by_entries = resolve(plan("p", entries), {}, pool);
  BOOST_TEST_REQUIRE(by_entries.conflicts.size() == 2u);
  BOOST_TEST(by_entries.conflicts[0].reason ==
             "selected by several partitionings of this plan: e1, e2, e3 and 2 more");

  std::vector<gp::partitioning_plan> plans;
  for (int i = 0; i < 10; ++i)
    plans.push_back(
        plan("plan-" + std::to_string(i), {entry("all", sel({{"gpu", "mi300x"}}), "cpx")}));
  auto by_plans = resolve(plans[9], plans, pool);
  BOOST_TEST_REQUIRE(by_plans.conflicts.size() == 2u);
  BOOST_TEST(by_plans.conflict_count == 2u);
  BOOST_TEST(by_plans.conflicts[1].reason ==
             "also selected by plan plan-0, plan-1, plan-2 and 6 more");
}

BOOST_AUTO_TEST_CASE(the_plan_itself_among_other_plans_is_no_conflict) {
  auto a = plan("plan-a", {entry("training", sel({{"pool", "training"}}), "cpx")});
  auto r = resolve(a, {a}, pool);
  BOOST_TEST(selected_names(r) == "gpu-1");
  BOOST_TEST(r.conflicts.empty());
}

BOOST_AUTO_TEST_CASE(a_node_another_plan_excludes_is_no_conflict) {
  auto a = plan("plan-a", {entry("training", sel({{"pool", "training"}}), "cpx")});
  auto b = plan("plan-b",
                {entry("mi300x", sel({{"gpu", "mi300x"}}), "spx", sel({{"pool", "training"}}))});
  auto ra = resolve(a, {b}, pool);
  auto rb = resolve(b, {a}, pool);
  BOOST_TEST(selected_names(ra) == "gpu-1");
  BOOST_TEST(selected_names(rb) == "gpu-2");
  BOOST_TEST(ra.conflicts.empty());
  BOOST_TEST(rb.conflicts.empty());
}

BOOST_AUTO_TEST_CASE(a_plan_being_deleted_still_claims_its_nodes) {
  auto a = plan("plan-a", {entry("training", sel({{"pool", "training"}}), "cpx")});
  auto old = plan("plan-old", {entry("all", sel({{"gpu", "mi300x"}}), "spx")});
  old.metadata.deletion_timestamp = "2024-05-01T10:00:00Z";
  auto r = resolve(a, {old}, pool);
  BOOST_TEST(r.selected.empty());
  BOOST_TEST(conflict_nodes(r) == "gpu-1");
}

BOOST_AUTO_TEST_CASE(empty_selector_is_a_problem_and_nothing_is_selected) {
  auto r = resolve(plan("p", {entry("good", sel({{"gpu", "mi300x"}}), "cpx"),
                              entry("everything", sel({}), "spx")}),
                   {}, pool);
  BOOST_TEST(r.selected.empty());
  BOOST_TEST(r.conflicts.empty());
  BOOST_TEST_REQUIRE(r.problems.size() == 1u);
  BOOST_TEST(contains(r.problems[0], "spec.partitionings[1].selector"), r.problems[0]);
}

BOOST_AUTO_TEST_CASE(duplicate_entry_names_are_a_problem_and_nothing_is_selected) {
  auto r = resolve(plan("p", {entry("same", sel({{"pool", "training"}}), "cpx"),
                              entry("same", sel({{"pool", "inference"}}), "spx")}),
                   {}, pool);
  BOOST_TEST(r.selected.empty());
  BOOST_TEST_REQUIRE(r.problems.size() == 1u);
  BOOST_TEST(contains(r.problems[0], "\"same\""), r.problems[0]);
  BOOST_TEST(contains(r.problems[0], "spec.partitionings[1].name"), r.problems[0]);
}

BOOST_AUTO_TEST_CASE(another_plans_empty_selector_claims_no_node) {
  auto a = plan("plan-a", {entry("training", sel({{"pool", "training"}}), "cpx")});
  auto broken = plan("plan-broken", {entry("everything", sel({}), "spx")});
  auto r = resolve(a, {broken}, pool);
  BOOST_TEST(selected_names(r) == "gpu-1");
  BOOST_TEST(r.conflicts.empty());
}

BOOST_AUTO_TEST_CASE(selection_is_in_node_name_order_whatever_the_entry_order) {
  auto cluster = nodes({
      {"node-c", {{"set", "z"}}},
      {"node-a", {{"set", "z"}}},
      {"node-b", {{"set", "a"}}},
      {"node-d", {{"set", "a"}}},
  });
  auto r = resolve(plan("p", {entry("z-entry", sel({{"set", "z"}}), "pz"),
                              entry("a-entry", sel({{"set", "a"}}), "pa")}),
                   {}, cluster);
  BOOST_TEST(selected(r) ==
             "node-a:z-entry:pz,node-b:a-entry:pa,node-c:z-entry:pz,node-d:a-entry:pa");
}

BOOST_AUTO_TEST_CASE(selector_matching_nothing_gives_empty_selection_without_problems) {
  auto r = resolve(plan("p", {entry("none", sel({{"gpu", "mi355x"}}), "cpx")}), {}, pool);
  BOOST_TEST(r.selected.empty());
  BOOST_TEST(r.conflicts.empty());
  BOOST_TEST(r.problems.empty());

  auto no_nodes = resolve(plan("p", {entry("e", sel({{"gpu", "mi300x"}}), "cpx")}), {}, {});
  BOOST_TEST(no_nodes.selected.empty());
  BOOST_TEST(no_nodes.problems.empty());
}

BOOST_AUTO_TEST_CASE(entries_that_select_nothing_are_named) {
  auto r = resolve(plan("p", {entry("train", sel({{"gpu", "mi300x"}}), "cpx"),
                              entry("typo", sel({{"gpu", "mi300"}}), "cpx")}),
                   {}, pool);
  BOOST_TEST(selected_names(r) == "gpu-1,gpu-2");
  BOOST_TEST_REQUIRE(r.unmatched.size() == 1u);
  BOOST_TEST(r.unmatched[0] == "spec.partitionings[1] (typo) selects no node");
}

BOOST_AUTO_TEST_CASE(an_entry_matching_only_a_control_plane_node_says_so) {
  auto with_cp = pool;
  with_cp.emplace("cp-1", nodes({{"cp-1", {{"gpu", "mi355x"}}}}).at("cp-1"));
  with_cp.at("cp-1").taints.push_back({"node-role.kubernetes.io/control-plane", "", "NoSchedule"});
  auto r = resolve(plan("p", {entry("e", sel({{"gpu", "mi355x"}}), "cpx")}), {}, with_cp);
  BOOST_TEST(r.selected.empty());
  BOOST_TEST_REQUIRE(r.unmatched.size() == 1u);
  BOOST_TEST(contains(r.unmatched[0], "control-plane node cp-1"), r.unmatched[0]);
}

BOOST_AUTO_TEST_CASE(selectors_kubernetes_would_refuse_are_problems_named_by_field) {
  const std::string mib(1 << 20, 'm');
  struct bad {
    gp::label_selector selector;
    std::string field;
  };
  const std::vector<bad> cases{
      {sel({{"pool", mib}}), "spec.partitionings[0].selector.matchLabels: the value of \"pool\""},
      {sel({{std::string(64, 'k'), "x"}}), "spec.partitionings[0].selector.matchLabels: \"kkk"},
      {sel({}, {req("pool", in, {"a", mib})}),
       "spec.partitionings[0].selector.matchExpressions[0].values[1]"},
      {sel({}, {req("bad key!", exists)}),
       "spec.partitionings[0].selector.matchExpressions[0].key"},
  };
  for (const auto& c : cases) {
    auto r = resolve(plan("p", {entry("e", c.selector, "cpx")}), {}, pool);
    BOOST_TEST_REQUIRE(r.problems.size() == 1u);
    BOOST_TEST(contains(r.problems[0], c.field), r.problems[0]);
    BOOST_TEST(r.problems[0].size() < 400u, "the message quotes the 1 MiB value in full");
    BOOST_TEST(r.selected.empty());
  }
  auto excluded = plan(
      "p", {entry("e", sel({{"gpu", "mi300x"}}), "cpx", sel({{"pool", std::string(64, 'v')}}))});
  auto r = resolve(excluded, {}, pool);
  BOOST_TEST_REQUIRE(r.problems.size() == 1u);
  BOOST_TEST(contains(r.problems[0], "spec.partitionings[0].exclude.matchLabels"));
}

BOOST_AUTO_TEST_CASE(verification_labels_and_resources_kubernetes_cannot_hold_are_problems) {
  auto p = plan("p", {entry("e", sel({{"gpu", "mi300x"}}), "cpx")});
  p.spec.verification.gpu_ready_label = std::string(1 << 20, 'g');
  p.spec.verification.require_plugin_resources = {"amd.com/gpu",
                                                  "amd.com/" + std::string(100, 'x')};
  auto r = resolve(p, {}, pool);
  BOOST_TEST_REQUIRE(r.problems.size() == 2u);
  BOOST_TEST(contains(r.problems[0], "spec.verification.gpuReadyLabel"));
  BOOST_TEST(contains(r.problems[0], "1048576 characters"));
  BOOST_TEST(contains(r.problems[1], "spec.verification.requirePluginResources[1]"));
  BOOST_TEST(r.selected.empty());
}

BOOST_AUTO_TEST_CASE(a_node_whose_item_name_would_pass_253_characters_makes_the_plan_invalid) {
  const std::string node = "gpu-1";
  const std::string fits(253 - 1 - node.size(), 'p');
  auto ok = resolve(plan(fits, {entry("e", sel({{"pool", "training"}}), "cpx")}), {}, pool);
  BOOST_TEST(ok.problems.empty());
  BOOST_TEST(selected_names(ok) == "gpu-1");
  auto r = resolve(plan(fits + "p", {entry("e", sel({{"pool", "training"}}), "cpx")}), {}, pool);
  BOOST_TEST_REQUIRE(r.problems.size() == 1u);
  BOOST_TEST(contains(r.problems[0], "metadata.name: the NodePartitioning of node gpu-1"),
             r.problems[0]);
  BOOST_TEST(contains(r.problems[0], "254 characters"));
}

BOOST_AUTO_TEST_CASE(a_node_in_flight_for_one_plan_stays_with_it_and_the_other_sees_a_conflict) {
  auto a = plan("a", {entry("e", sel({{"gpu", "mi300x"}}), "cpx")});
  auto b = plan("b", {entry("e", sel({{"pool", "training"}}), "spx")});
  const std::map<std::string, std::string> flying{{"gpu-1", "a"}};
  auto ra = resolve(a, {b}, pool, flying);
  BOOST_TEST(selected_names(ra) == "gpu-1,gpu-2");
  BOOST_TEST(ra.conflicts.empty());
  auto rb = resolve(b, {a}, pool, flying);
  BOOST_TEST(rb.selected.empty());
  BOOST_TEST_REQUIRE(rb.conflicts.size() == 1u);
  BOOST_TEST(rb.conflicts[0].node == "gpu-1");
  BOOST_TEST(rb.conflicts[0].reason == "in flight for plan a");
  // Once it lands, the DESIGN rule holds again: neither takes it.
  BOOST_TEST(conflict_nodes(resolve(a, {b}, pool)) == "gpu-1");
}

BOOST_AUTO_TEST_SUITE_END()
