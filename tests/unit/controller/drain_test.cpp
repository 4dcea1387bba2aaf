// controller::plan_evictions and drain_timeout_reason: one bounded pass of a drain over a
// node's pods. Which pods must go; an eviction per pod not yet evicted; a refused one
// asked again after 5 s or as soon as its budget opens; an approved eviction whose pod
// was never deleted finished by a delete; a lagging watch not taken for a lost eviction;
// DaemonSet pods holding GPUs shown, not evicted. The pod policies: every pod class
// against every combination of deleteEmptyDirData, force, podSelector and
// waitForCompletion, in the pass and in the dry run; failed evictions backed off; pods
// stuck terminating told from held ones; long-deleted pods of a NotReady node let go. Where
// a replacement may run, with nodes as a real cluster shows them: the node-lifecycle
// controller's cordon taint, its not-ready and unreachable taints, DRA devices.
#include "controller/drain.hpp"

#include <boost/test/unit_test.hpp>

#include <memory>
#include <optional>
#include <set>
#include <tuple>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;
using namespace std::chrono_literals;

namespace {

const gp::wall_clock::time_point t0 = gp::wall_clock::from_time_t(1800000000);

gc::pod_info pod(const std::string& name, const std::string& app = "web") {
  gc::pod_info p;
  p.ns = "team";
  p.name = name;
  p.uid = "uid-" + name;
  p.node_name = "a";
  p.labels = {{"app", app}};
  p.phase = "Running";
  return p;
}

gc::pdb_info budget(const std::string& name, const std::string& app, int allowed = 0) {
  gc::pdb_info b;
  b.ns = "team";
  b.name = name;
  b.match_labels = {{"app", app}};
  b.disruptions_allowed = allowed;
  return b;
}

gc::eviction_memory blocked_at(gp::wall_clock::time_point at) {
  gc::eviction_memory m;
  m.at = at;
  m.blocked = true;
  m.message = "Cannot evict pod as it would violate the pod's disruption budget.";
  return m;
}

gc::eviction_memory evicted_at(gp::wall_clock::time_point at) {
  gc::eviction_memory m;
  m.at = at;
  m.done = true;
  return m;
}

gc::toleration tolerates_dcm() {
  gc::toleration t;
  t.key = gc::dcm_taint_key;
  t.op = "Exists";
  t.effect = "NoExecute";
  return t;
}

} // namespace

BOOST_AUTO_TEST_SUITE(drain)

BOOST_AUTO_TEST_CASE(the_pods_a_drain_must_see_gone) {
  auto ds = pod("plugin");
  ds.daemon_set = true;
  auto mirror = pod("static");
  mirror.mirror = true;
  auto done = pod("job");
  done.phase = "Succeeded";
  auto tolerant = pod("monitor");
  tolerant.tolerations = {tolerates_dcm()};
  auto tolerant_gpu = pod("trainer");
  tolerant_gpu.tolerations = {tolerates_dcm()};
  tolerant_gpu.gpus = 8;
  const auto out = gc::evictable_pods({pod("web-1"), ds, mirror, done, tolerant, tolerant_gpu});
  BOOST_REQUIRE(out.size() == 2u);
  BOOST_TEST(out[0].name == "web-1");
  BOOST_TEST(out[1].name == "trainer", "a pod holding GPUs goes whatever it tolerates");
}

BOOST_AUTO_TEST_CASE(each_pod_not_yet_evicted_is_evicted_through_the_api) {
  gp::drain_policy drain;
  const auto pass = gc::plan_evictions({pod("web-1"), pod("web-2")}, {}, {}, drain, t0);
  BOOST_REQUIRE(pass.removals.size() == 2u);
  BOOST_TEST(pass.removals[0].evict);
  BOOST_TEST(!pass.removals[0].again);
  BOOST_TEST(pass.removals[1].uid == "uid-web-2");
  BOOST_TEST(pass.not_evicted == 2);
  BOOST_TEST(pass.evicted == 0);

  drain.kind = gp::eviction_kind::delete_pods;
  BOOST_TEST(!gc::plan_evictions({pod("web-1")}, {}, {}, drain, t0).removals[0].evict,
             "evictionKind Delete deletes");
  drain = {};
  drain.respect_pdb = false;
  BOOST_TEST(!gc::plan_evictions({pod("web-1")}, {}, {}, drain, t0).removals[0].evict,
             "respectPDB false deletes");
}

BOOST_AUTO_TEST_CASE(an_evicted_pod_the_watch_still_shows_is_asked_again_only_after_5_s) {
  auto terminating = pod("web-2");
  terminating.deleting = true;
  const std::map<std::string, gc::eviction_memory> mem{{"team/web-1", evicted_at(t0)},
                                                       {"team/web-2", evicted_at(t0)}};
  const auto soon = gc::plan_evictions({pod("web-1"), terminating}, {}, mem, {}, t0 + 2s);
  BOOST_TEST(soon.removals.empty());
  BOOST_TEST(soon.evicted == 2);
  BOOST_TEST(soon.not_evicted == 0);
  BOOST_TEST(soon.uncounted == 0, "an evicted pod is counted once");
  const auto later = gc::plan_evictions({pod("web-1"), terminating}, {}, mem, {}, t0 + 5s);
  BOOST_REQUIRE(later.removals.size() == 1u);
  BOOST_TEST(later.removals[0].name == "web-1");
  BOOST_TEST(later.removals[0].again, "read first: it may be gone already");
}

// A pod the API server said is gone (read before asking again) is gone for the drain,
// though the watch still shows it: it is not read again every 5 s, nor does it hold the
// drain. A new pod of its name (another uid) is a pod to evict.
BOOST_AUTO_TEST_CASE(a_pod_read_gone_is_not_asked_again_while_the_watch_lags) {
  auto gone = evicted_at(t0);
  gone.gone_uid = pod("web-1").uid;
  const std::map<std::string, gc::eviction_memory> mem{{"team/web-1", gone}};
  const auto lagging = gc::plan_evictions({pod("web-1")}, {}, mem, {}, t0 + 60s);
  BOOST_TEST(lagging.removals.empty());
  BOOST_TEST(lagging.left == 0);
  BOOST_TEST(lagging.evicted == 1);
  auto successor = pod("web-1");
  successor.uid = "another-uid";
  const auto again = gc::plan_evictions({successor}, {}, mem, {}, t0 + 60s);
  BOOST_REQUIRE(again.removals.size() == 1u);
  BOOST_TEST(again.removals[0].uid == "another-uid");
  BOOST_TEST(again.left == 1);
}

