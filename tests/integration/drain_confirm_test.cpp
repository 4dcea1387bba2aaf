// actors::pods_left_on_node against the real API server: the check the executor makes
// before the taint that ends a drain, on the API server's own list of the node's pods;
// actors::removal_needless, its read of a pod before evicting it a second time; and
// actors::set_dcm_taint, the taint written on the version the step saw.
#include "actors/decode.hpp"
#include "actors/io_executor.hpp"
#include "kube/resource.hpp"
#include "tests/integration/support/cluster.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

namespace ga = gpu_partitioner::actors;
namespace gt = gpu_partitioner::testing;
namespace kube = gpu_partitioner::kube;

namespace {

// Nodes and pods that exist only as API objects: no kubelet runs them, no scheduler
// places them (the pods name their node themselves).
struct objects {
  gt::connection c{gt::cluster::admin()};
  std::string ns = gt::unique_name("confirm");
  std::string node = gt::unique_name("confirm-node");
  std::string other = gt::unique_name("confirm-other");

  objects() {
    BOOST_REQUIRE(c.api.create(kube::resources::namespaces(), "",
                               R"({"metadata":{"name":")" + ns + R"("}})"));
    for (const auto& n : {node, other})
      BOOST_REQUIRE(
          c.api.create(kube::resources::nodes(), "", R"({"metadata":{"name":")" + n + R"("}})"));
  }
  ~objects() {
    (void)c.api.remove(kube::resources::namespaces(), "", ns);
    (void)c.api.remove(kube::resources::nodes(), "", node);
    (void)c.api.remove(kube::resources::nodes(), "", other);
  }
  void pod(const std::string& name, const std::string& on, const std::string& extra = "") {
    BOOST_REQUIRE(c.api.create(kube::resources::pods(), ns,
                               R"({"metadata":{"name":")" + name + R"("},"spec":{"nodeName":")" +
                                   on + R"(","containers":[{"name":"c","image":"none"}])" + extra +
                                   "}}"));
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(drain_confirm)

BOOST_FIXTURE_TEST_CASE(an_empty_node_may_be_tainted, objects) {
  pod("elsewhere", other);
  BOOST_TEST(ga::pods_left_on_node(c.api, node) == "");
}

BOOST_FIXTURE_TEST_CASE(a_pod_the_taint_would_remove_keeps_the_taint_off_and_is_named, objects) {
  pod("web-0", node);
  pod("elsewhere", other);
  // Tolerating amd-dcm NoExecute: the taint leaves it, so the drain need not evict it.
  pod("dcm-agent", node,
      R"(,"tolerations":[{"key":"amd-dcm","operator":"Exists","effect":"NoExecute"}])");
  const auto left = ga::pods_left_on_node(c.api, node);
  BOOST_TEST(left.find("1 pod(s)") == 0u, left);
  BOOST_TEST(left.find(ns + "/web-0") != std::string::npos, left);
  BOOST_TEST(left.find("dcm-agent") == std::string::npos, left);
  BOOST_TEST(left.find("elsewhere") == std::string::npos, left);
}

BOOST_FIXTURE_TEST_CASE(a_node_the_list_cannot_be_read_for_keeps_the_taint_off, objects) {
  // A field selector the API server refuses: the check says so rather than passing.
  const auto left = ga::pods_left_on_node(c.api, "bad,name=x");
  BOOST_TEST(left.find("listing the pods on the node") == 0u, left);
}

// ga::removal_needless: before a second eviction of a pod the watch still shows.
BOOST_FIXTURE_TEST_CASE(a_pod_still_there_is_evicted_again_one_being_deleted_or_gone_is_not,
                        objects) {
  pod("web-0", node);
  auto got = c.api.get(kube::resources::pods(), ns, "web-0");
  BOOST_REQUIRE(got);
  const std::string uid = kube::string_at(got.value()["metadata"], "uid");
  BOOST_TEST(ga::removal_needless(c.api, ns, "web-0", uid) == "");
  // Another pod of that name (a StatefulSet's replacement, say) is not the one evicted.
  BOOST_TEST(ga::removal_needless(c.api, ns, "web-0", "another-uid").find("gone") == 0u);
  // A graceful delete: no kubelet finishes it, so the pod stays, being deleted.
  kube::delete_options graceful;
  graceful.grace_period_seconds = 300;
  BOOST_REQUIRE(c.api.remove(kube::resources::pods(), ns, "web-0", graceful));
  BOOST_TEST(ga::removal_needless(c.api, ns, "web-0", uid) == "already being deleted");
  BOOST_TEST(ga::removal_needless(c.api, ns, "never-was", "x") == "gone");
}

// The taint goes on the version the step saw; when the node moved on since (someone
// else's taint), the failed test reads it again, and no one's taint is lost.
BOOST_FIXTURE_TEST_CASE(the_taint_is_written_on_the_version_seen_or_read_again, objects) {
  auto read = [&] {
    auto d = c.api.get(kube::resources::nodes(), "", node);
    BOOST_REQUIRE(d);
    return ga::decode_node(d.value());
  };
  kube::patch_options manager;
  manager.field_manager = "gpu-partitioner-test";
  const auto seen = read();
  BOOST_REQUIRE(c.api.patch(kube::resources::nodes(), "", node, kube::patch_type::merge,
                            R"({"spec":{"taints":[{"key":"maintenance","effect":"NoSchedule"}]}})",
                            manager));
  BOOST_REQUIRE(ga::set_dcm_taint(c.api, node, true, &seen, manager));
  const auto tainted = read();
  BOOST_TEST(tainted.has_dcm_taint());
  BOOST_REQUIRE(tainted.taints.size() == 2u);
  BOOST_TEST(tainted.taints[0].key == "maintenance");
  // Seen as it is now: written at once; ours goes, theirs stays.
  BOOST_REQUIRE(ga::set_dcm_taint(c.api, node, false, &tainted, manager));
  const auto untainted = read();
  BOOST_TEST(!untainted.has_dcm_taint());
  BOOST_REQUIRE(untainted.taints.size() == 1u);
  BOOST_TEST(untainted.taints[0].key == "maintenance");
}

BOOST_AUTO_TEST_SUITE_END()
