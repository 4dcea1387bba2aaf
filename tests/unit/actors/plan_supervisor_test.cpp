// actors::plan_supervisor (and operator_root above it) on CAF's test_coordinator: the
// NodePartitionings it creates and deletes through the io executor, the plan status it
// writes, the workers it runs, and what a crashed worker does to the actors linked to it.
#include "actor_fixture.hpp"
#include "actors/operator_root.hpp"
#include "actors/plan_supervisor.hpp"

#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

using namespace actor_test;

namespace {

struct supervisor_fixture : actor_fixture {
  std::shared_ptr<io_double_state> io_state = std::make_shared<io_double_state>();
  std::shared_ptr<writer_double_state> written = std::make_shared<writer_double_state>();
  caf::actor io = spawn(io_double, io_state);
  caf::actor writer = spawn(writer_double, written);
  caf::actor supervisor;

  cluster_model& cluster() { return io_state->cluster; }

  supervisor_fixture() {
    cluster().put(make_node("gpu-1"));
    cluster().put(make_node("gpu-2"));
    cluster().put(make_node("gpu-3", "infer"));
    auto cp = make_node("cp-1");
    cp.labels["node-role.kubernetes.io/control-plane"] = "";
    cluster().put(cp);
    // Paused: the workers only report; these tests are about the supervisor.
    cluster().put(make_plan(1, true));
    sched.run();
  }

  void start() {
    ga::plan_supervisor_config c;
    c.plan = plan_name;
    c.dcm_namespace = dcm_ns;
    c.dcm_name = dcm_cm;
    c.io = io;
    c.writer = writer;
    supervisor = spawn(ga::plan_supervisor, c);
    sched.run();
  }

  void show_view() {
    caf::anon_send(supervisor, ga::view_atom_v, cluster().snapshot());
    sched.run();
  }

  std::vector<std::string> item_requests(ga::item_io::op what) const {
    std::vector<std::string> out;
    for (const auto& r : io_state->item_requests)
      if (r.what == what)
        out.push_back(r.item.metadata.name);
    return out;
  }

  caf::actor worker_of(const std::string& node) const {
    auto it = written->writers.find(std::string(plan_name) + "-" + node);
    return it == written->writers.end() ? caf::actor{} : caf::actor_cast<caf::actor>(it->second);
  }

  const gp::partitioning_plan_status& plan_status() const { return written->plan_statuses.back(); }
};

const auto create_op = ga::item_io::op::create;
const auto remove_op = ga::item_io::op::remove;

} // namespace

BOOST_AUTO_TEST_SUITE(plan_supervisor)

BOOST_FIXTURE_TEST_CASE(creates_an_item_for_each_selected_node_once, supervisor_fixture) {
  start();
  show_view();
  const std::vector<std::string> want{"plan-gpu-1", "plan-gpu-2"};
  BOOST_TEST(item_requests(create_op) == want, boost::test_tools::per_element());
  const auto& item = io_state->item_requests.front().item;
  BOOST_TEST(item.spec.node_name == "gpu-1");
  BOOST_TEST(item.spec.profile_ref.name == profile_name);
  BOOST_TEST(item.spec.plan_ref.name == plan_name);
  BOOST_TEST(item.spec.plan_ref.uid == "plan-uid");
  BOOST_TEST(item.spec.desired_hash == make_item("gpu-1").spec.desired_hash);
  BOOST_TEST_REQUIRE(item.metadata.owner_references.size() == 1u);
  BOOST_TEST(item.metadata.owner_references[0].uid == "plan-uid");
  BOOST_TEST(item.metadata.owner_references[0].controller.value_or(false));
  BOOST_TEST(item.metadata.finalizers == std::vector<std::string>{gc::item_finalizer},
             boost::test_tools::per_element());

  // The watch has not shown them yet: no second request.
  show_view();
  BOOST_TEST(item_requests(create_op).size() == 2u);

  BOOST_TEST_REQUIRE(!written->plan_statuses.empty());
  const std::vector<std::string> order{"gpu-1", "gpu-2"};
  BOOST_TEST(plan_status().order == order, boost::test_tools::per_element());
  BOOST_TEST(plan_status().nodes.total == 0);
}