BOOST_AUTO_TEST_CASE(a_refused_eviction_waits_5_s_unless_its_budget_opens) {
  const std::map<std::string, gc::eviction_memory> mem{{"team/web-1", blocked_at(t0)}};
  const auto closed =
      gc::plan_evictions({pod("web-1")}, {budget("web-pdb", "web")}, mem, {}, t0 + 1s);
  BOOST_TEST(closed.removals.empty());
  BOOST_REQUIRE(closed.blocked.size() == 1u);
  BOOST_TEST(closed.blocked[0].reason == "PodDisruptionBudget team/web-pdb does not allow it now");
  BOOST_REQUIRE(closed.blocking_pdbs.size() == 1u);
  BOOST_TEST(closed.blocking_pdbs[0].name == "web-pdb");
  auto allows = budget("web-pdb", "web", 1);
  allows.seen = t0 - 1s;
  const auto stale = gc::plan_evictions({pod("web-1")}, {allows}, mem, {}, t0 + 1s);
  BOOST_TEST(stale.removals.empty(), "a budget seen before the refusal is no news");
  allows.seen = t0 + 500ms;
  const auto open = gc::plan_evictions({pod("web-1")}, {allows}, mem, {}, t0 + 1s);
  BOOST_TEST(open.removals.size() == 1u, "the budget allows one now");
  const auto retry =
      gc::plan_evictions({pod("web-1")}, {budget("web-pdb", "web")}, mem, {}, t0 + 5s);
  BOOST_TEST(retry.removals.size() == 1u);
  BOOST_TEST(retry.blocked.size() == 1u, "still shown as blocked while asked again");
}

// A pod never asked whose one budget shows no disruption left is held without a request
// (the API server would refuse it) and shown as a refused one is; it is asked once the
// budget's status allows one. A pass sends no more evictions under a budget than it allows.
BOOST_AUTO_TEST_CASE(a_pod_its_budget_would_refuse_is_held_unasked_until_the_budget_allows) {
  const auto held = gc::plan_evictions({pod("web-1")}, {budget("web-pdb", "web")}, {}, {}, t0);
  BOOST_TEST(held.removals.empty(), "not asked: its budget allows no disruption");
  BOOST_REQUIRE(held.blocked.size() == 1u);
  BOOST_TEST(held.blocked[0].reason == "PodDisruptionBudget team/web-pdb does not allow it now");
  BOOST_REQUIRE(held.blocking_pdbs.size() == 1u);
  BOOST_TEST(held.blocking_pdbs[0].name == "web-pdb");
  BOOST_TEST(held.left == 1);
  BOOST_TEST(held.not_evicted == 1);
  BOOST_TEST(held.losing_unmanaged.empty(), "its loss is told when it is asked");

  const auto open =
      gc::plan_evictions({pod("web-1")}, {budget("web-pdb", "web", 1)}, {}, {}, t0 + 1s);
  BOOST_REQUIRE(open.removals.size() == 1u);
  BOOST_TEST(open.removals[0].evict);
  BOOST_TEST(open.blocked.empty());

  // Two pods under a budget that allows one: one goes, the other waits for the budget;
  // a pod of another budget is not held by this one.
  const auto one =
      gc::plan_evictions({pod("web-1"), pod("web-2"), pod("db-1", "db")},
                         {budget("web-pdb", "web", 1), budget("db-pdb", "db", 1)}, {}, {}, t0);
  BOOST_REQUIRE(one.removals.size() == 2u);
  BOOST_TEST(one.removals[0].name == "web-1");
  BOOST_TEST(one.removals[1].name == "db-1");
  BOOST_REQUIRE(one.blocked.size() == 1u);
  BOOST_TEST(one.blocked[0].name == "web-2");

  // A retry after the API server's refusal keeps its own rule: asked again after 5 s.
  const std::map<std::string, gc::eviction_memory> mem{{"team/web-1", blocked_at(t0)}};
  BOOST_TEST(gc::plan_evictions({pod("web-1")}, {budget("web-pdb", "web")}, mem, {}, t0 + 5s)
                 .removals.size() == 1u);
}

// Held only where the API server's answer is sure to be the budget's refusal: not a pod
// that is not Ready (unhealthyPodEvictionPolicy may let it go), not one two budgets cover
// (an error of its own), not one the budget counts disrupted already (an approved
// eviction to finish), and not when the policy deletes or ignores budgets.
BOOST_AUTO_TEST_CASE(a_pod_the_api_server_may_judge_otherwise_is_asked) {
  auto unready = pod("web-1");
  unready.ready = false;
  BOOST_TEST(
      gc::plan_evictions({unready}, {budget("web-pdb", "web")}, {}, {}, t0).removals.size() == 1u);
  auto twice = budget("all-pdb", "web");
  BOOST_TEST(gc::plan_evictions({pod("web-1")}, {budget("web-pdb", "web"), twice}, {}, {}, t0)
                 .removals.size() == 1u);
  auto counted = budget("web-pdb", "web");
  counted.disrupted_pods.insert("web-1");
  BOOST_TEST(gc::plan_evictions({pod("web-1")}, {counted}, {}, {}, t0).removals.size() == 1u);
  gp::drain_policy deletes;
  deletes.kind = gp::eviction_kind::delete_pods;
  BOOST_TEST(gc::plan_evictions({pod("web-1")}, {budget("web-pdb", "web")}, {}, deletes, t0)
                 .removals.size() == 1u);
  gp::drain_policy ignores;
  ignores.respect_pdb = false;
  BOOST_TEST(gc::plan_evictions({pod("web-1")}, {budget("web-pdb", "web")}, {}, ignores, t0)
                 .removals.size() == 1u);
}

