// controller/dra: what a node publishes through Dynamic Resource Allocation (pools,
// generations, AMD's driver's dynamic mode), the count of a profile's expected devices,
// the slices recorded before DCM ran, the pods that hold GPUs through claims, and the
// devices no claim holds.
#include "controller/dra.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;

namespace {

// A CPX/NPS4 partition as AMD's driver publishes it.
gc::dra_device partition(int i, const std::string& profile = "cpx_nps4") {
  gc::dra_device d;
  d.name = "gpu-" + std::to_string(i + 1) + "-" + std::to_string(128 + i);
  d.attributes = {{"type", "amdgpu-partition"},
                  {"partitionProfile", profile},
                  {"cardIndex", std::to_string(i + 1)},
                  {"productName", "AMD_Instinct_MI300X_OAM"}};
  return d;
}

gc::dra_device full_gpu(int i) {
  gc::dra_device d;
  d.name = "gpu-" + std::to_string(i + 1) + "-" + std::to_string(128 + i);
  d.attributes = {{"type", "amdgpu"}, {"partitionProfile", "spx_nps1"}};
  return d;
}

gc::resource_slice_info slice(const std::string& uid, const std::string& rv, int devices,
                              bool partitions = true, std::int64_t generation = 1) {
  gc::resource_slice_info s;
  s.name = "gpu-1-gpu.amd.com-" + uid;
  s.uid = uid;
  s.resource_version = rv;
  s.driver = gp::amd_dra_driver;
  s.node = "gpu-1";
  s.pool = "gpu-1";
  s.generation = generation;
  for (int i = 0; i < devices; ++i)
    s.devices.push_back(partitions ? partition(i) : full_gpu(i));
  return s;
}

gp::expected_device cpx(std::int64_t count) {
  gp::expected_device e;
  e.attributes = {{"type", "amdgpu-partition"}, {"partitionProfile", "cpx_nps4"}};
  e.count = count;
  return e;
}

} // namespace

BOOST_AUTO_TEST_SUITE(dra)

BOOST_AUTO_TEST_CASE(a_node_publishes_only_the_slices_of_the_driver) {
  auto other = slice("n1", "1", 2);
  other.driver = "nic.example.com";
  BOOST_TEST(!gc::publishes_gpus({other}));
  BOOST_TEST(!gc::publication_of({other}, gp::amd_dra_driver).publishes);
  BOOST_TEST(gc::publishes_gpus({other, slice("a", "1", 64)}));
  // publication_of points into its argument: the slices must outlive what it returns.
  const std::vector<gc::resource_slice_info> both{other, slice("a", "1", 64)};
  const auto pub = gc::publication_of(both, gp::amd_dra_driver);
  BOOST_TEST(pub.publishes);
  BOOST_TEST(pub.complete);
  BOOST_TEST(!pub.dynamic);
  BOOST_TEST(pub.current.size() == 1u);
}

BOOST_AUTO_TEST_CASE(only_the_newest_complete_generation_counts) {
  // A pool of two slices being republished: generation 2 has one of its two so far.
  auto old_a = slice("a", "1", 32, true, 1);
  auto old_b = slice("b", "1", 32, true, 1);
  auto new_a = slice("c", "5", 32, true, 2);
  for (auto* s : {&old_a, &old_b, &new_a})
    s->slice_count = 2;
  const std::vector<gc::resource_slice_info> midway{old_a, old_b, new_a};
  auto pub = gc::publication_of(midway, gp::amd_dra_driver);
  BOOST_TEST(!pub.complete);
  BOOST_TEST(pub.current.size() == 1u);
  BOOST_TEST(gc::devices_gap({old_a, old_b, new_a}, {cpx(64)}) ==
             "gpu.amd.com is still publishing the node's ResourceSlices");
  auto new_b = slice("d", "6", 32, true, 2);
  new_b.slice_count = 2;
  const std::vector<gc::resource_slice_info> done{old_a, old_b, new_a, new_b};
  pub = gc::publication_of(done, gp::amd_dra_driver);
  BOOST_TEST(pub.complete);
  BOOST_TEST(pub.current.size() == 2u);
  BOOST_TEST(gc::devices_gap({old_a, old_b, new_a, new_b}, {cpx(64)}) == "");
}

