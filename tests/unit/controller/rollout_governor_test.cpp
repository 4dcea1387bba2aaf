// controller::rollout_governor (DESIGN.md section 5): maxParallel, maxUnavailable (int
// and percent, counting nodes down for any reason), nodes found in flight after a
// restart, pause, stop on failure, forget, and the reason holding() gives.
#include "controller/rollout_governor.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;
namespace bdata = boost::unit_test::data;

namespace {

// -- node facts, as the PlanSupervisor would report them --

// Pending, asks to start, node schedulable and Ready.
gc::governor_node waiting() {
  gc::governor_node n;
  n.wants_token = true;
  return n;
}

// Pending and asks to start, but already down for another reason (admin cordon, NotReady).
gc::governor_node waiting_but_down() {
  auto n = waiting();
  n.unavailable = true;
  return n;
}

// Between Draining and Verifying.
gc::governor_node running() {
  gc::governor_node n;
  n.in_flight = true;
  return n;
}

// Succeeded, schedulable, Ready: nothing to do.
gc::governor_node done() {
  return {};
}

// Not asking for a token and down for another reason: cordoned by an admin, or NotReady.
gc::governor_node down() {
  gc::governor_node n;
  n.unavailable = true;
  return n;
}

// Failed after Applying: kept cordoned.
gc::governor_node failed_cordoned() {
  gc::governor_node n;
  n.failed = true;
  n.unavailable = true;
  return n;
}

gc::rollout_limits limits(std::int32_t max_parallel, gp::int_or_percent max_unavailable,
                          bool paused = false) {
  gc::rollout_limits l;
  l.max_parallel = max_parallel;
  l.max_unavailable = max_unavailable;
  l.paused = paused;
  return l;
}

gp::int_or_percent count(std::int32_t n) {
  return gp::int_or_percent::count(n);
}
gp::int_or_percent percent(std::int32_t p) {
  return gp::int_or_percent::percent(p);
}

gc::rollout_governor governor(const gc::rollout_limits& l,
                              const std::vector<std::pair<std::string, gc::governor_node>>& nodes) {
  gc::rollout_governor g;
  g.set_limits(l);
  for (const auto& [name, facts] : nodes)
    g.observe(name, facts);
  return g;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "" : ",") + n;
  return out;
}

std::string holding(const gc::rollout_governor& g) {
  return gc::to_string(g.holding());
}

} // namespace

BOOST_AUTO_TEST_SUITE(rollout_governor)

// -- maxParallel --

BOOST_AUTO_TEST_CASE(maxParallel_caps_tokens_and_grants_in_name_order) {
  // Observed out of order on purpose: the order of grants is by name, not by arrival.
  auto g = governor(limits(2, count(10)), {{"node-e", waiting()},
                                           {"node-c", waiting()},
                                           {"node-a", waiting()},
                                           {"node-d", waiting()},
                                           {"node-b", waiting()}});
  BOOST_TEST(joined(g.grant()) == "node-a,node-b");
  BOOST_TEST(g.in_flight() == 2);
  BOOST_TEST(g.holds("node-a"));
  BOOST_TEST(g.holds("node-b"));
  BOOST_TEST(!g.holds("node-c"));
  BOOST_TEST(joined(g.grant()) == "");
  BOOST_TEST(holding(g) == "MaxParallelReached");
}

BOOST_AUTO_TEST_CASE(grants_stop_before_a_node_whose_turn_has_not_come) {
  // node-c is yet to say whether it wants a token (its NodePartitioning is being
  // created): node-d and node-e wait for it, so the order stays by name.
  auto g = governor(limits(10, count(10)), {{"node-a", waiting()},
                                            {"node-b", waiting()},
                                            {"node-c", done()},
                                            {"node-d", waiting()},
                                            {"node-e", waiting()}});
  const std::string boundary = "node-c";
  BOOST_TEST(joined(g.grant(&boundary)) == "node-a,node-b");
  BOOST_TEST(joined(g.grant(&boundary)) == "");
  g.observe("node-c", waiting());
  BOOST_TEST(joined(g.grant()) == "node-c,node-d,node-e");
}

