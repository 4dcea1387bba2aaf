// controller::reconcile_items, desired_item and items_to_remove: a plan's NodePartitionings
// against the items that exist. Create what is missing (noting which missing items' nodes
// are down), update a changed spec unless the node is in flight, delete what left the
// plan, and never delete while the plan is gone, being deleted or invalid. What a view
// records of node and budget changes, and which of them can change a selection.
#include "controller/item_reconcile.hpp"

#include "controller/item_name.hpp"
#include "controller/node_machine.hpp"
#include "protocol/desired_hash.hpp"

#include <boost/test/unit_test.hpp>

#include <memory>
#include <optional>
#include <set>
#include <string>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;

namespace {

gp::partitioning_plan plan() {
  gp::partitioning_plan p;
  p.metadata.name = "p";
  p.metadata.uid = "plan-uid";
  p.spec.rollout.drain.timeout_seconds = 1200;
  p.spec.verification.timeout_seconds = 300;
  return p;
}

gc::plan_resolution selects(const std::vector<std::pair<std::string, std::string>>& nodes) {
  gc::plan_resolution r;
  for (const auto& [node, profile] : nodes)
    r.selected.push_back({node, "entry", profile});
  return r;
}

struct fixture {
  gc::cluster_view view;
  std::map<std::string, gp::node_partitioning> items;

