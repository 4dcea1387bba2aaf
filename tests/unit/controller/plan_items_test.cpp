// controller::plan_items: a plan's items kept from view to view by the views' item changes
// (created, changed, deleted, another plan's left out), and the items a view touched
// through their item, their node or the budgets over their pods.
#include "controller/plan_items.hpp"

#include <boost/test/unit_test.hpp>

#include <memory>
#include <set>
#include <string>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;

namespace {

std::shared_ptr<const gp::node_partitioning> item(const std::string& plan, const std::string& node,
                                                  const std::string& note = {}) {
  auto it = std::make_shared<gp::node_partitioning>();
  it->metadata.name = plan + "-" + node;
  it->spec.plan_ref.name = plan;
  it->spec.node_name = node;
  it->status.last_error = note;
  return it;
}

std::set<std::string> names(const gc::plan_items::by_name& items) {
  std::set<std::string> out;
  for (const auto& [name, it] : items)
    out.insert(name);
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(plan_items)

BOOST_AUTO_TEST_CASE(items_follow_the_item_changes_of_each_view) {
  gc::plan_items mine("p");
  gc::cluster_view v;
  v.items["p-a"] = item("p", "a");
  v.items["q-a"] = item("q", "a");
  mine.update(v);
  BOOST_TEST(names(mine.all()) == (std::set<std::string>{"p-a"}), "the first view: all of it");

  // Created, changed and another plan's: only the changes are read.
  v.items["p-b"] = item("p", "b");
  v.items["p-a"] = item("p", "a", "changed");
  v.item_changes = {"p-b", "p-a"};
  mine.update(v);
  BOOST_TEST(names(mine.all()) == (std::set<std::string>{"p-a", "p-b"}));
  BOOST_TEST(mine.all().at("p-a") == v.items.at("p-a").get(), "the view's object");

  // Deleted: gone, and its node no longer leads to it.
  v.items.erase("p-a");
  v.item_changes = {"p-a"};
  mine.update(v);
  BOOST_TEST(names(mine.all()) == (std::set<std::string>{"p-b"}));
  v.item_changes.clear();
  v.node_changes["a"] = {};
  BOOST_TEST(mine.touched(v).empty(), "node a has no item of this plan now");

  // A change the view does not name is not seen: the views are shown in order.
  v.items["p-c"] = item("p", "c");
  v.node_changes.clear();
  mine.update(v);
  BOOST_TEST(!mine.all().count("p-c"));
}

BOOST_AUTO_TEST_CASE(a_view_touches_the_items_of_its_changed_items_and_nodes) {
  gc::plan_items mine("p");
  gc::cluster_view v;
  for (const char* n : {"a", "b", "c", "d"})
    v.items[std::string("p-") + n] = item("p", n);
  v.items["q-e"] = item("q", "e");
  mine.update(v);
  v.item_changes = {"p-a", "q-e"};
  v.node_changes["c"] = {};
  v.node_changes["e"] = {};
  v.node_changes["z"] = {};
  BOOST_TEST(names(mine.touched(v)) == (std::set<std::string>{"p-a", "p-c"}),
             "its own item, or its node, pods or Events; not another plan's");
  v.item_changes.clear();
  v.node_changes.clear();
  BOOST_TEST(mine.touched(v).empty());

  BOOST_TEST(!gc::plan_items::news_for_all(v));
  v.relabelled_keys = {"amd.com/gpu.ready"};
  BOOST_TEST(!gc::plan_items::news_for_all(v), "a label no slice reads");
  v.relabelled_keys = {gc::dcm_profile_label};
  BOOST_TEST(gc::plan_items::news_for_all(v), "who carries a DCM name");
  v.relabelled_keys.clear();
  v.budget_changes = {"b", "e"};
  BOOST_TEST(!gc::plan_items::news_for_all(v), "budgets: the nodes they cover");
  BOOST_TEST(names(mine.touched(v)) == (std::set<std::string>{"p-b"}));
  v.budget_changes.clear();
  v.shared_changed = true;
  BOOST_TEST(gc::plan_items::news_for_all(v), "what every node shares");
}

// A node's cordon, taints or readiness changed: the draining and dry-run items look again
// (their deadlock check reads every node); the others do not.
BOOST_AUTO_TEST_CASE(a_schedulability_change_touches_the_items_that_read_every_node) {
  gc::plan_items mine("p");
  gc::cluster_view v;
  auto draining = std::make_shared<gp::node_partitioning>(*item("p", "a"));
  draining->status.phase = gp::node_phase::draining;
  auto dry = std::make_shared<gp::node_partitioning>(*item("p", "b"));
  dry->spec.dry_run = true;
  v.items["p-a"] = draining;
  v.items["p-b"] = dry;
  v.items["p-c"] = item("p", "c");
  mine.update(v);
  BOOST_TEST(mine.touched(v).empty());
  v.schedulability_changed = true;
  BOOST_TEST(names(mine.touched(v)) == (std::set<std::string>{"p-a", "p-b"}));
  // Done draining: no longer.
  auto done = std::make_shared<gp::node_partitioning>(*draining);
  done->status.phase = gp::node_phase::applying;
  v.items["p-a"] = done;
  v.item_changes = {"p-a"};
  mine.update(v);
  v.item_changes.clear();
  BOOST_TEST(names(mine.touched(v)) == (std::set<std::string>{"p-b"}));
  // The view's flag follows a node's cordon, taints, readiness and resources, not its labels.
  gc::cluster_view w;
  gc::node_info n;
  auto m = n;
  m.labels["x"] = "y";
  w.note_schedulability(&n, &m);
  BOOST_TEST(!w.schedulability_changed);
  m.unschedulable = true;
  w.note_schedulability(&n, &m);
  BOOST_TEST(w.schedulability_changed);
}

// Another plan's items bear on a plan only through the nodes they hold in flight: a change
// that begins or ends a flight is recorded by node with the plans involved (whom it
// concerns is flights_concern's question); a change of an item's metadata, existence or
// spec concerns its own plan; only an item that never decoded concerns every plan.
BOOST_AUTO_TEST_CASE(an_item_change_names_its_flight_and_its_plan) {
  auto phase = [](const std::shared_ptr<const gp::node_partitioning>& i, gp::node_phase ph) {
    auto out = std::make_shared<gp::node_partitioning>(*i);
    out->status.phase = ph;
    return std::shared_ptr<const gp::node_partitioning>(out);
  };
  auto pending = item("p", "a");
  auto draining = phase(pending, gp::node_phase::draining);
  auto verified = phase(pending, gp::node_phase::succeeded);
  struct row {
    const char* what;
    const gp::node_partitioning* was;
    const gp::node_partitioning* now;
    std::set<std::string> flight_plans; // on node a; empty: no flight change
    bool own_plan;                      // item_spec_plans == {p}
  };
  auto deleting = std::make_shared<gp::node_partitioning>(*draining);
  deleting->metadata.deletion_timestamp = "2026-12-03T10:00:00Z";
  auto relabelled = std::make_shared<gp::node_partitioning>(*pending);
  relabelled->metadata.labels["x"] = "y";
  auto moved = std::make_shared<gp::node_partitioning>(*draining);
  moved->spec.plan_ref.name = "q";
  const row rows[] = {
      {"created", nullptr, pending.get(), {}, true},
      {"deleted", pending.get(), nullptr, {}, true},
      {"relabelled", pending.get(), relabelled.get(), {}, true},
      {"starts draining", pending.get(), draining.get(), {"p"}, false},
      {"lands", draining.get(), verified.get(), {"p"}, false},
      {"deleted in flight", draining.get(), nullptr, {"p"}, true},
      {"marked for deletion in flight", draining.get(), deleting.get(), {"p"}, true},
      {"moved to another plan in flight", draining.get(), moved.get(), {"p", "q"}, false},
      {"created in flight", nullptr, draining.get(), {"p"}, true},
  };
  for (const auto& r : rows) {
    BOOST_TEST_CONTEXT(r.what) {
      gc::cluster_view v;
      v.note_item_change(r.was, r.now);
      BOOST_TEST(!v.item_specs_changed);
      if (r.flight_plans.empty()) {
        BOOST_TEST(v.flight_changes.empty());
      } else {
        BOOST_TEST(v.flight_changes.size() == 1u);
        BOOST_TEST(v.flight_changes["a"] == r.flight_plans, boost::test_tools::per_element());
      }
      BOOST_TEST(v.item_spec_plans.count("p") == (r.own_plan ? 1u : 0u));
    }
  }
  // A status change that is no flight's beginning or end concerns no plan.
  gc::cluster_view v;
  auto failed = phase(pending, gp::node_phase::failed);
  v.note_item_change(pending.get(), failed.get());
  BOOST_TEST(!v.item_specs_changed);
  BOOST_TEST(v.item_spec_plans.empty());
  BOOST_TEST(v.flight_changes.empty());
  // An item that never decoded concerns every plan.
  v.note_item_change(nullptr, nullptr);
  BOOST_TEST(v.item_specs_changed);
}

BOOST_AUTO_TEST_SUITE_END()
