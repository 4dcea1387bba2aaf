// actors::io_router and actors::io_pool on CAF's test_coordinator: node steps that evict
// go to the eviction pool (a node's pods side by side), the supervisors' item writes to a
// pool of their own, every other write to the write pool; a pool hands a request to
// an executor with nothing to do, or to the first to finish, in order; answers come back
// to the requester.
#include "actor_fixture.hpp"
#include "actors/io_executor.hpp"
#include "actors/io_router.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

using namespace actor_test;

namespace {

std::shared_ptr<io_double_state> quiet() {
  auto st = std::make_shared<io_double_state>();
  st->publish = false;
  return st;
}

// The router and its three pools, each stood in for by a double that answers without
// showing anyone a view.
struct router_fixture : actor_fixture {
  std::shared_ptr<io_double_state> write_state = quiet();
  std::shared_ptr<io_double_state> evict_state = quiet();
  std::shared_ptr<io_double_state> item_state = quiet();
  io_double_actor writes = spawn(io_double, write_state);
  io_double_actor evictions = spawn(io_double, evict_state);
  io_double_actor items = spawn(io_double, item_state);
  ga::io_actor router = spawn(ga::io_router, writes, evictions, items);
};

} // namespace

BOOST_AUTO_TEST_SUITE(io_router)

BOOST_FIXTURE_TEST_CASE(evictions_and_other_writes_go_to_separate_pools, router_fixture) {
  auto answers = std::make_shared<int>(0);
  // The router is passed as an argument: CAF 0.17.6 dereferences a null argument tuple
  // when it starts a function actor spawned without any (UBSan reports it).
  auto requester = [=](caf::event_based_actor* self, ga::io_actor to) -> caf::behavior {
    ga::node_io cordon;
    cordon.item = std::string(plan_name) + "-gpu-1";
    cordon.node = "gpu-1";
    cordon.patch = gc::node_patch{};
    cordon.patch->unschedulable = true;
    ga::node_io evict = cordon;
    evict.patch.reset();
    evict.removals.push_back({"team", "web-0", "uid-web-0", true});
    for (const auto& io : {cordon, evict})
      self->request(to, caf::infinite, ga::io_atom_v, io).then([=](const ga::node_io_result&) {
        ++*answers;
      });
    self->send(to, ga::io_atom_v, ga::item_io{});
    return {[](ga::tick_atom) {}};
  };
  spawn(requester, router);
  sched.run();
  BOOST_TEST_REQUIRE(write_state->node_requests.size() == 1u);
  BOOST_TEST(write_state->node_requests[0].patch.has_value());
  BOOST_TEST(write_state->item_requests.empty());
  BOOST_TEST_REQUIRE(evict_state->node_requests.size() == 1u);
  BOOST_TEST(evict_state->node_requests[0].removals.size() == 1u);
  BOOST_TEST(evict_state->item_requests.empty());
  // The supervisors' item writes have a pool of their own.
  BOOST_TEST(item_state->item_requests.size() == 1u);
  BOOST_TEST(item_state->node_requests.empty());
  BOOST_TEST(*answers == 2);
}

BOOST_FIXTURE_TEST_CASE(a_nodes_pods_are_evicted_side_by_side_and_answered_once, router_fixture) {
  evict_state->hold = true;
  auto answers = std::make_shared<std::vector<ga::node_io_result>>();
  const auto changed_at = gp::wall_clock::now() - std::chrono::milliseconds(40);
  auto requester = [=](caf::event_based_actor* self, ga::io_actor to) -> caf::behavior {
    ga::node_io evict;
    evict.item = std::string(plan_name) + "-gpu-1";
    evict.node = "gpu-1";
    evict.reacting_to = changed_at;
    for (const char* name : {"web-0", "web-1", "web-2"})
      evict.removals.push_back({"team", name, std::string("uid-") + name, true});
    self->request(to, caf::infinite, ga::io_atom_v, evict).then([=](const ga::node_io_result& r) {
      answers->push_back(r);
    });
    return {[](ga::tick_atom) {}};
  };
  spawn(requester, router);
  sched.run();
  // All three are out before any is answered, each a request of its own.
  BOOST_TEST_REQUIRE(evict_state->node_requests.size() == 3u);
  std::set<std::string> asked;
  int timed = 0;
  for (const auto& io : evict_state->node_requests) {
    BOOST_TEST_REQUIRE(io.removals.size() == 1u);
    BOOST_TEST(io.node == "gpu-1");
    asked.insert(io.removals[0].name);
    timed += io.reacting_to.has_value() ? 1 : 0;
  }
  BOOST_TEST(asked == (std::set<std::string>{"web-0", "web-1", "web-2"}));
  BOOST_TEST(timed == 1); // one reaction, observed once
  BOOST_TEST(write_state->node_requests.empty());
  BOOST_TEST(answers->empty());
  caf::anon_send(evictions, deliver_atom_v);
  sched.run();
  // One answer, with every pod's outcome.
  BOOST_TEST_REQUIRE(answers->size() == 1u);
  BOOST_TEST(answers->front().error.empty());
  BOOST_TEST(answers->front().evictions.size() == 3u);
  for (const char* name : {"web-0", "web-1", "web-2"})
    BOOST_TEST(answers->front().evictions.count(std::string("team/") + name) == 1u);
}