BOOST_AUTO_TEST_CASE(shared_counters_or_devices_consuming_them_mean_dynamic_mode) {
  auto counters = slice("k", "1", 0);
  counters.shared_counters = true;
  BOOST_TEST(gc::publication_of({counters}, gp::amd_dra_driver).dynamic);
  auto consuming = slice("c", "1", 4);
  consuming.devices[2].consumes_counters = true;
  BOOST_TEST(gc::publication_of({consuming}, gp::amd_dra_driver).dynamic);
  BOOST_TEST(!gc::publication_of({slice("s", "1", 64)}, gp::amd_dra_driver).dynamic);
}

BOOST_AUTO_TEST_CASE(expected_devices_count_every_attribute_as_text) {
  const auto s = slice("a", "1", 64);
  std::vector<const gc::resource_slice_info*> current{&s};
  BOOST_TEST(gc::matching_devices(current, cpx(64)) == 64);
  auto one_card = cpx(1);
  one_card.attributes["cardIndex"] = "7"; // an int attribute, as text
  BOOST_TEST(gc::matching_devices(current, one_card) == 1);
  auto wrong = cpx(64);
  wrong.attributes["partitionProfile"] = "cpx_nps1";
  BOOST_TEST(gc::matching_devices(current, wrong) == 0);
  auto missing = cpx(64);
  missing.attributes["pciAddr"] = "0000:0c:00.0"; // partitions carry parentPciAddr instead
  BOOST_TEST(gc::matching_devices(current, missing) == 0);
  auto other_driver = cpx(64);
  other_driver.driver = "gpu.example.com";
  BOOST_TEST(gc::matching_devices(current, other_driver) == 0);
  auto any = gp::expected_device{};
  any.count = 64;
  BOOST_TEST(gc::matching_devices(current, any) == 64);
}

BOOST_AUTO_TEST_CASE(a_gap_names_the_driver_the_attributes_and_both_counts) {
  BOOST_TEST(gc::devices_gap({slice("a", "1", 63)}, {cpx(64)}) ==
             "expected gpu.amd.com: 64 device(s) with partitionProfile=cpx_nps4, "
             "type=amdgpu-partition, found 63");
  BOOST_TEST(gc::devices_gap({slice("a", "1", 8, false)}, {cpx(64)}) ==
             "expected gpu.amd.com: 64 device(s) with partitionProfile=cpx_nps4, "
             "type=amdgpu-partition, found 0");
  BOOST_TEST(gc::devices_gap({}, {cpx(64)}) ==
             "gpu.amd.com publishes no ResourceSlice for the node");
  BOOST_TEST(gc::devices_gap({slice("a", "1", 64)}, {cpx(64)}) == "");
}

BOOST_AUTO_TEST_CASE(slices_from_before_dcm_count_only_once_the_driver_is_known_back) {
  const auto stale = slice("a", "7", 64);
  const std::vector<std::string> before{gc::slice_mark(stale)};
  BOOST_TEST(gc::slice_mark(stale) == "a@7");
  BOOST_TEST(gc::devices_gap({stale}, {cpx(64)}, &before, false) ==
             "gpu.amd.com has not published the node's devices again since DCM ran");
  BOOST_TEST(gc::devices_gap({stale}, {cpx(64)}, &before, true) == "");
  // Updated in place (AMD's one-slice pool keeps its uid and generation): a new
  // resourceVersion is a new publication.
  BOOST_TEST(gc::devices_gap({slice("a", "9", 64)}, {cpx(64)}, &before, false) == "");
  // Deleted by kubelet and created again: a new uid.
  BOOST_TEST(gc::devices_gap({slice("b", "3", 64)}, {cpx(64)}, &before, false) == "");
  // Republished with the wrong count: the count is the gap.
  BOOST_TEST(gc::devices_gap({slice("b", "3", 63)}, {cpx(64)}, &before, false) ==
             "expected gpu.amd.com: 64 device(s) with partitionProfile=cpx_nps4, "
             "type=amdgpu-partition, found 63");
}

