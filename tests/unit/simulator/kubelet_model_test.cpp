// The simulated kubelet (step_pods): bound pods start after the startup delay and are
// not asked for again while the write is in flight; deleted pods go after their grace
// period, capped and scaled; pods that vanish are forgotten; finished pods are left alone.
#include "tools/simulator/kubelet_model.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <functional>
#include <ostream>
#include <set>
#include <string>

namespace sim = gpu_partitioner::sim;
namespace bdata = boost::unit_test::data;
using namespace std::chrono_literals;

namespace {

const sim::sim_time t0 = sim::sim_time{} + 1h;

struct kubelet_fixture {
  sim::sim_timing timing;
  std::map<sim::pod_key, sim::pod_memory> memory;
  std::map<sim::pod_key, sim::observed_pod> pods;

  sim::observed_pod& bind(const std::string& name, const std::string& phase = "Pending") {
    sim::observed_pod p;
    p.ns = "work";
    p.name = name;
    p.uid = "uid-" + name;
    p.node = "gpu-node-01";
    p.phase = phase;
    return pods[{p.ns, p.name}] = p;
  }
  sim::observed_pod& pod(const std::string& name) { return pods.at({"work", name}); }

  sim::pod_actions step(sim::sim_time now) { return sim::step_pods(memory, pods, now, timing); }
};

bool names(const std::vector<sim::observed_pod>& pods, const std::string& name) {
  return pods.size() == 1u && pods[0].name == name;
}

} // namespace

BOOST_AUTO_TEST_SUITE(starting)

BOOST_AUTO_TEST_CASE(a_bound_pod_starts_after_the_scaled_startup_delay_and_not_before) {
  kubelet_fixture k;
  k.timing.scale = 0.5;
  k.bind("a");
  BOOST_TEST(k.step(t0).start.empty());
  BOOST_TEST(k.step(t0 + 499ms).start.empty());
  auto a = k.step(t0 + 500ms);
  BOOST_TEST(names(a.start, "a"));
  BOOST_TEST(a.remove.empty());
}