BOOST_FIXTURE_TEST_CASE(removals_with_other_writes_stay_one_request, router_fixture) {
  auto answers = std::make_shared<int>(0);
  auto requester = [=](caf::event_based_actor* self, ga::io_actor to) -> caf::behavior {
    ga::node_io io;
    io.item = std::string(plan_name) + "-gpu-1";
    io.node = "gpu-1";
    io.clear_retry = true; // done first, then the pods: in that order, by one executor
    io.removals.push_back({"team", "web-0", "uid-web-0", true});
    io.removals.push_back({"team", "web-1", "uid-web-1", true});
    self->request(to, caf::infinite, ga::io_atom_v, io).then([=](const ga::node_io_result& r) {
      if (r.evictions.size() == 2u)
        ++*answers;
    });
    return {[](ga::tick_atom) {}};
  };
  spawn(requester, router);
  sched.run();
  BOOST_TEST_REQUIRE(evict_state->node_requests.size() == 1u);
  BOOST_TEST(evict_state->node_requests[0].removals.size() == 2u);
  BOOST_TEST(evict_state->node_requests[0].clear_retry);
  BOOST_TEST(*answers == 1);
}

BOOST_FIXTURE_TEST_CASE(the_pools_go_with_the_router, router_fixture) {
  sched.run();
  auto w = watch(writes);
  auto e = watch(evictions);
  auto i = watch(items);
  caf::anon_send_exit(router, caf::exit_reason::user_shutdown);
  sched.run();
  BOOST_TEST(w->down);
  BOOST_TEST(e->down);
  BOOST_TEST(i->down);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(io_pool)

namespace {

ga::node_io write_for(const std::string& node) {
  ga::node_io io;
  io.item = std::string(plan_name) + "-" + node;
  io.node = node;
  io.patch = gc::node_patch{};
  io.patch->unschedulable = true;
  return io;
}

// Sends the pool one node write per name; counts the answers.
caf::behavior requester(caf::event_based_actor* self, ga::io_actor pool,
                        std::vector<std::string> nodes, std::shared_ptr<int> answers) {
  for (const auto& n : nodes)
    self->request(pool, caf::infinite, ga::io_atom_v, write_for(n))
        .then([=](const ga::node_io_result&) { ++*answers; });
  return {[](ga::tick_atom) {}};
}

std::shared_ptr<io_double_state> holding() {
  auto st = std::make_shared<io_double_state>();
  st->publish = false;
  st->hold = true;
  return st;
}

} // namespace

BOOST_FIXTURE_TEST_CASE(a_request_waits_only_while_every_executor_is_busy, actor_fixture) {
  auto a_state = holding();
  auto b_state = holding();
  auto a = spawn(io_double, a_state);
  auto b = spawn(io_double, b_state);
  auto pool = spawn(ga::io_pool, std::vector<ga::io_actor>{a, b}, std::string("test"));
  auto answers = std::make_shared<int>(0);
  spawn(requester, pool, std::vector<std::string>{"gpu-1", "gpu-2", "gpu-3"}, answers);
  sched.run();
  // One each; the third waits for whichever finishes first, not for a fixed one.
  BOOST_TEST(a_state->node_requests.size() == 1u);
  BOOST_TEST(b_state->node_requests.size() == 1u);
  BOOST_TEST(*answers == 0);
  caf::anon_send(b, deliver_atom_v);
  sched.run();
  BOOST_TEST(*answers == 1);
  BOOST_TEST(a_state->node_requests.size() == 1u);
  BOOST_TEST_REQUIRE(b_state->node_requests.size() == 2u);
  BOOST_TEST(b_state->node_requests[1].node == "gpu-3");
  caf::anon_send(a, deliver_atom_v);
  caf::anon_send(b, deliver_atom_v);
  sched.run();
  BOOST_TEST(*answers == 3);
}

BOOST_FIXTURE_TEST_CASE(waiting_requests_go_out_in_the_order_they_came, actor_fixture) {
  auto st = holding();
  auto x = spawn(io_double, st);
  auto pool = spawn(ga::io_pool, std::vector<ga::io_actor>{x}, std::string("test"));
  auto answers = std::make_shared<int>(0);
  spawn(requester, pool, std::vector<std::string>{"gpu-1", "gpu-2", "gpu-3", "gpu-4"}, answers);
  sched.run();
  for (int i = 1; i <= 4; ++i) {
    BOOST_TEST_REQUIRE(st->node_requests.size() == static_cast<std::size_t>(i));
    BOOST_TEST(st->node_requests.back().node == "gpu-" + std::to_string(i));
    caf::anon_send(x, deliver_atom_v);
    sched.run();
    BOOST_TEST(*answers == i);
  }
}

BOOST_FIXTURE_TEST_CASE(item_writes_are_answered_through_the_pool, actor_fixture) {
  auto st = std::make_shared<io_double_state>();
  st->publish = false;
  st->item_error = "refused";
  auto pool =
      spawn(ga::io_pool, std::vector<ga::io_actor>{spawn(io_double, st)}, std::string("test"));
  auto answer = std::make_shared<std::string>();
  auto asker = [=](caf::event_based_actor* self, ga::io_actor to) -> caf::behavior {
    self->request(to, caf::infinite, ga::io_atom_v, ga::item_io{})
        .then([=](const std::string& error) { *answer = error; });
    return {[](ga::tick_atom) {}};
  };
  spawn(asker, pool);
  sched.run();
  BOOST_TEST(st->item_requests.size() == 1u);
  BOOST_TEST(*answer == "refused");
}

// A create its supervisor withdrew while it waited for an executor is answered unsent;
// the executor goes on to the next.
BOOST_FIXTURE_TEST_CASE(a_superseded_item_write_is_answered_without_an_executor, actor_fixture) {
  auto st = std::make_shared<io_double_state>();
  st->publish = false;
  st->hold_items = true;
  auto x = spawn(io_double, st);
  auto pool = spawn(ga::io_pool, std::vector<ga::io_actor>{x}, std::string("test"));
  auto answers = std::make_shared<std::map<std::string, std::string>>();
  auto withdrawn = std::make_shared<std::atomic<bool>>(false);
  auto asker = [=](caf::event_based_actor* self, ga::io_actor to) -> caf::behavior {
    for (const char* name : {"plan-gpu-1", "plan-gpu-2", "plan-gpu-3"}) {
      ga::item_io io;
      io.item.metadata.name = name;
      if (std::string(name) == "plan-gpu-2")
        io.superseded = withdrawn;
      self->request(to, caf::infinite, ga::io_atom_v, io).then([=](const std::string& answer) {
        (*answers)[name] = answer;
      });
    }
    return {[](ga::tick_atom) {}};
  };
  spawn(asker, pool);
  sched.run();
  BOOST_TEST_REQUIRE(st->held_items.size() == 1u); // the others wait in the pool
  withdrawn->store(true);
  for (int i = 0; i < 3; ++i) {
    caf::anon_send(x, deliver_atom_v);
    sched.run();
  }
  BOOST_TEST(answers->size() == 3u);
  BOOST_TEST((*answers)["plan-gpu-1"] == "");
  BOOST_TEST((*answers)["plan-gpu-2"] == ga::item_io_superseded);
  BOOST_TEST((*answers)["plan-gpu-3"] == "");
  std::vector<std::string> sent;
  for (const auto& io : st->item_requests)
    sent.push_back(io.item.metadata.name);
  BOOST_TEST(sent == (std::vector<std::string>{"plan-gpu-1", "plan-gpu-3"}),
             boost::test_tools::per_element());
  BOOST_TEST(st->superseded.empty(), "dropped by the pool, not the executor");
}

BOOST_FIXTURE_TEST_CASE(the_executors_go_with_the_pool, actor_fixture) {
  auto a = spawn(io_double, std::make_shared<io_double_state>());
  auto b = spawn(io_double, std::make_shared<io_double_state>());
  auto pool = spawn(ga::io_pool, std::vector<ga::io_actor>{a, b}, std::string("test"));
  sched.run();
  auto wa = watch(a);
  auto wb = watch(b);
  caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  sched.run();
  BOOST_TEST(wa->down);
  BOOST_TEST(wb->down);
}

// Requests still waiting when the pool stops go with it. In the ASan build (tools/test)
// LeakSanitizer fails this binary if they do not: each held the pool's state.
BOOST_FIXTURE_TEST_CASE(requests_still_waiting_go_with_the_pool, actor_fixture) {
  auto st = holding();
  auto x = spawn(io_double, st);
  auto pool = spawn(ga::io_pool, std::vector<ga::io_actor>{x}, std::string("test"));
  auto answers = std::make_shared<int>(0);
  spawn(requester, pool, std::vector<std::string>{"gpu-1", "gpu-2", "gpu-3"}, answers);
  sched.run();
  BOOST_TEST(st->node_requests.size() == 1u);
  auto down = watch(pool);
  caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  sched.run();
  BOOST_TEST(down->down);
  BOOST_TEST(*answers == 0);
}

BOOST_AUTO_TEST_SUITE_END()