BOOST_AUTO_TEST_CASE(an_approved_eviction_whose_pod_was_never_deleted_is_finished_by_a_delete) {
  auto b = budget("web-pdb", "web");
  b.disrupted_pods.insert("web-1");
  const std::map<std::string, gc::eviction_memory> mem{{"team/web-1", blocked_at(t0)}};
  const auto pass = gc::plan_evictions({pod("web-1")}, {b}, mem, {}, t0 + 5s);
  BOOST_REQUIRE(pass.removals.size() == 1u);
  BOOST_TEST(!pass.removals[0].evict);
  // Without the grant to delete pods, the eviction is asked again instead: the API server
  // forgets the approval within 2 minutes.
  gc::drain_context no_delete(t0 + 5s);
  no_delete.may_delete = false;
  const auto again = gc::plan_evictions({pod("web-1")}, {b}, mem, {}, no_delete);
  BOOST_REQUIRE(again.removals.size() == 1u);
  BOOST_TEST(again.removals[0].evict);
}

BOOST_AUTO_TEST_CASE(budgets_are_named_once_in_order_and_gpu_daemon_pods_shown) {
  const std::map<std::string, gc::eviction_memory> mem{{"team/web-1", blocked_at(t0)},
                                                       {"team/web-2", blocked_at(t0)},
                                                       {"team/db-1", blocked_at(t0)}};
  auto gpu_ds = pod("exporter", "exporter");
  gpu_ds.daemon_set = true;
  gpu_ds.gpus = 1;
  const auto pass =
      gc::plan_evictions({pod("web-1"), pod("web-2"), pod("db-1", "db"), gpu_ds},
                         {budget("web-pdb", "web"), budget("db-pdb", "db")}, mem, {}, t0 + 1s);
  BOOST_REQUIRE(pass.blocking_pdbs.size() == 2u);
  BOOST_TEST(pass.blocking_pdbs[0].name == "db-pdb");
  BOOST_TEST(pass.blocking_pdbs[1].name == "web-pdb");
  BOOST_TEST(pass.blocked.size() == 3u);
  BOOST_REQUIRE(pass.shown.size() == 4u);
  BOOST_TEST(pass.shown.back().name == "exporter");
  BOOST_TEST(pass.evictable.size() == 3u, "the DaemonSet's pod is not evicted");
}

BOOST_AUTO_TEST_CASE(a_timed_out_drain_names_its_budgets_or_counts_its_pods) {
  const std::map<std::string, gc::eviction_memory> mem{{"team/web-1", blocked_at(t0)}};
  const std::vector<gc::pdb_info> pdbs{budget("web-pdb", "web")};
  const auto held = gc::plan_evictions({pod("web-1")}, pdbs, mem, {}, t0 + 1s);
  BOOST_TEST(gc::drain_timeout_reason(held, pdbs, 600) ==
             "the drain did not finish within 600 s: blocked by PodDisruptionBudget team/web-pdb");
  const auto two = gc::plan_evictions({pod("web-1"), pod("web-2")}, {}, {}, {}, t0);
  BOOST_TEST(gc::drain_timeout_reason(two, {}, 60) ==
             "the drain did not finish within 60 s: 2 pod(s) still on the node");
  BOOST_TEST(gc::drain_timeout_reason(gc::plan_evictions({}, {}, {}, {}, t0), {}, 60) ==
             "the drain did not finish within 60 s");
}

// -- pod policies --

namespace {

struct pod_class {
  const char* what;
  bool unmanaged;
  bool empty_dir;
  bool gpu_tolerant; // holds GPUs, tolerates the taint
  bool labelled;     // carries drain=yes (the podSelector's) and job=train (the wait's)
};

const pod_class classes[] = {
    {"plain", false, false, false, true},
    {"plain, unlabelled", false, false, false, false},
    {"emptyDir", false, true, false, true},
    {"unmanaged", true, false, false, true},
    {"unmanaged emptyDir", true, true, false, true},
    {"GPU, tolerant", false, false, true, true},
    {"GPU, tolerant, unlabelled", false, false, true, false},
};

gc::pod_info of_class(const pod_class& c) {
  auto p = pod("p");
  p.unmanaged = c.unmanaged;
  p.empty_dir = c.empty_dir;
  if (c.gpu_tolerant) {
    p.gpus = 1;
    p.tolerations = {tolerates_dcm()};
  }
  if (c.labelled) {
    p.labels["drain"] = "yes";
    p.labels["job"] = "train";
  }
  return p;
}

gp::label_selector selecting(const std::string& key, const std::string& value) {
  gp::label_selector s;
  s.match_labels[key] = value;
  return s;
}

// The rules of docs/api.md, drainPolicy, written out as a table's oracle.
gc::pod_verdict expected(const pod_class& c, const gp::drain_policy& d, bool wait_over) {
  if (d.pod_selector && !c.labelled)
    return gc::pod_verdict::refuse;
  if (d.wait && c.labelled && !wait_over)
    return gc::pod_verdict::wait;
  if (c.unmanaged && d.force != true)
    return gc::pod_verdict::refuse;
  if (c.empty_dir && d.delete_empty_dir_data == false)
    return gc::pod_verdict::refuse;
  return gc::pod_verdict::evict;
}

} // namespace