BOOST_AUTO_TEST_CASE(nodes_past_the_boundary_still_count_as_unavailable) {
  // node-d (cordoned by an admin) comes after the boundary but is down all the same.
  auto g = governor(
      limits(10, count(2)),
      {{"node-a", waiting()}, {"node-b", waiting()}, {"node-c", done()}, {"node-d", down()}});
  const std::string boundary = "node-c";
  BOOST_TEST(joined(g.grant(&boundary)) == "node-a");
  BOOST_TEST(holding(g) == "MaxUnavailableReached");
}

BOOST_AUTO_TEST_CASE(maxParallel_release_lets_the_next_node_start) {
  auto g = governor(limits(2, count(10)), {{"node-a", waiting()},
                                           {"node-b", waiting()},
                                           {"node-c", waiting()},
                                           {"node-d", waiting()},
                                           {"node-e", waiting()}});
  BOOST_TEST(joined(g.grant()) == "node-a,node-b");
  g.observe("node-a", running());
  g.observe("node-b", running());
  g.release("node-b");
  BOOST_TEST(!g.holds("node-b"));
  BOOST_TEST(joined(g.grant()) == "node-c");
  BOOST_TEST(joined(g.grant()) == "");
  g.observe("node-c", running());
  g.release("node-a");
  g.release("node-c");
  BOOST_TEST(joined(g.grant()) == "node-d,node-e");
  BOOST_TEST(g.in_flight() == 2);
}

BOOST_AUTO_TEST_CASE(maxParallel_token_is_reserved_before_the_node_is_seen_in_flight) {
  // The watch lags: right after the grant the node still looks Pending. It must neither
  // get a second token nor let another node past the limit.
  auto g = governor(limits(1, count(10)), {{"node-a", waiting()}, {"node-b", waiting()}});
  BOOST_TEST(joined(g.grant()) == "node-a");
  g.observe("node-a", waiting());
  BOOST_TEST(g.holds("node-a"));
  BOOST_TEST(joined(g.grant()) == "");
  g.observe("node-a", running());
  BOOST_TEST(g.in_flight() == 1);
  BOOST_TEST(joined(g.grant()) == "");
}

BOOST_AUTO_TEST_CASE(release_before_the_node_is_seen_in_flight_does_not_start_it_again) {
  // The worker finishes (or gives its token back) before the watch ever shows the node
  // in flight: the last observation still says Pending. Released means done with the
  // token; the node must not be granted a second one on stale facts, which would leak a
  // token to a node that will never return it.
  auto g = governor(limits(1, count(5)), {{"node-a", waiting()}, {"node-b", waiting()}});
  BOOST_TEST(joined(g.grant()) == "node-a");
  g.release("node-a");
  BOOST_TEST(!g.holds("node-a"));
  BOOST_TEST(joined(g.grant()) == "node-b");
  BOOST_TEST(!g.holds("node-a"));
}

BOOST_AUTO_TEST_CASE(maxParallel_lowered_below_in_flight_blocks_until_enough_finish) {
  auto g = governor(
      limits(3, count(10)),
      {{"node-a", waiting()}, {"node-b", waiting()}, {"node-c", waiting()}, {"node-d", waiting()}});
  BOOST_TEST(joined(g.grant()) == "node-a,node-b,node-c");
  for (const auto* n : {"node-a", "node-b", "node-c"})
    g.observe(n, running());
  g.set_limits(limits(1, count(10)));
  g.release("node-a");
  BOOST_TEST(joined(g.grant()) == "");
  g.release("node-b");
  BOOST_TEST(joined(g.grant()) == "");
  g.release("node-c");
  BOOST_TEST(joined(g.grant()) == "node-d");
}

// -- maxUnavailable --

struct percent_row {
  std::int32_t percent;
  std::int32_t nodes;
  std::int32_t expected;
};

