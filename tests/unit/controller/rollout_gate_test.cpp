// controller::decide_gate: a plan's change windows, canary and failure budget, decided
// from the plan, its items and nodes and a fixed time (t0 and offsets from it).
#include "controller/rollout_gate.hpp"

#include "controller/plan_resolution.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;
using namespace std::chrono_literals;
using gp::canary_phase;
using gp::node_phase;

namespace {

// 2026-12-02T10:00:00Z, a Wednesday.
const gp::wall_clock::time_point t0 = gp::wall_clock::from_time_t(1796205600);
const std::string hash_a = "sha256:" + std::string(64, 'a');
const std::string hash_b = "sha256:" + std::string(64, 'b');

// A plan whose entries "train" (nodes t-*) and "infer" (nodes i-*) use profiles a and b;
// every item Pending and waiting for its token unless a test says otherwise.
struct fleet {
  gp::partitioning_plan plan;
  gc::plan_resolution resolution;
  std::map<std::string, gp::node_partitioning> items;
  gc::shared_map<gc::node_info> nodes;
  std::optional<gp::canary_status> previous;
  /// What a run under the desired state would do to each node, as canary_needs works it out
  /// from the view: a change, unless a test says otherwise.
  std::map<std::string, gc::node_need> needs;
  /// profile -> the desiredHash its nodes should carry.
  std::map<std::string, std::string> hashes{{"a", hash_a}, {"b", hash_b}};
  gp::wall_clock::time_point now = t0;

  fleet(int train, int infer) {
    plan.metadata.name = "plan";
    plan.metadata.uid = "plan-uid";
    plan.metadata.generation = 1;
    for (int i = 0; i < train; ++i)
      add("t-" + std::to_string(i), "train", "a");
    for (int i = 0; i < infer; ++i)
      add("i-" + std::to_string(i), "infer", "b");
  }

  void add(const std::string& node, const std::string& entry, const std::string& profile) {
    resolution.selected.push_back({node, entry, profile});
    gc::node_info n;
    n.name = node;
    n.labels = {{"pool", entry}};
    nodes[node] = std::make_shared<const gc::node_info>(n);
    auto& item = items[plan.metadata.name + "-" + node];
    item.metadata.name = plan.metadata.name + "-" + node;
    item.spec.plan_ref = {plan.metadata.name, plan.metadata.uid};
    item.spec.node_name = node;
    item.spec.profile_ref.name = profile;
    item.spec.desired_hash = profile == "a" ? hash_a : hash_b;
    needs[node] = {true, ""};
    waiting(node);
  }

  gp::node_partitioning& item(const std::string& node) { return items.at("plan-" + node); }

  static void set(gp::node_partitioning& it, const std::string& type, bool ok,
                  const std::string& reason) {
    auto& cs = it.status.conditions;
    for (auto& c : cs)
      if (c.type == type) {
        c.status = ok ? gp::condition_status::true_ : gp::condition_status::false_;
        c.reason = reason;
        return;
      }
    cs.push_back({type, ok ? gp::condition_status::true_ : gp::condition_status::false_,
                  std::nullopt, gp::format_time(t0), reason, ""});
  }

