// actors::rollout_governor_actor on CAF's test_coordinator (DESIGN.md section 5): grants
// travel as messages to the worker named in the request, only once every item of the
// latest limits message (item names, `<plan>-<node>`) has said where it stands, never
// more than maxParallel at once under any interleaving of requests and releases, and in
// name order.
#include "actor_fixture.hpp"
#include "actors/rollout_governor.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace actor_test;
namespace bdata = boost::unit_test::data;

namespace {

struct grant_log {
  std::map<std::string, int> grants;
  std::vector<std::string> order;
};

// Stands in for a NodeWorker: records the grants it receives.
ga::grant_receiver::behavior_type grant_recorder(ga::grant_receiver::pointer,
                                                 std::shared_ptr<grant_log> log, std::string item) {
  return {
      [=](ga::grant_atom) {
        log->grants[item]++;
        log->order.push_back(item);
      },
  };
}

gc::governor_node asking() {
  gc::governor_node f;
  f.wants_token = true;
  return f;
}

gc::governor_node flying() {
  gc::governor_node f;
  f.in_flight = true;
  return f;
}

gc::governor_node finished() {
  return {};
}

gc::rollout_limits limits(std::int32_t max_parallel, bool paused = false) {
  gc::rollout_limits l;
  l.max_parallel = max_parallel;
  l.max_unavailable = gp::int_or_percent::count(100);
  l.paused = paused;
  return l;
}

std::string node(int i) {
  return "plan-gpu-" + std::to_string(i);
}

struct governor_fixture : actor_fixture {
  ga::governor_actor governor = spawn(ga::rollout_governor_actor, std::string(plan_name));
  std::shared_ptr<grant_log> log = std::make_shared<grant_log>();
  std::map<std::string, ga::grant_receiver> workers;
  std::vector<std::string> selected;

  explicit governor_fixture(int n = 6) {
    for (int i = 0; i < n; ++i) {
      workers[node(i)] = spawn(grant_recorder, log, node(i));
      selected.push_back(node(i));
    }
    sched.run();
  }

