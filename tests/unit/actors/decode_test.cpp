// actors::decode_dcm_event, decode_node, decode_pod, decode_pdb, decode_resource_slice,
// decode_resource_claim: objects as the watch delivers them,
// decoded into what the decisions read.
#include "actors/decode.hpp"
#include "controller/node_machine.hpp"

#include <boost/test/unit_test.hpp>

#include <rapidjson/document.h>

#include <algorithm>
#include <string>

namespace ga = gpu_partitioner::actors;
namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;

namespace {

rapidjson::Document parse(const char* json) {
  rapidjson::Document d;
  d.Parse(json);
  BOOST_REQUIRE(!d.HasParseError());
  return d;
}

bool bare_ready(const std::string& condition) {
  const std::string pod =
      R"({"metadata": {"name": "p"}, "status": {"conditions": [)" + condition + "]}}";
  return ga::decode_pod(parse(pod.c_str())).ready;
}

} // namespace

BOOST_AUTO_TEST_SUITE(decode)

BOOST_AUTO_TEST_CASE(a_dcm_event_names_its_node_its_object_and_the_profile_it_answers) {
  const auto d = parse(R"({
    "metadata": {"namespace": "kube-amd-gpu", "name": "dcm-x7k2p.17a"},
    "involvedObject": {"kind": "Pod", "namespace": "kube-amd-gpu", "name": "dcm-x7k2p"},
    "source": {"component": "amd-device-config-manager", "host": "gpu-7"},
    "type": "Warning", "reason": "AMDSMIAPIFailure",
    "message": "{\"SelectedProfile\":\"cpx-nps4\",\"FinalStatus\":\"Failure\",\"Reason\":\"x\",\"GPUStatus\":null}",
    "lastTimestamp": "2027-01-15T08:00:00Z"})");
  const auto e = ga::decode_dcm_event(d);
  BOOST_TEST(e.ns == "kube-amd-gpu");
  BOOST_TEST(e.host == "gpu-7");
  BOOST_TEST(e.about_kind == "Pod");
  BOOST_TEST(e.about_namespace == "kube-amd-gpu");
  BOOST_TEST(e.about_name == "dcm-x7k2p");
  BOOST_TEST(e.info.type == "Warning");
  BOOST_TEST(e.info.reason == "AMDSMIAPIFailure");
  BOOST_TEST(e.info.profile == "cpx-nps4");
  BOOST_TEST((e.info.time == *gp::parse_time("2027-01-15T08:00:00Z")));
}

BOOST_AUTO_TEST_CASE(a_message_that_is_not_dcms_json_answers_no_profile) {
  const auto e = ga::decode_dcm_event(parse(R"({
    "involvedObject": {"kind": "Node", "name": "gpu-3"},
    "type": "Normal", "reason": "SuccessfullyPartitioned", "message": "partitioned"})"));
  BOOST_TEST(e.host.empty());
  BOOST_TEST(e.about_kind == "Node");
  BOOST_TEST(e.about_name == "gpu-3");
  BOOST_TEST(e.info.message == "partitioned");
  BOOST_TEST(e.info.profile.empty());
  BOOST_TEST((e.info.time == gp::wall_clock::time_point{}), "no lastTimestamp: no time");
}

// The same DCM pod sends AMD AI NIC Events: a GPU answer carries GPUStatus (null when no
// GPU was worked on); a message without it names a NIC profile, or none, and answers no
// GPU request even under the GPU profile's name.
BOOST_AUTO_TEST_CASE(a_nic_event_of_the_same_pod_answers_no_gpu_profile) {
  auto event = [](const std::string& message) {
    rapidjson::Document d;
    d.SetObject();
    auto& a = d.GetAllocator();
    d.AddMember("reason", "SuccessfullyPartitioned", a);
    d.AddMember("message", rapidjson::Value(message.c_str(), a), a);
    return ga::decode_dcm_event(d).info.profile;
  };
  BOOST_TEST(event(R"({"SelectedProfile":"cpx-nps4","FinalStatus":"Success"})").empty());
  BOOST_TEST(event(R"({"SelectedProfile":"cpx-nps4","GPUStatus":"none"})").empty());
  BOOST_TEST(event("Profile: cpx-nps4 | applied to NIC 0").empty());
  BOOST_TEST(event(R"({"SelectedProfile":"cpx-nps4","GPUStatus":null})") == "cpx-nps4");
  BOOST_TEST(event(R"({"SelectedProfile":"cpx-nps4","GPUStatus":[{"GpuID":0}]})") == "cpx-nps4");
}

