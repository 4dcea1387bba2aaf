// API paths, query strings and label selectors, as the API server expects them.
#include "kube/resource.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace kube = gpu_partitioner::kube;
namespace bdata = boost::unit_test::data;

namespace {

const kube::resource plans{"infrastructure.silogen.ai", "v1alpha1", "partitioningplans", false};
const kube::resource widgets{"example.com", "v2", "widgets", true};

struct path_case {
  const char* name;
  std::string actual;
  const char* expected;
};

std::ostream& operator<<(std::ostream& os, const path_case& c) {
  return os << c.name;
}

const path_case path_cases[] = {
    // core, cluster-scoped
    {"core_cluster_collection", kube::resources::nodes().collection_path(), "/api/v1/nodes"},
    {"core_cluster_object", kube::resources::nodes().object_path("", "gpu-node-01"),
     "/api/v1/nodes/gpu-node-01"},
    {"core_cluster_subresource", kube::resources::nodes().object_path("", "gpu-node-01", "status"),
     "/api/v1/nodes/gpu-node-01/status"},
    {"cluster_scoped_ignores_a_namespace", kube::resources::nodes().collection_path("default"),
     "/api/v1/nodes"},
    {"cluster_scoped_object_ignores_a_namespace",
     kube::resources::namespaces().object_path("default", "kube-system"),
     "/api/v1/namespaces/kube-system"},
    // core, namespaced
    {"core_namespaced_collection", kube::resources::pods().collection_path("kube-system"),
     "/api/v1/namespaces/kube-system/pods"},
    {"core_namespaced_across_all_namespaces", kube::resources::pods().collection_path(),
     "/api/v1/pods"},
    {"core_namespaced_object", kube::resources::config_maps().object_path("ns", "cm"),
     "/api/v1/namespaces/ns/configmaps/cm"},
    {"core_namespaced_subresource", kube::resources::pods().object_path("default", "p", "eviction"),
     "/api/v1/namespaces/default/pods/p/eviction"},
    {"events", kube::resources::events().collection_path("x"), "/api/v1/namespaces/x/events"},
    // groups
    {"group_namespaced_object", kube::resources::leases().object_path("kube-system", "leader"),
     "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/leader"},
    {"policy_group", kube::resources::pod_disruption_budgets().collection_path("ns"),
     "/apis/policy/v1/namespaces/ns/poddisruptionbudgets"},
    {"custom_cluster_collection", plans.collection_path(),
     "/apis/infrastructure.silogen.ai/v1alpha1/partitioningplans"},
    {"custom_cluster_subresource", plans.object_path("", "p", "status"),
     "/apis/infrastructure.silogen.ai/v1alpha1/partitioningplans/p/status"},
    {"custom_namespaced_object", widgets.object_path("team-a", "w1"),
     "/apis/example.com/v2/namespaces/team-a/widgets/w1"},
    {"custom_namespaced_subresource", widgets.object_path("team-a", "w1", "scale"),
     "/apis/example.com/v2/namespaces/team-a/widgets/w1/scale"},
    {"custom_namespaced_across_all_namespaces", widgets.collection_path(),
     "/apis/example.com/v2/widgets"},
    // names and namespaces are escaped
    {"object_name_is_escaped", kube::resources::nodes().object_path("", "node:1/x"),
     "/api/v1/nodes/node%3A1%2Fx"},
    {"namespace_is_escaped", widgets.collection_path("a b"),
     "/apis/example.com/v2/namespaces/a%20b/widgets"},
    {"prefix_core", kube::resources::pods().prefix(), "/api/v1"},
    {"prefix_group", plans.prefix(), "/apis/infrastructure.silogen.ai/v1alpha1"},
};

} // namespace

BOOST_AUTO_TEST_SUITE(resource_paths)

