// controller/observed.hpp: the predicates the decisions read off observed objects.
// Toleration matching follows core/v1 Toleration.ToleratesTaint; a PDB covers a pod as
// policy/v1 selects it (same namespace, selector; a nil selector selects nothing).
#include "controller/observed.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace gc = gpu_partitioner::controller;
namespace bdata = boost::unit_test::data;

namespace {

gc::toleration tol(std::string key, std::string op, std::string value, std::string effect) {
  gc::toleration t;
  t.key = std::move(key);
  t.op = std::move(op);
  t.value = std::move(value);
  t.effect = std::move(effect);
  return t;
}

const gc::taint dcm{"amd-dcm", "up", "NoExecute"};

struct toleration_row {
  const char* behaviour;
  gc::toleration toleration;
  gc::taint taint;
  bool expected;
};

std::ostream& operator<<(std::ostream& os, const toleration_row& r) {
  return os << r.behaviour;
}

const std::vector<toleration_row> toleration_rows{
    {"Exists with empty key and empty effect tolerates any taint", tol("", "Exists", "", ""), dcm,
     true},
    {"Exists with empty key tolerates a NoSchedule taint too",
     tol("", "Exists", "", ""),
     {"other", "x", "NoSchedule"},
     true},
    {"Exists with empty key and the taint's effect tolerates it",
     tol("", "Exists", "", "NoExecute"), dcm, true},
    {"Exists with empty key and another effect does not tolerate",
     tol("", "Exists", "", "NoSchedule"), dcm, false},
    {"Equal with empty key tolerates nothing (API requires Exists for an empty key)",
     tol("", "Equal", "up", ""), dcm, false},
    {"Exists with the taint's key tolerates whatever its value", tol("amd-dcm", "Exists", "", ""),
     dcm, true},
    {"Exists with the taint's key tolerates a taint without value",
     tol("amd-dcm", "Exists", "", ""),
     {"amd-dcm", "", "NoExecute"},
     true},
    {"Exists with another key does not tolerate", tol("nvidia.com/gpu", "Exists", "", ""), dcm,
     false},
    {"Exists with the key and the taint's effect tolerates",
     tol("amd-dcm", "Exists", "", "NoExecute"), dcm, true},
    {"Exists with the key and another effect does not tolerate",
     tol("amd-dcm", "Exists", "", "NoSchedule"), dcm, false},
    {"Equal with key and value tolerates", tol("amd-dcm", "Equal", "up", ""), dcm, true},
    {"Equal with another value does not tolerate", tol("amd-dcm", "Equal", "down", ""), dcm, false},
    {"Equal with an empty value does not tolerate a valued taint", tol("amd-dcm", "Equal", "", ""),
     dcm, false},
    {"Equal with an empty value tolerates a taint without value",
     tol("amd-dcm", "Equal", "", ""),
     {"amd-dcm", "", "NoExecute"},
     true},
    {"Equal with another key and the same value does not tolerate", tol("other", "Equal", "up", ""),
     dcm, false},
    {"Equal with the taint's effect tolerates", tol("amd-dcm", "Equal", "up", "NoExecute"), dcm,
     true},
    {"Equal with effect NoSchedule does not tolerate NoExecute",
     tol("amd-dcm", "Equal", "up", "NoSchedule"), dcm, false},
    {"Equal with effect PreferNoSchedule does not tolerate NoExecute",
     tol("amd-dcm", "Equal", "up", "PreferNoSchedule"), dcm, false},
    {"an empty operator means Equal: same value tolerates", tol("amd-dcm", "", "up", ""), dcm,
     true},
    {"an empty operator means Equal: other value does not tolerate", tol("amd-dcm", "", "down", ""),
     dcm, false},
};

gc::pod_info pod_with(std::vector<gc::toleration> tolerations) {
  gc::pod_info p;
  p.ns = "team-a";
  p.name = "trainer-0";
  p.tolerations = std::move(tolerations);
  return p;
}

gc::pdb_info::requirement pdb_req(std::string key, std::string op,
                                  std::vector<std::string> values = {}) {
  return {std::move(key), std::move(op), std::move(values)};
}

gc::pdb_info pdb(std::map<std::string, std::string> match_labels,
                 std::vector<gc::pdb_info::requirement> expressions = {}) {
  gc::pdb_info p;
  p.ns = "team-a";
  p.name = "trainer-pdb";
  p.match_labels = std::move(match_labels);
  p.match_expressions = std::move(expressions);
  return p;
}

struct pdb_row {
  const char* behaviour;
  gc::pdb_info pdb;
  bool expected;
};

std::ostream& operator<<(std::ostream& os, const pdb_row& r) {
  return os << r.behaviour;
}

// The pod every pdb_row is checked against: team-a/trainer-0 {app: trainer, tier: gpu}.
gc::pod_info labelled_pod() {
  auto p = pod_with({});
  p.labels = {{"app", "trainer"}, {"tier", "gpu"}};
  return p;
}

gc::pdb_info in_namespace(gc::pdb_info p, std::string ns) {
  p.ns = std::move(ns);
  return p;
}

gc::pdb_info nil_selector(gc::pdb_info p) {
  p.selects_nothing = true;
  return p;
}

const std::vector<pdb_row> pdb_rows{
    {"empty (non-nil) selector covers every pod of its namespace", pdb({}), true},
    {"nil selector covers nothing", nil_selector(pdb({})), false},
    {"nil selector covers nothing even with matching labels",
     nil_selector(pdb({{"app", "trainer"}})), false},
    {"another namespace is never covered", in_namespace(pdb({{"app", "trainer"}}), "team-b"),
     false},
    {"another namespace with an empty selector is not covered", in_namespace(pdb({}), "default"),
     false},
    {"matching labels cover", pdb({{"app", "trainer"}, {"tier", "gpu"}}), true},
    {"a label with another value does not cover", pdb({{"app", "server"}}), false},
    {"a label the pod lacks does not cover", pdb({{"release", "v1"}}), false},
    {"In with the pod's value covers", pdb({}, {pdb_req("app", "In", {"server", "trainer"})}),
     true},
    {"In without the pod's value does not cover", pdb({}, {pdb_req("app", "In", {"server"})}),
     false},
    {"In on a key the pod lacks does not cover", pdb({}, {pdb_req("release", "In", {"v1"})}),
     false},
    {"NotIn with the pod's value does not cover", pdb({}, {pdb_req("app", "NotIn", {"trainer"})}),
     false},
    {"NotIn without the pod's value covers", pdb({}, {pdb_req("app", "NotIn", {"server"})}), true},
    {"NotIn on a key the pod lacks covers", pdb({}, {pdb_req("release", "NotIn", {"v1"})}), true},
    {"Exists on a present key covers", pdb({}, {pdb_req("tier", "Exists")}), true},
    {"Exists on an absent key does not cover", pdb({}, {pdb_req("release", "Exists")}), false},
    {"DoesNotExist on an absent key covers", pdb({}, {pdb_req("release", "DoesNotExist")}), true},
    {"DoesNotExist on a present key does not cover", pdb({}, {pdb_req("app", "DoesNotExist")}),
     false},
    {"labels and expressions are ANDed",
     pdb({{"app", "trainer"}}, {pdb_req("tier", "DoesNotExist")}), false},
};

gc::node_info node_with_taints(std::vector<gc::taint> taints) {
  gc::node_info n;
  n.name = "gpu-1";
  n.taints = std::move(taints);
  return n;
}

gc::node_info node_with_labels(std::map<std::string, std::string> labels) {
  gc::node_info n;
  n.name = "node-1";
  n.labels = std::move(labels);
  return n;
}

} // namespace

