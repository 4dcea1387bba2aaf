// actors::io_router on CAF's test_coordinator: node steps that evict go to the eviction
// pool, every other write to the write pool, and answers come back to the requester.
#include "actor_fixture.hpp"
#include "actors/io_executor.hpp"

#include <boost/test/unit_test.hpp>

#include <memory>

using namespace actor_test;

BOOST_AUTO_TEST_SUITE(io_router)

BOOST_FIXTURE_TEST_CASE(evictions_and_other_writes_go_to_separate_pools, actor_fixture) {
  auto write_state = std::make_shared<io_double_state>();
  auto evict_state = std::make_shared<io_double_state>();
  write_state->publish = false;
  evict_state->publish = false;
  auto writes = spawn(io_double, write_state);
  auto evictions = spawn(io_double, evict_state);
  auto router = spawn(ga::io_router, writes, evictions);
  auto answers = std::make_shared<int>(0);
  // The router is passed as an argument: CAF 0.17.6 dereferences a null argument tuple
  // when it starts a function actor spawned without any (UBSan reports it).
  auto requester = [=](caf::event_based_actor* self, caf::actor to) -> caf::behavior {
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
  BOOST_TEST(write_state->item_requests.size() == 1u);
  BOOST_TEST_REQUIRE(evict_state->node_requests.size() == 1u);
  BOOST_TEST(evict_state->node_requests[0].removals.size() == 1u);
  BOOST_TEST(evict_state->item_requests.empty());
  BOOST_TEST(*answers == 2);
}

BOOST_FIXTURE_TEST_CASE(the_pools_go_with_the_router, actor_fixture) {
  auto writes = spawn(io_double, std::make_shared<io_double_state>());
  auto evictions = spawn(io_double, std::make_shared<io_double_state>());
  auto router = spawn(ga::io_router, writes, evictions);
  sched.run();
  auto w = watch(writes);
  auto e = watch(evictions);
  caf::anon_send_exit(router, caf::exit_reason::user_shutdown);
  sched.run();
  BOOST_TEST(w->down);
  BOOST_TEST(e->down);
}

BOOST_AUTO_TEST_SUITE_END()
