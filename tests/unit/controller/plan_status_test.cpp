// controller::aggregate_plan_status: the plan's conditions say what is wrong in words a
// user can act on, and stay within the 32 KiB a condition message may hold however many
// nodes a plan has.
#include "controller/plan_status.hpp"

#include <boost/test/unit_test.hpp>

#include <map>
#include <string>
#include <vector>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;

namespace {

const gp::wall_clock::time_point t0 = gp::wall_clock::from_time_t(1800000000);

gp::partitioning_plan plan() {
  gp::partitioning_plan p;
  p.metadata.name = "p";
  p.metadata.generation = 3;
  return p;
}

const gp::condition* condition(const gp::partitioning_plan_status& st, const std::string& type) {
  for (const auto& c : st.conditions)
    if (c.type == type)
      return &c;
  return nullptr;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

constexpr std::size_t message_limit = 32768; // the CRD's maxLength

} // namespace

BOOST_AUTO_TEST_SUITE(plan_status)

BOOST_AUTO_TEST_CASE(entries_selecting_no_node_show_as_nodes_selected_false) {
  gc::plan_resolution r;
  r.unmatched = {"spec.partitionings[1] (typo) selects no node"};
  auto st = gc::aggregate_plan_status(plan(), r, {}, {}, t0);
  const auto* c = condition(st, "NodesSelected");
  BOOST_TEST_REQUIRE(c != nullptr);
  BOOST_TEST((c->status == gp::condition_status::false_));
  BOOST_TEST(c->reason == "NoNodesSelected");
  BOOST_TEST(c->message == "spec.partitionings[1] (typo) selects no node");

  r.unmatched.clear();
  st = gc::aggregate_plan_status(plan(), r, {}, st, t0);
  c = condition(st, "NodesSelected");
  BOOST_TEST_REQUIRE(c != nullptr);
  BOOST_TEST((c->status == gp::condition_status::true_));
}

BOOST_AUTO_TEST_CASE(an_invalid_plan_says_nothing_starts) {
  gc::plan_resolution r;
  r.problems = {"spec.verification.gpuReadyLabel: \"ggg...\" (1048576 characters) is not a "
                "node label key or key=value"};
  auto st = gc::aggregate_plan_status(plan(), r, {}, {}, t0);
  const auto* c = condition(st, "Invalid");
  BOOST_TEST_REQUIRE(c != nullptr);
  BOOST_TEST((c->status == gp::condition_status::true_));
  BOOST_TEST(contains(c->message, "spec.verification.gpuReadyLabel"));
  BOOST_TEST(contains(c->message, "no node starts until it is fixed"));
  BOOST_TEST((*st.phase == gp::plan_phase::degraded));
}

BOOST_AUTO_TEST_CASE(thousands_of_conflicts_fit_one_condition_message) {
  gc::plan_resolution r;
  for (int i = 0; i < 5000; ++i)
    r.conflicts.push_back({"gpu-node-" + std::to_string(i) + std::string(200, 'x'),
                           "also selected by plan " + std::string(253, 'o')});
  auto st = gc::aggregate_plan_status(plan(), r, {}, {}, t0);
  const auto* c = condition(st, "Conflict");
  BOOST_TEST_REQUIRE(c != nullptr);
  BOOST_TEST(c->message.size() < message_limit);
  BOOST_TEST(contains(c->message, "5000 node(s) left alone: gpu-node-0"));
  BOOST_TEST(contains(c->message, "more"));
  BOOST_TEST(st.conflicts.size() == 5000u); // the full list stays in status.conflicts
}

BOOST_AUTO_TEST_CASE(thousands_of_failed_nodes_fit_one_condition_message) {
  std::vector<gp::node_partitioning> items(3000);
  std::map<std::string, const gp::node_partitioning*> by_name;
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto& item = items[i];
    item.metadata.name = "p-gpu-" + std::to_string(i);
    item.spec.node_name = "gpu-" + std::to_string(i);
    item.status.phase = gp::node_phase::failed;
    item.status.last_error = "PayloadInvalid: " + std::string(500, 'e');
    by_name[item.metadata.name] = &item;
  }
  auto st = gc::aggregate_plan_status(plan(), {}, by_name, {}, t0);
  const auto* c = condition(st, "Degraded");
  BOOST_TEST_REQUIRE(c != nullptr);
  BOOST_TEST(c->message.size() < message_limit);
  BOOST_TEST(contains(c->message, "failed: gpu-0 (PayloadInvalid"));
  BOOST_TEST(contains(c->message, "more; no further nodes start"));
  BOOST_TEST(st.nodes.failed == 3000);
}

BOOST_AUTO_TEST_SUITE_END()