BOOST_AUTO_TEST_SUITE(observed)

BOOST_DATA_TEST_CASE(tolerates_follows_core_v1_toleration_rules, bdata::make(toleration_rows),
                     row) {
  BOOST_TEST(gc::tolerates(row.toleration, row.taint) == row.expected, row.behaviour);
}

BOOST_AUTO_TEST_CASE(pod_without_tolerations_does_not_tolerate_dcm_taint) {
  BOOST_TEST(!pod_with({}).tolerates_dcm_taint());
}

BOOST_AUTO_TEST_CASE(pod_with_only_unrelated_no_execute_tolerations_does_not_tolerate_dcm_taint) {
  // The defaults every pod gets: they name other keys, so the DCM taint removes the pod.
  auto p = pod_with({tol("node.kubernetes.io/not-ready", "Exists", "", "NoExecute"),
                     tol("node.kubernetes.io/unreachable", "Exists", "", "NoExecute")});
  BOOST_TEST(!p.tolerates_dcm_taint());
}

BOOST_AUTO_TEST_CASE(pod_tolerating_amd_dcm_key_tolerates_dcm_taint) {
  BOOST_TEST(pod_with({tol("amd-dcm", "Exists", "", "NoExecute")}).tolerates_dcm_taint());
  BOOST_TEST(pod_with({tol("amd-dcm", "Equal", "up", "")}).tolerates_dcm_taint());
}