std::ostream& operator<<(std::ostream& os, const percent_row& r) {
  return os << r.percent << "% of " << r.nodes << " = " << r.expected;
}

const std::vector<percent_row> percent_rows{
    {25, 8, 2}, {10, 5, 1}, {100, 3, 3}, {50, 3, 1}, {34, 3, 1}, {75, 4, 3}, {1, 1, 1},
};

BOOST_DATA_TEST_CASE(maxUnavailable_percent_resolves_against_plan_nodes_rounded_down_minimum_1,
                     bdata::make(percent_rows), row) {
  std::vector<std::pair<std::string, gc::governor_node>> nodes;
  std::vector<std::string> expected;
  for (std::int32_t i = 0; i < row.nodes; ++i) {
    nodes.emplace_back("node-" + std::to_string(i), waiting());
    if (i < row.expected)
      expected.push_back("node-" + std::to_string(i));
  }
  auto g = governor(limits(100, percent(row.percent)), nodes);
  BOOST_TEST(g.max_unavailable() == row.expected);
  BOOST_TEST(joined(g.grant()) == joined(expected));
  BOOST_TEST(g.unavailable() == row.expected);
  if (row.expected < row.nodes)
    BOOST_TEST(holding(g) == "MaxUnavailableReached");
}

BOOST_AUTO_TEST_CASE(maxUnavailable_int_caps_nodes_down) {
  auto g = governor(limits(5, count(2)), {{"node-a", waiting()},
                                          {"node-b", waiting()},
                                          {"node-c", waiting()},
                                          {"node-d", waiting()},
                                          {"node-e", waiting()}});
  BOOST_TEST(g.max_unavailable() == 2);
  BOOST_TEST(joined(g.grant()) == "node-a,node-b");
  BOOST_TEST(holding(g) == "MaxUnavailableReached");
  g.release("node-a");
  g.observe("node-a", done());
  BOOST_TEST(joined(g.grant()) == "node-c");
}

BOOST_AUTO_TEST_CASE(maxUnavailable_int_above_node_count_allows_all) {
  auto g = governor(limits(5, count(10)),
                    {{"node-a", waiting()}, {"node-b", waiting()}, {"node-c", waiting()}});
  BOOST_TEST(g.max_unavailable() == 10);
  BOOST_TEST(joined(g.grant()) == "node-a,node-b,node-c");
}

BOOST_AUTO_TEST_CASE(maxUnavailable_percent_follows_the_plan_node_count_as_it_changes) {
  auto g = governor(limits(10, percent(50)), {{"node-a", waiting()}, {"node-b", waiting()}});
  BOOST_TEST(g.max_unavailable() == 1);
  g.observe("node-c", done());
  g.observe("node-d", done());
  BOOST_TEST(g.max_unavailable() == 2);
  BOOST_TEST(joined(g.grant()) == "node-a,node-b");
  g.forget("node-d");
  BOOST_TEST(g.max_unavailable() == 1);
}

BOOST_AUTO_TEST_CASE(maxUnavailable_counts_admin_cordoned_nodes) {
  auto g = governor(limits(3, count(1)),
                    {{"node-a", down()}, {"node-b", waiting()}, {"node-c", waiting()}});
  BOOST_TEST(g.unavailable() == 1);
  BOOST_TEST(joined(g.grant()) == "");
  BOOST_TEST(holding(g) == "MaxUnavailableReached");
  // The admin uncordons: the rollout goes on.
  g.observe("node-a", done());
  BOOST_TEST(joined(g.grant()) == "node-b");
}

BOOST_AUTO_TEST_CASE(maxUnavailable_admin_cordon_takes_one_of_the_budget) {
  auto g = governor(
      limits(3, count(2)),
      {{"node-a", down()}, {"node-b", waiting()}, {"node-c", waiting()}, {"node-d", waiting()}});
  BOOST_TEST(joined(g.grant()) == "node-b");
  BOOST_TEST(g.unavailable() == 2);
  BOOST_TEST(g.in_flight() == 1);
}

