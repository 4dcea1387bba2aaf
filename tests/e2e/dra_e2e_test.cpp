// Nodes whose GPUs AMD's DRA driver publishes as ResourceSlice devices (gpu-sim's
// `sim.gpu-partitioner.io/gpu-api` label), on the real local control plane: the real
// kube-scheduler allocates claims against gpu-sim's slices and kube-controller-manager
// releases them. One case per rule of docs/operating.md, "Nodes in DRA mode".
#include "tests/e2e/support/e2e.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

using namespace gpu_partitioner;
using namespace gpu_partitioner::e2e;
using namespace std::chrono_literals;
namespace utf = boost::unit_test;

namespace {

const kube::resource claim_templates{"resource.k8s.io", "v1", "resourceclaimtemplates", true};

const char* cpx_nps4 = R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX",)"
                       R"("memoryPartition":"NPS4","numGPUsAssigned":8}]})";

node_spec dra_node(const std::string& api = "dra", const std::string& fault = {}) {
  node_spec s;
  s.labels[gpu_api_label] = api;
  s.fault = fault;
  return s;
}

/// AMD's DeviceClass, as its chart makes it; cluster-wide, shared by every case.
void ensure_device_class(e2e_cluster& c) {
  auto r = c.api.create(kube::resources::device_classes(), "",
                        R"({"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass",)"
                        R"("metadata":{"name":"gpu.amd.com"},"spec":{"selectors":[{"cel":)"
                        R"({"expression":"device.driver == 'gpu.amd.com'"}}]}})");
  BOOST_REQUIRE_MESSAGE(r.ok() || r.error().kind == kube::error_kind::already_exists,
                        (r.ok() ? "" : r.error().describe()));
}

/// A Deployment of one pod on this test's nodes, tolerating the test's own taint and
/// `tolerations` (",{...}" each); `pod` is the rest of its spec (its containers).
void create_one_pod_deployment(e2e_cluster& c, const std::string& name,
                               const std::string& tolerations, const std::string& pod) {
  const std::string body =
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":)" + quoted(name) +
      R"(},"spec":{"replicas":1,"selector":{"matchLabels":{"app":)" + quoted(name) +
      R"(}},"template":{"metadata":{"labels":{"app":)" + quoted(name) +
      R"(}},"spec":{"automountServiceAccountToken":false,"terminationGracePeriodSeconds":2,)"
      R"("nodeSelector":{"e2e":)" +
      quoted(c.key) + R"(},"tolerations":[{"key":"e2e","operator":"Equal","value":)" +
      quoted(c.key) + R"(,"effect":"NoSchedule"})" + tolerations + "]," + pod + "}}}}";
  auto d = c.api.create(deployments, c.ns, body);
  BOOST_REQUIRE_MESSAGE(d.ok(), (d.ok() ? "" : d.error().describe()));
}

/// A Deployment of one pod that gets one GPU device through a claim made from a
/// template, and tolerates the amd-dcm taint: only the rule for claim holders drains it.
void create_claim_workload(e2e_cluster& c, const std::string& name,
                           const std::string& device_class = "gpu.amd.com") {
  auto t = c.api.create(claim_templates, c.ns,
                        R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate",)"
                        R"("metadata":{"name":)" +
                            quoted(name) +
                            R"(},"spec":{"spec":{"devices":{"requests":[{"name":"gpu",)"
                            R"("exactly":{"deviceClassName":)" +
                            quoted(device_class) + "}}]}}}}");
  BOOST_REQUIRE_MESSAGE(t.ok(), (t.ok() ? "" : t.error().describe()));
  create_one_pod_deployment(
      c, name, R"(,{"key":"amd-dcm","operator":"Exists","effect":"NoExecute"})",
      R"("resourceClaims":[{"name":"gpu","resourceClaimTemplateName":)" + quoted(name) +
          R"(}],"containers":[{"name":"worker","image":"rocm/pytorch:sim",)"
          R"("resources":{"claims":[{"name":"gpu"}]}}])");
}

struct claim_view {
  std::string name;
  std::string node; // "" unless allocated
  std::vector<std::string> devices;
  std::vector<std::string> pods; // uids reserved for
};

std::vector<claim_view> claims(e2e_cluster& c) {
  std::vector<claim_view> out;
  for (const auto& doc : list_objects(c.api, kube::resources::resource_claims(), c.ns)) {
    claim_view v;
    v.name = str(doc, {"metadata", "name"});
    if (const auto* results = kube::find_path(doc, {"status", "allocation", "devices", "results"});
        results && results->IsArray())
      for (const auto& r : results->GetArray()) {
        v.devices.push_back(str(r, {"device"}));
        v.node = str(r, {"pool"}); // AMD's pool is named after its node
      }
    if (const auto* reserved = kube::find_path(doc, {"status", "reservedFor"});
        reserved && reserved->IsArray())
      for (const auto& r : reserved->GetArray())
        v.pods.push_back(str(r, {"uid"}));
    out.push_back(std::move(v));
  }
  return out;
}

/// The devices the node's slices publish, by name, with their partitionProfile.
std::map<std::string, std::string> devices_of(e2e_cluster& c, const std::string& node) {
  std::map<std::string, std::string> out;
  for (const auto& s : c.resource_slices(node))
    if (const auto* devices = kube::find_path(s, {"spec", "devices"});
        devices && devices->IsArray())
      for (const auto& d : devices->GetArray())
        out[str(d, {"name"})] = str(d, {"attributes", "partitionProfile", "string"});
  return out;
}

/// "uid@resourceVersion" of each of the node's slices, as status.dra records them.
std::vector<std::string> slice_marks(e2e_cluster& c, const std::string& node) {
  std::vector<std::string> out;
  for (const auto& s : c.resource_slices(node))
    out.push_back(str(s, {"metadata", "uid"}) + "@" + str(s, {"metadata", "resourceVersion"}));
  return out;
}

/// A profile with both checks: 64 amd.com/gpu on device-plugin nodes, 64 CPX partitions
/// on DRA nodes.
std::string profile_spec(const e2e_cluster& c, const std::string& dcm_name, int timeout = 60,
                         const std::string& device_class = {}) {
  return R"({"targetSelector":{"matchLabels":{"gpu.vendor":"amd"}},)" +
         (device_class.empty() ? std::string()
                               : R"("deviceClassName":)" + quoted(device_class) + ",") +
         R"("expectedResources":[{"name":"amd.com/gpu","count":64}],)"
         R"("expectedDevices":[{"driver":"gpu.amd.com","attributes":{"type":"amdgpu-partition",)"
         R"("partitionProfile":"cpx_nps4"},"count":64}],"verification":{"timeoutSeconds":)" +
         std::to_string(timeout) +
         R"(},"operatorPayload":{"kind":"ConfigMap","name":"cpx","namespace":)" + quoted(c.ns) +
         R"(,"profileName":)" + quoted(dcm_name) + "}}";
}

std::string plan_spec(const e2e_cluster& c, const std::string& profile,
                      const std::string& cordon = {}) {
  // requirePluginResources is the device plugin's: not asked of DRA nodes.
  return R"({"rollout":{"maxParallel":1,"maxUnavailable":1,"drainPolicy":{"timeoutSeconds":60)" +
         (cordon.empty() ? std::string() : R"(,"cordon":)" + quoted(cordon)) +
         "}},"
         R"("verification":{"requirePluginResources":["amd.com/gpu"],"timeoutSeconds":60},)"
         R"("partitionings":[{"name":"all","selector":)" +
         c.selector() + R"(,"profileRef":{"kind":"PartitioningProfile","name":)" + quoted(profile) +
         "}}]}";
}

const kube::resource daemon_sets{"apps", "v1", "daemonsets", true};
const kube::resource device_taint_rules{"resource.k8s.io", "v1alpha3", "devicetaintrules", false};

/// AMD's DRA driver as its chart deploys it (a DaemonSet of the kubeletplugin component,
/// AMD's image), on this test's nodes. It does not tolerate the amd-dcm taint.
void create_driver_daemon_set(e2e_cluster& c) {
  auto ds = c.api.create(
      daemon_sets, c.ns,
      R"({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"gpu-dra-driver"},)"
      R"("spec":{"selector":{"matchLabels":{"app":"gpu-dra-driver"}},"template":{"metadata":)"
      R"({"labels":{"app":"gpu-dra-driver","app.kubernetes.io/component":"kubeletplugin"}},)"
      R"("spec":{"nodeSelector":{"e2e":)" +
          quoted(c.key) +
          R"(},"tolerations":[{"key":"e2e","operator":"Exists"}],)"
          R"("automountServiceAccountToken":false,"terminationGracePeriodSeconds":1,)"
          R"("containers":[{"name":"plugin","image":"rocm/k8s-gpu-dra-driver:sim"}]}}}})");
  BOOST_REQUIRE_MESSAGE(ds.ok(), (ds.ok() ? "" : ds.error().describe()));
}

/// A Deployment of one pod that uses no GPU and tolerates nothing of the operator's.
void create_cpu_workload(e2e_cluster& c, const std::string& name) {
  create_one_pod_deployment(c, name, "", R"("containers":[{"name":"web","image":"nginx:sim"}])");
}

/// The uids of the pods of `app` that are not being deleted.
std::vector<std::string> live_pod_uids(kube::client& api, const std::string& ns,
                                       const std::string& app) {
  std::vector<std::string> out;
  for (const auto& doc : list_objects(api, kube::resources::pods(), ns))
    if (str(doc, {"metadata", "labels", "app"}) == app &&
        kube::find_path(doc, {"metadata", "deletionTimestamp"}) == nullptr)
      out.push_back(str(doc, {"metadata", "uid"}));
  return out;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(dra)

// A pod holding a GPU through a claim (allocated by the real scheduler against gpu-sim's
// slice) is evicted although it tolerates the taint, and its claim is released before
// the profile label goes out: DCM never finds the GPUs busy. The node verifies on the
// slice its driver published after the change, and the workload's replacement gets one
// of the new partitions.
BOOST_AUTO_TEST_CASE(a_claim_holder_is_drained_and_its_claim_released_before_dcm,
                     *utf::timeout(240)) {
  e2e_cluster c;
  ensure_device_class(c);
  c.add_nodes({{"a", dra_node()}});
  c.start_simulator();
  const std::string node = c.nodes[0];
  BOOST_TEST(c.node(node).gpus == -1); // no amd.com/gpu at all on a DRA node
  c.await_default_service_account();
  create_claim_workload(c, "train");
  std::string first_claim;
  std::string first_pod;
  E2E_REQUIRE(eventually(
                  [&] {
                    for (const auto& cl : claims(c))
                      if (cl.node == node && !cl.pods.empty()) {
                        first_claim = cl.name;
                        first_pod = cl.pods[0];
                      }
                    return !first_claim.empty() && c.healthy_pods("train") == 1;
                  },
                  60s, 200ms),
              "the claim was never allocated and its pod never ran\n"
                  << c.simulator().tail());
  const auto before = devices_of(c, node);
  BOOST_TEST(before.size() == 8u); // 8 GPUs in SPX, one device each
  BOOST_TEST(before.begin()->second == "spx_nps1");

  // Whenever the node carries this test's profile label, the first claim is released.
  const std::string dcm_name = "e2e-dra-" + c.key;
  std::atomic<bool> stop{false};
  std::mutex m;
  std::vector<std::string> violations;
  std::thread watch([&] {
    connection own(admin_config());
    while (!stop) {
      kube::list_options o;
      auto n = own.api.get(kube::resources::nodes(), "", node);
      auto list = own.api.list(kube::resources::resource_claims(), c.ns, o);
      if (n && list && str(n.value(), {"metadata", "labels", profile_label}) == dcm_name)
        for (const auto& cl : list.value()["items"].GetArray())
          if (str(cl, {"metadata", "name"}) == first_claim &&
              kube::find_path(cl, {"status", "allocation"}) != nullptr) {
            std::lock_guard<std::mutex> lock(m);
            violations.push_back("the profile label is set while " + first_claim +
                                 " is still allocated");
          }
      std::this_thread::sleep_for(100ms);
    }
  });
  c.start_operator();
  c.create_payload("cpx", cpx_nps4);
  const std::string device_class = c.id + "-cpx-nps4.gpu.amd.com";
  const auto profile = c.create_profile("cpx", profile_spec(c, dcm_name, 60, device_class));
  const auto plan = c.create_plan("dra", plan_spec(c, profile));
  const bool completed = c.await_plan_phase(plan, "Completed", 120s);
  stop = true;
  watch.join();
  E2E_REQUIRE(completed, c.describe(plan));
  BOOST_TEST(violations.empty(), (violations.empty() ? "" : violations.front()));
  for (const auto& e : c.dcm_events(node))
    BOOST_TEST(!contains(e, "PartitionRetrying"), "DCM found the GPUs busy: " << e);
  // Evicted, whatever it tolerated: the first pod is gone with its claim.
  for (const auto& cl : claims(c))
    BOOST_TEST(cl.name != first_claim, first_claim << " outlived its pod");
  // Verified on the driver's new publication, not the slice from before DCM.
  const auto after = devices_of(c, node);
  BOOST_TEST(after.size() == 64u);
  for (const auto& [name, profile_of] : after)
    BOOST_TEST(profile_of == "cpx_nps4", name);
  auto item = c.get(items, plan + "-" + node);
  BOOST_REQUIRE(item);
  const auto* recorded = kube::find_path(*item, {"status", "dra", "slicesBeforeDCM"});
  BOOST_REQUIRE(recorded != nullptr && recorded->IsArray());
  std::vector<std::string> before_marks;
  for (const auto& r : recorded->GetArray())
    before_marks.push_back(r.GetString());
  BOOST_TEST(!before_marks.empty());
  for (const auto& mark : slice_marks(c, node))
    BOOST_TEST((std::find(before_marks.begin(), before_marks.end(), mark) == before_marks.end()),
               mark << " was recorded before DCM ran");
  BOOST_TEST(c.back_in_service(node));
  BOOST_TEST(c.node(node).label(profile_label) == dcm_name);
  // The plan counts the profile's devices on its DRA nodes.
  auto plan_object = c.get(plans, plan);
  BOOST_REQUIRE(plan_object);
  const auto* devices = kube::find_path(*plan_object, {"status", "devices"});
  BOOST_REQUIRE(devices != nullptr && devices->IsArray() && devices->Size() == 1u);
  BOOST_TEST(str((*devices)[0], {"profile"}) == profile);
  BOOST_TEST((*devices)[0]["nodes"].GetInt64() == 1);
  BOOST_TEST((*devices)[0]["devices"].GetInt64() == 64);
  BOOST_TEST((*devices)[0]["expected"].GetInt64() == 64);
  // The replacement is scheduled back and gets one of the new partitions.
  E2E_REQUIRE(eventually(
                  [&] {
                    for (const auto& cl : claims(c))
                      if (cl.node == node && !cl.pods.empty() && cl.pods[0] != first_pod &&
                          !cl.devices.empty())
                        return after.count(cl.devices[0]) > 0 && c.healthy_pods("train") == 1;
                    return false;
                  },
                  60s, 200ms),
              "the replacement never got a new partition");
  // The profile's DeviceClass: made by the operator, and a workload asking for it by
  // class gets a CPX partition.
  const auto made = c.get(kube::resources::device_classes(), device_class);
  BOOST_REQUIRE_MESSAGE(made, "the operator made no DeviceClass " << device_class);
  BOOST_TEST(str(*made, {"metadata", "labels", "app.kubernetes.io/managed-by"}) ==
             "gpu-partitioner");
  create_claim_workload(c, "infer", device_class);
  E2E_REQUIRE(eventually(
                  [&] {
                    for (const auto& cl : claims(c))
                      if (cl.name.rfind("infer-", 0) == 0 && !cl.devices.empty())
                        return after.count(cl.devices[0]) > 0 && c.healthy_pods("infer") == 1;
                    return false;
                  },
                  60s, 200ms),
              "no claim of class " << device_class << " was allocated a partition");
}

// A node whose driver carves partitions itself (shared counters) is refused before
// anything on it changes.
BOOST_AUTO_TEST_CASE(a_node_in_the_drivers_dynamic_mode_is_left_alone_with_a_finding,
                     *utf::timeout(120)) {
  e2e_cluster c;
  c.add_nodes({{"a", dra_node("dra-dynamic")}});
  c.start_simulator();
  c.start_operator();
  c.create_payload("cpx", cpx_nps4);
  const auto profile = c.create_profile("cpx", profile_spec(c, "e2e-dyn-" + c.key));
  const auto plan = c.create_plan("dyn", plan_spec(c, profile));
  E2E_REQUIRE(c.await_items(plan, 1, "Failed", 60s), c.describe(plan));
  const auto item = c.item(plan, c.nodes[0]);
  BOOST_REQUIRE(item);
  BOOST_TEST((!item->reasons.empty() && item->reasons.back() == "PreflightFailed"),
             c.describe(plan));
  BOOST_TEST(contains(item->last_error, "DRADynamicPartitioning"), item->last_error);
  const auto n = c.node(c.nodes[0]);
  BOOST_TEST(!n.unavailable());
  BOOST_TEST(n.label(profile_label).empty());
}

// One plan over a device-plugin node and two DRA nodes: the first two verify each by its
// own kind of resource; the third shows 63 partitions and fails verification, naming
// both counts.
BOOST_AUTO_TEST_CASE(a_mixed_cluster_rolls_out_in_one_plan, *utf::timeout(240)) {
  e2e_cluster c;
  node_spec plugin;
  c.add_nodes(
      {{"a-plugin", plugin}, {"b-dra", dra_node()}, {"c-dra-63", dra_node("dra", "wrong-count")}});
  c.start_simulator();
  c.start_operator();
  c.create_payload("cpx", cpx_nps4);
  const auto profile = c.create_profile("cpx", profile_spec(c, "e2e-mixed-" + c.key, 20));
  const auto plan = c.create_plan("mixed", plan_spec(c, profile));
  E2E_REQUIRE(eventually(
                  [&] {
                    const auto items = c.plan_items(plan);
                    return items.size() == 3u && items[0].phase == "Succeeded" &&
                           items[1].phase == "Succeeded" && items[2].phase == "Failed";
                  },
                  150s, 500ms),
              c.describe(plan));
  BOOST_TEST(c.node(c.nodes[0]).gpus == 64);
  BOOST_TEST(devices_of(c, c.nodes[1]).size() == 64u);
  const auto failed = c.item(plan, c.nodes[2]);
  BOOST_REQUIRE(failed);
  BOOST_TEST((!failed->reasons.empty() && failed->reasons.back() == "VerificationFailed"),
             c.describe(plan));
  BOOST_TEST(contains(failed->last_error, "expected gpu.amd.com: 64 device(s)"),
             failed->last_error);
  BOOST_TEST(contains(failed->last_error, "found 63"), failed->last_error);
}

// drainPolicy.cordon Devices: the node stays schedulable and untainted, and a pod that
// uses no GPU keeps running through the change. A DeviceTaintRule on the node's GPU
// devices keeps the real scheduler from allocating them (NoSchedule) while the claim
// holder is evicted, then goes NoExecute; after DCM the driver's pod is restarted, the new
// driver publishes the partitions, and the rule is deleted.
BOOST_AUTO_TEST_CASE(device_taints_keep_cpu_only_pods_running_while_the_gpus_change,
                     *utf::timeout(300)) {
  e2e_cluster c;
  ensure_device_class(c);
  c.add_nodes({{"a", dra_node()}});
  c.start_simulator();
  const std::string node = c.nodes[0];
  const std::string rule = "gpu-partitioner-" + node;
  c.await_default_service_account();
  create_driver_daemon_set(c);
  create_claim_workload(c, "train");
  create_cpu_workload(c, "web");
  std::string first_claim;
  E2E_REQUIRE(eventually(
                  [&] {
                    for (const auto& cl : claims(c))
                      if (cl.node == node && !cl.pods.empty())
                        first_claim = cl.name;
                    return !first_claim.empty() && c.healthy_pods("train") == 1 &&
                           c.healthy_pods("web") == 1 &&
                           live_pod_uids(c.api, c.ns, "gpu-dra-driver").size() == 1u;
                  },
                  60s, 200ms),
              "the workloads or the driver's pod never ran\n"
                  << c.simulator().tail());
  const auto web = live_pod_uids(c.api, c.ns, "web");
  const auto driver_before = live_pod_uids(c.api, c.ns, "gpu-dra-driver");

  const std::string dcm_name = "e2e-devtaint-" + c.key;
  std::atomic<bool> stop{false};
  std::mutex m;
  std::vector<std::string> violations;
  std::set<std::string> effects;
  std::thread watch([&] {
    connection own(admin_config());
    auto violation = [&](const std::string& what) {
      std::lock_guard<std::mutex> lock(m);
      if (violations.size() < 10)
        violations.push_back(what);
    };
    while (!stop) {
      auto n = own.api.get(kube::resources::nodes(), "", node);
      if (n) {
        if (const auto* u = kube::find_path(n.value(), {"spec", "unschedulable"});
            u && u->IsBool() && u->GetBool())
          violation("the node was cordoned");
        if (const auto* taints = kube::find_path(n.value(), {"spec", "taints"});
            taints && taints->IsArray())
          for (const auto& t : taints->GetArray())
            if (str(t, {"key"}) == "amd-dcm")
              violation("the node was tainted amd-dcm");
      }
      if (live_pod_uids(own.api, c.ns, "web") != web)
        violation("the CPU-only pod was removed");
      auto r = own.api.get(device_taint_rules, "", rule);
      if (r) {
        std::lock_guard<std::mutex> lock(m);
        effects.insert(str(r.value(), {"spec", "taint", "effect"}));
      }
      // While the rule is on the devices, the scheduler allocates none of them. The rule
      // is made once and deleted once, so the same rule read before and after the list
      // was there throughout it; a rule deleted between the two reads proves nothing
      // about a claim the scheduler allocated in that gap.
      if (r) {
        const auto listed = list_objects(own.api, kube::resources::resource_claims(), c.ns);
        auto again = own.api.get(device_taint_rules, "", rule);
        const std::string uid = str(r.value(), {"metadata", "uid"});
        if (again && str(again.value(), {"metadata", "uid"}) == uid)
          for (const auto& doc : listed)
            if (str(doc, {"metadata", "name"}) != first_claim &&
                kube::find_path(doc, {"status", "allocation"}) != nullptr)
              violation("claim " + str(doc, {"metadata", "name"}) +
                        " was allocated a device under the rule");
      }
      std::this_thread::sleep_for(100ms);
    }
  });
  c.start_operator();
  c.create_payload("cpx", cpx_nps4);
  const auto profile = c.create_profile("cpx", profile_spec(c, dcm_name));
  const auto plan = c.create_plan("devtaint", plan_spec(c, profile, "Devices"));
  const bool completed = c.await_plan_phase(plan, "Completed", 150s);
  // Until the rule is gone: the last write of the run.
  const bool rule_gone = eventually([&] { return !c.get(device_taint_rules, rule); }, 20s, 200ms);
  stop = true;
  watch.join();
  E2E_REQUIRE(completed, c.describe(plan));
  BOOST_TEST(rule_gone, "DeviceTaintRule " << rule << " outlived the run");
  for (const auto& v : violations)
    BOOST_TEST(false, v);
  BOOST_TEST(effects.count("NoSchedule") == 1u, "the rule was never seen NoSchedule");
  BOOST_TEST(effects.count("NoExecute") == 1u, "the rule was never seen NoExecute");
  BOOST_TEST(live_pod_uids(c.api, c.ns, "web") == web);
  for (const auto& e : c.dcm_events(node))
    BOOST_TEST(!contains(e, "PartitionRetrying"), "DCM found the GPUs busy: " << e);
  for (const auto& cl : claims(c))
    BOOST_TEST(cl.name != first_claim, first_claim << " outlived its pod");
  // The driver's pod was restarted, and the new one published the partitions.
  auto item = c.get(items, plan + "-" + node);
  BOOST_REQUIRE(item);
  BOOST_TEST(str(*item, {"status", "dra", "deviceTaintRule"}) == rule);
  const auto* restarted = kube::find_path(*item, {"status", "dra", "restartedDriverPods"});
  BOOST_REQUIRE(restarted != nullptr && restarted->IsArray() && restarted->Size() == 1u);
  BOOST_TEST((*restarted)[0].GetString() == driver_before.at(0));
  const auto driver_after = live_pod_uids(c.api, c.ns, "gpu-dra-driver");
  BOOST_TEST(driver_after.size() == 1u);
  BOOST_TEST(driver_after != driver_before);
  const auto after = devices_of(c, node);
  BOOST_TEST(after.size() == 64u);
  for (const auto& [name, profile_of] : after)
    BOOST_TEST(profile_of == "cpx_nps4", name);
  BOOST_TEST(c.back_in_service(node));
  BOOST_TEST(c.node(node).label(profile_label) == dcm_name);
  // The claim holder's replacement gets one of the new partitions once the rule is gone.
  E2E_REQUIRE(eventually(
                  [&] {
                    for (const auto& cl : claims(c))
                      if (cl.name != first_claim && !cl.devices.empty())
                        return after.count(cl.devices[0]) > 0 && c.healthy_pods("train") == 1;
                    return false;
                  },
                  60s, 200ms),
              "the replacement never got a new partition");
}

BOOST_AUTO_TEST_SUITE_END()