  void set_limits(const gc::rollout_limits& l, const std::vector<std::string>& absent = {},
                  const std::vector<std::string>& absent_down = {},
                  const std::vector<std::string>& unmade = {}) {
    caf::anon_send(governor, ga::limits_atom_v, l, selected, absent, absent_down, unmade);
  }
  // The supervisor stops the worker of an item that is gone (user_shutdown); a worker
  // fails with any other reason.
  void stop(const std::string& item, caf::exit_reason reason = caf::exit_reason::user_shutdown) {
    caf::anon_send_exit(workers.at(item), reason);
  }
  void want(const std::string& item, const gc::governor_node& facts) {
    caf::anon_send(governor, ga::report_atom_v, item, facts, workers.at(item));
  }
  // Every item but `except` reports: settled, neither in flight nor asking.
  void others_report_settled(const std::set<std::string>& except) {
    for (const auto& item : selected)
      if (!except.count(item))
        want(item, finished());
  }
  std::set<std::string> granted() const {
    std::set<std::string> out;
    for (const auto& [item, n] : log->grants)
      out.insert(item);
    return out;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(rollout_governor_actor)

BOOST_FIXTURE_TEST_CASE(a_grant_arrives_once_at_the_worker_that_asked, governor_fixture) {
  set_limits(limits(1));
  others_report_settled({node(1), node(3)});
  want(node(3), asking());
  want(node(1), finished());
  sched.run();
  BOOST_TEST(log->grants[node(3)] == 1);
  BOOST_TEST((granted() == std::set<std::string>{node(3)}));

  // Another asks while the token is out: nothing until the first gives it back.
  want(node(1), asking());
  want(node(3), flying());
  sched.run();
  BOOST_TEST(log->grants.count(node(1)) == 0u);
  want(node(3), finished());
  sched.run();
  BOOST_TEST(log->grants[node(1)] == 1);
  BOOST_TEST(log->grants[node(3)] == 1);
  BOOST_TEST((granted() == std::set<std::string>{node(1), node(3)}));
}

// A restarted governor (a restarted supervisor) must not hand out tokens before it knows
// which items are in flight: it waits for every selected item, then grants in name order.
BOOST_FIXTURE_TEST_CASE(nothing_is_granted_until_every_selected_item_has_reported,
                        governor_fixture) {
  set_limits(limits(1));
  for (int i : {5, 3, 2, 4})
    want(node(i), asking());
  want(node(1), finished());
  sched.run();
  BOOST_TEST(log->order.empty(), log->order.size()
                                     << " grant(s) before " << node(0) << " reported");
  want(node(0), flying()); // the last one is in flight: it holds the only token
  sched.run();
  BOOST_TEST(log->order.empty());
  want(node(0), finished());
  sched.run();
  const std::vector<std::string> first{node(2)};
  BOOST_TEST(log->order == first, boost::test_tools::per_element());
}

BOOST_FIXTURE_TEST_CASE(the_last_item_to_report_lets_the_grants_go_in_name_order,
                        governor_fixture) {
  set_limits(limits(3));
  for (int i : {4, 0, 5, 2, 1})
    want(node(i), asking());
  sched.run();
  BOOST_TEST(log->order.empty());
  want(node(3), asking());
  sched.run();
  const std::vector<std::string> first_three{node(0), node(1), node(2)};
  BOOST_TEST(log->order == first_three, boost::test_tools::per_element());
}

// Items not created yet cannot be in flight: the items named before them start without
// waiting for them, and those after them wait for their turn.
BOOST_FIXTURE_TEST_CASE(items_not_created_yet_hold_back_only_their_turn, governor_fixture) {
  set_limits(limits(5), {node(3), node(4), node(5)});
  for (int i : {2, 0, 1})
    want(node(i), asking());
  sched.run();
  const std::vector<std::string> first_three{node(0), node(1), node(2)};
  BOOST_TEST(log->order == first_three, boost::test_tools::per_element());
  // node(4) is created and asks before node(3) exists: it waits for node(3)'s turn.
  set_limits(limits(5), {node(3), node(5)});
  want(node(4), asking());
  sched.run();
  BOOST_TEST(log->order == first_three, boost::test_tools::per_element());
  set_limits(limits(5), {node(5)});
  want(node(3), asking());
  sched.run();
  const std::vector<std::string> five{node(0), node(1), node(2), node(3), node(4)};
  BOOST_TEST(log->order == five, boost::test_tools::per_element());
}

// An item whose create fails (another object holds its names, the API server refuses it)
// may never exist: the nodes after it go on, and its node still counts when it is down.
BOOST_FIXTURE_TEST_CASE(an_item_that_cannot_be_made_holds_back_no_turn, governor_fixture) {
  auto l = limits(10);
  l.max_unavailable = gp::int_or_percent::count(4);
  set_limits(l, {}, {node(2)}, {node(2)}); // its node cordoned by an admin, say
  for (int i : {0, 1, 3, 4, 5})
    want(node(i), asking());
  sched.run();
  // Past node(2), and with its down node counted: four unavailable.
  const std::vector<std::string> three{node(0), node(1), node(3)};
  BOOST_TEST(log->order == three, boost::test_tools::per_element());
  // Made at last, and up: it no longer counts, and the next one goes.
  set_limits(l);
  want(node(2), finished());
  sched.run();
  const std::vector<std::string> four{node(0), node(1), node(3), node(4)};
  BOOST_TEST(log->order == four, boost::test_tools::per_element());
}

BOOST_FIXTURE_TEST_CASE(a_node_down_whose_item_is_not_created_yet_counts_as_unavailable,
                        governor_fixture) {
  auto l = limits(10);
  l.max_unavailable = gp::int_or_percent::count(2);
  set_limits(l, {node(5)}, {node(5)}); // cordoned by an admin, say
  for (int i : {0, 1, 2, 3, 4})
    want(node(i), asking());
  sched.run();
  const std::vector<std::string> one{node(0)};
  BOOST_TEST(log->order == one, boost::test_tools::per_element());
  // It leaves the plan before it was ever created: it no longer counts.
  selected.pop_back();
  set_limits(l);
  sched.run();
  const std::vector<std::string> two{node(0), node(1)};
  BOOST_TEST(log->order == two, boost::test_tools::per_element());
}

// The latest limits message says which items to wait for: one no longer listed is not
// waited for, and one newly listed is.
BOOST_FIXTURE_TEST_CASE(the_latest_limits_message_names_the_items_waited_for, governor_fixture) {
  set_limits(limits(1));
  for (int i : {1, 2, 3, 4, 5})
    want(node(i), asking());
  sched.run();
  BOOST_TEST(log->order.empty());   // node(0) has not reported
  selected.erase(selected.begin()); // node(0) left the plan
  set_limits(limits(1));
  sched.run();
  const std::vector<std::string> first{node(1)};
  BOOST_TEST(log->order == first, boost::test_tools::per_element());

  // A new item joins, in flight already (a token held by an earlier governor): until it
  // has reported, no more grants, even when the holder finishes.
  workers[node(6)] = spawn(grant_recorder, log, node(6));
  selected.push_back(node(6));
  set_limits(limits(1));
  want(node(1), flying());
  want(node(1), finished());
  sched.run();
  BOOST_TEST(log->order == first, boost::test_tools::per_element());
  want(node(6), flying());
  sched.run();
  BOOST_TEST(log->order == first, boost::test_tools::per_element()); // node(6) holds it
  want(node(6), finished());
  sched.run();
  const std::vector<std::string> second{node(1), node(2)};
  BOOST_TEST(log->order == second, boost::test_tools::per_element());
}

// A worker stopped by its supervisor (its item is gone) gives its token back: the governor
// monitors the workers that report.
BOOST_FIXTURE_TEST_CASE(a_stopped_workers_token_goes_to_the_next, governor_fixture) {
  set_limits(limits(1));
  others_report_settled({node(0), node(1)});
  want(node(0), flying()); // found in flight: it holds the only token
  want(node(1), asking());
  sched.run();
  BOOST_TEST(log->order.empty());
  selected.erase(selected.begin()); // its node was deleted: the item goes
  set_limits(limits(1));
  stop(node(0));
  sched.run();
  const std::vector<std::string> first{node(1)};
  BOOST_TEST(log->order == first, boost::test_tools::per_element());
}

// A worker that fails keeps its token (its node may be cordoned, mid-drain) until the
// worker started in its place says where the item stands.
BOOST_FIXTURE_TEST_CASE(a_failed_workers_token_waits_for_its_successor, governor_fixture) {
  set_limits(limits(1));
  others_report_settled({node(0), node(1)});
  want(node(0), flying());
  want(node(1), asking());
  sched.run();
  stop(node(0), caf::exit_reason::kill);
  sched.run();
  BOOST_TEST(log->order.empty(), "the failed worker's token is still held");
  workers[node(0)] = spawn(grant_recorder, log, node(0)); // the restarted worker
  want(node(0), finished());
  sched.run();
  const std::vector<std::string> first{node(1)};
  BOOST_TEST(log->order == first, boost::test_tools::per_element());
}

// A report the stopped worker sent before it stopped (its node deleted, so Failed) comes
// before its down message, which then takes the item out: it does not come back to hold
// every later token (a Failed node stops the rollout).
BOOST_FIXTURE_TEST_CASE(a_report_sent_before_the_worker_stopped_does_not_bring_it_back,
                        governor_fixture) {
  set_limits(limits(1));
  others_report_settled({node(0), node(1), node(2)});
  want(node(0), flying());
  want(node(1), asking());
  want(node(2), asking());
  sched.run();
  BOOST_TEST(log->order.empty());   // node(0) holds the token
  selected.erase(selected.begin()); // its node was deleted: the item goes
  set_limits(limits(1));
  gc::governor_node gone;
  gone.failed = true;
  want(node(0), gone); // in the governor's mailbox before the worker's down message
  stop(node(0));
  sched.run();
  const std::vector<std::string> first{node(1)};
  BOOST_TEST(log->order == first, boost::test_tools::per_element());
  want(node(1), flying());
  want(node(1), finished());
  sched.run();
  const std::vector<std::string> second{node(1), node(2)};
  BOOST_TEST(log->order == second, boost::test_tools::per_element());
}

// An item of the same name as a stopped one (its node came back) has a new worker, and
// that one is heard, though the old worker ended before the governor read its down.
BOOST_FIXTURE_TEST_CASE(a_new_worker_for_a_stopped_items_name_is_heard, governor_fixture) {
  set_limits(limits(1));
  others_report_settled({node(0)});
  want(node(0), flying());
  sched.run();
  stop(node(0));
  workers.erase(node(0));
  sched.run();
  workers[node(0)] = spawn(grant_recorder, log, node(0));
  set_limits(limits(1));
  want(node(0), asking());
  sched.run();
  const std::vector<std::string> first{node(0)};
  BOOST_TEST(log->order == first, boost::test_tools::per_element());
}

BOOST_FIXTURE_TEST_CASE(a_worker_asking_again_for_a_token_it_holds_gets_it_again,
                        governor_fixture) {
  set_limits(limits(1));
  others_report_settled({node(0), node(1)});
  want(node(0), asking());
  want(node(1), finished());
  sched.run();
  const int first = log->grants[node(0)];
  want(node(0), asking()); // a restarted worker, still Pending
  want(node(1), asking());
  sched.run();
  BOOST_TEST(first == 1);
  BOOST_TEST(log->grants[node(0)] == first + 1);
  BOOST_TEST(log->grants.count(node(1)) == 0u);
}

BOOST_FIXTURE_TEST_CASE(freed_tokens_go_to_the_waiting_workers_in_name_order, governor_fixture) {
  set_limits(limits(1));
  want(node(0), flying()); // found in flight
  for (int i : {5, 3, 1, 4, 2})
    want(node(i), asking());
  sched.run();
  BOOST_TEST(log->order.empty());
  for (int i : {0, 1, 2, 3, 4}) {
    want(node(i), finished());
    sched.run();
    BOOST_TEST_REQUIRE(!log->order.empty());
    BOOST_TEST(log->order.back() == node(i + 1));
  }
}

BOOST_FIXTURE_TEST_CASE(a_paused_plan_grants_nothing_then_starts_in_name_order, governor_fixture) {
  set_limits(limits(2, true));
  for (int i : {4, 2, 5, 0, 3, 1})
    want(node(i), asking());
  sched.run();
  BOOST_TEST(log->order.empty());
  set_limits(limits(2));
  sched.run();
  const std::set<std::string> first_two{node(0), node(1)};
  BOOST_TEST((granted() == first_two));
}

// Many workers ask at once (every request already in the governor's mailbox, in an
// arbitrary order, behind the plan's limits): the governor waits for all of them, and
// the first tokens go to the first nodes by name (DESIGN.md section 5: "the order of
// nodes is deterministic (by name)").
BOOST_DATA_TEST_CASE(many_workers_asking_at_once_are_granted_in_name_order, bdata::xrange(6),
                     seed) {
  governor_fixture f;
  std::vector<int> order{0, 1, 2, 3, 4, 5};
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::shuffle(order.begin(), order.end(), rng);
  f.set_limits(limits(2));
  for (int i : order)
    f.want(node(i), asking());
  f.sched.run();
  std::string arrival;
  for (int i : order)
    arrival += std::to_string(i) + " ";
  std::string got;
  for (const auto& name : f.granted())
    got += name + " ";
  const std::vector<std::string> first_two{node(0), node(1)};
  BOOST_TEST((f.log->order == first_two),
             "requests arrived for nodes " << arrival << "; tokens went to " << got);
}

// Random interleavings of requests, starts, finishes and repeated requests, delivered in
// batches: the workers holding a token never outnumber maxParallel, and a grant only
// ever reaches a worker that asked.
BOOST_DATA_TEST_CASE(never_more_than_maxParallel_under_random_interleavings, bdata::xrange(40),
                     seed) {
  governor_fixture f(8);
  std::mt19937 rng(static_cast<unsigned>(seed) + 1000u);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const int max_parallel = 1 + pick(3);
  f.set_limits(limits(max_parallel));
  enum class state { idle, asking, holding, flying };
  std::map<std::string, state> st;
  for (const auto& [name, w] : f.workers)
    st[name] = state::idle;
  std::map<std::string, int> seen;
  std::set<std::string> reported;
  for (int round = 0; round < 200; ++round) {
    // Workers that asked again while holding: the governor answers with the grant, which
    // may arrive after the same batch let the worker finish.
    std::set<std::string> asked_again;
    // A batch of messages, all enqueued before the governor runs.
    for (int k = 1 + pick(5); k > 0; --k) {
      const auto name = node(pick(8));
      switch (st[name]) {
      case state::idle:
        f.want(name, asking());
        st[name] = state::asking;
        break;
      case state::asking:
        if (pick(2) == 0)
          f.want(name, asking()); // a fresh view, still Pending
        break;
      case state::holding:
        if (pick(4) == 0) {
          f.want(name, asking()); // restarted while holding
          asked_again.insert(name);
        } else {
          f.want(name, flying());
          st[name] = state::flying;
        }
        break;
      case state::flying:
        if (pick(3) == 0) {
          f.want(name, finished());
          st[name] = state::idle;
        } else {
          f.want(name, flying());
        }
        break;
      }
      reported.insert(name); // every state but asking sends; asking sent before
    }
    f.sched.run();
    if (reported.size() < f.selected.size())
      BOOST_TEST(f.log->order.empty(), "round " << round << ": a grant with only "
                                                << reported.size() << " of " << f.selected.size()
                                                << " items reported");
    for (const auto& [name, n] : f.log->grants) {
      if (n == seen[name])
        continue;
      seen[name] = n;
      BOOST_TEST((st[name] != state::idle || asked_again.count(name) > 0),
                 name << " was granted without asking");
      if (st[name] == state::asking)
        st[name] = state::holding;
    }
    const auto holders = std::count_if(st.begin(), st.end(), [](const auto& kv) {
      return kv.second == state::holding || kv.second == state::flying;
    });
    BOOST_TEST(holders <= max_parallel, "round " << round);
  }
  BOOST_TEST(!f.log->order.empty());
}

BOOST_AUTO_TEST_SUITE_END()