BOOST_AUTO_TEST_CASE(maxUnavailable_counts_not_ready_nodes_that_want_nothing) {
  // A NotReady node that already Succeeded is reported as unavailable, not waiting.
  auto g = governor(
      limits(2, percent(50)),
      {{"node-a", waiting()}, {"node-b", waiting()}, {"node-c", down()}, {"node-d", down()}});
  BOOST_TEST(g.max_unavailable() == 2);
  BOOST_TEST(joined(g.grant()) == "");
  BOOST_TEST(holding(g) == "MaxUnavailableReached");
}

BOOST_AUTO_TEST_CASE(maxUnavailable_counts_failed_and_cordoned_nodes) {
  auto l = limits(3, count(1));
  l.max_failures = 10;
  auto g = governor(l, {{"node-a", failed_cordoned()}, {"node-b", waiting()}});
  BOOST_TEST(g.unavailable() == 1);
  BOOST_TEST(joined(g.grant()) == "");
  BOOST_TEST(holding(g) == "MaxUnavailableReached");
}

BOOST_AUTO_TEST_CASE(maxUnavailable_already_unavailable_candidate_does_not_add_one) {
  // node-b is cordoned by an admin and waits: starting it takes no more capacity down.
  auto g = governor(limits(3, count(2)),
                    {{"node-a", down()}, {"node-b", waiting_but_down()}, {"node-c", waiting()}});
  BOOST_TEST(g.unavailable() == 2);
  BOOST_TEST(joined(g.grant()) == "node-b");
  BOOST_TEST(g.unavailable() == 2);
  BOOST_TEST(holding(g) == "MaxUnavailableReached");
}

BOOST_AUTO_TEST_CASE(maxUnavailable_full_lets_only_already_unavailable_candidates_start) {
  auto g = governor(limits(2, count(1)), {{"node-a", waiting()}, {"node-b", waiting_but_down()}});
  BOOST_TEST(holding(g) == "None");
  BOOST_TEST(joined(g.grant()) == "node-b");
  BOOST_TEST(holding(g) == "MaxUnavailableReached");
}

BOOST_AUTO_TEST_CASE(maxUnavailable_counts_in_flight_nodes) {
  auto g = governor(limits(3, count(2)),
                    {{"node-a", running()}, {"node-b", waiting()}, {"node-c", waiting()}});
  BOOST_TEST(g.unavailable() == 1);
  BOOST_TEST(joined(g.grant()) == "node-b");
  BOOST_TEST(g.unavailable() == 2);
  BOOST_TEST(joined(g.grant()) == "");
  BOOST_TEST(holding(g) == "MaxUnavailableReached");
}

// -- after an operator restart --

BOOST_AUTO_TEST_CASE(nodes_observed_in_flight_hold_tokens_without_a_grant) {
  // A fresh governor (the operator restarted) finds two nodes mid-drain.
  auto g = governor(limits(2, count(5)),
                    {{"node-a", running()}, {"node-b", running()}, {"node-c", waiting()}});
  BOOST_TEST(g.holds("node-a"));
  BOOST_TEST(g.holds("node-b"));
  BOOST_TEST(g.in_flight() == 2);
  BOOST_TEST(joined(g.grant()) == "");
  BOOST_TEST(holding(g) == "MaxParallelReached");
  g.release("node-a");
  BOOST_TEST(joined(g.grant()) == "node-c");
}

BOOST_AUTO_TEST_CASE(nodes_observed_in_flight_block_grants_by_maxUnavailable) {
  auto g = governor(limits(5, count(2)),
                    {{"node-a", running()}, {"node-b", running()}, {"node-c", waiting()}});
  BOOST_TEST(g.unavailable() == 2);
  BOOST_TEST(joined(g.grant()) == "");
  BOOST_TEST(holding(g) == "MaxUnavailableReached");
}