BOOST_FIXTURE_TEST_CASE(writes_plan_status_with_counts_by_phase, supervisor_fixture) {
  auto done = make_item("gpu-1");
  done.status.phase = gp::node_phase::succeeded;
  done.status.observed_hash = done.spec.desired_hash;
  auto failed = make_item("gpu-2");
  failed.status.phase = gp::node_phase::failed;
  failed.status.last_error = "DCM reported failure";
  failed.status.history = {
      {gp::node_phase::applying, gp::format_time(gp::wall_clock::now()), "Drained", ""},
      {gp::node_phase::failed, gp::format_time(gp::wall_clock::now()), "OperatorFailed", ""}};
  cluster().put(make_node("gpu-4"));
  cluster().put(done);
  cluster().put(failed);
  cluster().put(make_item("gpu-4"));
  start();
  show_view();
  BOOST_TEST_REQUIRE(!written->plan_statuses.empty());
  const auto& counts = plan_status().nodes;
  BOOST_TEST(counts.total == 3);
  BOOST_TEST(counts.succeeded == 1);
  BOOST_TEST(counts.failed == 1);
  BOOST_TEST(counts.pending == 1);
  BOOST_TEST((plan_status().phase == gp::plan_phase::degraded));
  // A worker per item; the Pending one writes its first status (the settled ones have
  // nothing to change).
  BOOST_TEST(static_cast<bool>(worker_of("gpu-4")));
  BOOST_TEST(item_requests(create_op).empty());
}

BOOST_FIXTURE_TEST_CASE(deletes_the_items_of_nodes_that_stopped_matching_once, supervisor_fixture) {
  cluster().put(make_item("gpu-1"));
  cluster().put(make_item("gpu-2"));
  start();
  show_view();
  BOOST_TEST(item_requests(remove_op).empty());

  auto relabelled = make_node("gpu-2", "infer");
  cluster().put(relabelled);
  show_view();
  show_view();
  const std::vector<std::string> want{"plan-gpu-2"};
  BOOST_TEST(item_requests(remove_op) == want, boost::test_tools::per_element());
  BOOST_TEST(io_state->item_requests.back().item.metadata.uid == "uid-item-gpu-2");
}

BOOST_FIXTURE_TEST_CASE(deletes_the_item_of_a_node_that_disappeared, supervisor_fixture) {
  cluster().put(make_item("gpu-1"));
  cluster().put(make_item("gpu-2"));
  start();
  show_view();
  cluster().view.nodes.erase("gpu-1");
  show_view();
  const std::vector<std::string> want{"plan-gpu-1"};
  BOOST_TEST(item_requests(remove_op) == want, boost::test_tools::per_element());
}

// Once a removed item is gone from the view, its worker is stopped (send_exit
// user_shutdown). The worker is linked to the supervisor; the supervisor must carry on
// with the plan's other nodes.
BOOST_FIXTURE_TEST_CASE(stopping_the_worker_of_a_removed_item_keeps_the_supervisor_running,
                        supervisor_fixture) {
  cluster().put(make_item("gpu-1"));
  cluster().put(make_item("gpu-2"));
  start();
  show_view();
  auto gone_worker = worker_of("gpu-2");
  auto other_worker = worker_of("gpu-1");
  BOOST_TEST_REQUIRE(static_cast<bool>(gone_worker));
  BOOST_TEST_REQUIRE(static_cast<bool>(other_worker));
  auto supervisor_exit = watch(supervisor);
  auto gone_exit = watch(gone_worker);
  auto other_exit = watch(other_worker);

  cluster().put(make_node("gpu-2", "infer"));
  cluster().view.items.erase("plan-gpu-2");
  show_view();
  BOOST_TEST(gone_exit->down);
  BOOST_TEST(!supervisor_exit->down, "the supervisor went down with "
                                         << caf::to_string(supervisor_exit->reason)
                                         << " after stopping a worker");
  BOOST_TEST(!other_exit->down);
  const auto statuses = written->plan_statuses.size();
  show_view();
  BOOST_TEST(written->plan_statuses.size() >= statuses);
  BOOST_TEST(plan_status().nodes.total == 1);
}