  fixture() {
    for (const char* n : {"a", "b", "c"}) {
      auto node = std::make_shared<gc::node_info>();
      node->name = n;
      view.nodes[n] = node;
    }
    auto profile = std::make_shared<gp::partitioning_profile>();
    profile->metadata.name = "cpx";
    profile->spec.operator_payload.name = "cpx-payload";
    view.profiles["cpx"] = profile;
  }
  std::map<std::string, const gp::node_partitioning*> mine() const {
    std::map<std::string, const gp::node_partitioning*> out;
    for (const auto& [name, item] : items)
      out[name] = &item;
    return out;
  }
  /// An item as the plan wants it now, existing.
  gp::node_partitioning& exists(const std::string& node, const std::string& profile = "cpx") {
    std::map<std::string, std::string> hashes;
    auto item = gc::desired_item(plan(), {node, "entry", profile}, view, hashes);
    return items[item.metadata.name] = item;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(item_reconcile)

BOOST_AUTO_TEST_CASE(the_desired_item_is_owned_by_the_plan_and_carries_its_policies) {
  fixture f;
  std::map<std::string, std::string> hashes;
  const auto item = gc::desired_item(plan(), {"a", "entry", "cpx"}, f.view, hashes);
  BOOST_TEST(item.metadata.name == "p-a");
  BOOST_REQUIRE(item.metadata.finalizers.size() == 1u);
  BOOST_TEST(item.metadata.finalizers[0] == gc::item_finalizer);
  BOOST_REQUIRE(item.metadata.owner_references.size() == 1u);
  const auto& owner = item.metadata.owner_references[0];
  BOOST_TEST(owner.kind == "PartitioningPlan");
  BOOST_TEST(owner.uid == "plan-uid");
  BOOST_TEST(owner.controller.value_or(false));
  BOOST_TEST(owner.block_owner_deletion.value_or(false));
  BOOST_TEST(item.spec.plan_ref.uid == "plan-uid");
  BOOST_TEST(item.spec.node_name == "a");
  BOOST_TEST(item.spec.drain.timeout_seconds == 1200);
  BOOST_TEST(item.spec.verification.timeout_seconds == 300);
  BOOST_TEST(item.spec.desired_hash ==
             gp::desired_hash(*f.view.profiles.at("cpx"), item.spec.drain, item.spec.verification));
  BOOST_TEST(hashes.at("cpx") == item.spec.desired_hash, "memoised for the plan's other nodes");
}

BOOST_AUTO_TEST_CASE(items_are_labelled_with_their_plan_and_node) {
  fixture f;
  std::map<std::string, std::string> hashes;
  const auto item = gc::desired_item(plan(), {"a", "entry", "cpx"}, f.view, hashes);
  BOOST_TEST(item.metadata.labels.size() == 2u);
  BOOST_TEST(item.metadata.labels.at(gc::item_plan_label) == "p");
  BOOST_TEST(item.metadata.labels.at(gc::item_node_label) == "a");
  // A name a label value cannot hold (over 63 characters) gets no label; the other stays.
  const std::string long_node(64, 'n');
  const auto labels = gc::item_labels_of("p", long_node);
  BOOST_TEST(labels.count(gc::item_node_label) == 0u);
  BOOST_TEST(labels.at(gc::item_plan_label) == "p");
  BOOST_TEST(gc::item_labels_of(std::string(63, 'p'), "a").size() == 2u);
}

// An item made before items carried labels is labelled, even in flight (labels change
// nothing on the node); a user's own labels are no reason to patch, and are kept.
BOOST_AUTO_TEST_CASE(an_item_without_the_labels_is_relabelled_whatever_its_phase) {
  fixture f;
  auto& old = f.exists("a");
  old.metadata.labels.clear();
  old.status.phase = gp::node_phase::draining;
  auto& mine = f.exists("b");
  mine.metadata.labels["team"] = "ml";
  auto& wrong = f.exists("c");
  wrong.metadata.labels[gc::item_node_label] = "someone-else";
  const auto changes = gc::reconcile_items(
      plan(), selects({{"a", "cpx"}, {"b", "cpx"}, {"c", "cpx"}}), f.mine(), f.view);
  BOOST_REQUIRE(changes.relabel.size() == 2u);
  BOOST_TEST(changes.relabel[0].metadata.name == "p-a");
  BOOST_TEST(changes.relabel[0].metadata.labels.at(gc::item_plan_label) == "p");
  BOOST_TEST(changes.relabel[1].metadata.name == "p-c");
  BOOST_TEST(changes.relabel[1].metadata.labels.at(gc::item_node_label) == "c");
  BOOST_TEST(changes.update.empty());
  BOOST_TEST(!gc::labels_missing(mine, gc::item_labels_of("p", "b")));
}

BOOST_AUTO_TEST_CASE(a_missing_profile_hashes_its_name_and_the_hash_changes_once_it_exists) {
  fixture f;
  std::map<std::string, std::string> before;
  const auto missing = gc::desired_item(plan(), {"a", "entry", "later"}, f.view, before);
  auto profile = std::make_shared<gp::partitioning_profile>();
  profile->metadata.name = "later";
  profile->spec.operator_payload.name = "later-payload";
  f.view.profiles["later"] = profile;
  std::map<std::string, std::string> after;
  const auto found = gc::desired_item(plan(), {"a", "entry", "later"}, f.view, after);
  BOOST_TEST(!missing.spec.desired_hash.empty());
  BOOST_TEST(missing.spec.desired_hash != found.spec.desired_hash);
  BOOST_TEST(gc::spec_differs(missing, found));
}

BOOST_AUTO_TEST_CASE(missing_items_are_created_in_order_and_their_down_nodes_noted) {
  fixture f;
  f.exists("b");
  auto cordoned = std::make_shared<gc::node_info>(*f.view.nodes.at("c"));
  cordoned->unschedulable = true;
  f.view.nodes["c"] = cordoned;
  const auto changes = gc::reconcile_items(
      plan(), selects({{"a", "cpx"}, {"b", "cpx"}, {"c", "cpx"}}), f.mine(), f.view);
  BOOST_REQUIRE(changes.create.size() == 2u);
  BOOST_TEST(changes.create[0].metadata.name == "p-a");
  BOOST_TEST(changes.create[1].metadata.name == "p-c");
  BOOST_TEST(changes.update.empty());
  BOOST_TEST(changes.unchanged == std::vector<std::string>{"p-b"});
  BOOST_TEST(changes.selected == (std::vector<std::string>{"p-a", "p-b", "p-c"}));
  BOOST_TEST(changes.absent == (std::vector<std::string>{"p-a", "p-c"}));
  BOOST_TEST(changes.absent_unavailable == std::vector<std::string>{"p-c"});
  BOOST_TEST(changes.keep.size() == 3u);
  const std::map<std::string, bool> down{{"a", false}, {"c", true}};
  BOOST_TEST(changes.absent_down == down, "the nodes still without an item, and which are down");
}

// Plan `gpu` with node `a-1` and plan `gpu-a` with node `1` both want `gpu-a-1`. The one
// whose item exists keeps it; the other's item takes the derived name, and an object under
// its names that is not its item (another plan's, a deleted namesake's, one for another
// node) is never taken for it.
BOOST_AUTO_TEST_CASE(a_name_another_item_holds_is_never_adopted_the_node_gets_the_derived_one) {
  fixture f;
  for (const char* n : {"1", "a-1"}) {
    auto node = std::make_shared<gc::node_info>();
    node->name = n;
    f.view.nodes[n] = node;
  }
  auto gpu = plan();
  gpu.metadata.name = "gpu";
  gpu.metadata.uid = "gpu-uid";
  auto gpu_a = plan();
  gpu_a.metadata.name = "gpu-a";
  gpu_a.metadata.uid = "gpu-a-uid";
  std::map<std::string, std::string> hashes;
  auto theirs = gc::desired_item(gpu, {"a-1", "entry", "cpx"}, f.view, hashes);
  BOOST_TEST(theirs.metadata.name == "gpu-a-1");
  f.view.items["gpu-a-1"] = std::make_shared<const gp::node_partitioning>(theirs);

  const auto derived = gc::item_names_of("gpu-a", "1").derived;
  const auto changes = gc::reconcile_items(gpu_a, selects({{"1", "cpx"}}), {}, f.view);
  BOOST_REQUIRE(changes.create.size() == 1u);
  BOOST_TEST(changes.create[0].metadata.name == derived);
  BOOST_TEST(changes.create[0].spec.node_name == "1");
  BOOST_TEST(changes.absent == std::vector<std::string>{derived});
  BOOST_TEST(changes.unmade.empty());

  // The first plan's own item stays where it is.
  const std::map<std::string, const gp::node_partitioning*> gpus{{"gpu-a-1", &theirs}};
  const auto again = gc::reconcile_items(gpu, selects({{"a-1", "cpx"}}), gpus, f.view);
  BOOST_TEST(again.create.empty());
  BOOST_TEST(again.unchanged == std::vector<std::string>{"gpu-a-1"});

  // A namesake of the plan's own, left by an earlier plan of that name (another uid), or
  // for another node, is not its item either: not kept, so it is removed.
  auto stale = gc::desired_item(gpu_a, {"1", "entry", "cpx"}, f.view, hashes);
  stale.spec.plan_ref.uid = "deleted-plan-uid";
  f.view.items.erase("gpu-a-1");
  f.view.items[stale.metadata.name] = std::make_shared<const gp::node_partitioning>(stale);
  const std::map<std::string, const gp::node_partitioning*> mine{{stale.metadata.name, &stale}};
  const auto fresh = gc::reconcile_items(gpu_a, selects({{"1", "cpx"}}), mine, f.view);
  BOOST_REQUIRE(fresh.create.size() == 1u);
  BOOST_TEST(fresh.create[0].metadata.name == derived);
  BOOST_TEST(gc::items_to_remove(mine, fresh.keep, false, false) ==
             std::vector<std::string>{"gpu-a-1"});
}

// A node whose item cannot be made (both names held by other objects, or its create fails)
// is reported, and holds back no turn: it is not among the absent the governor waits for.
BOOST_AUTO_TEST_CASE(a_node_whose_item_cannot_be_made_is_unmade_not_absent) {
  fixture f;
  auto other = plan();
  other.metadata.name = "q";
  other.metadata.uid = "q-uid";
  std::map<std::string, std::string> hashes;
  const auto names = gc::item_names_of("p", "a");
  for (const auto& name : {names.plain, names.derived}) {
    auto held = gc::desired_item(other, {"x", "entry", "cpx"}, f.view, hashes);
    held.metadata.name = name;
    f.view.items[name] = std::make_shared<const gp::node_partitioning>(held);
  }
  auto down = std::make_shared<gc::node_info>(*f.view.nodes.at("a"));
  down->ready = false;
  f.view.nodes["a"] = down;
  const std::map<std::string, std::string> errors{
      {"p-b", "creating p-b: 403 Forbidden: denied by a webhook"}};
  const auto changes = gc::reconcile_items(
      plan(), selects({{"a", "cpx"}, {"b", "cpx"}, {"c", "cpx"}}), f.mine(), f.view, {}, errors);
  BOOST_TEST(changes.selected == (std::vector<std::string>{names.derived, "p-b", "p-c"}));
  BOOST_TEST(changes.absent == std::vector<std::string>{"p-c"});
  BOOST_TEST(changes.absent_unavailable == std::vector<std::string>{names.derived});
  BOOST_REQUIRE(changes.unmade.size() == 2u);
  BOOST_TEST(changes.unmade[0].name == names.derived);
  BOOST_TEST(changes.unmade[0].node == "a");
  BOOST_TEST(changes.unmade[0].why == "NodePartitionings p-a and " + names.derived +
                                          " both exist and neither is this plan's item for the "
                                          "node");
  BOOST_TEST(changes.unmade[1].name == "p-b");
  BOOST_TEST(changes.unmade[1].why == errors.at("p-b"));
  // The failed create is asked again; nothing is asked for the node whose names are held.
  BOOST_REQUIRE(changes.create.size() == 2u);
  BOOST_TEST(changes.create[0].metadata.name == "p-b");
  BOOST_TEST(changes.create[1].metadata.name == "p-c");
  BOOST_TEST(!changes.keep.count(names.derived));
}

BOOST_AUTO_TEST_CASE(a_changed_spec_is_updated_unless_the_node_is_in_flight) {
  fixture f;
  f.exists("a").spec.desired_hash = "sha256:old";
  f.exists("b").spec.desired_hash = "sha256:old";
  f.items.at("p-b").status.phase = gp::node_phase::waiting_operator;
  f.exists("c");
  f.items.at("p-c").spec.dry_run = true; // the plan is no longer a dry run
  const auto changes = gc::reconcile_items(
      plan(), selects({{"a", "cpx"}, {"b", "cpx"}, {"c", "cpx"}}), f.mine(), f.view);
  BOOST_REQUIRE(changes.update.size() == 2u);
  BOOST_TEST(changes.update[0].metadata.name == "p-a");
  BOOST_TEST(changes.update[0].spec.desired_hash != "sha256:old");
  BOOST_TEST(changes.update[1].metadata.name == "p-c");
  BOOST_TEST(!changes.update[1].spec.dry_run);
  BOOST_TEST(changes.unchanged == std::vector<std::string>{"p-b"},
             "a node in flight finishes first, then is updated");
  BOOST_TEST(changes.held == std::set<std::string>{"b"}, boost::test_tools::per_element());
  BOOST_TEST(changes.create.empty());
}

// A flight concerns a plan where it selects the node and the flight can change its
// resolution (another plan selects the node or owns the item) or its updates (its own
// item waits to land for one). Its own flight on a node only it selects, nearly every
// flight of a rollout, concerns it not.
BOOST_AUTO_TEST_CASE(a_flight_concerns_a_plan_only_where_another_plan_or_an_update_waits) {
  auto selections = std::make_shared<gc::plan_selections>();
  selections->plans_by_node = {{"a", {"p"}}, {"b", {"p", "q"}}, {"c", {"q"}}};
  struct row {
    const char* what;
    std::string node;
    std::set<std::string> plans;
    std::set<std::string> held;
    bool concerns;
  };
  const row rows[] = {
      {"its own flight on a node only it selects", "a", {"p"}, {}, false},
      {"its own flight on a node another plan selects too", "b", {"p"}, {}, true},
      {"another plan's flight on a node it selects", "a", {"q"}, {}, true},
      {"an item moved from it to another plan in flight", "a", {"p", "q"}, {}, true},
      {"another plan's flight on a node it does not select", "c", {"q"}, {}, false},
      {"its own item landing with an update waiting", "a", {"p"}, {"a"}, true},
      {"its own flight, an update waiting on another node", "a", {"p"}, {"x"}, false},
  };
  for (const auto& r : rows) {
    BOOST_TEST_CONTEXT(r.what) {
      gc::cluster_view v;
      v.selections = selections;
      BOOST_TEST(!gc::flights_concern(v, "p", r.held), "no flight, no concern");
      v.flight_changes[r.node] = r.plans;
      BOOST_TEST(gc::flights_concern(v, "p", r.held) == r.concerns);
    }
  }
  gc::cluster_view v;
  v.flight_changes["a"] = {"p"};
  BOOST_TEST(gc::flights_concern(v, "p", {}), "selections not worked out yet: every flight");
  v.selections = selections;
  v.item_specs_changed = true;
  BOOST_TEST(gc::flights_concern(v, "p", {}), "an item that never decoded: every plan");
}

// A node without its item yet counts against maxUnavailable while down: the plan is worked
// out again when one goes down or comes up, not for each heartbeat or label.
BOOST_AUTO_TEST_CASE(only_an_absent_nodes_going_down_or_up_is_news) {
  fixture f;
  const std::map<std::string, bool> absent_down{{"a", false}, {"b", true}};
  auto change = [&](const std::string& name, auto edit) {
    auto node = std::make_shared<gc::node_info>(*f.view.nodes.at(name));
    edit(*node);
    f.view.nodes[name] = node;
    f.view.node_changes[name] = gp::wall_clock::now();
  };
  BOOST_TEST(!gc::absent_down_changed(f.view, absent_down));
  change("a", [](gc::node_info& n) { n.labels["heartbeat"] = "1"; });
  BOOST_TEST(!gc::absent_down_changed(f.view, absent_down), "a change that leaves it up");
  change("c", [](gc::node_info& n) { n.unschedulable = true; });
  BOOST_TEST(!gc::absent_down_changed(f.view, absent_down), "a node with its item");
  change("a", [](gc::node_info& n) { n.ready = false; });
  BOOST_TEST(gc::absent_down_changed(f.view, absent_down), "not Ready");
  f.view.node_changes.clear();
  change("b", [](gc::node_info& n) { n.unschedulable = true; });
  BOOST_TEST(!gc::absent_down_changed(f.view, absent_down), "still cordoned");
  change("b", [](gc::node_info& n) { n.unschedulable = false; });
  BOOST_TEST(gc::absent_down_changed(f.view, absent_down), "uncordoned");
}

// The payload is part of the item: read anew and different, it updates the item (unless
// the node is in flight); unreadable for now (not listed yet, deleted), it changes nothing.
BOOST_AUTO_TEST_CASE(a_payload_read_anew_and_different_updates_the_item_and_one_unread_does_not) {
  fixture f;
  auto payload = [&](const std::string& json) {
    f.view.config_maps["/cpx-payload"] =
        std::make_shared<const gc::config_map_data>(gc::config_map_data{{"profile.json", json}});
  };
  payload(R"({"profiles":[1]})");
  const auto v1 = gp::payload_hash(R"({"profiles":[1]})");
  BOOST_TEST(f.exists("a").spec.payload_hash == v1);
  f.exists("b");
  f.items.at("p-b").status.phase = gp::node_phase::applying;

  payload(R"({ "profiles" : [ 1 ] })"); // spacing is no change
  auto changes =
      gc::reconcile_items(plan(), selects({{"a", "cpx"}, {"b", "cpx"}}), f.mine(), f.view);
  BOOST_TEST(changes.update.empty());

  payload(R"({"profiles":[2]})");
  changes = gc::reconcile_items(plan(), selects({{"a", "cpx"}, {"b", "cpx"}}), f.mine(), f.view);
  BOOST_REQUIRE(changes.update.size() == 1u);
  BOOST_TEST(changes.update[0].metadata.name == "p-a");
  BOOST_TEST(changes.update[0].spec.payload_hash == gp::payload_hash(R"({"profiles":[2]})"));
  BOOST_TEST(changes.update[0].spec.desired_hash == f.items.at("p-a").spec.desired_hash);
  BOOST_TEST(changes.unchanged == std::vector<std::string>{"p-b"}, "in flight: finishes first");

  f.view.config_maps.erase("/cpx-payload");
  changes = gc::reconcile_items(plan(), selects({{"a", "cpx"}}), f.mine(), f.view);
  BOOST_TEST(changes.update.empty(), "a payload that cannot be read keeps the item's hash");
  BOOST_TEST(gc::wanted_hashes(plan(), selects({{"a", "cpx"}}), f.view).size() == 1u,
             "profile -> desiredHash only");
}

BOOST_AUTO_TEST_CASE(items_that_left_the_plan_are_removed_unless_the_plan_cannot_say) {
  fixture f;
  f.exists("a");
  f.exists("b");
  f.exists("c").metadata.deletion_timestamp = "2027-01-15T08:00:00Z";
  const std::set<std::string> keep{"p-a"};
  BOOST_TEST(gc::items_to_remove(f.mine(), keep, false, false) == std::vector<std::string>{"p-b"},
             "p-c is being deleted already");
  BOOST_TEST(gc::items_to_remove(f.mine(), keep, true, false).empty(),
             "a plan gone or being deleted: the garbage collector deletes its items");
  BOOST_TEST(gc::items_to_remove(f.mine(), keep, false, true).empty(),
             "an invalid plan touches nothing");
}

// What a node's change means for the plans' selections: the label keys that changed, or a
// node that came, went or changed its control-plane role (never selected, whatever its
// labels). Only a key that a selector or exclusion names can change a selection.
BOOST_AUTO_TEST_CASE(only_labels_a_selector_names_change_the_selections) {
  auto node = [](std::map<std::string, std::string> labels) {
    gc::node_info n;
    n.name = "a";
    n.labels = std::move(labels);
    return n;
  };
  const auto before = node({{"pool", "training"}, {"amd.com/gpu.ready", "true"}, {"zone", "x"}});
  struct row {
    const char* what;
    std::optional<gc::node_info> was, now;
    std::set<std::string> keys;
    bool came_or_went;
  };
  const row rows[] = {
      {"nothing", before, before, {}, false},
      {"a value",
       before,
       node({{"pool", "inference"}, {"amd.com/gpu.ready", "true"}, {"zone", "x"}}),
       {"pool"},
       false},
      {"a key gone and one new",
       before,
       node({{"pool", "training"}, {"zone", "x"}, {"dcm.amd.com/gpu-config-profile", "cpx"}}),
       {"amd.com/gpu.ready", "dcm.amd.com/gpu-config-profile"},
       false},
      {"a node came", std::nullopt, before, {}, true},
      {"a node went", before, std::nullopt, {}, true},
      {"a control-plane node",
       before,
       node({{"pool", "training"},
             {"amd.com/gpu.ready", "true"},
             {"zone", "x"},
             {"node-role.kubernetes.io/control-plane", ""}}),
       {},
       true},
  };
  for (const auto& r : rows) {
    gc::cluster_view v;
    v.note_relabelling(r.was ? &*r.was : nullptr, r.now ? &*r.now : nullptr);
    BOOST_TEST(v.relabelled_keys == r.keys, r.what);
    BOOST_TEST(v.nodes_came_or_went == r.came_or_went, r.what);
  }

  gc::cluster_view v;
  auto p = std::make_shared<gp::partitioning_plan>(plan());
  gp::partitioning entry;
  entry.selector.match_labels["pool"] = "training";
  entry.exclude.emplace();
  gp::label_selector_requirement in_zone_y;
  in_zone_y.key = "zone";
  in_zone_y.values = {"y"};
  entry.exclude->match_expressions.push_back(in_zone_y);
  p->spec.partitionings.push_back(entry);
  v.plans["p"] = p;
  BOOST_TEST(!gc::selections_may_change(v), "nothing changed");
  v.relabelled_keys = {"amd.com/gpu.ready", "dcm.amd.com/gpu-config-state"};
  BOOST_TEST(!gc::selections_may_change(v), "labels no selector names");
  v.relabelled_keys = {"pool"};
  BOOST_TEST(gc::selections_may_change(v), "a key of a selector");
  v.relabelled_keys = {"zone"};
  BOOST_TEST(gc::selections_may_change(v), "a key of an exclusion");
  v.relabelled_keys.clear();
  v.nodes_came_or_went = true;
  BOOST_TEST(gc::selections_may_change(v), "a node came or went");
}

// A budget covers the pods of its own namespace: its change is news to the nodes with a
// pod there, and to no other.
BOOST_AUTO_TEST_CASE(a_budget_change_names_the_nodes_with_a_pod_in_its_namespace) {
  const std::map<std::string, std::string> pod_nodes{
      {"team/web-1", "a"}, {"team/web-2", "b"}, {"team-b/db-1", "c"}, {"teams/x", "d"}};
  gc::cluster_view v;
  v.note_budget_change("team/web", pod_nodes);
  BOOST_TEST(v.budget_changes == (std::set<std::string>{"a", "b"}), "not team-b's or teams' pods");
  v.note_budget_change("empty/none", pod_nodes);
  BOOST_TEST(v.budget_changes == (std::set<std::string>{"a", "b"}));
}

BOOST_AUTO_TEST_SUITE_END()