BOOST_AUTO_TEST_CASE(nodes_observed_in_flight_above_the_limit_keep_their_tokens) {
  auto g = governor(limits(1, count(1)),
                    {{"node-a", running()}, {"node-b", running()}, {"node-c", waiting()}});
  BOOST_TEST(g.in_flight() == 2);
  BOOST_TEST(joined(g.grant()) == "");
  g.release("node-a");
  BOOST_TEST(joined(g.grant()) == "");
  g.release("node-b");
  BOOST_TEST(joined(g.grant()) == "node-c");
}

// -- paused --

BOOST_AUTO_TEST_CASE(paused_grants_nothing_and_in_flight_nodes_keep_their_tokens) {
  auto g = governor(limits(1, count(3)), {{"node-a", waiting()}, {"node-b", waiting()}});
  BOOST_TEST(joined(g.grant()) == "node-a");
  g.set_limits(limits(3, count(3), true));
  BOOST_TEST(joined(g.grant()) == "");
  BOOST_TEST(g.holds("node-a"));
  BOOST_TEST(holding(g) == "Paused");
  g.set_limits(limits(3, count(3), false));
  BOOST_TEST(joined(g.grant()) == "node-b");
  BOOST_TEST(g.holds("node-a"));
}

BOOST_AUTO_TEST_CASE(paused_from_the_start_grants_nothing_until_unpaused) {
  auto g = governor(limits(2, count(2), true), {{"node-a", waiting()}, {"node-b", waiting()}});
  BOOST_TEST(joined(g.grant()) == "");
  BOOST_TEST(g.in_flight() == 0);
  g.set_limits(limits(2, count(2)));
  BOOST_TEST(joined(g.grant()) == "node-a,node-b");
}

// -- failures --

BOOST_AUTO_TEST_CASE(failed_node_stops_the_rollout) {
  auto g = governor(limits(2, count(5)),
                    {{"node-a", failed_cordoned()}, {"node-b", waiting()}, {"node-c", waiting()}});
  BOOST_TEST(g.limits().max_failures == 0);
  BOOST_TEST(joined(g.grant()) == "");
  BOOST_TEST(holding(g) == "NodeFailed");
}

BOOST_AUTO_TEST_CASE(failed_node_in_flight_stops_new_grants_and_release_returns_its_token) {
  auto g = governor(limits(2, count(5)),
                    {{"node-a", waiting()}, {"node-b", waiting()}, {"node-c", waiting()}});
  BOOST_TEST(joined(g.grant()) == "node-a,node-b");
  g.observe("node-b", running());
  g.observe("node-a", failed_cordoned());
  g.release("node-b");
  BOOST_TEST(joined(g.grant()) == "");
  BOOST_TEST(holding(g) == "NodeFailed");
  g.release("node-a");
  BOOST_TEST(!g.holds("node-a"));
  BOOST_TEST(joined(g.grant()) == "");
}

BOOST_AUTO_TEST_CASE(forgetting_the_failed_node_resumes_the_rollout) {
  auto g = governor(limits(2, count(5)),
                    {{"node-a", failed_cordoned()}, {"node-b", waiting()}, {"node-c", waiting()}});
  BOOST_TEST(joined(g.grant()) == "");
  g.forget("node-a");
  BOOST_TEST(joined(g.grant()) == "node-b,node-c");
}

BOOST_AUTO_TEST_CASE(clearing_failed_resumes_the_rollout) {
  auto g = governor(limits(2, count(5)),
                    {{"node-a", failed_cordoned()}, {"node-b", waiting()}, {"node-c", waiting()}});
  BOOST_TEST(joined(g.grant()) == "");
  // The user retried node-a: it is Pending again (still cordoned by the failed attempt).
  g.observe("node-a", waiting_but_down());
  BOOST_TEST(joined(g.grant()) == "node-a,node-b");
}