// Current behaviour, pinned: workers are spawned linked and nobody traps their exits, so
// a worker that dies with an error takes its supervisor (and, through the links, the
// governor and every sibling worker of the plan) down with the same reason.
BOOST_FIXTURE_TEST_CASE(a_crashed_worker_takes_its_supervisor_and_siblings_down,
                        supervisor_fixture) {
  cluster().put(make_item("gpu-1"));
  cluster().put(make_item("gpu-2"));
  start();
  show_view();
  auto crashing = worker_of("gpu-1");
  auto sibling = worker_of("gpu-2");
  BOOST_TEST_REQUIRE(static_cast<bool>(crashing));
  BOOST_TEST_REQUIRE(static_cast<bool>(sibling));
  auto supervisor_exit = watch(supervisor);
  auto sibling_exit = watch(sibling);

  caf::anon_send_exit(crashing, caf::exit_reason::unhandled_exception);
  sched.run();
  BOOST_TEST(supervisor_exit->down);
  BOOST_TEST(caf::to_string(supervisor_exit->reason) ==
             caf::to_string(caf::make_error(caf::exit_reason::unhandled_exception)));
  BOOST_TEST(sibling_exit->down);
}

// One level up: operator_root spawns its supervisors linked too, so the same crash ends
// the root, and with it every plan. main() does not watch the root: the process stays up
// and acts no more.
BOOST_AUTO_TEST_CASE(a_crashed_worker_takes_the_operator_root_down) {
  actor_fixture f;
  auto io_state = std::make_shared<io_double_state>();
  auto written = std::make_shared<writer_double_state>();
  auto io = f.spawn(io_double, io_state);
  auto writer = f.spawn(writer_double, written);
  ga::operator_settings settings;
  settings.dcm_namespace = dcm_ns;
  settings.dcm_name = dcm_cm;
  auto root = f.spawn(ga::operator_root, settings, io, writer);
  auto observe = [&](ga::observation o) { caf::anon_send(root, ga::observe_atom_v, o); };
  for (const char* n : {"gpu-1", "gpu-2"}) {
    ga::observation o;
    o.what = ga::observation::kind::node;
    o.key = n;
    o.node = std::make_shared<const gc::node_info>(make_node(n));
    observe(o);
    ga::observation i;
    i.what = ga::observation::kind::item;
    i.key = std::string(plan_name) + "-" + n;
    i.item = std::make_shared<const gp::node_partitioning>(make_item(n));
    observe(i);
  }
  ga::observation plan;
  plan.what = ga::observation::kind::plan;
  plan.key = plan_name;
  plan.plan = std::make_shared<const gp::partitioning_plan>(make_plan(1, true));
  observe(plan);
  ga::observation profile;
  profile.what = ga::observation::kind::profile;
  profile.key = profile_name;
  profile.profile = std::make_shared<const gp::partitioning_profile>(make_profile());
  observe(profile);
  for (const char* r : {"nodes", "pods", "pdbs", "plans", "profiles", "items", "configmaps"})
    caf::anon_send(root, ga::synced_atom_v, std::string(r));
  f.sched.run();
  f.sched.trigger_timeouts(); // the publish tick
  f.sched.run();
  auto it = written->writers.find(std::string(plan_name) + "-gpu-1");
  BOOST_TEST_REQUIRE((it != written->writers.end()));
  auto root_exit = watch(root);

  caf::anon_send_exit(it->second, caf::exit_reason::unhandled_exception);
  f.sched.run();
  BOOST_TEST(root_exit->down);
  BOOST_TEST(caf::to_string(root_exit->reason) ==
             caf::to_string(caf::make_error(caf::exit_reason::unhandled_exception)));
}

BOOST_AUTO_TEST_SUITE_END()
