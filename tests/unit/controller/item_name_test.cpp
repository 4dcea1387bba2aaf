// controller/item_name: what a NodePartitioning is called and how it is found. The
// specification's `<plan>-<node>` where that name is free; a derived name, within 253
// characters, where another object holds it; and an item found by plan and node under
// either name, never by a name alone.
#include "controller/item_name.hpp"

#include "protocol/desired_hash.hpp"

#include <boost/test/unit_test.hpp>

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;

namespace {

gp::partitioning_plan plan(const std::string& name, const std::string& uid = "") {
  gp::partitioning_plan p;
  p.metadata.name = name;
  p.metadata.uid = uid.empty() ? name + "-uid" : uid;
  return p;
}

std::shared_ptr<const gp::node_partitioning>
item(const std::string& name, const gp::partitioning_plan& of, const std::string& node) {
  auto i = std::make_shared<gp::node_partitioning>();
  i->metadata.name = name;
  i->spec.plan_ref = {of.metadata.name, of.metadata.uid};
  i->spec.node_name = node;
  return i;
}

// A DNS subdomain: labels of [a-z0-9-], each starting and ending with a letter or digit.
bool dns_subdomain(const std::string& s) {
  if (s.empty() || s.size() > 253)
    return false;
  std::size_t start = 0;
  while (true) {
    const auto end = s.find('.', start);
    const auto label = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (label.empty() || label.front() == '-' || label.back() == '-')
      return false;
    for (char c : label)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
        return false;
    if (end == std::string::npos)
      return true;
    start = end + 1;
  }
}

using by_name = std::map<std::string, std::shared_ptr<const gp::node_partitioning>>;

} // namespace

BOOST_AUTO_TEST_SUITE(item_name)

BOOST_AUTO_TEST_CASE(the_two_names_of_an_item) {
  const auto names = gc::item_names_of("gpu-a", "1");
  BOOST_TEST(names.plain == "gpu-a-1");
  BOOST_TEST(names.derived ==
             "gpu-a-1-" + gp::sha256_hex("gpu-a/1").substr(0, 10)); // a stable name
  // The two plans whose plain names meet derive different names.
  BOOST_TEST(gc::item_names_of("gpu", "a-1").plain == names.plain);
  BOOST_TEST(gc::item_names_of("gpu", "a-1").derived != names.derived);
}

BOOST_AUTO_TEST_CASE(a_derived_name_fits_253_characters_and_is_a_valid_name) {
  // Cuts that would end on '.', on '-', and in the middle of a label.
  for (std::size_t plan_length : {200u, 230u, 240u, 241u, 242u, 253u}) {
    const std::string p = std::string(plan_length - 2, 'p') + ".x";
    for (const std::string& node :
         std::vector<std::string>{"n", "a.b-c", std::string(40, 'n') + "-" + "z.zz"}) {
      const auto names = gc::item_names_of(p, node);
      BOOST_TEST(names.derived.size() <= 253u, p.size() << "/" << node);
      BOOST_TEST(dns_subdomain(names.derived), names.derived);
    }
  }
  // The cut (at 242) falls right after a '.', and right after a '-'.
  const auto after_dot = gc::item_names_of(std::string(239, 'p'), "x.node").derived;
  BOOST_TEST(after_dot.substr(0, 242) == std::string(239, 'p') + "-x-");
  BOOST_TEST(dns_subdomain(after_dot), after_dot);
  const auto after_dash = gc::item_names_of(std::string(241, 'p'), "node").derived;
  BOOST_TEST(after_dash.substr(0, 242) == std::string(241, 'p') + "-");
  BOOST_TEST(after_dash.size() == 252u);
}

// The hashes are remembered (per thread, up to a bound, then forgotten at once): every
// name stays what SHA-256 makes it, asked once or again, before the memo is cleared and
// after, on this thread and on another.
BOOST_AUTO_TEST_CASE(a_derived_name_is_the_same_however_often_it_is_asked) {
  auto expected = [](const std::string& plan, const std::string& node) {
    return plan + "-" + node + "-" + gp::sha256_hex(plan + "/" + node).substr(0, 10);
  };
  // More pairs than the memo holds (65,536), twice over, asked twice each.
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < 70000; i += 7) {
      const std::string plan = "plan-" + std::to_string(i % 13);
      const std::string node = "node-" + std::to_string(i);
      BOOST_TEST_REQUIRE(gc::item_names_of(plan, node).derived == expected(plan, node));
      BOOST_TEST_REQUIRE(gc::item_names_of(plan, node).derived == expected(plan, node));
    }
  for (int i = 0; i < 70000; ++i)
    (void)gc::item_names_of("fill", "n" + std::to_string(i));
  BOOST_TEST(gc::item_names_of("plan-3", "node-42").derived == expected("plan-3", "node-42"));
  std::string other_thread;
  std::thread([&] { other_thread = gc::item_names_of("plan-3", "node-42").derived; }).join();
  BOOST_TEST(other_thread == expected("plan-3", "node-42"));
}

BOOST_AUTO_TEST_CASE(an_item_is_found_by_plan_and_node_under_either_name_and_only_its_own) {
  const auto gpu = plan("gpu");
  const auto gpu_a = plan("gpu-a");
  const auto derived = gc::item_names_of("gpu-a", "1").derived;
  by_name all{{"gpu-a-1", item("gpu-a-1", gpu, "a-1")}, {derived, item(derived, gpu_a, "1")}};
  BOOST_TEST(gc::find_item(all, gpu, "a-1") == all["gpu-a-1"].get());
  BOOST_TEST(gc::find_item(all, gpu_a, "1") == all[derived].get(), "not the other plan's");
  // Not an item of this plan for this node: none.
  BOOST_TEST(gc::find_item(all, gpu_a, "2") == nullptr);
  BOOST_TEST(gc::find_item(all, plan("gpu-a", "another-uid"), "1") == nullptr,
             "a plan of the same name made again is another plan");
  // A plan not yet known by uid (a test, a dry read) matches by name.
  BOOST_TEST(gc::find_item(all, plan("gpu-a", ""), "1") != nullptr);
  // Raw pointers (a plan's items) as well as shared ones (the view's).
  const std::map<std::string, const gp::node_partitioning*> raw{{"gpu-a-1", all["gpu-a-1"].get()}};
  BOOST_TEST(gc::find_item(raw, gpu, "a-1") == all["gpu-a-1"].get());
}

BOOST_AUTO_TEST_CASE(a_new_item_takes_the_plain_name_while_it_is_free_then_the_derived_one) {
  const auto gpu = plan("gpu");
  const auto gpu_a = plan("gpu-a");
  by_name all;
  BOOST_TEST(gc::new_item_name(all, gpu_a, "1").value_or("-") == "gpu-a-1");
  all["gpu-a-1"] = item("gpu-a-1", gpu, "a-1");
  const auto names = gc::item_names_of("gpu-a", "1");
  BOOST_TEST(gc::new_item_name(all, gpu_a, "1").value_or("-") == names.derived);
  // Its own item under the plain name: that name.
  BOOST_TEST(gc::new_item_name(all, gpu, "a-1").value_or("-") == "gpu-a-1");
  // Both held by others: none, and the plan says so.
  all[names.derived] = item(names.derived, plan("other"), "x");
  BOOST_TEST(!gc::new_item_name(all, gpu_a, "1"));
}

BOOST_AUTO_TEST_SUITE_END()