// Every ConfigMap of DCM's namespace is watched: only what the operator reads is kept.
BOOST_AUTO_TEST_CASE(a_node_keeps_only_the_operators_own_annotations_and_every_label) {
  const auto n = ga::decode_node(parse(R"({"metadata": {"name": "gpu-1", "labels": {
      "nodepool": "training-gpu", "amd.com/gpu.device-id": "74a1"}, "annotations": {
      "infrastructure.silogen.ai/was-unschedulable": "false",
      "infrastructure.silogen.ai/applied-hash": "abc@2026-12-07T12:00:00Z",
      "infrastructure.silogen.ai/other": 7,
      "csi.volume.kubernetes.io/nodeid": "{\"ebs.csi.aws.com\":\"i-0123\"}",
      "node.alpha.kubernetes.io/ttl": "0",
      "infrastructure.silogen.ai": "no slash, not ours"}}})"));
  BOOST_TEST(n.labels.size() == 2u);
  BOOST_TEST(n.labels.at("nodepool") == "training-gpu");
  BOOST_TEST(n.annotations.size() == 2u);
  BOOST_TEST(n.annotations.at(gc::was_unschedulable_annotation) == "false");
  BOOST_TEST(n.annotations.at(gc::applied_hash_annotation) == "abc@2026-12-07T12:00:00Z");
}

BOOST_AUTO_TEST_CASE(a_configmap_keeps_only_what_the_operator_reads) {
  const auto data = ga::decode_config_map_data(parse(R"({
    "metadata": {"name": "x", "creationTimestamp": "2027-01-15T08:00:00Z"},
    "data": {"config.json": "{}", "profile.json": "{\"profiles\":[]}", "blob": "aaaa"}})"));
  BOOST_TEST(data.count("config.json") == 1u);
  BOOST_TEST(data.count("profile.json") == 1u);
  BOOST_TEST(data.count("blob") == 0u);
}

// What a DCM pod mounts where DCM reads its config, and its image (DCM's version).
BOOST_AUTO_TEST_CASE(a_pod_says_which_configmap_it_mounts_as_dcms_config) {
  const auto dcm = ga::decode_pod(parse(R"({
    "metadata": {"namespace": "kube-amd-gpu", "name": "dcm-1"},
    "spec": {"containers": [
        {"name": "init", "image": "busybox", "volumeMounts": [{"name": "sys", "mountPath": "/sys"}]},
        {"name": "dcm", "image": "docker.io/rocm/device-config-manager:v1.3.0",
         "volumeMounts": [{"name": "cfg", "mountPath": "/etc/config-manager/"}]}],
      "volumes": [{"name": "sys", "hostPath": {"path": "/sys"}},
                  {"name": "cfg", "configMap": {"name": "config-manager-config"}}]}})"));
  BOOST_REQUIRE(dcm.dcm_config_mount.has_value());
  BOOST_TEST(*dcm.dcm_config_mount == "config-manager-config");
  BOOST_TEST(dcm.dcm_image == "docker.io/rocm/device-config-manager:v1.3.0");
  const auto projected = ga::decode_pod(parse(R"({
    "spec": {"containers": [{"name": "dcm", "volumeMounts":
        [{"name": "cfg", "mountPath": "/etc/config-manager"}]}],
      "volumes": [{"name": "cfg", "projected": {"sources": []}}]}})"));
  BOOST_REQUIRE(projected.dcm_config_mount.has_value());
  BOOST_TEST(projected.dcm_config_mount->empty(), "mounted, but no ConfigMap");
  const auto none = ga::decode_pod(parse(R"({"spec": {"containers": [{"name": "web"}]}})"));
  BOOST_TEST(!none.dcm_config_mount.has_value());
}

