// controller::order_writes: the status that decided a node change is on record before the
// change, unless the phase on record already leads to it; a run's end is on record before
// its token goes back. One row per case.
#include "controller/write_order.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <functional>
#include <ostream>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;
namespace bdata = boost::unit_test::data;
using gp::node_phase;

namespace {

const std::string started = "2027-01-15T08:00:00Z";

enum class change { none, patch, taint, eviction, dcm_config };

struct row {
  const char* name;
  change writes;
  node_phase phase;                  // the status after the step
  std::optional<node_phase> written; // the phase known on record (this run)
  std::optional<node_phase> enough;  // node_step::enough_on_record
  bool holds_run;
  bool in_flight; // node_step::in_flight after the step
  bool status_first;
  bool release_after_status;
};

std::ostream& operator<<(std::ostream& os, const row& r) {
  return os << r.name;
}

const row rows[] = {
    // name, writes, phase, written, enough, holds, in flight -> status first, release after
    {"the cordon waits for Draining", change::patch, node_phase::draining, node_phase::pending,
     std::nullopt, true, true, true, false},
    {"Draining on record: the cordon goes", change::patch, node_phase::draining,
     node_phase::draining, std::nullopt, true, true, false, false},
    {"evictions wait for their phase", change::eviction, node_phase::draining, node_phase::pending,
     std::nullopt, true, true, true, false},
    {"DCM's config waits for Applying", change::dcm_config, node_phase::applying,
     node_phase::draining, std::nullopt, true, true, true, false},
    {"the label goes with Draining on record", change::patch, node_phase::waiting_operator,
     node_phase::draining, node_phase::draining, true, true, false, false},
    {"the label waits when only Pending is on record", change::patch, node_phase::waiting_operator,
     node_phase::pending, node_phase::draining, true, true, true, false},
    {"the untaint goes with WaitingOperator on record", change::taint, node_phase::verifying,
     node_phase::waiting_operator, node_phase::waiting_operator, true, true, false, false},
    {"a status alone is no reason to wait", change::none, node_phase::verifying,
     node_phase::waiting_operator, std::nullopt, true, true, false, false},
    {"a run's end goes on record before its token", change::patch, node_phase::succeeded,
     node_phase::verifying, node_phase::verifying, true, false, false, true},
    {"an end on record releases at once", change::none, node_phase::succeeded,
     node_phase::succeeded, std::nullopt, true, false, false, false},
    {"no token and not in flight: nothing to release", change::none, node_phase::failed,
     node_phase::pending, std::nullopt, false, false, false, false},
};

} // namespace

BOOST_AUTO_TEST_SUITE(write_order)

BOOST_DATA_TEST_CASE(order_of_a_steps_writes, bdata::make(rows), r) {
  gc::node_step out;
  switch (r.writes) {
  case change::none:
    break;
  case change::patch:
    out.patch = gc::node_patch{};
    out.patch->unschedulable = true;
    break;
  case change::taint:
    out.taint = false;
    break;
  case change::eviction:
    out.removals.push_back({"team", "web-1", "uid-1", true, false});
    break;
  case change::dcm_config:
    out.dcm = gc::dcm_config_write{};
    break;
  }
  out.enough_on_record = r.enough;
  out.in_flight = r.in_flight;
  gp::node_partitioning_status status;
  status.phase = r.phase;
  status.started_at = started;
  const std::string written = r.written ? gc::phase_record(*r.written, started) : std::string{};
  const auto order = gc::order_writes(out, status, written, r.holds_run);
  BOOST_TEST(order.status_first == r.status_first);
  BOOST_TEST(order.release_after_status == r.release_after_status);
}

BOOST_AUTO_TEST_CASE(a_record_of_another_run_is_not_this_runs) {
  gc::node_step out;
  out.patch = gc::node_patch{};
  out.enough_on_record = node_phase::draining;
  out.in_flight = true;
  gp::node_partitioning_status status;
  status.phase = node_phase::waiting_operator;
  status.started_at = started;
  const auto earlier = gc::phase_record(node_phase::draining, "2027-01-15T07:00:00Z");
  BOOST_TEST(gc::order_writes(out, status, earlier, true).status_first);
  BOOST_TEST(gc::phase_record(status) == "WaitingOperator@" + started);
}

BOOST_AUTO_TEST_CASE(without_a_status_nothing_waits_for_one) {
  gc::node_step out;
  out.patch = gc::node_patch{};
  const auto order = gc::order_writes(out, std::nullopt, "", true);
  BOOST_TEST(!order.status_first);
  BOOST_TEST(!order.release_after_status);
}