  fleet& waiting(const std::string& node) {
    auto& it = item(node);
    it.status = {};
    it.status.phase = node_phase::pending;
    set(it, gp::node_condition::started, false, "WaitingForToken");
    return *this;
  }
  fleet& unheard(const std::string& node) {
    item(node).status = {};
    return *this;
  }
  // The node cannot start now (a preflight finding, NotReady).
  fleet& blocked(const std::string& node, const std::string& why) {
    needs[node] = {true, why};
    return *this;
  }
  fleet& in_target_state(const std::string& node) {
    needs[node] = {};
    auto& it = item(node);
    it.status = {};
    it.status.phase = node_phase::succeeded;
    it.status.observed_hash = it.spec.desired_hash;
    it.status.history.push_back(
        {node_phase::succeeded, gp::format_time(t0), "AlreadyInTargetState", ""});
    return *this;
  }
  fleet& draining(const std::string& node) {
    auto& it = item(node);
    it.status.phase = node_phase::draining;
    it.status.observed_hash = it.spec.desired_hash;
    return *this;
  }
  // Verified at `at`; soaked when its soak (if any) has passed by `now`.
  fleet& succeeded(const std::string& node, gp::wall_clock::time_point at = t0) {
    auto& it = item(node);
    it.status.phase = node_phase::succeeded;
    it.status.observed_hash = it.spec.desired_hash;
    it.status.completed_at = gp::format_time(at);
    it.status.history = {{node_phase::verifying, gp::format_time(at), "OperatorSucceeded", ""},
                         {node_phase::succeeded, gp::format_time(at), "Verified", ""}};
    const auto soak = it.spec.soak_seconds.value_or(0);
    if (soak > 0)
      set(it, gp::node_condition::soaked, now >= at + std::chrono::seconds(soak),
          now >= at + std::chrono::seconds(soak) ? "Soaked" : "Soaking");
    return *this;
  }
  fleet& failed(const std::string& node) {
    auto& it = item(node);
    it.status.phase = node_phase::failed;
    it.status.observed_hash = it.spec.desired_hash;
    it.status.last_error = "VerificationFailed: expected amd.com/gpu=64";
    it.status.history.push_back({node_phase::failed, gp::format_time(now), "OperatorFailed", ""});
    return *this;
  }
  // `kubectl partitioning retry`: the failed item goes back to Pending and waits.
  fleet& retried(const std::string& node) {
    auto& it = item(node);
    it.status.phase = node_phase::pending;
    it.status.last_error.clear();
    it.status.history.push_back({node_phase::pending, gp::format_time(now), "Retry", ""});
    set(it, gp::node_condition::started, false, "WaitingForToken");
    return *this;
  }
  // The desired state of profile a's nodes changes to `hash` (its profile or the plan's
  // policies edited): the gate is asked before the items are updated (they keep their old
  // spec and status).
  fleet& desire(const std::string& hash) {
    hashes["a"] = hash;
    ++plan.metadata.generation;
    for (auto& [node, need] : needs)
      need = {true, ""};
    return *this;
  }
  // The supervisor's update of the items lands: the new hash, the canary marked; each
  // worker then finds its node needs a run and waits for a token.
  fleet& items_catch_up(const gc::gate_decision& d) {
    for (auto& [name, it] : items) {
      it.spec.desired_hash = hashes.at(it.spec.profile_ref.name);
      waiting(it.spec.node_name);
    }
    return mark_canary(d);
  }
  // The node leaves the plan (relabelled, deleted): its item goes with it.
  fleet& leaves(const std::string& node) {
    items.erase("plan-" + node);
    needs.erase(node);
    auto& sel = resolution.selected;
    sel.erase(std::remove_if(sel.begin(), sel.end(),
                             [&](const gc::selected_node& x) { return x.node == node; }),
              sel.end());
    return *this;
  }
  fleet& not_ready(const std::string& node) {
    auto n = *nodes.find(node)->second;
    n.ready = false;
    nodes[node] = std::make_shared<const gc::node_info>(n);
    if (needs[node].change)
      needs[node].blocked = "the node is not Ready";
    return *this;
  }
  // The items the supervisor marks for the canary the gate chose, with its soak.
  fleet& mark_canary(const gc::gate_decision& d) {
    std::set<std::string> canary(d.canary->nodes.begin(), d.canary->nodes.end());
    for (auto& [name, it] : items) {
      const auto r = gc::item_rollout_of(plan.spec.rollout, it.spec.node_name, canary);
      it.spec.canary = r.canary;
      it.spec.soak_seconds = r.soak_seconds;
    }
    return *this;
  }

  gc::gate_decision decide() {
    std::map<std::string, const gp::node_partitioning*> by_name;
    for (const auto& [name, it] : items)
      by_name[name] = &it;
    gc::gate_inputs in;
    in.plan = &plan;
    in.resolution = &resolution;
    in.items = &by_name;
    in.nodes = &nodes;
    in.hashes = hashes;
    in.previous = previous;
    in.need = [this](const gc::selected_node& sel) { return needs.at(sel.node); };
    in.now = now;
    auto d = gc::decide_gate(in);
    previous = d.canary; // as the supervisor writes it
    return d;
  }
};

std::string joined(const std::optional<std::set<std::string>>& s) {
  if (!s)
    return "<any>";
  std::string out;
  for (const auto& x : *s)
    out += (out.empty() ? "" : ",") + x;
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v)
    out += (out.empty() ? "" : ",") + x;
  return out;
}

std::string phase(const gc::gate_decision& d) {
  return d.canary && d.canary->phase ? std::string(gp::codec::to_string(*d.canary->phase)) : "-";
}

std::string events(const gc::gate_decision& d) {
  std::string out;
  for (const auto& e : d.events)
    out += (out.empty() ? "" : ",") + e.reason;
  return out;
}

