// controller::select_nodes: which plans select each node, worked out once per view for
// every plan's supervisor and node worker. The rules, then a seeded comparison with each
// selector evaluated on its own over random plans and nodes.
#include "controller/plan_selections.hpp"
#include "controller/selector.hpp"

#include <boost/test/unit_test.hpp>

#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;

namespace {

using labels = std::map<std::string, std::string>;
using plan_map = std::map<std::string, std::shared_ptr<const gp::partitioning_plan>>;

gp::partitioning entry(const std::string& name, labels match, std::optional<labels> exclude = {}) {
  gp::partitioning e;
  e.name = name;
  e.selector.match_labels = std::move(match);
  if (exclude)
    e.exclude = gp::label_selector{*exclude, {}};
  e.profile_ref.name = "cpx";
  return e;
}

void add_plan(plan_map& plans, const std::string& name, std::vector<gp::partitioning> entries) {
  auto p = std::make_shared<gp::partitioning_plan>();
  p->metadata.name = name;
  p->spec.partitionings = std::move(entries);
  plans[name] = p;
}

void add_node(gc::shared_map<gc::node_info>& nodes, const std::string& name, labels l) {
  auto n = std::make_shared<gc::node_info>();
  n->name = name;
  n->labels = std::move(l);
  nodes.set(name, n);
}

} // namespace

BOOST_AUTO_TEST_SUITE(plan_selections)

BOOST_AUTO_TEST_CASE(each_node_lists_the_plans_selecting_it_in_name_order) {
  plan_map plans;
  add_plan(plans, "zeta", {entry("all", {{"pool", "gpu"}})});
  add_plan(plans, "alpha", {entry("all", {{"pool", "gpu"}}, labels{{"zone", "b"}})});
  add_plan(plans, "empty", {entry("none", {})});
  add_plan(plans, "twice", {entry("one", {{"zone", "a"}}), entry("two", {{"pool", "gpu"}})});
  gc::shared_map<gc::node_info> nodes;
  add_node(nodes, "a1", {{"pool", "gpu"}, {"zone", "a"}});
  add_node(nodes, "b1", {{"pool", "gpu"}, {"zone", "b"}});
  add_node(nodes, "cpu", {{"pool", "cpu"}});
  add_node(nodes, "master", {{"pool", "gpu"}, {"node-role.kubernetes.io/control-plane", ""}});

  const auto s = gc::select_nodes(plans, nodes);
  BOOST_TEST(s->of("a1") == (std::vector<std::string>{"alpha", "twice", "zeta"}),
             "a plan with two matching entries is listed once");
  BOOST_TEST(s->of("b1") == (std::vector<std::string>{"twice", "zeta"}), "alpha excludes zone b");
  BOOST_TEST(s->of("cpu").empty());
  BOOST_TEST(s->of("master").empty(), "control-plane nodes are never selected");
  BOOST_TEST(s->of("gone").empty());
  BOOST_TEST(s->plans_by_node.size() == 2u, "nodes no plan selects are not held");
  BOOST_TEST(s->others("a1", "twice") == (std::vector<std::string>{"alpha", "zeta"}));
  BOOST_TEST(s->others("b1", "nobody") == (std::vector<std::string>{"twice", "zeta"}));
}

BOOST_AUTO_TEST_CASE(the_index_agrees_with_every_selector_evaluated_on_its_own) {
  std::mt19937 rng(20261203);
  auto pick = [&](std::vector<std::string> from) { return from[rng() % from.size()]; };
  for (int round = 0; round < 200; ++round) {
    plan_map plans;
    const int plan_count = 1 + static_cast<int>(rng() % 6);
    for (int p = 0; p < plan_count; ++p) {
      std::vector<gp::partitioning> entries;
      const int entry_count = 1 + static_cast<int>(rng() % 2);
      for (int e = 0; e < entry_count; ++e) {
        labels match;
        if (rng() % 4 != 0)
          match["pool"] = pick({"a", "b"});
        if (rng() % 2)
          match["zone"] = pick({"x", "y"});
        std::optional<labels> exclude;
        if (rng() % 3 == 0)
          exclude = labels{{"rack", pick({"1", "2"})}};
        entries.push_back(entry("e" + std::to_string(e), match, exclude));
      }
      add_plan(plans, "plan-" + std::to_string(p), entries);
    }
    gc::shared_map<gc::node_info> nodes;
    for (int n = 0; n < 30; ++n) {
      labels l{{"pool", pick({"a", "b"})}, {"zone", pick({"x", "y"})}, {"rack", pick({"1", "2"})}};
      if (rng() % 10 == 0)
        l["node-role.kubernetes.io/control-plane"] = "";
      add_node(nodes, "node-" + std::to_string(n), l);
    }

    const auto s = gc::select_nodes(plans, nodes);
    for (const auto& [name, node] : nodes) {
      std::vector<std::string> expected;
      for (const auto& [plan_name, plan] : plans) {
        bool selects = false;
        for (const auto& e : plan->spec.partitionings)
          selects =
              selects ||
              (!gc::is_empty(e.selector) && gc::matches(e.selector, node->labels) &&
               !(e.exclude && !gc::is_empty(*e.exclude) && gc::matches(*e.exclude, node->labels)));
        if (selects && !node->is_control_plane())
          expected.push_back(plan_name);
      }
      BOOST_TEST_REQUIRE(s->of(name) == expected, "round " << round << ", node " << name);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