BOOST_AUTO_TEST_SUITE_END()

// controller::governor_facts: what the governor hears of a node after a step.
// controller::status_may_wait: only the conditions and the drain's progress moving within
// one phase of one run may wait; each other field, changed alone, is written at once.
struct wait_row {
  const char* name;
  std::function<void(gp::node_partitioning_status&)> change;
  bool may_wait;
};

std::ostream& operator<<(std::ostream& os, const wait_row& r) {
  return os << r.name;
}

const wait_row wait_rows[] = {
    {"nothing changed", [](auto&) {}, true},
    {"a condition set",
     [](auto& s) {
       s.conditions.push_back({"Drained", gp::condition_status::true_, std::nullopt, started,
                               "PodsGone", "every pod is gone"});
     },
     true},
    {"a condition gone", [](auto& s) { s.conditions.clear(); }, true},
    {"an eviction answered", [](auto& s) { s.drain.pods_evicted = 2; }, true},
    {"the next phase", [](auto& s) { s.phase = node_phase::applying; }, false},
    {"a new run", [](auto& s) { s.started_at = "2027-01-15T09:00:00Z"; }, false},
    {"an error", [](auto& s) { s.last_error = "the budget refused"; }, false},
    {"a transition recorded",
     [](auto& s) {
       s.history.push_back({node_phase::draining, started, "Cordoned", ""});
     },
     false},
    {"DCM's Events accounted for", [](auto& s) { s.dcm_events_until = started; }, false},
    {"DCM may change until", [](auto& s) { s.dcm_may_change_until = started; }, false},
    {"another desired hash", [](auto& s) { s.observed_hash = "sha256:1"; }, false},
    {"completed", [](auto& s) { s.completed_at = started; }, false},
};

BOOST_DATA_TEST_CASE(which_statuses_may_wait, bdata::make(wait_rows), r) {
  gp::node_partitioning_status before;
  before.phase = node_phase::draining;
  before.started_at = started;
  before.conditions.push_back({"Cordoned", gp::condition_status::true_, std::nullopt, started,
                               "Cordoned", "the node is cordoned"});
  before.drain.pods_total = 3;
  auto next = before;
  r.change(next);
  BOOST_TEST(gc::status_may_wait(before, next) == r.may_wait);
}

BOOST_AUTO_TEST_CASE(a_first_status_never_waits) {
  gp::node_partitioning_status none;
  auto pending = none;
  pending.phase = node_phase::pending;
  BOOST_TEST(!gc::status_may_wait(none, pending));
  // The same conditions moving while the item waits to start may wait.
  auto waiting = pending;
  waiting.conditions.push_back({"Started", gp::condition_status::false_, std::nullopt, started,
                                "MaxParallel", "waiting for a slot"});
  BOOST_TEST(gc::status_may_wait(pending, waiting));
}

BOOST_AUTO_TEST_CASE(the_governor_hears_failed_in_flight_asking_and_unavailable) {
  gc::node_inputs in;
  gc::node_step out;
  BOOST_TEST(!gc::governor_facts(in, out).failed);

  in.item.status.phase = node_phase::failed;
  BOOST_TEST(gc::governor_facts(in, out).failed, "Failed, and the step leaves it so");
  out.status = in.item.status;
  out.status->phase = node_phase::pending;
  BOOST_TEST(!gc::governor_facts(in, out).failed, "a retry takes it out of Failed");
  in.item.status.phase = node_phase::verifying;
  out.status->phase = node_phase::failed;
  BOOST_TEST(gc::governor_facts(in, out).failed, "the step fails it");

  out.in_flight = true;
  out.wants_token = true;
  BOOST_TEST(gc::governor_facts(in, out).in_flight);
  BOOST_TEST(gc::governor_facts(in, out).wants_token);

  BOOST_TEST(!gc::governor_facts(in, out).unavailable, "no node: nothing to count");
  in.node = gc::node_info{};
  in.node->ready = true;
  BOOST_TEST(!gc::governor_facts(in, out).unavailable);
  in.node->unschedulable = true;
  BOOST_TEST(gc::governor_facts(in, out).unavailable, "cordoned");
  in.node->unschedulable = false;
  in.node->ready = false;
  BOOST_TEST(gc::governor_facts(in, out).unavailable, "NotReady");
}