BOOST_AUTO_TEST_CASE(pod_with_blanket_exists_toleration_tolerates_dcm_taint) {
  BOOST_TEST(pod_with({tol("", "Exists", "", "")}).tolerates_dcm_taint());
}

BOOST_AUTO_TEST_CASE(pod_tolerating_dcm_key_for_another_effect_or_value_does_not_tolerate) {
  BOOST_TEST(!pod_with({tol("amd-dcm", "Exists", "", "NoSchedule")}).tolerates_dcm_taint());
  BOOST_TEST(!pod_with({tol("amd-dcm", "Equal", "down", "NoExecute")}).tolerates_dcm_taint());
}

BOOST_AUTO_TEST_CASE(pod_tolerates_dcm_taint_if_any_one_toleration_does) {
  auto p = pod_with({tol("node.kubernetes.io/not-ready", "Exists", "", "NoExecute"),
                     tol("amd-dcm", "Equal", "up", "NoExecute")});
  BOOST_TEST(p.tolerates_dcm_taint());
}

BOOST_DATA_TEST_CASE(pdb_covers_pods_its_selector_selects_in_its_namespace, bdata::make(pdb_rows),
                     row) {
  BOOST_TEST(row.pdb.covers(labelled_pod()) == row.expected, row.behaviour);
}

BOOST_AUTO_TEST_CASE(has_dcm_taint_needs_amd_dcm_key_with_no_execute) {
  BOOST_TEST(node_with_taints({{"amd-dcm", "up", "NoExecute"}}).has_dcm_taint());
  BOOST_TEST(node_with_taints({{"node.kubernetes.io/unschedulable", "", "NoSchedule"},
                               {"amd-dcm", "up", "NoExecute"}})
                 .has_dcm_taint());
}

BOOST_AUTO_TEST_CASE(has_dcm_taint_ignores_other_keys_and_effects) {
  BOOST_TEST(!node_with_taints({}).has_dcm_taint());
  BOOST_TEST(!node_with_taints({{"amd-dcm", "up", "NoSchedule"}}).has_dcm_taint());
  BOOST_TEST(!node_with_taints({{"amd-dcm", "up", "PreferNoSchedule"}}).has_dcm_taint());
  BOOST_TEST(!node_with_taints({{"amd-gpu", "up", "NoExecute"}}).has_dcm_taint());
}

BOOST_AUTO_TEST_CASE(is_control_plane_by_either_role_label_whatever_its_value) {
  BOOST_TEST(node_with_labels({{"node-role.kubernetes.io/control-plane", ""}}).is_control_plane());
  BOOST_TEST(node_with_labels({{"node-role.kubernetes.io/master", ""}}).is_control_plane());
  BOOST_TEST(node_with_labels({{"node-role.kubernetes.io/master", "true"}}).is_control_plane());
}

BOOST_AUTO_TEST_CASE(is_control_plane_by_the_role_taint_alone) {
  BOOST_TEST(node_with_taints({{"node-role.kubernetes.io/control-plane", "", "NoSchedule"}})
                 .is_control_plane());
  BOOST_TEST(
      node_with_taints({{"node-role.kubernetes.io/master", "", "NoSchedule"}}).is_control_plane());
  BOOST_TEST(
      !node_with_taints({{"node-role.kubernetes.io/worker", "", "NoSchedule"}}).is_control_plane());
}

