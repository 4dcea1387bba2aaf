// kubelet's heartbeats as gpu-sim plays them (step_heartbeat): Lease renewals at the node's
// phase and then every renew_every, retried soon after a failure, never two at once; a
// Ready the node does not show is posted (at most every update_every); an unchanged status
// is reported every report_every; a stopped kubelet writes nothing.
#include "tools/simulator/heartbeat_model.hpp"

#include <boost/test/unit_test.hpp>

#include <set>
#include <string>

namespace sim = gpu_partitioner::sim;
using namespace std::chrono_literals;
using post = sim::heartbeat_actions::status_post;

namespace {

const sim::sim_time t0 = sim::sim_time{} + 1h;

struct heartbeat_fixture {
  sim::heartbeat_timing timing;
  sim::heartbeat_memory memory;
  sim::heartbeat_view node;
  double phase = 0.5;

  heartbeat_fixture() { node.ready = "True"; }
  sim::heartbeat_actions step(sim::sim_time now) {
    return sim::step_heartbeat(memory, node, now, phase, timing);
  }
  /// The instants (seconds after t0) at which a renewal is asked, stepping every 50 ms
  /// from t0 to t0 + `seconds`.
  std::vector<double> renewals(int seconds) {
    std::vector<double> out;
    for (auto at = t0; at <= t0 + std::chrono::seconds(seconds); at += 50ms)
      if (step(at).renew_lease)
        out.push_back(std::chrono::duration<double>(at - t0).count());
    return out;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(heartbeat_model)

BOOST_FIXTURE_TEST_CASE(a_running_kubelet_renews_at_its_phase_then_every_quarter_lease,
                        heartbeat_fixture) {
  const auto at = renewals(36);
  BOOST_REQUIRE(at.size() == 4u);
  BOOST_TEST(at[0] == 5.0, "half of the 10 s interval");
  BOOST_TEST(at[1] == 15.0);
  BOOST_TEST(at[2] == 25.0);
  BOOST_TEST(at[3] == 35.0);
  BOOST_TEST(timing.lease_duration.count() == 40);
}

BOOST_AUTO_TEST_CASE(nodes_fall_at_different_phases) {
  std::set<double> phases;
  for (int i = 1; i <= 100; ++i) {
    const double p = sim::heartbeat_phase("gpu-node-" + std::to_string(i));
    BOOST_TEST((p >= 0.0 && p < 1.0));
    phases.insert(p);
  }
  BOOST_TEST(phases.size() > 90u, "spread, not in a burst");
  BOOST_TEST(sim::heartbeat_phase("a") == sim::heartbeat_phase("a"));
}

BOOST_FIXTURE_TEST_CASE(a_renewal_in_flight_is_not_asked_again_and_a_failed_one_is_retried_soon,
                        heartbeat_fixture) {
  phase = 0;
  BOOST_TEST(step(t0).renew_lease);
  node.renewal_waiting = true;
  BOOST_TEST(!step(t0 + 10s).renew_lease, "the first is still waiting");
  BOOST_TEST(!step(t0 + 20s).renew_lease);
  node.renewal_waiting = false;
  BOOST_TEST(step(t0 + 20s).renew_lease, "overdue: at once");
  node.renewal_failed = true; // its answer: an error
  BOOST_TEST(!step(t0 + 20500ms).renew_lease);
  node.renewal_failed = false;
  BOOST_TEST(!step(t0 + 21s).renew_lease);
  BOOST_TEST(step(t0 + 21500ms).renew_lease, "again after retry_after, not renew_every");
  BOOST_TEST(!step(t0 + 22s).renew_lease);
  BOOST_TEST(step(t0 + 31500ms).renew_lease);
}

BOOST_FIXTURE_TEST_CASE(a_stopped_kubelet_writes_nothing_and_a_restarted_one_posts_ready,
                        heartbeat_fixture) {
  phase = 0;
  BOOST_TEST(step(t0).renew_lease);
  node.kubelet_running = false;
  for (auto at = t0 + 1s; at < t0 + 10min; at += 1s) {
    const auto a = step(at);
    BOOST_REQUIRE(!a.renew_lease);
    BOOST_REQUIRE(a.status == post::none);
  }
  // The lifecycle controller marked it Unknown meanwhile; the kubelet comes back.
  node.ready = "Unknown";
  node.kubelet_running = true;
  const auto back = step(t0 + 10min);
  BOOST_TEST(back.renew_lease);
  BOOST_TEST((back.status == post::ready));
  // Until the watch shows its post: never while one waits, then once per update_every.
  node.status_waiting = true;
  BOOST_TEST((step(t0 + 10min + 5s).status == post::none));
  node.status_waiting = false;
  BOOST_TEST((step(t0 + 10min + 8s).status == post::none));
  BOOST_TEST((step(t0 + 10min + 10s).status == post::ready));
  node.ready = "True";
  BOOST_TEST((step(t0 + 10min + 20s).status == post::none));
}

BOOST_FIXTURE_TEST_CASE(an_unregistered_node_gets_no_heartbeat, heartbeat_fixture) {
  node.ready = "";
  for (auto at = t0; at < t0 + 1min; at += 1s) {
    const auto a = step(at);
    BOOST_REQUIRE(!a.renew_lease);
    BOOST_REQUIRE(a.status == post::none);
  }
}

BOOST_FIXTURE_TEST_CASE(an_unchanged_status_is_reported_every_report_interval_at_its_phase,
                        heartbeat_fixture) {
  phase = 0.1;
  std::vector<double> reports;
  for (auto at = t0; at <= t0 + 6min; at += 1s)
    if (step(at).status == post::heartbeat)
      reports.push_back(std::chrono::duration<double>(at - t0).count());
  BOOST_REQUIRE(reports.size() == 2u);
  BOOST_TEST(reports[0] == 30.0, "a tenth of 5 minutes");
  BOOST_TEST(reports[1] == 330.0);
}

BOOST_AUTO_TEST_SUITE_END()