BOOST_AUTO_TEST_CASE(every_pod_class_under_every_policy_combination) {
  const std::optional<bool> tri[] = {std::nullopt, true, false};
  int combinations = 0;
  for (const auto& c : classes)
    for (const auto& empty_dir : tri)
      for (const auto& force : tri)
        for (bool selector : {false, true})
          for (bool wait : {false, true})
            for (bool wait_over : {false, true}) {
              if (!wait && wait_over)
                continue;
              gp::drain_policy d;
              d.delete_empty_dir_data = empty_dir;
              d.force = force;
              if (selector)
                d.pod_selector = selecting("drain", "yes");
              if (wait)
                d.wait = gp::wait_for_completion{selecting("job", "train"), 600};
              const gc::drain_context clock{t0 + (wait_over ? 600s : 599s), t0, true};
              const auto p = of_class(c);
              const auto want = expected(c, d, wait_over);
              const auto judged = gc::judge_pod(p, d, clock);
              const std::string at =
                  std::string(c.what) +
                  " emptyDir=" + (empty_dir ? (*empty_dir ? "true" : "false") : "unset") +
                  " force=" + (force ? (*force ? "true" : "false") : "unset") +
                  " selector=" + std::to_string(selector) + " wait=" + std::to_string(wait) +
                  " over=" + std::to_string(wait_over);
              BOOST_TEST(static_cast<int>(judged.verdict) == static_cast<int>(want), at);
              BOOST_TEST(!judged.why.empty() == (want != gc::pod_verdict::evict), at);
              // The pass acts on the verdict.
              const auto pass = gc::plan_evictions({p}, {}, {}, d, clock);
              BOOST_TEST(pass.removals.size() == (want == gc::pod_verdict::evict ? 1u : 0u), at);
              BOOST_TEST(pass.refused.size() == (want == gc::pod_verdict::refuse ? 1u : 0u), at);
              BOOST_TEST(pass.waiting.size() == (want == gc::pod_verdict::wait ? 1u : 0u), at);
              BOOST_TEST(pass.left == 1, at);
              const bool evicted = want == gc::pod_verdict::evict;
              BOOST_TEST(pass.losing_empty_dir.size() == (evicted && c.empty_dir ? 1u : 0u), at);
              BOOST_TEST(pass.losing_unmanaged.size() == (evicted && c.unmanaged ? 1u : 0u), at);
              for (const auto& shown : pass.shown)
                BOOST_TEST((shown.cause == (want == gc::pod_verdict::refuse
                                                ? gp::pod_hold::policy
                                                : gp::pod_hold::waiting_for_completion)),
                           at);
              // The dry run, looking at the same moment, says the same.
              const auto preview = gc::preview_drain({p}, {}, d, clock);
              BOOST_TEST(preview.pods_to_evict.size() == (evicted ? 1u : 0u), at);
              BOOST_TEST(
                  preview.pods_to_wait_for.size() == (want == gc::pod_verdict::wait ? 1u : 0u), at);
              BOOST_TEST(preview.pods_refused.size() == (want == gc::pod_verdict::refuse ? 1u : 0u),
                         at);
              const bool goes = want != gc::pod_verdict::refuse;
              BOOST_TEST(
                  preview.pods_losing_empty_dir_data.size() == (goes && c.empty_dir ? 1u : 0u), at);
              BOOST_TEST(preview.unmanaged_pods.size() == (goes && c.unmanaged ? 1u : 0u), at);
              ++combinations;
            }
  BOOST_TEST(combinations == 7 * 3 * 3 * 2 * 3);
}

BOOST_AUTO_TEST_CASE(the_defaults_evict_empty_dir_pods_and_refuse_unmanaged_ones) {
  auto scratch = pod("scratch");
  scratch.empty_dir = true;
  auto bare = pod("bare");
  bare.unmanaged = true;
  const auto pass = gc::plan_evictions({scratch, bare}, {}, {}, {}, t0);
  BOOST_REQUIRE(pass.removals.size() == 1u);
  BOOST_TEST(pass.removals[0].name == "scratch");
  BOOST_REQUIRE(pass.losing_empty_dir.size() == 1u);
  BOOST_TEST(pass.losing_empty_dir[0] == "team/scratch");
  BOOST_REQUIRE(pass.refused.size() == 1u);
  BOOST_TEST(pass.refused[0].name == "bare");
  BOOST_TEST(pass.refused[0].reason.find("drainPolicy.force") != std::string::npos);
  // A loss is named with the first eviction only, not each time it is asked again.
  const std::map<std::string, gc::eviction_memory> mem{{"team/scratch", blocked_at(t0)}};
  BOOST_TEST(gc::plan_evictions({scratch}, {}, mem, {}, t0 + 5s).losing_empty_dir.empty());
}

BOOST_AUTO_TEST_CASE(a_pod_let_finish_is_evicted_at_its_timeout_and_the_drain_deadline_waits) {
  gp::drain_policy d;
  d.timeout_seconds = 300;
  d.wait = gp::wait_for_completion{selecting("app", "web"), 3600};
  BOOST_TEST(gc::drain_timeout_seconds(d) == 3900, "timeoutSeconds counts after the wait");
  const auto during = gc::plan_evictions({pod("web-1")}, {}, {}, d, {t0 + 3599s, t0, true});
  BOOST_TEST(during.removals.empty());
  BOOST_REQUIRE(during.waiting.size() == 1u);
  BOOST_TEST(during.waiting[0].reason == "drainPolicy.waitForCompletion: let finish until " +
                                             gp::format_time(t0 + 3600s) + ", evicted then");
  const auto after = gc::plan_evictions({pod("web-1")}, {}, {}, d, {t0 + 3600s, t0, true});
  BOOST_TEST(after.removals.size() == 1u);
  // A finished pod is not waited for at all.
  auto done = pod("web-2");
  done.phase = "Succeeded";
  BOOST_TEST(gc::plan_evictions({done}, {}, {}, d, {t0 + 1s, t0, true}).left == 0);
}

BOOST_AUTO_TEST_CASE(the_grace_period_override_rides_on_every_removal) {
  gp::drain_policy d;
  d.grace_period_seconds = 7;
  const auto pass = gc::plan_evictions({pod("web-1")}, {}, {}, d, t0);
  BOOST_REQUIRE(pass.removals.size() == 1u);
  BOOST_TEST((pass.removals[0].grace_seconds == std::optional<std::int64_t>(7)));
  BOOST_TEST(!gc::plan_evictions({pod("web-1")}, {}, {}, {}, t0).removals[0].grace_seconds);
}

