// actors::decode_dcm_event, decode_pod, decode_pdb: objects as the watch delivers them,
// decoded into what the decisions read.
#include "actors/decode.hpp"

#include <boost/test/unit_test.hpp>

#include <rapidjson/document.h>

namespace ga = gpu_partitioner::actors;
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
    "involvedObject": {"kind": "Pod", "namespace": "kube-amd-gpu", "name": "dcm-x7k2p"},
    "source": {"component": "amd-device-config-manager", "host": "gpu-7"},
    "type": "Warning", "reason": "AMDSMIAPIFailure",
    "message": "{\"SelectedProfile\":\"cpx-nps4\",\"Status\":\"failed\"}",
    "lastTimestamp": "2027-01-15T08:00:00Z"})");
  const auto e = ga::decode_dcm_event(d);
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
                 "ownerReferences": [{"kind": "DaemonSet", "name": "dcm", "controller": true}]},
    "spec": {"nodeName": "gpu-1"}})"));
  BOOST_TEST(ds.daemon_set);
  BOOST_TEST(!ds.unmanaged);
  BOOST_TEST(ga::decode_pod(parse(R"({"metadata": {"name": "no-owner"}})")).unmanaged);
}

BOOST_AUTO_TEST_CASE(a_crash_looping_device_plugin_pod_is_recognised) {
  const auto p = ga::decode_pod(parse(R"({
    "metadata": {"namespace": "kube-amd-gpu", "name": "default-device-plugin-x",
                 "ownerReferences": [{"kind": "DaemonSet", "name": "d", "controller": true}]},
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

BOOST_AUTO_TEST_SUITE_END()