BOOST_AUTO_TEST_CASE(pods_hold_gpus_through_claims_on_the_drivers_devices) {
  gc::resource_claim_info gpus;
  gpus.ns = "team";
  gpus.name = "train-0-gpu";
  gpus.node = "gpu-1";
  gpus.devices = {{gp::amd_dra_driver, "gpu-1", "gpu-1-128"},
                  {gp::amd_dra_driver, "gpu-1", "gpu-2-129"}};
  gpus.reserved_for = {{"uid-a", "train-0"}, {"uid-b", "train-1"}};
  gc::resource_claim_info nic;
  nic.ns = "team";
  nic.name = "train-0-nic";
  nic.node = "gpu-1";
  nic.devices = {{"nic.example.com", "gpu-1", "eth1"}};
  nic.reserved_for = {{"uid-a", "train-0"}};
  // gpu_claims points into its argument: the claims must outlive what it returns.
  const std::vector<gc::resource_claim_info> all{gpus, nic};
  const auto claims = gc::gpu_claims(all);
  BOOST_TEST_REQUIRE(claims.size() == 1u);
  BOOST_TEST(claims[0]->name == "train-0-gpu");
  const auto holders = gc::claim_holders(all);
  BOOST_TEST(holders.size() == 2u);
  BOOST_TEST(holders.at("uid-a") == 2);
  BOOST_TEST(holders.at("uid-b") == 2);
  BOOST_TEST(gc::claim_holders({nic}).empty());
}

// The devices a new claim could be given on the node: the newest generation's, less those
// a claim holds (any claim's, whoever it is reserved for); another driver's count nothing.
BOOST_AUTO_TEST_CASE(free_devices_are_the_published_ones_no_claim_holds) {
  gc::resource_claim_info held;
  held.ns = "team";
  held.name = "train-0-gpu";
  held.node = "gpu-1";
  held.devices = {{gp::amd_dra_driver, "gpu-1", partition(0).name},
                  {gp::amd_dra_driver, "gpu-1", partition(1).name},
                  {"nic.example.com", "gpu-1", partition(2).name}};
  BOOST_TEST(gc::free_gpu_devices({slice("a", "1", 64)}, {}) == 64);
  BOOST_TEST(gc::free_gpu_devices({slice("a", "1", 64)}, {held}) == 62);
  // An older generation's devices are not counted twice.
  BOOST_TEST(gc::free_gpu_devices({slice("a", "1", 8, false, 1), slice("b", "2", 64, true, 2)},
                                  {held}) == 62);
  auto other = slice("c", "1", 8);
  other.driver = "nic.example.com";
  BOOST_TEST(gc::free_gpu_devices({other}, {}) == 0);
  BOOST_TEST(gc::free_gpu_devices({}, {held}) == 0);
}

BOOST_AUTO_TEST_CASE(a_device_class_selects_the_expected_devices_by_string_attributes) {
  BOOST_TEST(gc::device_class_expression({cpx(64)}) ==
             "device.driver == 'gpu.amd.com'"
             " && 'partitionProfile' in device.attributes['gpu.amd.com']"
             " && device.attributes['gpu.amd.com']['partitionProfile'] == 'cpx_nps4'"
             " && 'type' in device.attributes['gpu.amd.com']"
             " && device.attributes['gpu.amd.com']['type'] == 'amdgpu-partition'");
  // A qualified attribute is looked up in its own domain; quotes are escaped.
  gp::expected_device rooted;
  rooted.driver = "gpu.example.com";
  rooted.attributes = {{"resource.kubernetes.io/pcieRoot", "pci0000:00'x"}};
  BOOST_TEST(gc::device_class_expression({rooted}) ==
             "device.driver == 'gpu.example.com'"
             " && 'pcieRoot' in device.attributes['resource.kubernetes.io']"
             " && device.attributes['resource.kubernetes.io']['pcieRoot'] == 'pci0000:00\\'x'");
  // Several entries: any of them.
  gp::expected_device spx;
  spx.attributes = {{"type", "amdgpu"}};
  BOOST_TEST(gc::device_class_expression({spx, rooted}) ==
             "(device.driver == 'gpu.amd.com' && 'type' in device.attributes['gpu.amd.com']"
             " && device.attributes['gpu.amd.com']['type'] == 'amdgpu')"
             " || (device.driver == 'gpu.example.com'"
             " && 'pcieRoot' in device.attributes['resource.kubernetes.io']"
             " && device.attributes['resource.kubernetes.io']['pcieRoot'] == 'pci0000:00\\'x')");
}

