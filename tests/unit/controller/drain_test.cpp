// controller::plan_evictions and drain_timeout_reason: one bounded pass of a drain over a
// node's pods. Which pods must go; an eviction per pod not yet evicted; a refused one
// asked again after 5 s or as soon as its budget opens; an approved eviction whose pod
// was never deleted finished by a delete; a lagging watch not taken for a lost eviction;
// DaemonSet pods holding GPUs shown, not evicted.
#include "controller/drain.hpp"

#include <boost/test/unit_test.hpp>

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

BOOST_AUTO_TEST_CASE(an_approved_eviction_whose_pod_was_never_deleted_is_finished_by_a_delete) {
  auto b = budget("web-pdb", "web");
  b.disrupted_pods.insert("web-1");
  const std::map<std::string, gc::eviction_memory> mem{{"team/web-1", blocked_at(t0)}};
  const auto pass = gc::plan_evictions({pod("web-1")}, {b}, mem, {}, t0 + 5s);
  BOOST_REQUIRE(pass.removals.size() == 1u);
  BOOST_TEST(!pass.removals[0].evict);
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
  BOOST_TEST(gc::drain_timeout_reason({pod("web-1")}, {budget("web-pdb", "web")}, 600) ==
             "the drain did not finish within 600 s: blocked by PodDisruptionBudget team/web-pdb");
  BOOST_TEST(gc::drain_timeout_reason({pod("web-1"), pod("web-2")}, {}, 60) ==
             "the drain did not finish within 60 s: 2 pod(s) still on the node");
  BOOST_TEST(gc::drain_timeout_reason({}, {}, 60) == "the drain did not finish within 60 s");
}

BOOST_AUTO_TEST_SUITE_END()