// Any node's kubelet may write an Event in DCM's namespace: a message of 300,000 nested
// arrays is read as no answer, not by recursion that exhausts the stack (which crashed the
// watch thread, again at every start while the Event was listed).
BOOST_AUTO_TEST_CASE(a_deeply_nested_message_is_no_answer_and_no_crash) {
  rapidjson::Document d;
  d.SetObject();
  auto& a = d.GetAllocator();
  rapidjson::Value source(rapidjson::kObjectType);
  source.AddMember("component", "amd-device-config-manager", a);
  source.AddMember("host", "gpu-1", a);
  d.AddMember("source", source, a);
  d.AddMember("reason", "SuccessfullyPartitioned", a);
  const std::string deep = std::string(300000, '[') + std::string(300000, ']');
  d.AddMember("message", rapidjson::Value(deep.c_str(), a), a);
  const auto e = ga::decode_dcm_event(d);
  BOOST_TEST(e.info.profile.empty());
  BOOST_TEST(e.info.message.size() == deep.size());
  // Nested inside an object, the profile is still found.
  const std::string wrapped = R"({"SelectedProfile":"cpx-nps4","GPUStatus":[],"x":)" +
                              std::string(200000, '[') + std::string(200000, ']') + "}";
  d["message"].SetString(wrapped.c_str(), static_cast<rapidjson::SizeType>(wrapped.size()), a);
  BOOST_TEST(ga::decode_dcm_event(d).info.profile == "cpx-nps4");
}

// What a drain's pod policies read: whether a controller recreates the pod, whether it
// loses emptyDir data, and when a deletion already asked of it is due.
BOOST_AUTO_TEST_CASE(a_pod_says_who_recreates_it_what_it_loses_and_when_its_deletion_is_due) {
  const auto bare = ga::decode_pod(parse(R"({
    "metadata": {"namespace": "team", "name": "bare", "uid": "u1",
                 "ownerReferences": [{"kind": "ConfigMap", "name": "x"}],
                 "deletionTimestamp": "2027-01-15T08:00:30Z",
                 "deletionGracePeriodSeconds": 30},
    "spec": {"nodeName": "gpu-1",
             "volumes": [{"name": "cfg", "configMap": {"name": "c"}},
                         {"name": "scratch", "emptyDir": {}}]},
    "status": {"phase": "Running"}})"));
  BOOST_TEST(bare.unmanaged, "an owner that is not its controller recreates nothing");
  BOOST_TEST(!bare.daemon_set);
  BOOST_TEST(bare.empty_dir);
  BOOST_TEST(bare.deleting);
  BOOST_REQUIRE(bare.deletion_deadline.has_value());
  BOOST_TEST((*bare.deletion_deadline == *gp::parse_time("2027-01-15T08:00:30Z")));
  BOOST_TEST(bare.deletion_grace_seconds.value_or(-1) == 30);

  const auto managed = ga::decode_pod(parse(R"({
    "metadata": {"namespace": "team", "name": "web-1",
                 "ownerReferences": [{"kind": "ReplicaSet", "name": "web", "controller": true}]},
    "spec": {"nodeName": "gpu-1", "volumes": [{"name": "cfg", "configMap": {"name": "c"}}]}})"));
  BOOST_TEST(!managed.unmanaged);
  BOOST_TEST(!managed.empty_dir);
  BOOST_TEST(!managed.deleting);
  BOOST_TEST(!managed.deletion_deadline.has_value());

  const auto ds = ga::decode_pod(parse(R"({
    "metadata": {"namespace": "kube-amd-gpu", "name": "dcm-x",
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                      "name": "dcm", "uid": "u-1", "controller": true}]},
    "spec": {"nodeName": "gpu-1"}})"));
  BOOST_TEST(ds.daemon_set);
  BOOST_TEST(!ds.unmanaged);
  BOOST_TEST(ds.daemon_set_key == "kube-amd-gpu/dcm");
  BOOST_TEST(ds.daemon_set_uid == "u-1");
  // Kind DaemonSet of another group (a CRD), or with no group: not apps' DaemonSet.
  for (const char* version : {R"("apiVersion": "evil.example/v1",)", ""}) {
    const std::string text = std::string(R"({"metadata": {"namespace": "team", "name": "stay",
                 "ownerReferences": [{)") +
                             version +
                             R"("kind": "DaemonSet", "name": "dcm", "controller": true}]},
      "spec": {"nodeName": "gpu-1"}})";
    const auto forged = ga::decode_pod(parse(text.c_str()));
    BOOST_TEST(!forged.daemon_set, version);
    BOOST_TEST(!forged.unmanaged, "a controller owns it, as far as the pod says");
  }
  BOOST_TEST(ga::decode_pod(parse(R"({"metadata": {"name": "no-owner"}})")).unmanaged);
}