gp::rollout_window window(const std::string& start, const std::string& end,
                          const std::string& zone = "UTC") {
  gp::rollout_window w;
  w.start = start;
  w.end = end;
  w.time_zone = zone;
  return w;
}

} // namespace

BOOST_AUTO_TEST_SUITE(rollout_gate)

// -- failure budget --

BOOST_AUTO_TEST_CASE(maxFailures_resolves_against_the_plans_nodes) {
  fleet f(20, 5);
  BOOST_TEST(f.decide().max_failures == 0); // unset: the first failure stops
  f.plan.spec.rollout.max_failures = gp::count_or_percent::count(3);
  BOOST_TEST(f.decide().max_failures == 3);
  f.plan.spec.rollout.max_failures = gp::count_or_percent::percent(10);
  BOOST_TEST(f.decide().max_failures == 2); // 10% of 25, rounded down
  f.plan.spec.rollout.max_failures = gp::count_or_percent::percent(3);
  BOOST_TEST(f.decide().max_failures == 0); // 3% of 25 allows none
  f.plan.spec.rollout.max_failures = gp::count_or_percent::percent(100);
  BOOST_TEST(f.decide().max_failures == 25);
}

BOOST_AUTO_TEST_CASE(without_windows_or_canary_anything_may_start) {
  fleet f(3, 0);
  auto d = f.decide();
  BOOST_TEST(joined(d.only) == "<any>");
  BOOST_TEST(!d.window);
  BOOST_TEST(!d.canary);
  BOOST_TEST(!d.wake);
}

// -- windows --

BOOST_AUTO_TEST_CASE(outside_every_window_nothing_starts_and_the_gate_wakes_at_the_opening) {
  fleet f(3, 0);
  f.plan.spec.rollout.windows = {window("22:00", "06:00")};
  auto d = f.decide();
  BOOST_TEST(joined(d.only) == "");
  BOOST_TEST(d.window->open == false);
  BOOST_TEST(d.window->may_start == false);
  BOOST_TEST(d.window->next_start == "2026-12-02T22:00:00Z");
  BOOST_TEST(d.outside_window.find("outside every change window") != std::string::npos);
  BOOST_TEST(d.outside_window.find("2026-12-02T22:00:00Z") != std::string::npos);
  BOOST_TEST((d.wake == t0 + 12h));
}

BOOST_AUTO_TEST_CASE(inside_a_window_nodes_may_start_until_the_guard) {
  fleet f(3, 0);
  f.plan.spec.rollout.windows = {window("09:00", "11:00")};
  f.plan.spec.rollout.min_window_remaining_seconds = 1800;
  auto d = f.decide();
  BOOST_TEST(joined(d.only) == "<any>");
  BOOST_TEST(d.window->open);
  BOOST_TEST(d.window->closes_at == "2026-12-02T11:00:00Z");
  BOOST_TEST(d.outside_window.empty());
  BOOST_TEST((d.wake == t0 + 30min)); // the guard begins
  f.now = t0 + 45min;
  d = f.decide();
  BOOST_TEST(d.window->open);
  BOOST_TEST(!d.window->may_start);
  BOOST_TEST(joined(d.only) == "");
  BOOST_TEST(d.outside_window.find("less than minWindowRemainingSeconds") != std::string::npos);
  BOOST_TEST(d.window->next_start == "2026-12-03T09:00:00Z");
}