BOOST_AUTO_TEST_CASE(a_failed_eviction_is_shown_with_the_servers_message_and_backed_off) {
  std::map<std::string, gc::eviction_memory> mem;
  gc::eviction_memory failure;
  failure.at = t0;
  failure.failed = true;
  failure.message = "500 InternalError: This pod has more than one PodDisruptionBudget";
  gc::record_eviction(mem, "team/web-1", failure);
  BOOST_TEST(mem["team/web-1"].failures == 1);
  const auto soon = gc::plan_evictions({pod("web-1")}, {}, mem, {}, t0 + 4s);
  BOOST_TEST(soon.removals.empty());
  BOOST_REQUIRE(soon.failed.size() == 1u);
  BOOST_TEST((soon.failed[0].cause == gp::pod_hold::eviction_error));
  BOOST_TEST(soon.failed[0].reason.find("more than one PodDisruptionBudget") != std::string::npos);
  BOOST_TEST(soon.blocked.empty(), "not a budget's refusal");
  BOOST_TEST(gc::plan_evictions({pod("web-1")}, {}, mem, {}, t0 + 5s).removals.size() == 1u);
  // Each failure in a row doubles the wait, up to 5 minutes.
  failure.at = t0 + 5s;
  gc::record_eviction(mem, "team/web-1", failure);
  BOOST_TEST(mem["team/web-1"].failures == 2);
  BOOST_TEST(gc::plan_evictions({pod("web-1")}, {}, mem, {}, t0 + 14s).removals.empty());
  BOOST_TEST(gc::plan_evictions({pod("web-1")}, {}, mem, {}, t0 + 15s).removals.size() == 1u);
  BOOST_TEST(gc::eviction_backoff(1).count() == 5);
  BOOST_TEST(gc::eviction_backoff(4).count() == 40);
  BOOST_TEST(gc::eviction_backoff(30).count() == 300);
  // A success (or a budget's refusal) starts the count again.
  gc::record_eviction(mem, "team/web-1", blocked_at(t0 + 20s));
  gc::record_eviction(mem, "team/web-1", failure);
  BOOST_TEST(mem["team/web-1"].failures == 1);
  // The timeout names the error.
  const auto pass = gc::plan_evictions({pod("web-1")}, {}, mem, {}, t0 + 6s);
  BOOST_TEST(gc::drain_timeout_reason(pass, {}, 60).find("more than one PodDisruptionBudget") !=
             std::string::npos);
}

// The worker's memory holds one run's evictions: the next run's first outcome replaces the
// lot, and its failures count from one.
BOOST_AUTO_TEST_CASE(recording_an_eviction_of_another_run_forgets_the_last_runs) {
  std::map<std::string, gc::eviction_memory> mem;
  gc::eviction_memory failure;
  failure.at = t0;
  failure.failed = true;
  failure.run = "2027-01-15T08:00:00Z";
  gc::record_eviction(mem, "team/web-1", failure);
  gc::record_eviction(mem, "team/web-1", failure);
  auto done = evicted_at(t0);
  done.run = failure.run;
  gc::record_eviction(mem, "team/web-2", done);
  BOOST_TEST(mem["team/web-1"].failures == 2);
  failure.run = "2027-01-15T09:00:00Z";
  gc::record_eviction(mem, "team/web-1", failure);
  BOOST_TEST(mem.size() == 1u);
  BOOST_TEST(mem["team/web-1"].failures == 1);
  BOOST_TEST(mem.count("team/web-2") == 0u);
}