BOOST_AUTO_TEST_CASE(within_maxFailures_a_failed_node_is_never_started_but_others_are) {
  auto l = limits(2, count(5));
  l.max_failures = 1;
  auto failed_waiting = failed_cordoned();
  failed_waiting.wants_token = true;
  auto g = governor(l, {{"node-a", failed_waiting}, {"node-b", waiting()}, {"node-c", waiting()}});
  BOOST_TEST(joined(g.grant()) == "node-b,node-c");
  BOOST_TEST(!g.holds("node-a"));
}

BOOST_AUTO_TEST_CASE(maxFailures_counts_failures_before_stopping) {
  // Budget arithmetic: with maxFailures 1, one failure lets the rest go; a second stops.
  auto l = limits(2, count(5));
  l.max_failures = 1;
  auto g = governor(l, {{"node-a", failed_cordoned()},
                        {"node-b", waiting()},
                        {"node-c", waiting()},
                        {"node-d", waiting()}});
  BOOST_TEST(g.failed() == 1);
  BOOST_TEST(joined(g.grant()) == "node-b,node-c");
  g.observe("node-b", failed_cordoned());
  g.release("node-b");
  BOOST_TEST(g.failed() == 2);
  BOOST_TEST(joined(g.grant()) == "");
  BOOST_TEST(holding(g) == "NodeFailed");
  // node-c still finishes: it holds its token.
  BOOST_TEST(g.holds("node-c"));
}

BOOST_AUTO_TEST_CASE(a_failed_node_back_in_service_still_counts_unavailable) {
  // A failure returned to service (its GPUs were never touched) is not cordoned, yet it
  // keeps counting against maxUnavailable.
  auto l = limits(3, count(1));
  l.max_failures = 5;
  gc::governor_node failed_in_service;
  failed_in_service.failed = true;
  auto g = governor(l, {{"node-a", failed_in_service}, {"node-b", waiting()}});
  BOOST_TEST(g.unavailable() == 1);
  BOOST_TEST(joined(g.grant()) == "");
  BOOST_TEST(holding(g) == "MaxUnavailableReached");
}

// -- soak --

BOOST_AUTO_TEST_CASE(a_soaking_node_holds_its_token_but_is_not_unavailable) {
  auto g = governor(limits(1, count(1)), {{"node-a", waiting()}, {"node-b", waiting()}});
  BOOST_TEST(joined(g.grant()) == "node-a");
  gc::governor_node soaking;
  soaking.in_flight = true;
  soaking.soaking = true;
  g.observe("node-a", soaking);
  BOOST_TEST(g.holds("node-a"));
  BOOST_TEST(g.unavailable() == 0);
  BOOST_TEST(joined(g.grant()) == "");
  BOOST_TEST(holding(g) == "MaxParallelReached");
  // Its soak over, the token goes back and the next node starts.
  g.release("node-a");
  g.observe("node-a", done());
  BOOST_TEST(joined(g.grant()) == "node-b");
}

BOOST_AUTO_TEST_CASE(a_soaking_node_leaves_room_under_maxUnavailable) {
  auto g = governor(limits(2, count(1)), {{"node-a", waiting()}, {"node-b", waiting()}});
  BOOST_TEST(joined(g.grant()) == "node-a");
  gc::governor_node soaking;
  soaking.in_flight = true;
  soaking.soaking = true;
  g.observe("node-a", soaking);
  BOOST_TEST(joined(g.grant()) == "node-b");
}

// -- only (canary, windows) --

BOOST_AUTO_TEST_CASE(only_the_allowed_nodes_start) {
  auto l = limits(3, count(3));
  l.only = std::set<std::string>{"node-b"};
  auto g = governor(l, {{"node-a", waiting()}, {"node-b", waiting()}, {"node-c", waiting()}});
  BOOST_TEST(joined(g.grant()) == "node-b");
  BOOST_TEST(holding(g) == "NotAllowedYet");
  l.only = std::set<std::string>{};
  g.set_limits(l);
  BOOST_TEST(joined(g.grant()) == "");
  l.only.reset();
  g.set_limits(l);
  BOOST_TEST(joined(g.grant()) == "node-a,node-c");
}