BOOST_AUTO_TEST_CASE(a_window_shorter_than_the_guard_is_warned_about) {
  fleet f(1, 0);
  f.plan.spec.rollout.windows = {window("09:00", "09:10")};
  f.plan.spec.rollout.min_window_remaining_seconds = 3600;
  auto d = f.decide();
  BOOST_TEST(d.warnings.size() == 1u);
  BOOST_TEST(d.warnings.front().find("spec.rollout.windows[0]") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(bad_windows_are_named_by_field) {
  gp::rollout_policy r;
  r.windows = {window("10:00", "11:00", "Mars/Base"), window("10:00", "10:00"),
               window("00:00", "24:00")};
  const auto w = gc::windows_of(r);
  BOOST_TEST(w.problems.size() == 2u);
  BOOST_TEST(w.problems[0].find("spec.rollout.windows[0].timeZone") == 0u);
  BOOST_TEST(w.problems[0].find("Mars/Base") != std::string::npos);
  BOOST_TEST(w.problems[1].find("spec.rollout.windows[1]: start and end") == 0u);
}

BOOST_AUTO_TEST_CASE(the_plan_is_invalid_with_a_bad_window_or_canary) {
  gp::partitioning_plan plan;
  plan.metadata.name = "plan";
  gp::partitioning entry;
  entry.name = "train";
  entry.selector.match_labels = {{"pool", "train"}};
  entry.profile_ref.name = "a";
  plan.spec.partitionings = {entry};
  plan.spec.rollout.windows = {window("10:00", "11:00", "Europe/Atlantis")};
  gp::canary_policy canary;
  canary.nodes = gp::int_or_percent::count(1);
  canary.selector = gp::label_selector{};
  plan.spec.rollout.canary = canary;
  const auto r = gc::resolve_plan(plan, std::vector<gpu_partitioner::protocol::partitioning_plan>{},
                                  gc::shared_map<gc::node_info>{});
  BOOST_TEST(r.problems.size() == 3u);
  BOOST_TEST(joined(r.problems).find("spec.rollout.windows[0].timeZone") != std::string::npos);
  BOOST_TEST(joined(r.problems).find("spec.rollout.canary: set nodes or selector, not both") !=
             std::string::npos);
  BOOST_TEST(joined(r.problems).find("spec.rollout.canary.selector: empty") != std::string::npos);
}

// -- canary --

// The canary is chosen from what a run would do to each node, before any item has
// reported: items that have not been looked at yet do not hold it.
BOOST_AUTO_TEST_CASE(the_canary_is_chosen_before_the_items_report) {
  fleet f(3, 0);
  f.plan.spec.rollout.canary = gp::canary_policy{};
  f.unheard("t-0").unheard("t-1").unheard("t-2");
  auto d = f.decide();
  BOOST_TEST(phase(d) == "InProgress");
  BOOST_TEST(joined(d.canary->nodes) == "t-0");
  BOOST_TEST(joined(d.only) == "");
}

// A first rollout whose nodes all fail preflight for a while (the payload's ConfigMap
// applied after the plan, DCM not running yet): the canary waits, it never passes.
BOOST_AUTO_TEST_CASE(a_canary_whose_nodes_cannot_start_yet_waits_and_never_passes) {
  fleet f(3, 0);
  f.plan.spec.rollout.canary = gp::canary_policy{};
  for (const auto* n : {"t-0", "t-1", "t-2"})
    f.blocked(n, "PayloadNotFound: ConfigMap kube-amd-gpu/cpx-nps4 not found");
  auto d = f.decide();
  BOOST_TEST(phase(d) == "Selecting");
  BOOST_TEST(joined(d.only) == "");
  BOOST_TEST(d.canary->message.find("3 node(s)") == 0u);
  BOOST_TEST(d.canary->message.find("t-0: PayloadNotFound") != std::string::npos);
  f.now += 10min;
  BOOST_TEST(phase(f.decide()) == "Selecting");
  // The ConfigMap comes: the first node that can start is the canary.
  f.needs["t-1"] = {true, ""};
  d = f.decide();
  BOOST_TEST(phase(d) == "InProgress");
  BOOST_TEST(joined(d.canary->nodes) == "t-1");
}

// A selector that matches only NotReady nodes: they need a change and none can start.
BOOST_AUTO_TEST_CASE(a_selector_canary_of_not_ready_nodes_waits_for_one_to_be_ready) {
  fleet f(3, 2);
  gp::canary_policy c;
  gp::label_selector s;
  s.match_labels = {{"pool", "infer"}};
  c.selector = s;
  f.plan.spec.rollout.canary = c;
  f.not_ready("i-0").not_ready("i-1");
  auto d = f.decide();
  BOOST_TEST(phase(d) == "Selecting");
  BOOST_TEST(joined(d.only) == "");
  BOOST_TEST(d.canary->message.find("i-0: the node is not Ready") != std::string::npos);
  f.needs["i-1"] = {true, ""}; // Ready again
  d = f.decide();
  BOOST_TEST(phase(d) == "InProgress");
  BOOST_TEST(joined(d.canary->nodes) == "i-1");
}

BOOST_AUTO_TEST_CASE(the_canary_takes_the_first_nodes_of_each_partitioning_that_need_a_change) {
  fleet f(4, 3);
  gp::canary_policy c;
  c.nodes = gp::int_or_percent::count(1);
  c.soak_seconds = 600;
  f.plan.spec.rollout.canary = c;
  f.in_target_state("t-0"); // nothing to test on it
  auto d = f.decide();
  BOOST_TEST(phase(d) == "InProgress");
  BOOST_TEST(joined(d.canary->nodes) == "t-1,i-0");
  // Until their items say they are canaries (with the soak), nothing starts.
  BOOST_TEST(joined(d.only) == "");
  BOOST_TEST(events(d) == "CanaryStarted");
  f.mark_canary(d);
  BOOST_TEST(f.item("t-1").spec.canary);
  BOOST_TEST((f.item("t-1").spec.soak_seconds == std::int64_t{600}));
  BOOST_TEST(!f.item("t-2").spec.canary);
  d = f.decide();
  BOOST_TEST(joined(d.only) == "plan-i-0,plan-t-1");
  BOOST_TEST(events(d) == ""); // no new phase
}

BOOST_AUTO_TEST_CASE(a_percentage_canary_rounds_down_but_takes_at_least_one) {
  fleet f(10, 3);
  gp::canary_policy c;
  c.nodes = gp::int_or_percent::percent(25);
  f.plan.spec.rollout.canary = c;
  auto d = f.decide();
  // 25% of 10 is 2; of 3, at least 1.
  BOOST_TEST(joined(d.canary->nodes) == "t-0,t-1,i-0");
}

BOOST_AUTO_TEST_CASE(a_selector_canary_takes_the_nodes_it_selects) {
  fleet f(3, 2);
  gp::canary_policy c;
  gp::label_selector s;
  s.match_labels = {{"pool", "infer"}};
  c.selector = s;
  f.plan.spec.rollout.canary = c;
  auto d = f.decide();
  BOOST_TEST(joined(d.canary->nodes) == "i-0,i-1");
  gp::label_selector none;
  none.match_labels = {{"pool", "nowhere"}};
  f.plan.spec.rollout.canary->selector = none;
  f.previous.reset();
  d = f.decide();
  BOOST_TEST(phase(d) == "Selecting");
  BOOST_TEST(d.canary->message.find("matches none of the plan's nodes") != std::string::npos);
  BOOST_TEST(joined(d.only) == "");
}

BOOST_AUTO_TEST_CASE(a_canary_with_nothing_to_change_passes_at_once) {
  fleet f(2, 0);
  f.plan.spec.rollout.canary = gp::canary_policy{};
  f.in_target_state("t-0").in_target_state("t-1");
  auto d = f.decide();
  BOOST_TEST(phase(d) == "Passed");
  BOOST_TEST(d.canary->message.find("nothing to test") != std::string::npos);
  BOOST_TEST(joined(d.only) == "<any>");
}

BOOST_AUTO_TEST_CASE(an_automatic_canary_passes_once_its_nodes_have_soaked) {
  fleet f(3, 0);
  gp::canary_policy c;
  c.soak_seconds = 600;
  f.plan.spec.rollout.canary = c;
  f.mark_canary(f.decide());
  f.draining("t-0");
  auto d = f.decide();
  BOOST_TEST(phase(d) == "InProgress");
  BOOST_TEST(joined(d.only) == "plan-t-0");
  f.now = t0 + 100s;
  f.succeeded("t-0", t0 + 100s);
  d = f.decide();
  BOOST_TEST(phase(d) == "InProgress"); // soaking
  BOOST_TEST(d.canary->soak_ends == gp::format_time(t0 + 700s));
  BOOST_TEST((d.wake == t0 + 700s));
  f.now = t0 + 700s;
  f.succeeded("t-0", t0 + 100s);
  d = f.decide();
  BOOST_TEST(phase(d) == "Passed");
  BOOST_TEST(d.canary->passed_at == gp::format_time(t0 + 700s));
  BOOST_TEST(joined(d.only) == "<any>");
  BOOST_TEST(events(d) == "CanaryPassed");
  // Passed stays passed for this key, whatever happens to the canary node later.
  f.failed("t-0");
  d = f.decide();
  BOOST_TEST(phase(d) == "Passed");
  BOOST_TEST(joined(d.only) == "<any>");
}

BOOST_AUTO_TEST_CASE(a_canary_node_not_ready_after_its_soak_holds_the_canary) {
  fleet f(2, 0);
  f.plan.spec.rollout.canary = gp::canary_policy{};
  f.mark_canary(f.decide());
  f.succeeded("t-0");
  f.not_ready("t-0");
  BOOST_TEST(phase(f.decide()) == "InProgress");
}

BOOST_AUTO_TEST_CASE(a_manual_canary_waits_for_promotion_of_its_key) {
  fleet f(3, 0);
  gp::canary_policy c;
  c.promotion = gp::canary_promotion::manual;
  f.plan.spec.rollout.canary = c;
  f.mark_canary(f.decide());
  f.succeeded("t-0");
  auto d = f.decide();
  BOOST_TEST(phase(d) == "AwaitingPromotion");
  BOOST_TEST(joined(d.only) == "");
  BOOST_TEST(events(d) == "CanaryAwaitingPromotion");
  BOOST_TEST(d.canary->message.find("kubectl partitioning promote plan") != std::string::npos);
  // A promotion of another canary (an older key), or of this key without its rollout's
  // generation, does not count.
  f.plan.metadata.annotations[gp::promote_canary_annotation] = "0123456789abcdef@1";
  BOOST_TEST(phase(f.decide()) == "AwaitingPromotion");
  f.plan.metadata.annotations[gp::promote_canary_annotation] = d.canary->key;
  BOOST_TEST(phase(f.decide()) == "AwaitingPromotion");
  // An edit of the plan that leaves its desired state alone is the same rollout.
  ++f.plan.metadata.generation;
  f.plan.metadata.annotations[gp::promote_canary_annotation] = gc::promotion_of(d.canary->key, 1);
  d = f.decide();
  BOOST_TEST(phase(d) == "Passed");
  BOOST_TEST(d.canary->generation == 1);
  BOOST_TEST(joined(d.only) == "<any>");
}

// A promotion names one rollout: going back to an earlier desired state is a new rollout,
// whose canary waits for a promotion of its own.
BOOST_AUTO_TEST_CASE(a_promotion_promotes_one_rollout_only) {
  fleet f(3, 0);
  gp::canary_policy c;
  c.promotion = gp::canary_promotion::manual;
  f.plan.spec.rollout.canary = c;
  auto d = f.decide();
  f.mark_canary(d);
  f.succeeded("t-0");
  d = f.decide();
  BOOST_TEST(phase(d) == "AwaitingPromotion");
  const auto key_a = d.canary->key;
  f.plan.metadata.annotations[gp::promote_canary_annotation] = gc::promotion_of(key_a, 1);
  BOOST_TEST(phase(f.decide()) == "Passed");
  for (const auto* n : {"t-0", "t-1", "t-2"})
    f.in_target_state(n);
  // To profile c and back to a: the same key as the promoted canary, another rollout.
  const std::string hash_c = "sha256:" + std::string(64, 'c');
  f.desire(hash_c);
  BOOST_TEST(phase(f.decide()) == "InProgress");
  f.desire(hash_a);
  d = f.decide();
  BOOST_TEST(d.canary->key == key_a);
  BOOST_TEST(d.canary->generation == 3);
  f.items_catch_up(d);
  f.succeeded("t-0");
  d = f.decide();
  BOOST_TEST(phase(d) == "AwaitingPromotion");
  BOOST_TEST(joined(d.only) == "");
  f.plan.metadata.annotations[gp::promote_canary_annotation] = gc::promotion_of(key_a, 3);
  BOOST_TEST(phase(f.decide()) == "Passed");
}

BOOST_AUTO_TEST_CASE(a_failed_canary_node_stops_the_plan_until_it_is_retried) {
  fleet f(3, 0);
  gp::canary_policy c;
  c.nodes = gp::int_or_percent::count(2);
  f.plan.spec.rollout.canary = c;
  f.mark_canary(f.decide());
  f.succeeded("t-0").failed("t-1");
  auto d = f.decide();
  BOOST_TEST(phase(d) == "Failed");
  BOOST_TEST(joined(d.only) == "");
  BOOST_TEST(events(d) == "CanaryFailed");
  BOOST_TEST(d.canary->message.find("t-1 (VerificationFailed") != std::string::npos);
  // Its item back in Pending without a retry (deleted and created again) is no retry.
  f.waiting("t-1");
  BOOST_TEST(phase(f.decide()) == "Failed");
  // Retried, it is a canary node again, and may start.
  f.failed("t-1").retried("t-1");
  d = f.decide();
  BOOST_TEST(phase(d) == "InProgress");
  BOOST_TEST(joined(d.only) == "plan-t-0,plan-t-1");
  BOOST_TEST(joined(d.canary->nodes) == "t-0,t-1");
}

// The second rollout of a plan, in the order the supervisor sees it: the spec changes, the
// gate decides while every item still shows the old desired state and Succeeded, then the
// item updates land and the nodes wait for a token again.
BOOST_AUTO_TEST_CASE(a_new_desired_state_is_a_new_canary_chosen_before_the_items_catch_up) {
  fleet f(3, 0);
  f.plan.spec.rollout.canary = gp::canary_policy{};
  f.mark_canary(f.decide());
  f.succeeded("t-0");
  BOOST_TEST(phase(f.decide()) == "Passed");
  f.in_target_state("t-0").in_target_state("t-1").in_target_state("t-2");
  const auto old_key = f.previous->key;
  const std::string hash_c = "sha256:" + std::string(64, 'c');
  f.desire(hash_c);
  auto d = f.decide();
  BOOST_TEST(d.canary->key != old_key);
  BOOST_TEST(d.canary->generation == 2);
  BOOST_TEST(phase(d) == "InProgress");
  BOOST_TEST(joined(d.canary->nodes) == "t-0");
  BOOST_TEST(joined(d.only) == "", "no item has the new desired state yet");
  BOOST_TEST(events(d) == "CanaryStarted");
  f.items_catch_up(d);
  d = f.decide();
  BOOST_TEST(phase(d) == "InProgress");
  BOOST_TEST(joined(d.only) == "plan-t-0");
  f.draining("t-0");
  f.succeeded("t-0");
  d = f.decide();
  BOOST_TEST(phase(d) == "Passed");
  BOOST_TEST(joined(d.only) == "<any>");
}

// A canary node that turns out to be in its target state already (someone partitioned it)
// teaches nothing: another node is taken.
BOOST_AUTO_TEST_CASE(a_canary_node_found_in_its_target_state_is_replaced) {
  fleet f(3, 0);
  f.plan.spec.rollout.canary = gp::canary_policy{};
  f.mark_canary(f.decide());
  f.in_target_state("t-0");
  auto d = f.decide();
  BOOST_TEST(phase(d) == "InProgress");
  BOOST_TEST(joined(d.canary->nodes) == "t-1");
}

// After a dry run the same canary starts: a dry run never passes it.
BOOST_AUTO_TEST_CASE(the_canary_named_by_a_dry_run_is_the_one_that_starts) {
  fleet f(3, 0);
  f.plan.spec.dry_run = true;
  f.plan.spec.rollout.canary = gp::canary_policy{};
  for (auto& [name, it] : f.items) {
    it.spec.dry_run = true;
    it.status = {};
    it.status.phase = node_phase::pending;
    fleet::set(it, gp::node_condition::dry_run, true, "DryRun");
    it.status.preview = gp::dry_run_preview{};
  }
  auto d = f.decide();
  f.mark_canary(d);
  BOOST_TEST(joined(d.canary->nodes) == "t-0");
  BOOST_TEST(joined(f.decide().only) == "");
  // The dry run ends (no new desired state): the items are updated, the canary starts.
  f.plan.spec.dry_run = false;
  ++f.plan.metadata.generation;
  d = f.decide();
  BOOST_TEST(phase(d) == "InProgress");
  BOOST_TEST(joined(d.only) == "plan-t-0", "items still dry-run may not start");
  for (auto& [name, it] : f.items)
    it.spec.dry_run = false;
  f.waiting("t-0").waiting("t-1").waiting("t-2");
  d = f.decide();
  BOOST_TEST(phase(d) == "InProgress");
  BOOST_TEST(joined(d.only) == "plan-t-0");
}

// A failed canary node that leaves the plan (relabelled, deleted, replaced) keeps the
// canary failed: the rest of the canary passing later says nothing about what failed.
BOOST_AUTO_TEST_CASE(a_failed_canary_stays_failed_when_its_node_leaves_the_plan) {
  fleet f(4, 0);
  gp::canary_policy c;
  c.nodes = gp::int_or_percent::count(2);
  f.plan.spec.rollout.canary = c;
  f.mark_canary(f.decide());
  f.failed("t-1");
  BOOST_TEST(phase(f.decide()) == "Failed");
  f.leaves("t-1");
  f.succeeded("t-0");
  auto d = f.decide();
  BOOST_TEST(phase(d) == "Failed");
  BOOST_TEST(joined(d.only) == "");
  BOOST_TEST(joined(d.canary->failed_nodes) == "t-1");
  BOOST_TEST(d.canary->message.find("t-1 (no longer in the plan)") != std::string::npos);
  BOOST_TEST(events(d) == "", "no second CanaryFailed");
  // The plan is changed (a new generation, the same desired state): the canary begins
  // again on the nodes that can start.
  ++f.plan.metadata.generation;
  d = f.decide();
  BOOST_TEST(phase(d) == "InProgress");
  BOOST_TEST(d.canary->generation == 2);
  BOOST_TEST(d.canary->failed_nodes.empty());
}

// A plan changed after its canary failed begins the canary again, without the node that
// failed (it waits for a retry).
BOOST_AUTO_TEST_CASE(a_changed_plan_begins_a_failed_canary_again_without_its_failed_node) {
  fleet f(3, 0);
  f.plan.spec.rollout.canary = gp::canary_policy{};
  f.mark_canary(f.decide());
  f.failed("t-0");
  f.blocked("t-0", "it failed under this desired state and waits for a retry");
  BOOST_TEST(phase(f.decide()) == "Failed");
  f.now += 1min;
  BOOST_TEST(phase(f.decide()) == "Failed");
  ++f.plan.metadata.generation;
  auto d = f.decide();
  BOOST_TEST(phase(d) == "InProgress");
  BOOST_TEST(joined(d.canary->nodes) == "t-1");
}

BOOST_AUTO_TEST_CASE(the_canary_is_kept_across_a_restart) {
  // The nodes chosen are read back from status: a node that came since does not change
  // them, and a canary node in flight is still the canary.
  fleet f(3, 0);
  f.plan.spec.rollout.canary = gp::canary_policy{};
  auto d = f.decide();
  f.mark_canary(d);
  f.draining("t-0");
  f.add("s-0", "train", "a"); // a new node, first by name
  d = f.decide();
  BOOST_TEST(joined(d.canary->nodes) == "t-0");
  BOOST_TEST(joined(d.only) == "plan-t-0");
}

BOOST_AUTO_TEST_CASE(a_dry_run_names_the_canary_it_would_take) {
  fleet f(3, 0);
  f.plan.spec.dry_run = true;
  f.plan.spec.rollout.canary = gp::canary_policy{};
  for (auto& [name, it] : f.items) {
    it.spec.dry_run = true;
    it.status = {};
    it.status.phase = node_phase::pending;
    fleet::set(it, gp::node_condition::dry_run, true, "DryRun");
    it.status.preview = gp::dry_run_preview{};
  }
  f.needs["t-0"] = {};
  f.blocked("t-1", "NotAGPUNode: no amd.com/gpu");
  auto d = f.decide();
  BOOST_TEST(joined(d.canary->nodes) == "t-2");
  BOOST_TEST(phase(d) == "InProgress");
  BOOST_TEST(d.canary->message.find("dry run") == 0u);
  BOOST_TEST(joined(d.only) == "");
}

BOOST_AUTO_TEST_CASE(windows_and_canary_both_hold) {
  fleet f(3, 0);
  f.plan.spec.rollout.canary = gp::canary_policy{};
  f.plan.spec.rollout.windows = {window("22:00", "23:00")};
  auto d = f.decide();
  f.mark_canary(d);
  d = f.decide();
  BOOST_TEST(phase(d) == "InProgress");
  BOOST_TEST(joined(d.only) == ""); // the window is closed
  f.now = t0 + 12h + 10min;
  d = f.decide();
  BOOST_TEST(joined(d.only) == "plan-t-0");
}

BOOST_AUTO_TEST_CASE(canary_key_depends_on_the_desired_states_only) {
  BOOST_TEST(gc::canary_key({{"a", hash_a}, {"b", hash_b}}) ==
             gc::canary_key({{"x", hash_b}, {"y", hash_a}}));
  BOOST_TEST(gc::canary_key({{"a", hash_a}}) != gc::canary_key({{"a", hash_b}}));
  BOOST_TEST(gc::canary_key({{"a", hash_a}}).size() == 16u);
}

BOOST_AUTO_TEST_CASE(item_rollout_gives_canary_nodes_the_longer_soak) {
  gp::rollout_policy r;
  BOOST_TEST(!gc::item_rollout_of(r, "n", {}).soak_seconds);
  r.node_soak_seconds = 60;
  gp::canary_policy c;
  c.soak_seconds = 600;
  r.canary = c;
  BOOST_TEST((gc::item_rollout_of(r, "n", {}).soak_seconds == std::int64_t{60}));
  BOOST_TEST(!gc::item_rollout_of(r, "n", {}).canary);
  BOOST_TEST((gc::item_rollout_of(r, "n", {"n"}).soak_seconds == std::int64_t{600}));
  BOOST_TEST(gc::item_rollout_of(r, "n", {"n"}).canary);
  r.node_soak_seconds = 900;
  BOOST_TEST((gc::item_rollout_of(r, "n", {"n"}).soak_seconds == std::int64_t{900}));
}

BOOST_AUTO_TEST_SUITE_END()