BOOST_AUTO_TEST_CASE(a_pod_stuck_terminating_is_reported_and_never_blamed_on_its_budget) {
  auto stuck = pod("web-1");
  stuck.deleting = true;
  stuck.deletion_deadline = t0;
  const std::map<std::string, gc::eviction_memory> mem{{"team/web-1", evicted_at(t0 - 30s)}};
  const std::vector<gc::pdb_info> pdbs{budget("web-pdb", "web")};
  const auto early = gc::plan_evictions({stuck}, pdbs, mem, {}, t0 + 9s);
  BOOST_TEST(early.stuck.empty(), "within 10 s of its due deletion it is only terminating");
  const auto late = gc::plan_evictions({stuck}, pdbs, mem, {}, t0 + 10s);
  BOOST_REQUIRE(late.stuck.size() == 1u);
  BOOST_TEST((late.stuck[0].cause == gp::pod_hold::terminating));
  BOOST_TEST(late.blocked.empty());
  BOOST_TEST(late.left == 1, "still waited for on a Ready node");
  const auto why = gc::drain_timeout_reason(late, pdbs, 600);
  BOOST_TEST(why.find("PodDisruptionBudget") == std::string::npos, why);
  BOOST_TEST(why.find("team/web-1: still terminating") != std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(a_not_ready_node_does_not_wait_for_pods_deleted_long_ago) {
  auto gone = pod("web-1");
  gone.deleting = true;
  gone.deletion_deadline = t0;
  gp::drain_policy d;
  BOOST_TEST(gc::plan_evictions({gone}, {}, {}, d, {t0 + 59s, t0, false}).left == 1);
  const auto later = gc::plan_evictions({gone}, {}, {}, d, {t0 + 60s, t0, false});
  BOOST_TEST(later.left == 0);
  BOOST_REQUIRE(later.not_awaited.size() == 1u);
  BOOST_TEST(gc::plan_evictions({gone}, {}, {}, d, {t0 + 600s, t0, true}).left == 1,
             "a Ready node's kubelet confirms deletions: waited for");
  d.skip_wait_for_delete_timeout_seconds = 5;
  BOOST_TEST(gc::deletion_not_awaited(gone, d, {t0 + 5s, t0, false}));
  auto running = pod("web-2");
  BOOST_TEST(!gc::deletion_not_awaited(running, d, {t0 + 600s, t0, false}));
}

BOOST_AUTO_TEST_CASE(an_unhealthy_pod_refused_by_its_budget_says_what_policy_would_let_it_go) {
  auto crashing = pod("web-1");
  crashing.ready = false;
  auto b = budget("web-pdb", "web");
  b.current_healthy = 0;
  b.desired_healthy = 1;
  const std::map<std::string, gc::eviction_memory> mem{{"team/web-1", blocked_at(t0)}};
  const auto held = gc::plan_evictions({crashing}, {b}, mem, {}, t0 + 1s);
  BOOST_REQUIRE(held.blocked.size() == 1u);
  BOOST_TEST(held.blocked[0].reason ==
             "PodDisruptionBudget team/web-pdb does not allow it now; the pod is not Ready, and "
             "under unhealthyPodEvictionPolicy IfHealthyBudget an unhealthy pod goes only while "
             "its budget has the healthy pods it wants (0 of 1): AlwaysAllow lets it go");
  // A Ready pod, or a budget that already always allows unhealthy pods: the plain reason.
  BOOST_TEST(gc::plan_evictions({pod("web-1")}, {b}, mem, {}, t0 + 1s).blocked[0].reason ==
             "PodDisruptionBudget team/web-pdb does not allow it now");
  b.always_allow_unhealthy = true;
  BOOST_TEST(gc::plan_evictions({crashing}, {b}, mem, {}, t0 + 1s).blocked[0].reason ==
             "PodDisruptionBudget team/web-pdb does not allow it now");
}

// -- drains that wait on each other --

namespace {

std::shared_ptr<const gc::node_info> gpu_node(const std::string& name,
                                              const std::string& pool = "train") {
  auto n = std::make_shared<gc::node_info>();
  n->name = name;
  n->labels = {{"pool", pool}};
  n->allocatable = {{"amd.com/gpu", "8"}};
  return n;
}

std::shared_ptr<const gc::node_info> held_by_us(const std::string& name) {
  auto n = std::make_shared<gc::node_info>(*gpu_node(name));
  n->unschedulable = true;
  n->annotations[gc::was_unschedulable_annotation] = "false";
  return n;
}

gc::pod_info trainer(const std::string& name) {
  auto p = pod(name, "trainer");
  p.node_selector = {{"pool", "train"}};
  p.gpus = 1;
  return p;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_replacement_may_run_only_where_its_template_fits) {
  gc::shared_map<gc::node_info> nodes;
  nodes["a"] = gpu_node("a");
  nodes["b"] = held_by_us("b");
  auto admin = std::make_shared<gc::node_info>(*gpu_node("c"));
  admin->unschedulable = true; // an admin's cordon: no record of ours
  nodes["c"] = admin;
  nodes["d"] = gpu_node("d", "infer");
  auto tainted = std::make_shared<gc::node_info>(*gpu_node("e"));
  tainted->taints = {{"dedicated", "x", "NoSchedule"}};
  nodes["e"] = tainted;
  auto down = std::make_shared<gc::node_info>(*gpu_node("f"));
  down->ready = false;
  nodes["f"] = down;
  auto cpu = std::make_shared<gc::node_info>(*gpu_node("g"));
  cpu->allocatable = {{"cpu", "64"}};
  nodes["g"] = cpu;
  auto ours_tainted = std::make_shared<gc::node_info>(*gpu_node("h"));
  ours_tainted->annotations[gc::was_unschedulable_annotation] = "true";
  ours_tainted->unschedulable = true;
  ours_tainted->taints = {{gc::dcm_taint_key, gc::dcm_taint_value, "NoExecute"}};
  nodes["h"] = ours_tainted;
  gc::drain_context at{t0};
  at.node = "a";
  at.nodes = &nodes;
  const auto room = gc::room_for_replacement(trainer("t-1"), at);
  BOOST_TEST(room.candidates == (std::vector<std::string>{"b", "c", "h"}),
             "not itself, another pool, an untolerated taint, NotReady, no GPUs");
  BOOST_TEST(room.held == (std::vector<std::string>{"b", "h"}));
  BOOST_TEST(room.open.empty());
  const auto why = gc::deadlock_of(trainer("t-1"), at);
  BOOST_TEST(why.find("(b, h)") != std::string::npos, why);
  // A tolerated taint, or one open node: no deadlock.
  auto tolerant = trainer("t-2");
  tolerant.tolerations = {{"dedicated", "Equal", "x", "NoSchedule", false}};
  BOOST_TEST(gc::room_for_replacement(tolerant, at).candidates.size() == 4u);
  // A nodeSelector too long to keep: no node is taken for room (nor a deadlock claimed).
  auto unknown = trainer("t-3");
  unknown.node_selector_cut = true;
  BOOST_TEST(gc::room_for_replacement(unknown, at).candidates.empty());
  BOOST_TEST(gc::deadlock_of(unknown, at).empty());
  nodes["z"] = gpu_node("z");
  BOOST_TEST(gc::deadlock_of(trainer("t-1"), at).empty());
  // Without the nodes, nothing is claimed.
  BOOST_TEST(gc::deadlock_of(trainer("t-1"), gc::drain_context{t0}).empty());
}

BOOST_AUTO_TEST_CASE(a_budget_held_by_the_operators_own_cordons_is_named_a_deadlock) {
  gc::shared_map<gc::node_info> nodes;
  for (const char* n : {"a", "b", "c"})
    nodes[n] = held_by_us(n);
  gc::drain_context at{t0 + 1s};
  at.node = "a";
  at.nodes = &nodes;
  const std::map<std::string, gc::eviction_memory> mem{{"team/t-1", blocked_at(t0)}};
  const auto pass = gc::plan_evictions({trainer("t-1")}, {budget("t-pdb", "trainer")}, mem, {}, at);
  BOOST_TEST(pass.deadlocked == 1);
  BOOST_REQUIRE(pass.blocked.size() == 1u);
  BOOST_TEST(pass.blocked[0].reason.find("wait on each other") != std::string::npos,
             pass.blocked[0].reason);
  // One node back in service: only a budget's refusal.
  nodes["c"] = gpu_node("c");
  BOOST_TEST(
      gc::plan_evictions({trainer("t-1")}, {budget("t-pdb", "trainer")}, mem, {}, at).deadlocked ==
      0);
}

// -- nodes as a real cluster shows them --

namespace {

// As kube-controller-manager's node-lifecycle controller shows a node: `taints` added.
std::shared_ptr<const gc::node_info> with_taints(std::shared_ptr<const gc::node_info> node,
                                                 std::vector<gc::taint> taints) {
  auto n = std::make_shared<gc::node_info>(*node);
  for (auto& t : taints)
    n->taints.push_back(std::move(t));
  return n;
}

const gc::taint cordon_taint{gc::unschedulable_taint_key, "", "NoSchedule"};

// A DRA node: its GPUs published as devices of AMD's DRA driver, no amd.com/ resource.
std::shared_ptr<const gc::node_info> dra_node(const std::string& name, bool held = false) {
  auto n = std::make_shared<gc::node_info>(*(held ? held_by_us(name) : gpu_node(name)));
  n->allocatable = {{"cpu", "192"}};
  return n;
}

// A trainer whose GPUs come from claims on its node's devices.
gc::pod_info claiming_trainer(const std::string& name, long long devices = 1) {
  auto p = trainer(name);
  p.gpus = devices;
  p.gpu_claims = true;
  return p;
}

gc::toleration exists(const std::string& key) {
  gc::toleration t;
  t.key = key;
  t.op = "Exists";
  return t;
}

} // namespace

// Table: the cordon as the node-lifecycle controller shows it. Each row: the other nodes'
// cordons and taints, and whether the drain of `a` is named a deadlock.
BOOST_AUTO_TEST_CASE(the_lifecycle_controllers_unschedulable_taint_is_the_cordon) {
  struct row {
    const char* what;
    bool b_ours;
    bool b_taint;
    bool c_ours;
    bool c_taint;
    std::vector<std::string> held;
    std::vector<std::string> open;
  };
  const std::vector<row> rows = {
      {"held by us, no taint yet", true, false, true, false, {"b", "c"}, {}},
      {"held by us, tainted as KCM does", true, true, true, true, {"b", "c"}, {}},
      {"one tainted, one not", true, true, true, false, {"b", "c"}, {}},
      {"an admin's cordon, tainted: neither ours nor open", true, true, false, true, {"b"}, {}},
  };
  for (const auto& r : rows) {
    gc::shared_map<gc::node_info> nodes;
    nodes["a"] = held_by_us("a");
    auto node = [](const char* name, bool ours, bool tainted) {
      std::shared_ptr<const gc::node_info> n = held_by_us(name);
      if (!ours) {
        auto admin = std::make_shared<gc::node_info>(*gpu_node(name));
        admin->unschedulable = true;
        n = admin;
      }
      return tainted ? with_taints(n, {cordon_taint}) : n;
    };
    nodes["b"] = node("b", r.b_ours, r.b_taint);
    nodes["c"] = node("c", r.c_ours, r.c_taint);
    gc::drain_context at{t0 + 1s};
    at.node = "a";
    at.nodes = &nodes;
    const auto room = gc::room_for_replacement(trainer("t-1"), at);
    BOOST_TEST(room.candidates == (std::vector<std::string>{"b", "c"}), r.what);
    BOOST_TEST(room.held == r.held, r.what);
    BOOST_TEST(room.open == r.open, r.what);
    const std::map<std::string, gc::eviction_memory> mem{{"team/t-1", blocked_at(t0)}};
    const auto pass =
        gc::plan_evictions({trainer("t-1")}, {budget("t-pdb", "trainer")}, mem, {}, at);
    BOOST_TEST(pass.deadlocked == 1, r.what);
  }
}

// A node uncordoned a moment ago still shows the taint until the controller lifts it: not
// open yet, and not ours. A pod that tolerates the cordon may go to any cordoned node.
BOOST_AUTO_TEST_CASE(a_pod_that_tolerates_the_cordon_finds_room_on_cordoned_nodes) {
  gc::shared_map<gc::node_info> nodes;
  nodes["b"] = with_taints(held_by_us("b"), {cordon_taint});
  nodes["c"] = with_taints(gpu_node("c"), {cordon_taint});
  gc::drain_context at{t0};
  at.node = "a";
  at.nodes = &nodes;
  auto room = gc::room_for_replacement(trainer("t-1"), at);
  BOOST_TEST(room.held == (std::vector<std::string>{"b"}));
  BOOST_TEST(room.open.empty(), "c: the taint still there");
  auto tolerant = trainer("t-2");
  tolerant.tolerations = {exists(gc::unschedulable_taint_key)};
  room = gc::room_for_replacement(tolerant, at);
  BOOST_TEST(room.held.empty());
  BOOST_TEST(room.open == (std::vector<std::string>{"b", "c"}));
  BOOST_TEST(gc::deadlock_of(tolerant, at).empty());
}

// Nodes the lifecycle controller taints not-ready or unreachable give no room, whatever the
// pod tolerates and whatever the (stale) Ready condition says.
BOOST_AUTO_TEST_CASE(nodes_tainted_not_ready_or_unreachable_are_no_room) {
  auto tolerant = trainer("t-1");
  tolerant.tolerations = {exists(gc::not_ready_taint_key), exists(gc::unreachable_taint_key)};
  for (const auto* key : {gc::not_ready_taint_key, gc::unreachable_taint_key})
    for (const auto* effect : {"NoSchedule", "NoExecute"}) {
      gc::shared_map<gc::node_info> nodes;
      nodes["b"] = with_taints(held_by_us("b"), {cordon_taint});
      nodes["z"] = with_taints(gpu_node("z"), {{key, "", effect}});
      gc::drain_context at{t0 + 1s};
      at.node = "a";
      at.nodes = &nodes;
      const auto room = gc::room_for_replacement(tolerant, at);
      BOOST_TEST(room.candidates == (std::vector<std::string>{"b"}), key << ":" << effect);
      BOOST_TEST(room.open.empty(), key << ":" << effect);
      BOOST_TEST(gc::deadlock_of(tolerant, at).find("(b)") != std::string::npos,
                 key << ":" << effect);
    }
}

// Table: a pod holding GPUs through claims needs as many free devices of AMD's DRA driver;
// a device plugin's amd.com/ resource is no room for it, as DRA devices are none for a pod
// requesting amd.com/gpu.
BOOST_AUTO_TEST_CASE(a_pod_claiming_gpus_finds_room_on_dra_nodes_with_enough_free_devices) {
  gc::shared_map<gc::node_info> nodes;
  nodes["b"] = dra_node("b", true);
  nodes["c"] = dra_node("c", true);
  nodes["d"] = dra_node("d");
  nodes["p"] = gpu_node("p"); // a device-plugin node, open
  struct row {
    const char* what;
    long long claimed;
    std::map<std::string, std::int64_t> free;
    std::vector<std::string> candidates;
    bool deadlock;
  };
  const std::vector<row> rows = {
      {"held DRA nodes with free devices: a deadlock", 1, {{"b", 6}, {"c", 6}}, {"b", "c"}, true},
      {"an open DRA node with enough free devices",
       2,
       {{"b", 6}, {"c", 6}, {"d", 2}},
       {"b", "c", "d"},
       false},
      {"an open DRA node with too few", 2, {{"b", 6}, {"c", 6}, {"d", 1}}, {"b", "c"}, true},
      {"no free device on the held ones either", 1, {{"b", 0}, {"c", 0}, {"d", 0}}, {}, false},
  };
  for (const auto& r : rows) {
    gc::drain_context at{t0 + 1s};
    at.node = "a";
    at.nodes = &nodes;
    at.free_gpu_devices = &r.free;
    const auto pod = claiming_trainer("t-1", r.claimed);
    BOOST_TEST(gc::room_for_replacement(pod, at).candidates == r.candidates, r.what);
    const std::map<std::string, gc::eviction_memory> mem{{"team/t-1", blocked_at(t0)}};
    BOOST_TEST(gc::plan_evictions({pod}, {budget("t-pdb", "trainer")}, mem, {}, at).deadlocked ==
                   (r.deadlock ? 1 : 0),
               r.what);
  }
  // A device-plugin pod finds the device-plugin node, not the DRA ones.
  const std::map<std::string, std::int64_t> free{{"b", 6}, {"c", 6}, {"d", 6}};
  gc::drain_context at{t0};
  at.node = "a";
  at.nodes = &nodes;
  at.free_gpu_devices = &free;
  BOOST_TEST(gc::room_for_replacement(trainer("t-2"), at).candidates ==
             (std::vector<std::string>{"p"}));
  // Without the devices' count, a claiming pod finds no room: no deadlock is claimed.
  at.free_gpu_devices = nullptr;
  BOOST_TEST(gc::room_for_replacement(claiming_trainer("t-3"), at).candidates.empty());
}

BOOST_AUTO_TEST_CASE(the_dry_run_warns_of_a_budget_only_the_plans_own_nodes_could_satisfy) {
  gc::shared_map<gc::node_info> nodes;
  for (const char* n : {"a", "b", "c"})
    nodes[n] = gpu_node(n);
  const std::set<std::string> plan{"a", "b", "c"};
  gc::drain_context at{t0};
  at.node = "a";
  at.nodes = &nodes;
  at.plan_nodes = &plan;
  const auto preview = gc::preview_drain({trainer("t-1")}, {budget("t-pdb", "trainer", 1)}, {}, at);
  BOOST_REQUIRE(preview.warnings.size() == 1u);
  BOOST_TEST(preview.warnings[0].find("team/t-1") != std::string::npos, preview.warnings[0]);
  BOOST_TEST(preview.warnings[0].find("(b, c)") != std::string::npos, preview.warnings[0]);
  BOOST_TEST(gc::preview_drain({trainer("t-1")}, {}, {}, at).warnings.empty(), "no budget");
  // Drained at most two at a time, one of b and c stays open: no wait. Three at a time
  // can hold all three.
  at.max_parallel = 2;
  BOOST_TEST(gc::preview_drain({trainer("t-1")}, {budget("t-pdb", "trainer", 1)}, {}, at)
                 .warnings.empty());
  at.max_parallel = 3;
  BOOST_TEST(gc::preview_drain({trainer("t-1")}, {budget("t-pdb", "trainer", 1)}, {}, at)
                 .warnings.size() == 1u);
  nodes["d"] = gpu_node("d"); // a node outside the plan could take it
  BOOST_TEST(gc::preview_drain({trainer("t-1")}, {budget("t-pdb", "trainer", 1)}, {}, at)
                 .warnings.empty());
}

// A plan of thousands of nodes: the warning names ten of them and counts the rest, so a
// dry run's status stays small.
BOOST_AUTO_TEST_CASE(the_dry_run_warning_names_ten_of_the_plans_nodes_and_counts_the_rest) {
  gc::shared_map<gc::node_info> nodes;
  std::set<std::string> plan;
  for (int i = 0; i < 5000; ++i) {
    const auto name = "gpu-" + std::to_string(10000 + i);
    nodes[name] = gpu_node(name);
    plan.insert(name);
  }
  gc::drain_context at{t0};
  at.node = "gpu-10000";
  at.nodes = &nodes;
  at.plan_nodes = &plan;
  const auto preview = gc::preview_drain({trainer("t-1")}, {budget("t-pdb", "trainer", 1)}, {}, at);
  BOOST_REQUIRE(preview.warnings.size() == 1u);
  BOOST_TEST(preview.warnings[0].find("(gpu-10001, gpu-10002, ") != std::string::npos,
             preview.warnings[0]);
  BOOST_TEST(preview.warnings[0].find("gpu-10010 and 4989 more)") != std::string::npos,
             preview.warnings[0]);
  BOOST_TEST(preview.warnings[0].size() < 400u);
}

BOOST_AUTO_TEST_CASE(the_dry_run_names_the_budgets_that_refuse_now) {
  auto scratch = pod("web-2");
  scratch.empty_dir = true;
  const auto preview =
      gc::preview_drain({pod("web-1"), scratch, pod("db-1", "db")},
                        {budget("web-pdb", "web"), budget("db-pdb", "db", 1)}, {}, t0);
  BOOST_TEST(preview.pods_to_evict.size() == 3u);
  BOOST_TEST(preview.pods_blocked_by_budget.size() == 2u);
  BOOST_REQUIRE(preview.blocking_pdbs.size() == 1u);
  BOOST_TEST(preview.blocking_pdbs[0].name == "web-pdb");
  BOOST_REQUIRE(preview.pods_losing_empty_dir_data.size() == 1u);
  BOOST_TEST(preview.pods_losing_empty_dir_data[0].name == "web-2");
}

BOOST_AUTO_TEST_SUITE_END()