BOOST_DATA_TEST_CASE(path_is_built_as_the_api_server_serves_it, bdata::make(path_cases), row) {
  BOOST_TEST(row.actual == row.expected);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(url_encoding)

BOOST_AUTO_TEST_CASE(unreserved_characters_pass_unchanged) {
  const std::string unreserved =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";
  BOOST_TEST(kube::url_encode(unreserved) == unreserved);
  BOOST_TEST(kube::url_encode("") == "");
}

BOOST_AUTO_TEST_CASE(reserved_characters_are_percent_encoded_in_upper_case_hex) {
  BOOST_TEST(kube::url_encode(" !\"#$%&'()*+,/:;<=>?@[\\]^`{|}") ==
             "%20%21%22%23%24%25%26%27%28%29%2A%2B%2C%2F%3A%3B%3C%3D%3E%3F%40%5B%5C%5D%5E%60%7B%7C%"
             "7D");
  BOOST_TEST(kube::url_encode("a=b,c!=d") == "a%3Db%2Cc%21%3Dd");
}

BOOST_AUTO_TEST_CASE(utf8_is_encoded_byte_by_byte) {
  BOOST_TEST(kube::url_encode("é") == "%C3%A9");
  BOOST_TEST(kube::url_encode("équipe-α") == "%C3%A9quipe-%CE%B1");
  BOOST_TEST(kube::url_encode("✓") == "%E2%9C%93");
}

BOOST_AUTO_TEST_CASE(control_bytes_are_encoded) {
  BOOST_TEST(kube::url_encode(std::string("a\nb\tc\0d", 7)) == "a%0Ab%09c%00d");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(query_strings)

BOOST_AUTO_TEST_CASE(empty_query_is_an_empty_string) {
  BOOST_TEST(kube::query().str() == "");
  BOOST_TEST(kube::query().add("labelSelector", "").str() == "");
}

BOOST_AUTO_TEST_CASE(parameters_keep_their_order_and_values_are_encoded) {
  auto q = kube::query()
               .add("labelSelector", "nodepool in (a,b),!cordoned")
               .add("limit", 500LL)
               .add("continue", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTAwfQ==");
  BOOST_TEST(q.str() == "?labelSelector=nodepool%20in%20%28a%2Cb%29%2C%21cordoned&limit=500"
                        "&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTAwfQ%3D%3D");
}

BOOST_AUTO_TEST_CASE(empty_string_values_are_left_out_but_numbers_are_kept) {
  auto q = kube::query()
               .add("watch", "1")
               .add("resourceVersion", "")
               .add("timeoutSeconds", 0LL)
               .add("fieldSelector", "spec.nodeName=gpu-node-01");
  BOOST_TEST(q.str() == "?watch=1&timeoutSeconds=0&fieldSelector=spec.nodeName%3Dgpu-node-01");
}

BOOST_AUTO_TEST_CASE(keys_are_encoded_too) {
  BOOST_TEST(kube::query().add("a b", "c").str() == "?a%20b=c");
}

BOOST_AUTO_TEST_CASE(negative_numbers_are_written_in_decimal) {
  BOOST_TEST(kube::query().add("gracePeriodSeconds", -1LL).str() == "?gracePeriodSeconds=-1");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(label_selectors)

namespace {

using op = kube::label_requirement::op;

struct selector_case {
  const char* name;
  std::vector<kube::label_requirement> requirements;
  const char* expected;
};

std::ostream& operator<<(std::ostream& os, const selector_case& c) {
  return os << c.name;
}

const selector_case selector_cases[] = {
    {"empty", {}, ""},
    {"equals", {{"nodepool", op::equals, {"training-gpu"}}}, "nodepool=training-gpu"},
    {"not_equals", {{"tier", op::not_equals, {"spot"}}}, "tier!=spot"},
    {"in_sorts_values", {{"zone", op::in, {"c", "a", "b"}}}, "zone in (a,b,c)"},
    {"in_one_value", {{"zone", op::in, {"a"}}}, "zone in (a)"},
    {"not_in_sorts_values", {{"gpu", op::not_in, {"mi300x", "mi250"}}}, "gpu notin (mi250,mi300x)"},
    {"exists", {{"amd.com/gpu", op::exists, {}}}, "amd.com/gpu"},
    {"does_not_exist",
     {{"node.kubernetes.io/unschedulable", op::does_not_exist, {}}},
     "!node.kubernetes.io/unschedulable"},
    {"all_operators_joined_by_commas_in_order",
     {{"a", op::equals, {"b"}},
      {"c", op::not_equals, {"d"}},
      {"e", op::in, {"g", "f"}},
      {"h", op::exists, {}},
      {"i", op::does_not_exist, {}},
      {"j", op::not_in, {"l", "k"}}},
     "a=b,c!=d,e in (f,g),h,!i,j notin (k,l)"},
    {"equals_with_empty_value", {{"a", op::equals, {}}}, "a="},
};

} // namespace

BOOST_DATA_TEST_CASE(selector_is_written_in_api_syntax, bdata::make(selector_cases), row) {
  BOOST_TEST(kube::format_selector(row.requirements) == row.expected);
}

BOOST_AUTO_TEST_CASE(formatting_does_not_reorder_the_callers_values) {
  std::vector<kube::label_requirement> r{{"zone", op::in, {"c", "a"}}};
  kube::format_selector(r);
  BOOST_TEST(r[0].values == (std::vector<std::string>{"c", "a"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

// KEP-5504 (Kubernetes 1.35): resourceVersions of one resource are ordered as numbers.
BOOST_AUTO_TEST_SUITE(resource_version_order)

BOOST_AUTO_TEST_CASE(versions_compare_as_numbers_of_any_length) {
  BOOST_TEST(kube::compare_resource_versions("9", "10").value_or(9) == -1);
  BOOST_TEST(kube::compare_resource_versions("10", "9").value_or(9) == 1);
  BOOST_TEST(kube::compare_resource_versions("123", "123").value_or(9) == 0);
  BOOST_TEST(kube::compare_resource_versions("99999999999999999999", "100000000000000000000")
                 .value_or(9) == -1);
  BOOST_TEST(kube::compare_resource_versions("20", "19").value_or(9) == 1);
}

BOOST_AUTO_TEST_CASE(anything_but_a_positive_number_without_leading_zeros_has_no_order) {
  for (const char* bad : {"", "0", "012", "1a", "-1", " 1", "1.5"}) {
    BOOST_TEST(!kube::compare_resource_versions(bad, "5").has_value(), bad);
    BOOST_TEST(!kube::compare_resource_versions("5", bad).has_value(), bad);
  }
}

BOOST_AUTO_TEST_SUITE_END()