// A real kubelet's admission refuses a pod that does not tolerate a NoExecute taint on
// its node (a scheduler with a stale cache may still bind one there).
BOOST_AUTO_TEST_CASE(a_pod_bound_to_a_node_tainted_amd_dcm_starts_only_if_it_tolerates_it) {
  kubelet_fixture k;
  k.bind("plain").node_dcm_tainted = true;
  auto& tolerant = k.bind("tolerant");
  tolerant.node_dcm_tainted = true;
  tolerant.tolerates_dcm_taint = true;
  k.bind("untainted");
  BOOST_TEST(k.step(t0).start.empty()); // first seen: the startup delay begins
  auto a = k.step(t0 + 10s);
  std::set<std::string> started;
  for (const auto& p : a.start)
    started.insert(p.name);
  BOOST_TEST(started == (std::set<std::string>{"tolerant", "untainted"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_start_in_flight_is_not_asked_for_again_until_resend_after) {
  kubelet_fixture k;
  k.bind("a");
  k.step(t0);
  BOOST_TEST(names(k.step(t0 + 1s).start, "a"));
  // The watch has not shown Running yet: the write is in flight.
  BOOST_TEST(k.step(t0 + 1s + 1ms).start.empty());
  BOOST_TEST(k.step(t0 + 3s).start.empty());
  BOOST_TEST(k.step(t0 + 4s - 1ms).start.empty());
  // Three seconds later it is asked for once more.
  BOOST_TEST(names(k.step(t0 + 4s).start, "a"));
  BOOST_TEST(k.step(t0 + 5s).start.empty());
}

// Behind a slow API server a write can wait in the queue longer than resend_after: it is
// not asked for again until it is answered, and then resend_after after the answer.
BOOST_AUTO_TEST_CASE(a_start_waiting_in_the_queue_is_asked_again_only_after_its_answer) {
  kubelet_fixture k;
  k.bind("a");
  k.step(t0);
  BOOST_TEST(names(k.step(t0 + 1s).start, "a"));
  k.pod("a").write_waiting = true;
  for (auto t = t0 + 2s; t < t0 + 1min; t += 1s)
    BOOST_TEST_REQUIRE(k.step(t).start.empty());
  k.pod("a").write_waiting = false;
  k.pod("a").write_answered = t0 + 1min;
  BOOST_TEST(k.step(t0 + 1min + 3s - 1ms).start.empty());
  BOOST_TEST(names(k.step(t0 + 1min + 3s).start, "a"));
}

BOOST_AUTO_TEST_CASE(a_removal_waiting_in_the_queue_is_asked_again_only_after_its_answer) {
  kubelet_fixture k;
  auto& p = k.bind("a", "Running");
  p.deleting = true;
  p.grace_seconds = 0;
  BOOST_TEST(names(k.step(t0).remove, "a"));
  k.pod("a").write_waiting = true;
  BOOST_TEST(k.step(t0 + 30s).remove.empty());
  k.pod("a").write_waiting = false;
  k.pod("a").write_answered = t0 + 30s;
  BOOST_TEST(k.step(t0 + 32s).remove.empty());
  BOOST_TEST(names(k.step(t0 + 33s).remove, "a"));
}

BOOST_AUTO_TEST_CASE(a_running_and_ready_pod_is_not_started_again) {
  kubelet_fixture k;
  k.bind("a");
  k.step(t0);
  BOOST_TEST(names(k.step(t0 + 1s).start, "a"));
  k.pod("a").phase = "Running";
  k.pod("a").ready = true;
  for (auto t = t0 + 2s; t < t0 + 1min; t += 1s)
    BOOST_TEST_REQUIRE(k.step(t).start.empty());
}

BOOST_AUTO_TEST_CASE(a_running_pod_that_is_not_ready_is_reported_ready) {
  kubelet_fixture k;
  k.bind("a", "Running");
  k.step(t0);
  BOOST_TEST(names(k.step(t0 + 1s).start, "a"));
}

BOOST_AUTO_TEST_CASE(finished_pods_are_left_alone) {
  kubelet_fixture k;
  k.bind("done", "Succeeded");
  k.bind("crashed", "Failed");
  for (auto t = t0; t < t0 + 1min; t += 1s) {
    auto a = k.step(t);
    BOOST_TEST_REQUIRE(a.start.empty());
    BOOST_TEST_REQUIRE(a.remove.empty());
  }
}

BOOST_AUTO_TEST_CASE(a_pod_that_disappears_is_forgotten_and_starts_afresh_if_it_returns) {
  kubelet_fixture k;
  k.bind("a");
  k.step(t0);
  BOOST_TEST(names(k.step(t0 + 1s).start, "a"));
  k.pods.clear();
  k.step(t0 + 2s);
  BOOST_TEST(k.memory.empty());
  // A new pod of the same name is a new pod: a full startup delay from now.
  k.bind("a");
  BOOST_TEST(k.step(t0 + 10s).start.empty());
  BOOST_TEST(k.step(t0 + 11s - 1ms).start.empty());
  BOOST_TEST(names(k.step(t0 + 11s).start, "a"));
}

BOOST_AUTO_TEST_SUITE_END()

// -- termination --

namespace {

struct grace_row {
  long long grace_seconds;
  double scale;
  std::chrono::milliseconds gone_after;
};

std::ostream& operator<<(std::ostream& os, const grace_row& r) {
  return os << "grace " << r.grace_seconds << "s at scale " << r.scale;
}

const grace_row grace_rows[] = {
    {10, 1.0, 10s},     {10, 0.1, 1s}, {30, 1.0, 30s}, {300, 1.0, 30s},
    {300, 0.02, 600ms}, {0, 1.0, 0ms}, {-5, 1.0, 0ms},
};

} // namespace

BOOST_AUTO_TEST_SUITE(terminating)

BOOST_DATA_TEST_CASE(a_deleted_pod_goes_after_min_of_grace_and_max_termination_scaled,
                     bdata::make(grace_rows), row) {
  kubelet_fixture k;
  k.timing.scale = row.scale;
  k.bind("a", "Running").ready = true;
  k.step(t0);
  auto& p = k.pod("a");
  p.deleting = true;
  p.grace_seconds = row.grace_seconds;
  const auto since = t0 + 5s;
  if (row.gone_after > 0ms) {
    BOOST_TEST(k.step(since).remove.empty());
    BOOST_TEST(k.step(since + row.gone_after - 1ms).remove.empty());
  }
  auto gone = k.step(since + row.gone_after);
  BOOST_TEST(names(gone.remove, "a"));
  BOOST_TEST(gone.start.empty());
}

BOOST_AUTO_TEST_CASE(a_removal_in_flight_is_not_asked_for_again_until_resend_after) {
  kubelet_fixture k;
  k.bind("a", "Running").ready = true;
  k.step(t0);
  k.pod("a").deleting = true;
  k.pod("a").grace_seconds = 0;
  BOOST_TEST(names(k.step(t0 + 1s).remove, "a"));
  BOOST_TEST(k.step(t0 + 2s).remove.empty());
  BOOST_TEST(names(k.step(t0 + 4s).remove, "a"));
}

BOOST_AUTO_TEST_CASE(a_deleting_pod_is_never_started) {
  kubelet_fixture k;
  auto& p = k.bind("a");
  p.deleting = true;
  p.grace_seconds = 30;
  for (auto t = t0; t < t0 + 29s; t += 1s) {
    auto a = k.step(t);
    BOOST_TEST_REQUIRE(a.start.empty());
    BOOST_TEST_REQUIRE(a.remove.empty());
  }
  BOOST_TEST(names(k.step(t0 + 30s).remove, "a"));
}

BOOST_AUTO_TEST_SUITE_END()

// -- pods with ResourceClaims --

namespace {

const char* const amd = "gpu.amd.com";

/// A claim allocated one device of `driver` on gpu-node-01, reserved for `uid`.
sim::observed_claim claim_for(const std::string& uid, const std::string& driver = amd) {
  sim::observed_claim c;
  c.allocated = true;
  c.devices.push_back({driver, "gpu-node-01", "gpu-1-128"});
  c.reserved_for.push_back(uid);
  return c;
}

struct claim_row {
  const char* what;
  std::function<void(sim::observed_pod&, std::map<sim::pod_key, sim::observed_claim>&,
                     std::set<std::string>&)>
      change;
  bool prepared;
};

std::ostream& operator<<(std::ostream& os, const claim_row& r) {
  return os << r.what;
}

using claims_map = std::map<sim::pod_key, sim::observed_claim>;

const claim_row claim_rows[] = {
    {"allocated, reserved, driver up", [](auto&, auto&, auto&) {}, true},
    {"no claims at all", [](auto& p, auto&, auto&) { p.claims.clear(); }, true},
    {"the template's claim not created yet",
     [](auto& p, auto&, auto&) { p.claims[0].claim.reset(); }, false},
    {"the status says no claim was needed",
     [](auto& p, auto& c, auto&) {
       p.claims[0].claim = "";
       c.clear();
     },
     true},
    {"the claim does not exist", [](auto&, auto& c, auto&) { c.clear(); }, false},
    {"not allocated", [](auto&, auto& c, auto&) { c.begin()->second.allocated = false; }, false},
    {"not reserved", [](auto&, auto& c, auto&) { c.begin()->second.reserved_for.clear(); }, false},
    {"reserved for another pod",
     [](auto&, auto& c, auto&) { c.begin()->second.reserved_for = {"uid-other"}; }, false},
    {"the node's driver is not registered", [](auto&, auto&, auto& up) { up.clear(); }, false},
    {"a device of a driver the node does not run",
     [](auto&, auto& c, auto&) { c.begin()->second.devices[0].driver = "gpu.nvidia.com"; }, false},
    {"one of two claims not reserved yet",
     [](auto& p, auto& c, auto&) {
       p.claims.push_back({"second", std::string("second-claim")});
       c[{"work", "second-claim"}] = claim_for("uid-other");
     },
     false},
};

} // namespace

BOOST_AUTO_TEST_SUITE(claims)

BOOST_DATA_TEST_CASE(kubelet_prepares_a_pods_claims_only_when_allocated_reserved_and_driver_up,
                     bdata::make(claim_rows), row) {
  sim::observed_pod p;
  p.ns = "work";
  p.name = "a";
  p.uid = "uid-a";
  p.node = "gpu-node-01";
  p.claims.push_back({"gpu", std::string("a-gpu-x7k2p")});
  claims_map claims{{{"work", "a-gpu-x7k2p"}, claim_for("uid-a")}};
  std::set<std::string> up{amd};
  row.change(p, claims, up);
  BOOST_TEST(sim::claims_prepared(p, claims, up) == row.prepared);
}

BOOST_AUTO_TEST_CASE(a_pod_whose_claims_are_not_prepared_does_not_start_until_they_are) {
  kubelet_fixture k;
  k.bind("a").claims_prepared = false;
  k.step(t0);
  for (auto t = t0 + 1s; t < t0 + 1min; t += 1s)
    BOOST_TEST_REQUIRE(k.step(t).start.empty());
  k.pod("a").claims_prepared = true;
  BOOST_TEST(names(k.step(t0 + 1min).start, "a"));
}

BOOST_AUTO_TEST_CASE(a_pod_holds_the_amd_devices_of_its_node_that_its_claims_name_once_each) {
  sim::observed_pod p;
  p.ns = "work";
  p.uid = "uid-a";
  p.node = "gpu-node-01";
  p.claims = {
      {"gpu", std::string("c1")}, {"again", std::string("c1")}, {"other", std::string("c2")}};
  auto two = claim_for("uid-a");
  two.devices.push_back({amd, "gpu-node-01", "gpu-2-129"});
  two.devices.push_back({amd, "gpu-node-02", "gpu-1-128"}); // another node's pool
  claims_map claims{{{"work", "c1"}, two},
                    {{"work", "c2"}, claim_for("uid-a", "other.example.com")}};
  BOOST_TEST(sim::claimed_devices(p, claims, amd) == 2);
  claims[{"work", "c1"}].allocated = false; // deallocated by the resourceclaim controller
  BOOST_TEST(sim::claimed_devices(p, claims, amd) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