// Issue 38: a pod with tens of thousands of tolerations, labels or nodeSelector entries
// was kept whole by every view. At most pod_list_limit of each is kept; whether it
// tolerates the amd-dcm taint is read over all of them; a cut nodeSelector is flagged.
BOOST_AUTO_TEST_CASE(a_pod_keeps_a_bounded_number_of_labels_tolerations_and_selectors) {
  std::string tolerations, labels, selector;
  for (int i = 0; i < 20000; ++i) {
    tolerations += R"({"key":"k)" + std::to_string(i) + R"(","operator":"Exists"},)";
    labels += R"("l)" + std::to_string(100000 + i) + R"(":"v",)";
    selector += R"("s)" + std::to_string(i) + R"(":"v",)";
  }
  // The one that matters comes last; the same toleration again and again is kept once.
  const std::string repeated = R"({"key":"same","operator":"Exists"},)";
  std::string text = R"({"metadata": {"namespace": "team", "name": "fat", "labels": {)" + labels +
                     R"("app":"web"}}, "spec": {"nodeName": "gpu-1", "nodeSelector": {)" +
                     selector + R"("last":"v"}, "tolerations": [)";
  for (int i = 0; i < 10; ++i)
    text += repeated;
  text += tolerations + R"({"key":"amd-dcm","operator":"Exists","effect":"NoExecute"}]}})";
  const auto fat = ga::decode_pod(parse(text.c_str()));
  BOOST_TEST(fat.tolerations.size() == gc::pod_list_limit);
  BOOST_TEST(std::count_if(fat.tolerations.begin(), fat.tolerations.end(),
                           [](const gc::toleration& t) { return t.key == "same"; }) == 1);
  BOOST_TEST(fat.tolerates_dcm_taint(), "the last of 20,011 tolerations is read");
  BOOST_TEST(fat.labels.size() == gc::pod_list_limit);
  // The first keys in their order: app, l100000 ... l100062.
  BOOST_TEST(fat.labels.count("app") == 1u);
  BOOST_TEST(fat.labels.rbegin()->first == "l100062");
  BOOST_TEST(fat.node_selector.empty());
  BOOST_TEST(fat.node_selector_cut);
  // An ordinary pod is read whole.
  const auto thin = ga::decode_pod(parse(R"({"metadata": {"name": "w", "labels": {"app": "web"}},
    "spec": {"nodeSelector": {"zone": "a"}, "tolerations": [{"key": "x", "operator": "Exists"}]}})"));
  BOOST_TEST(thin.labels.size() == 1u);
  BOOST_TEST(thin.node_selector.size() == 1u);
  BOOST_TEST(!thin.node_selector_cut);
  BOOST_TEST(thin.tolerations.size() == 1u);
  BOOST_TEST(!thin.tolerates_dcm_taint());
}

// A DaemonSet's pod is never evicted to run elsewhere: it keeps no tolerations or node
// selector for a replacement's room, and whether it tolerates the amd-dcm taint is still
// read. Another pod keeps them, in a vector with no room to spare.
BOOST_AUTO_TEST_CASE(a_daemon_sets_pod_keeps_no_tolerations_or_selector) {
  const char* spec = R"("spec": {"nodeName": "gpu-1",
      "nodeSelector": {"feature.node.kubernetes.io/amd-gpu": "true"}, "tolerations": [
      {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
      {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
      {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
      {"key": "amd-dcm", "operator": "Exists", "effect": "NoExecute"}]}})";
  const auto ds = ga::decode_pod(parse((std::string(R"({"metadata": {"namespace": "kube-amd-gpu",
      "name": "dcm-x", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
      "name": "dcm", "uid": "u1", "controller": true}]}, )") +
                                        spec)
                                           .c_str()));
  BOOST_TEST(ds.daemon_set);
  BOOST_TEST(ds.tolerations.empty());
  BOOST_TEST(ds.node_selector.empty());
  BOOST_TEST(ds.tolerates_dcm_taint());
  const auto web = ga::decode_pod(parse((std::string(R"({"metadata": {"namespace": "team",
      "name": "web-x", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
      "name": "web", "uid": "u2", "controller": true}]}, )") +
                                         spec)
                                            .c_str()));
  BOOST_TEST(!web.daemon_set);
  BOOST_TEST(web.tolerations.size() == 4u);
  BOOST_TEST(web.tolerations.capacity() == 4u);
  BOOST_TEST(web.node_selector.size() == 1u);
  BOOST_TEST(web.tolerates_dcm_taint());
}