BOOST_AUTO_TEST_CASE(is_control_plane_false_for_workers_and_unlabelled_nodes) {
  BOOST_TEST(!node_with_labels({}).is_control_plane());
  BOOST_TEST(!node_with_labels({{"node-role.kubernetes.io/worker", ""}}).is_control_plane());
  BOOST_TEST(!node_with_labels({{"control-plane", "true"}}).is_control_plane());
}

// DCM's Events count only from DCM's namespace, about a pod there that is not a mirror pod,
// for the node that pod runs on: anyone may write an Event with DCM's source and reasons
// where they can write, and any node's kubelet may name any host.
BOOST_AUTO_TEST_CASE(a_dcm_event_counts_only_from_dcms_namespace_about_its_pod_on_its_node) {
  gc::dcm_event real;
  real.ns = "kube-amd-gpu";
  real.host = "gpu-1";
  real.about_kind = "Pod";
  real.about_namespace = "kube-amd-gpu";
  real.about_name = "dcm-abc";
  gc::pod_info dcm;
  dcm.ns = "kube-amd-gpu";
  dcm.name = "dcm-abc";
  dcm.node_name = "gpu-1";
  dcm.daemon_set = true;
  BOOST_TEST(gc::from_dcms_namespace(real, "kube-amd-gpu"));
  BOOST_TEST(gc::dcm_event_node(real, "kube-amd-gpu", &dcm) == "gpu-1");
  // Its pod not seen: no node, whatever the host says (the caller waits for the pod).
  BOOST_TEST(gc::dcm_event_node(real, "kube-amd-gpu", nullptr) == "", "pod not seen yet");

  auto no_host = real;
  no_host.host.clear();
  BOOST_TEST(gc::dcm_event_node(no_host, "kube-amd-gpu", &dcm) == "gpu-1", "the pod's node");
  BOOST_TEST(gc::dcm_event_node(no_host, "kube-amd-gpu", nullptr) == "", "no node at all");

  auto elsewhere = real;
  elsewhere.ns = "team-a";
  elsewhere.about_namespace = "team-a";
  BOOST_TEST(!gc::from_dcms_namespace(elsewhere, "kube-amd-gpu"));
  BOOST_TEST(gc::dcm_event_node(elsewhere, "kube-amd-gpu", &dcm) == "");
  auto about_a_tenant_pod = real;
  about_a_tenant_pod.about_namespace = "team-a";
  BOOST_TEST(gc::dcm_event_node(about_a_tenant_pod, "kube-amd-gpu", &dcm) == "");
  auto in_dcm_namespace_about_elsewhere = real;
  in_dcm_namespace_about_elsewhere.ns = "team-a";
  BOOST_TEST(gc::dcm_event_node(in_dcm_namespace_about_elsewhere, "kube-amd-gpu", &dcm) == "");
  auto about_the_node = real;
  about_the_node.about_kind = "Node";
  about_the_node.about_namespace.clear();
  about_the_node.about_name = "gpu-1";
  BOOST_TEST(gc::dcm_event_node(about_the_node, "kube-amd-gpu", &dcm) == "");
  // A host that is not where the pod runs: another node's kubelet cannot answer for this
  // one, nor this one's pod for another node.
  auto other_host = real;
  other_host.host = "gpu-2";
  BOOST_TEST(gc::dcm_event_node(other_host, "kube-amd-gpu", &dcm) == "");
  BOOST_TEST(gc::dcm_event_node(real, "gpu-operator", &dcm) == "", "another DCM namespace");
  // A mirror pod (a kubelet may make one in any namespace, on its own node) is no DCM pod.
  auto mirror = dcm;
  mirror.mirror = true;
  BOOST_TEST(gc::dcm_event_node(real, "kube-amd-gpu", &mirror) == "");
  // The pod named must be the one given.
  auto other_pod = dcm;
  other_pod.name = "dcm-xyz";
  BOOST_TEST(gc::dcm_event_node(real, "kube-amd-gpu", &other_pod) == "");
}

BOOST_AUTO_TEST_SUITE_END()