BOOST_AUTO_TEST_CASE(a_profile_names_its_device_class_owned_by_it_and_marked_ours) {
  gp::partitioning_profile p;
  p.metadata.name = "mi300x-cpx-nps4";
  p.metadata.uid = "uid-1";
  p.spec.expected_devices = {cpx(64)};
  BOOST_TEST(gc::device_class_json(p).empty()); // no class asked for
  p.spec.device_class_name = "mi300x-cpx-nps4.amd.com";
  const auto json = gc::device_class_json(p);
  BOOST_TEST(json.find(R"("name":"mi300x-cpx-nps4.amd.com")") != std::string::npos, json);
  BOOST_TEST(json.find(R"("labels":{"app.kubernetes.io/managed-by":"gpu-partitioner"})") !=
                 std::string::npos,
             json);
  BOOST_TEST(json.find(R"("kind":"PartitioningProfile","name":"mi300x-cpx-nps4","uid":"uid-1")") !=
                 std::string::npos,
             json);
  BOOST_TEST(json.find(R"(['partitionProfile'] == 'cpx_nps4')") != std::string::npos, json);
  p.spec.expected_devices.clear();
  BOOST_TEST(gc::device_class_json(p).empty()); // nothing to select
}

BOOST_AUTO_TEST_CASE(a_rule_is_named_after_its_node_within_the_name_limit) {
  BOOST_TEST(gc::device_taint_rule_name("gpu-1") == "gpu-partitioner-gpu-1");
  // A node name of 253 characters: shortened, the same each time, and kept apart from a
  // node that differs only at its end.
  const std::string a(253, 'a');
  std::string b = a;
  b.back() = 'b';
  const auto name = gc::device_taint_rule_name(a);
  BOOST_TEST(name.size() == 253u);
  BOOST_TEST(name == gc::device_taint_rule_name(a));
  BOOST_TEST(name != gc::device_taint_rule_name(b));
  BOOST_TEST(name.rfind("gpu-partitioner-aaa", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(a_rule_taints_the_drivers_devices_of_the_nodes_pool) {
  const auto json =
      gc::device_taint_rule_json("gpu-partitioner-gpu-1", "gpu-1", "gpu-1", "NoSchedule");
  for (const char* part :
       {R"("apiVersion":"resource.k8s.io/v1alpha3")", R"("kind":"DeviceTaintRule")",
        R"("name":"gpu-partitioner-gpu-1")", R"("app.kubernetes.io/managed-by":"gpu-partitioner")",
        R"("infrastructure.silogen.ai/node":"gpu-1")",
        R"("deviceSelector":{"driver":"gpu.amd.com","pool":"gpu-1"})",
        R"("taint":{"key":"infrastructure.silogen.ai/partitioning","effect":"NoSchedule"})"})
    BOOST_TEST(json.find(part) != std::string::npos, part);
}

BOOST_AUTO_TEST_CASE(the_gpu_pool_is_the_one_pool_of_the_drivers_slices) {
  auto a = slice("s1", "1", 8);
  auto other_driver = slice("n1", "1", 1);
  other_driver.driver = "nic.example.com";
  other_driver.pool = "nics";
  BOOST_TEST(gc::gpu_pool({a, other_driver}) == a.pool);
  auto b = slice("s2", "1", 8);
  b.pool = "second";
  BOOST_TEST(gc::gpu_pool({a, b}).empty());
  BOOST_TEST(gc::gpu_pool({}).empty());
}

BOOST_AUTO_TEST_CASE(the_drivers_image_is_known_by_its_repository_name) {
  for (const char* yes :
       {"rocm/k8s-gpu-dra-driver:v1.0.0", "docker.io/rocm/k8s-gpu-dra-driver",
        "registry.local:5000/mirror/k8s-gpu-dra-driver@sha256:0123", "k8s-gpu-dra-driver"})
    BOOST_TEST(gc::dra_driver_image(yes), yes);
  for (const char* no : {"rocm/k8s-device-plugin:latest", "rocm/k8s-gpu-dra-driver-operator:v1",
                         "k8s-gpu-dra-driver.example:5000/x", ""})
    BOOST_TEST(!gc::dra_driver_image(no), no);
}

BOOST_AUTO_TEST_SUITE_END()