BOOST_AUTO_TEST_CASE(a_crash_looping_device_plugin_pod_is_recognised) {
  const auto p = ga::decode_pod(parse(R"({
    "metadata": {"namespace": "kube-amd-gpu", "name": "default-device-plugin-x",
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d",
                                      "uid": "u-d", "controller": true}]},
    "spec": {"nodeName": "gpu-1", "containers": [{"name": "device-plugin", "image": "i"}]},
    "status": {"phase": "Running", "containerStatuses": [
      {"name": "device-plugin", "restartCount": 4,
       "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}})"));
  BOOST_TEST(p.device_plugin);
  BOOST_TEST(p.crash_looping);
  BOOST_TEST(p.restarts == 4);
  const auto q = ga::decode_pod(parse(R"({
    "metadata": {"name": "web"},
    "spec": {"containers": [{"name": "web"}]},
    "status": {"containerStatuses": [{"restartCount": 1, "state": {"running": {}}}]}})"));
  BOOST_TEST(!q.device_plugin);
  BOOST_TEST(!q.crash_looping);
  BOOST_TEST(q.restarts == 1);
}

BOOST_AUTO_TEST_CASE(a_pod_of_amds_dra_driver_is_recognised_by_image_or_label) {
  const auto by_image = ga::decode_pod(parse(R"({
    "metadata": {"namespace": "kube-amd-gpu", "name": "default-dra-driver-x",
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d",
                                      "uid": "u-d", "controller": true}]},
    "spec": {"containers": [{"name": "plugin", "image": "rocm/k8s-gpu-dra-driver:v1.0.0"}]}})"));
  BOOST_TEST(by_image.dra_driver);
  const auto by_label = ga::decode_pod(parse(R"({
    "metadata": {"name": "r-k8s-gpu-dra-driver-kubeletplugin-x",
                 "labels": {"app.kubernetes.io/component": "kubeletplugin"},
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d",
                                      "uid": "u-d", "controller": true}]},
    "spec": {"containers": [{"name": "plugin", "image": "mirror/driver:1"}]}})"));
  BOOST_TEST(by_label.dra_driver);
  // Not a DaemonSet's: a workload running the image by hand is not the driver.
  const auto loose = ga::decode_pod(parse(R"({
    "metadata": {"name": "debug"},
    "spec": {"containers": [{"name": "x", "image": "rocm/k8s-gpu-dra-driver:v1.0.0"}]}})"));
  BOOST_TEST(!loose.dra_driver);
}

BOOST_AUTO_TEST_CASE(a_device_taint_rule_gives_its_node_pool_effect_and_owner) {
  const auto r = ga::decode_device_taint_rule(parse(R"({
    "metadata": {"name": "gpu-partitioner-gpu-1",
                 "labels": {"app.kubernetes.io/managed-by": "gpu-partitioner"},
                 "annotations": {"infrastructure.silogen.ai/node": "gpu-1"}},
    "spec": {"deviceSelector": {"driver": "gpu.amd.com", "pool": "gpu-1"},
             "taint": {"key": "infrastructure.silogen.ai/partitioning", "effect": "NoExecute",
                       "timeAdded": "2026-12-02T10:00:00Z"}}})"));
  BOOST_TEST(r.name == "gpu-partitioner-gpu-1");
  BOOST_TEST(r.node == "gpu-1");
  BOOST_TEST(r.driver == "gpu.amd.com");
  BOOST_TEST(r.pool == "gpu-1");
  BOOST_TEST(r.effect == "NoExecute");
  BOOST_TEST(r.ours);
  const auto theirs = ga::decode_device_taint_rule(parse(R"({"metadata": {"name": "x"}})"));
  BOOST_TEST(!theirs.ours);
  BOOST_TEST(theirs.effect.empty());
}

BOOST_AUTO_TEST_CASE(readiness_and_a_budgets_health_and_unhealthy_pod_policy_are_read) {
  BOOST_TEST(bare_ready(R"({"type": "Ready", "status": "True"})"));
  BOOST_TEST(!bare_ready(R"({"type": "Ready", "status": "False"})"));
  BOOST_TEST(ga::decode_pod(parse(R"({"metadata": {"name": "p"}})")).ready,
             "no conditions yet: nothing says it is unhealthy");
  const auto b = ga::decode_pdb(parse(R"({
    "metadata": {"namespace": "team", "name": "web"},
    "spec": {"selector": {"matchLabels": {"app": "web"}},
             "unhealthyPodEvictionPolicy": "AlwaysAllow"},
    "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 2}})"));
  BOOST_TEST(b.always_allow_unhealthy);
  BOOST_TEST(b.current_healthy == 1);
  BOOST_TEST(b.desired_healthy == 2);
  BOOST_TEST(
      !ga::decode_pdb(parse(R"({"spec": {"unhealthyPodEvictionPolicy": "IfHealthyBudget"}})"))
           .always_allow_unhealthy);
}