// -- forget --

BOOST_AUTO_TEST_CASE(forget_releases_the_token_and_the_node) {
  auto g = governor(limits(1, count(3)), {{"node-a", waiting()}, {"node-b", waiting()}});
  BOOST_TEST(joined(g.grant()) == "node-a");
  g.forget("node-a");
  BOOST_TEST(!g.holds("node-a"));
  BOOST_TEST(g.in_flight() == 0);
  BOOST_TEST(g.total() == 1);
  BOOST_TEST(joined(g.grant()) == "node-b");
}

BOOST_AUTO_TEST_CASE(forget_of_an_in_flight_node_frees_maxUnavailable) {
  auto g = governor(limits(3, count(1)), {{"node-a", running()}, {"node-b", waiting()}});
  BOOST_TEST(joined(g.grant()) == "");
  g.forget("node-a");
  BOOST_TEST(g.unavailable() == 0);
  BOOST_TEST(joined(g.grant()) == "node-b");
}

BOOST_AUTO_TEST_CASE(forget_and_release_of_unknown_nodes_change_nothing) {
  auto g = governor(limits(1, count(1)), {{"node-a", waiting()}});
  g.forget("node-x");
  g.release("node-y");
  BOOST_TEST(g.total() == 1);
  BOOST_TEST(joined(g.grant()) == "node-a");
}

// -- holding() --

struct hold_row {
  const char* behaviour;
  std::function<gc::rollout_governor()> make;
  const char* expected;
};

std::ostream& operator<<(std::ostream& os, const hold_row& r) {
  return os << r.behaviour;
}

const std::vector<hold_row> hold_rows{
    {"a candidate can start: None",
     [] {
       return governor(limits(1, count(1)), {{"a", waiting()}});
     },
     "None"},
    {"no nodes: NothingToStart", [] { return governor(limits(1, count(1)), {}); },
     "NothingToStart"},
    {"every node done: NothingToStart",
     [] {
       return governor(limits(1, count(1)), {{"a", done()}, {"b", done()}});
     },
     "NothingToStart"},
    {"every waiting node holds a token: NothingToStart",
     [] {
       return governor(limits(3, count(3)), {{"a", running()}, {"b", running()}});
     },
     "NothingToStart"},
    {"paused with a candidate: Paused",
     [] {
       return governor(limits(1, count(1), true), {{"a", waiting()}});
     },
     "Paused"},
    {"failed node with a candidate: NodeFailed",
     [] {
       return governor(limits(1, count(5)), {{"a", failed_cordoned()}, {"b", waiting()}});
     },
     "NodeFailed"},
    {"paused wins over a failed node",
     [] {
       return governor(limits(1, count(5), true), {{"a", failed_cordoned()}, {"b", waiting()}});
     },
     "Paused"},
    {"maxParallel full: MaxParallelReached",
     [] {
       return governor(limits(1, count(5)), {{"a", running()}, {"b", waiting()}});
     },
     "MaxParallelReached"},
    {"maxUnavailable full: MaxUnavailableReached",
     [] {
       return governor(limits(5, count(1)), {{"a", down()}, {"b", waiting()}});
     },
     "MaxUnavailableReached"},
    {"one candidate blocked, a later one can start: None",
     [] {
       return governor(limits(5, count(1)), {{"a", waiting()}, {"b", waiting_but_down()}});
     },
     "None"},
};

BOOST_DATA_TEST_CASE(holding_names_why_nothing_more_starts, bdata::make(hold_rows), row) {
  auto g = row.make();
  BOOST_TEST(holding(g) == row.expected, row.behaviour);
  // holding() says None exactly when grant() would start something.
  const bool says_none = g.holding() == gc::hold_reason::none;
  BOOST_TEST(says_none == !g.grant().empty(), row.behaviour);
}

BOOST_AUTO_TEST_SUITE_END()