BOOST_AUTO_TEST_CASE(a_resource_slice_gives_its_pool_and_devices_with_attributes_as_text) {
  // As AMD's DRA driver publishes a CPX partition (resource.k8s.io/v1).
  const auto s = ga::decode_resource_slice(parse(R"({
    "metadata": {"name": "gpu-1-gpu.amd.com-abcde", "uid": "u1", "resourceVersion": "42"},
    "spec": {"driver": "gpu.amd.com", "nodeName": "gpu-1",
             "pool": {"name": "gpu-1", "generation": 3, "resourceSliceCount": 2},
             "devices": [{"name": "gpu-1-128",
                          "attributes": {"type": {"string": "amdgpu-partition"},
                                         "cardIndex": {"int": 1},
                                         "driverVersion": {"version": "6.12.12"},
                                         "healthy": {"bool": true}},
                          "capacity": {"memory": {"value": "48Gi"}}},
                         {"name": "gpu-0-cpx-1",
                          "consumesCounters": [{"counterSet": "gpu-0-counters",
                                                "counters": {"memory": {"value": "24Gi"}}}]}]}})"));
  BOOST_TEST(s.name == "gpu-1-gpu.amd.com-abcde");
  BOOST_TEST(s.uid == "u1");
  BOOST_TEST(s.resource_version == "42");
  BOOST_TEST(s.driver == "gpu.amd.com");
  BOOST_TEST(s.node == "gpu-1");
  BOOST_TEST(s.pool == "gpu-1");
  BOOST_TEST(s.generation == 3);
  BOOST_TEST(s.slice_count == 2);
  BOOST_TEST(!s.shared_counters);
  BOOST_TEST_REQUIRE(s.devices.size() == 2u);
  const auto& a = s.devices[0].attributes;
  BOOST_TEST(a.at("type") == "amdgpu-partition");
  BOOST_TEST(a.at("cardIndex") == "1");
  BOOST_TEST(a.at("driverVersion") == "6.12.12");
  BOOST_TEST(a.at("healthy") == "true");
  BOOST_TEST(!s.devices[0].consumes_counters);
  BOOST_TEST(s.devices[1].consumes_counters);
  const auto counters = ga::decode_resource_slice(parse(R"({"spec": {"driver": "gpu.amd.com",
      "nodeName": "gpu-1", "pool": {"name": "gpu-1", "generation": 1},
      "sharedCounters": [{"name": "gpu-0-counters", "counters": {"memory": {"value": "192Gi"}}}]}})"));
  BOOST_TEST(counters.shared_counters);
  BOOST_TEST(counters.slice_count == 1); // absent: one
}

BOOST_AUTO_TEST_CASE(a_resource_claim_gives_its_devices_node_and_pods) {
  const auto c = ga::decode_resource_claim(parse(R"({
    "metadata": {"namespace": "team", "name": "train-0-gpu-x7k2p"},
    "status": {"allocation": {
                 "devices": {"results": [{"request": "gpu", "driver": "gpu.amd.com",
                                          "pool": "gpu-1", "device": "gpu-1-128"}]},
                 "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                   {"key": "metadata.name", "operator": "In", "values": ["gpu-1"]}]}]}},
               "reservedFor": [{"resource": "pods", "name": "train-0", "uid": "p1"}]}})"));
  BOOST_TEST(c.ns == "team");
  BOOST_TEST(c.name == "train-0-gpu-x7k2p");
  BOOST_TEST(c.node == "gpu-1");
  BOOST_TEST_REQUIRE(c.devices.size() == 1u);
  BOOST_TEST(c.devices[0].driver == "gpu.amd.com");
  BOOST_TEST(c.devices[0].pool == "gpu-1");
  BOOST_TEST(c.devices[0].name == "gpu-1-128");
  BOOST_TEST_REQUIRE(c.reserved_for.size() == 1u);
  BOOST_TEST(c.reserved_for[0].first == "p1");
  BOOST_TEST(c.reserved_for[0].second == "train-0");
  // Not allocated yet: nothing on any node.
  const auto pending = ga::decode_resource_claim(
      parse(R"({"metadata": {"namespace": "team", "name": "x"}, "spec": {"devices": {}}})"));
  BOOST_TEST(pending.node.empty());
  BOOST_TEST(pending.devices.empty());
}

BOOST_AUTO_TEST_SUITE_END()
