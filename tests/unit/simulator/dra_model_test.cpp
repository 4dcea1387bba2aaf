// AMD's DRA driver as gpu-sim plays it (dra_model): the devices each partition mode
// publishes, the publishing helper's slice writes and its generation rule, kubelet's wipe
// 30 s after the driver went, adoption of existing slices by a restarted gpu-sim, the
// driver following its DaemonSet pod (which pods are the driver's; a new pod is a new
// driver), and the dynamic mode's shared counters. The driver's fixture runs step_node and
// step_dra side by side, as gpu-sim's tick does, against a fake API server that applies the
// slice writes.
#include "tools/simulator/dra_model.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <rapidjson/document.h>

#include <algorithm>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace sim = gpu_partitioner::sim;
namespace bdata = boost::unit_test::data;
using namespace std::chrono_literals;

namespace {

const sim::sim_time t0 = sim::sim_time{} + 1h;

std::vector<std::string> modes(const std::string& mode, int gpus = 8) {
  return std::vector<std::string>(static_cast<std::size_t>(gpus), mode);
}

std::string text(const sim::dra_device& d, const char* attribute) {
  auto it = d.attributes.find(attribute);
  return it == d.attributes.end() ? "<none>" : it->second.text;
}

long long number(const sim::dra_device& d, const char* attribute) {
  auto it = d.attributes.find(attribute);
  return it == d.attributes.end() ? -1 : it->second.integer;
}

// No host services: a compute change takes 10 s, a memory change 140 s.
const char* config_text = R"({"gpu-config-profiles":{
  "spx-nps1":{"profiles":[{"computePartition":"SPX","memoryPartition":"NPS1","numGPUsAssigned":8}]},
  "cpx-nps1":{"profiles":[{"computePartition":"CPX","memoryPartition":"NPS1","numGPUsAssigned":8}]},
  "cpx-nps4":{"profiles":[{"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":8}]}
}})";

/// One node with its GPU stack (step_node) and DRA driver (step_dra), and the API server's
/// copy of the driver's slices, which the writes change as the real server would.
struct dra_fixture {
  sim::sim_timing timing;
  sim::node_memory node_state;
  sim::dra_memory driver;
  sim::observed_node node;
  sim::observed_world world;
  std::vector<sim::observed_slice> slices;
  std::map<std::string, long long> allocatable;
  long long resource_version = 1000;
  int names = 0;
  int writes = 0;

  explicit dra_fixture(sim::gpu_api api = sim::gpu_api::dra) {
    node.name = "gpu-node-01";
    node.uid = "node-uid-1";
    node.api = api;
    node.dcm_pod = "dcm-abcde";
    node.dcm_config = "default-dcm-config";
    sim::dcm_failure error;
    file().config = sim::parse_dcm_config(config_text, error);
    BOOST_REQUIRE_MESSAGE(file().config.has_value(), error.message);
  }

  /// The file DCM's pod mounts.
  sim::dcm_file& file() { return world.files[node.dcm_config]; }

  /// gpu-sim's tick for the node; the writes reach the server unless `deliver` is false.
  std::vector<sim::slice_write> step(sim::sim_time now, bool deliver = true) {
    auto a = sim::step_node(node_state, node, world, now, timing);
    for (const auto& [k, v] : a.labels)
      v ? void(node.labels[k] = *v) : void(node.labels.erase(k));
    for (const auto& [k, v] : a.annotations)
      v ? void(node.annotations[k] = *v) : void(node.annotations.erase(k));
    if (a.capacity)
      node.gpu_capacity = *a.capacity;
    if (a.allocatable)
      allocatable = *a.allocatable;
    auto w = sim::step_dra(driver, node_state, node, slices, now, timing);
    if (deliver)
      apply(w);
    return w;
  }

  void apply(const std::vector<sim::slice_write>& ws) {
    for (const auto& w : ws) {
      ++writes;
      auto found = std::find_if(slices.begin(), slices.end(),
                                [&](const sim::observed_slice& s) { return s.name == w.name; });
      switch (w.what) {
      case sim::slice_write::kind::create: {
        sim::observed_slice s;
        s.name = node.name + "-gpu.amd.com-" + std::to_string(++names);
        s.uid = "slice-uid-" + std::to_string(names);
        s.resource_version = std::to_string(++resource_version);
        s.node = node.name;
        s.pool = w.pool;
        s.generation = w.generation;
        s.slice_count = w.slice_count;
        s.content = w.content;
        slices.push_back(std::move(s));
        break;
      }
      case sim::slice_write::kind::update:
        BOOST_REQUIRE(found != slices.end());
        BOOST_REQUIRE(found->resource_version == w.resource_version); // else a Conflict
        found->pool = w.pool;
        found->generation = w.generation;
        found->slice_count = w.slice_count;
        found->content = w.content;
        found->resource_version = std::to_string(++resource_version);
        break;
      case sim::slice_write::kind::remove:
        BOOST_REQUIRE(found != slices.end());
        BOOST_REQUIRE((w.uid.empty() || w.uid == found->uid));
        slices.erase(found);
        break;
      }
    }
  }

  void taint(bool on) { node.dcm_taint = on; }
  /// The node's running driver pod, by uid ("" when none runs or it is being deleted).
  void driver_pod(const std::string& uid) { node.driver_pod = uid; }
  void request(const std::string& profile) {
    node.labels[sim::profile_label] = profile;
    node.labels.erase(sim::state_label);
    ++node.profile_changes;
  }
  std::string state() const {
    auto it = node.labels.find(sim::state_label);
    return it == node.labels.end() ? "<none>" : it->second;
  }
  const sim::observed_slice& only_slice() const {
    BOOST_REQUIRE_EQUAL(slices.size(), 1u);
    return slices.front();
  }
  /// gpu-sim restarted: its memory is gone, the API server's objects stay.
  void restart() {
    node_state = {};
    driver = {};
  }
};

struct mode_row {
  const char* mode;
  std::size_t devices;
  const char* type;
  const char* profile;
  const char* memory;
  const char* compute_units;
  const char* simd_units;
};

std::ostream& operator<<(std::ostream& os, const mode_row& r) {
  return os << r.mode;
}

const mode_row mode_rows[] = {
    {"SPX/NPS1", 8, "amdgpu", "spx_nps1", "192Gi", "304", "1216"},
    {"DPX/NPS1", 16, "amdgpu-partition", "dpx_nps1", "96Gi", "152", "608"},
    {"QPX/NPS1", 32, "amdgpu-partition", "qpx_nps1", "48Gi", "76", "304"},
    {"CPX/NPS1", 64, "amdgpu-partition", "cpx_nps1", "24Gi", "38", "152"},
    {"CPX/NPS4", 64, "amdgpu-partition", "cpx_nps4", "24Gi", "38", "152"},
    {"QPX/NPS4", 32, "amdgpu-partition", "qpx_nps4", "48Gi", "76", "304"},
};

} // namespace

BOOST_AUTO_TEST_SUITE(devices)

BOOST_DATA_TEST_CASE(eight_gpus_in_one_mode_publish_their_partitions_with_a_share_each,
                     bdata::make(mode_rows), row) {
  const auto devices = sim::static_devices(modes(row.mode));
  BOOST_REQUIRE_EQUAL(devices.size(), row.devices);
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const auto& d = devices[i];
    // Cards from 1 and render nodes from 128, consecutive over the node.
    BOOST_TEST(d.name == "gpu-" + std::to_string(1 + i) + "-" + std::to_string(128 + i));
    BOOST_TEST(number(d, "cardIndex") == static_cast<long long>(1 + i));
    BOOST_TEST(number(d, "renderIndex") == static_cast<long long>(128 + i));
    BOOST_TEST(text(d, "type") == row.type);
    BOOST_TEST(text(d, "partitionProfile") == row.profile);
    BOOST_TEST(text(d, "family") == "AI");
    BOOST_TEST(text(d, "productName") == "AMD_Instinct_MI300X_OAM");
    BOOST_TEST((d.attributes.at("driverVersion").type == sim::device_attribute::kind::version));
    BOOST_TEST(text(d, "driverSrcVersion") != "<none>");
    BOOST_TEST(d.capacity.at("memory") == row.memory);
    BOOST_TEST(d.capacity.at("computeUnits") == row.compute_units);
    BOOST_TEST(d.capacity.at("simdUnits") == row.simd_units);
    BOOST_TEST(d.consumes_counters.empty());
  }
}

BOOST_AUTO_TEST_CASE(a_whole_gpu_has_its_own_pci_address_and_device_id) {
  const auto devices = sim::static_devices(modes("SPX/NPS1"));
  std::set<std::string> addresses;
  for (const auto& d : devices) {
    addresses.insert(text(d, "pciAddr"));
    BOOST_TEST(text(d, "deviceID") == "0x74a1");
    BOOST_TEST(text(d, "parentPciAddr") == "<none>");
    BOOST_TEST(text(d, "parentDeviceID") == "<none>");
  }
  BOOST_TEST(addresses.size() == 8u);
  BOOST_TEST(text(devices[0], "pciAddr") == "0000:0c:00.0");
}

// The driver's code, not its docs: partitions carry their parent's address and id under
// parent* names, and the parent GPU is not listed.
BOOST_AUTO_TEST_CASE(partitions_name_their_parent_and_the_parent_is_not_listed) {
  const auto devices = sim::static_devices(modes("CPX/NPS4"));
  std::map<std::string, int> per_parent;
  for (const auto& d : devices) {
    BOOST_TEST(text(d, "type") == "amdgpu-partition");
    BOOST_TEST(text(d, "pciAddr") == "<none>");
    BOOST_TEST(text(d, "deviceID") == "<none>");
    BOOST_TEST(text(d, "parentDeviceID") == "0x74a1");
    ++per_parent[text(d, "parentPciAddr")];
  }
  BOOST_TEST(per_parent.size() == 8u);
  for (const auto& [parent, n] : per_parent)
    BOOST_TEST(n == 8, parent << " has " << n << " partitions");
  BOOST_TEST(text(devices[0], "parentPciAddr") == "0000:0c:00.0");
  BOOST_TEST(text(devices[63], "parentPciAddr") == text(devices[56], "parentPciAddr"));
  // The standard PCIe root attribute, a partition's its parent's.
  BOOST_TEST(text(devices[0], "resource.kubernetes.io/pcieRoot") == "pci0000:0c");
  BOOST_TEST(text(devices[63], "resource.kubernetes.io/pcieRoot") ==
             text(devices[56], "resource.kubernetes.io/pcieRoot"));
  BOOST_TEST(text(devices[63], "resource.kubernetes.io/pcieRoot") != "pci0000:0c");
  BOOST_TEST(devices.back().name == "gpu-64-191");
}

BOOST_AUTO_TEST_CASE(gpus_in_different_modes_each_publish_their_own_style) {
  std::vector<std::string> mixed = modes("CPX/NPS1", 4);
  for (int i = 0; i < 2; ++i)
    mixed.push_back("SPX/NPS1");
  mixed.push_back("DPX/NPS1");
  mixed.push_back("QPX/NPS1");
  const auto devices = sim::static_devices(mixed);
  BOOST_REQUIRE_EQUAL(devices.size(), 32u + 2u + 2u + 4u);
  BOOST_TEST(text(devices[31], "partitionProfile") == "cpx_nps1");
  BOOST_TEST(devices[32].name == "gpu-33-160");
  BOOST_TEST(text(devices[32], "type") == "amdgpu");
  BOOST_TEST(text(devices[32], "pciAddr") == "0000:9f:00.0"); // the fifth GPU
  BOOST_TEST(devices[32].capacity.at("computeUnits") == "304");
  BOOST_TEST(text(devices[34], "partitionProfile") == "dpx_nps1");
  BOOST_TEST(devices[34].capacity.at("memory") == "96Gi");
  BOOST_TEST(text(devices[36], "partitionProfile") == "qpx_nps1");
  BOOST_TEST(devices.back().name == "gpu-40-167");
}

// Like the device plugin's fault: with 64 render minors and the BMC's video driver holding
// one, the 64th partition has no render node.
BOOST_AUTO_TEST_CASE(wrong_count_publishes_63_devices_where_there_would_be_64) {
  const auto cpx = sim::static_devices(modes("CPX/NPS4"), true);
  BOOST_TEST(cpx.size() == 63u);
  BOOST_TEST(cpx.back().name == "gpu-63-190");
  BOOST_TEST(sim::static_devices(modes("QPX/NPS1"), true).size() == 32u);
  BOOST_TEST(sim::static_devices(modes("SPX/NPS1"), true).size() == 8u);
  auto pool = sim::desired_pool(sim::gpu_api::dra, modes("CPX/NPS1"), true);
  BOOST_REQUIRE_EQUAL(pool.size(), 1u);
  BOOST_TEST(pool[0].devices.size() == 63u);
}

BOOST_AUTO_TEST_CASE(no_dra_driver_runs_on_a_device_plugin_node) {
  BOOST_TEST(sim::desired_pool(sim::gpu_api::device_plugin, modes("SPX/NPS1")).empty());
}

BOOST_AUTO_TEST_CASE(the_gpu_api_label_chooses_and_an_unknown_value_means_the_device_plugin) {
  using sim::gpu_api;
  std::map<std::string, std::string> labels;
  BOOST_TEST((sim::node_gpu_api(labels, gpu_api::dra) == gpu_api::dra));
  labels[sim::gpu_api_label] = "device-plugin";
  BOOST_TEST((sim::node_gpu_api(labels, gpu_api::dra) == gpu_api::device_plugin));
  labels[sim::gpu_api_label] = "dra-dynamic";
  BOOST_TEST((sim::node_gpu_api(labels, gpu_api::device_plugin) == gpu_api::dra_dynamic));
  bool unknown = false;
  labels[sim::gpu_api_label] = "DRA";
  BOOST_TEST((sim::node_gpu_api(labels, gpu_api::dra, &unknown) == gpu_api::device_plugin));
  BOOST_TEST(unknown);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(slice_json)

BOOST_AUTO_TEST_CASE(a_created_slice_is_owned_by_its_node_and_reads_back_unchanged) {
  sim::slice_write w;
  w.pool = "gpu-node-01";
  w.generation = 1;
  w.slice_count = 1;
  w.content.devices = sim::static_devices(modes("SPX/NPS1"));
  const auto json = sim::slice_object_json(w, "gpu-node-01", "node-uid-1");
  rapidjson::Document d;
  d.Parse(json.c_str());
  BOOST_REQUIRE(!d.HasParseError());
  BOOST_TEST(std::string(d["apiVersion"].GetString()) == "resource.k8s.io/v1");
  BOOST_TEST(std::string(d["metadata"]["generateName"].GetString()) == "gpu-node-01-gpu.amd.com-");
  const auto& owner = d["metadata"]["ownerReferences"][0];
  BOOST_TEST(std::string(owner["kind"].GetString()) == "Node");
  BOOST_TEST(std::string(owner["uid"].GetString()) == "node-uid-1");
  BOOST_TEST(owner["controller"].GetBool());
  BOOST_TEST(std::string(d["spec"]["driver"].GetString()) == "gpu.amd.com");
  BOOST_TEST(std::string(d["spec"]["nodeName"].GetString()) == "gpu-node-01");
  BOOST_TEST(d["spec"]["pool"]["resourceSliceCount"].GetInt64() == 1);
  BOOST_TEST(!d["spec"].HasMember("sharedCounters"));
  // v1: flat devices, attribute values with exactly one of int, bool, string, version.
  const auto& device = d["spec"]["devices"][0];
  BOOST_TEST(!device.HasMember("basic"));
  BOOST_TEST(std::string(device["attributes"]["type"]["string"].GetString()) == "amdgpu");
  BOOST_TEST(device["attributes"]["cardIndex"]["int"].GetInt64() == 1);
  BOOST_TEST(std::string(device["attributes"]["driverVersion"]["version"].GetString()) == "6.10.5");
  BOOST_TEST(device["attributes"]["type"].MemberCount() == 1u);
  BOOST_TEST(std::string(device["capacity"]["memory"]["value"].GetString()) == "192Gi");

  auto back = sim::parse_slice(d);
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST(back->node == "gpu-node-01");
  BOOST_TEST(back->pool == "gpu-node-01");
  BOOST_TEST(back->generation == 1);
  BOOST_TEST((back->content == w.content));
}

BOOST_AUTO_TEST_CASE(shared_counters_and_their_consumers_read_back_unchanged) {
  for (const auto& content : sim::dynamic_pool(8)) {
    sim::slice_write w;
    w.pool = "n";
    w.generation = 2;
    w.slice_count = 3;
    w.content = content;
    rapidjson::Document d;
    d.Parse(sim::slice_object_json(w, "n", "").c_str());
    BOOST_REQUIRE(!d.HasParseError());
    BOOST_TEST(!d["metadata"].HasMember("ownerReferences"));
    // Devices or shared counters, never both.
    BOOST_TEST(d["spec"].HasMember("devices") != d["spec"].HasMember("sharedCounters"));
    auto back = sim::parse_slice(d);
    BOOST_REQUIRE(back.has_value());
    BOOST_TEST((back->content == content));
  }
}

BOOST_AUTO_TEST_CASE(an_update_replaces_the_content_and_names_the_version_it_saw) {
  sim::slice_write w;
  w.what = sim::slice_write::kind::update;
  w.name = "gpu-node-01-gpu.amd.com-abcde";
  w.resource_version = "4711";
  w.pool = "gpu-node-01";
  w.generation = 1;
  w.slice_count = 1;
  w.content.devices = sim::static_devices(modes("CPX/NPS1"));
  rapidjson::Document d;
  d.Parse(sim::slice_patch_json(w).c_str());
  BOOST_REQUIRE(!d.HasParseError());
  BOOST_TEST(std::string(d["metadata"]["resourceVersion"].GetString()) == "4711");
  BOOST_TEST(d["spec"]["devices"].Size() == 64u);
  BOOST_TEST(d["spec"]["sharedCounters"].IsNull()); // a merge patch removes what is not there
  BOOST_TEST(d["spec"]["pool"]["generation"].GetInt64() == 1);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(publishing)

namespace {

sim::observed_slice existing(const std::string& name, long long generation, const std::string& mode,
                             long long count = 1) {
  sim::observed_slice s;
  s.name = name;
  s.uid = "uid-" + name;
  s.resource_version = "7";
  s.node = "n";
  s.pool = "n";
  s.generation = generation;
  s.slice_count = count;
  s.content.devices = sim::static_devices(modes(mode));
  return s;
}

sim::pool_content pool_of(const std::string& mode) {
  return sim::desired_pool(sim::gpu_api::dra, modes(mode));
}

} // namespace

BOOST_AUTO_TEST_CASE(a_pool_without_slices_is_created_at_generation_1) {
  auto w = sim::sync_pool("n", pool_of("SPX/NPS1"), {});
  BOOST_REQUIRE_EQUAL(w.size(), 1u);
  BOOST_TEST((w[0].what == sim::slice_write::kind::create));
  BOOST_TEST(w[0].generation == 1);
  BOOST_TEST(w[0].slice_count == 1);
  BOOST_TEST(w[0].content.devices.size() == 8u);
}

BOOST_AUTO_TEST_CASE(identical_content_writes_nothing) {
  BOOST_TEST(sim::sync_pool("n", pool_of("SPX/NPS1"), {existing("a", 4, "SPX/NPS1")}).empty());
}

// "Kept generation because at most one update API call is necessary": consumers see a new
// resourceVersion and new devices under the same generation.
BOOST_AUTO_TEST_CASE(a_one_slice_pool_is_updated_in_place_and_keeps_its_generation) {
  auto w = sim::sync_pool("n", pool_of("CPX/NPS4"), {existing("a", 4, "SPX/NPS1")});
  BOOST_REQUIRE_EQUAL(w.size(), 1u);
  BOOST_TEST((w[0].what == sim::slice_write::kind::update));
  BOOST_TEST(w[0].name == "a");
  BOOST_TEST(w[0].resource_version == "7");
  BOOST_TEST(w[0].generation == 4);
  BOOST_TEST(w[0].content.devices.size() == 64u);
}

BOOST_AUTO_TEST_CASE(slices_of_an_older_generation_are_deleted) {
  auto w = sim::sync_pool("n", pool_of("SPX/NPS1"),
                          {existing("old", 2, "CPX/NPS1"), existing("a", 3, "SPX/NPS1")});
  BOOST_REQUIRE_EQUAL(w.size(), 1u);
  BOOST_TEST((w[0].what == sim::slice_write::kind::remove));
  BOOST_TEST(w[0].name == "old");
  BOOST_TEST(w[0].uid == "uid-old"); // only the slice it saw
  BOOST_TEST(w[0].resource_version == "7");
}

BOOST_AUTO_TEST_CASE(a_second_slice_of_a_one_slice_pool_is_deleted_and_the_generation_kept) {
  auto w = sim::sync_pool("n", pool_of("SPX/NPS1"),
                          {existing("a", 1, "SPX/NPS1"), existing("b", 1, "SPX/NPS1")});
  BOOST_REQUIRE_EQUAL(w.size(), 1u);
  BOOST_TEST((w[0].what == sim::slice_write::kind::remove));
  BOOST_TEST(w[0].name == "b");
}

BOOST_AUTO_TEST_CASE(two_slices_that_match_no_desired_one_are_replaced_under_a_new_generation) {
  auto w = sim::sync_pool("n", pool_of("CPX/NPS1"),
                          {existing("a", 5, "SPX/NPS1"), existing("b", 5, "QPX/NPS1")});
  BOOST_REQUIRE_EQUAL(w.size(), 3u);
  BOOST_TEST((w[0].what == sim::slice_write::kind::remove));
  BOOST_TEST((w[1].what == sim::slice_write::kind::remove));
  BOOST_TEST((w[2].what == sim::slice_write::kind::create));
  BOOST_TEST(w[2].generation == 6);
}

BOOST_AUTO_TEST_CASE(a_multi_slice_pool_that_gains_a_slice_moves_every_slice_to_a_new_generation) {
  const auto pool = sim::dynamic_pool(8);
  std::vector<sim::observed_slice> have;
  for (std::size_t i = 0; i < 2; ++i) { // the last device slice is missing
    sim::observed_slice s;
    s.name = "s" + std::to_string(i);
    s.resource_version = "9";
    s.node = s.pool = "n";
    s.generation = 2;
    s.slice_count = 3;
    s.content = pool[i];
    have.push_back(s);
  }
  auto w = sim::sync_pool("n", pool, have);
  BOOST_REQUIRE_EQUAL(w.size(), 3u);
  int updates = 0, creates = 0;
  for (const auto& x : w) {
    BOOST_TEST(x.generation == 3);
    BOOST_TEST(x.slice_count == 3);
    updates += x.what == sim::slice_write::kind::update;
    creates += x.what == sim::slice_write::kind::create;
  }
  BOOST_TEST(updates == 2);
  BOOST_TEST(creates == 1);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(driver_and_kubelet)

BOOST_AUTO_TEST_CASE(a_dra_node_publishes_one_slice_and_advertises_no_amd_resources) {
  dra_fixture f;
  auto w = f.step(t0);
  BOOST_REQUIRE_EQUAL(w.size(), 1u);
  BOOST_TEST((w[0].what == sim::slice_write::kind::create));
  const auto& s = f.only_slice();
  BOOST_TEST(s.pool == "gpu-node-01");
  BOOST_TEST(s.generation == 1);
  BOOST_TEST(s.slice_count == 1);
  BOOST_TEST(s.content.devices.size() == 8u);
  BOOST_TEST(f.node.gpu_capacity.empty());
  BOOST_TEST(f.allocatable.empty());
  BOOST_TEST(f.node.labels.at("amd.com/gpu.device-id") == "74a1"); // the labeller runs
}

BOOST_AUTO_TEST_CASE(an_unchanged_pool_is_never_written_again) {
  dra_fixture f;
  f.step(t0);
  const auto version = f.only_slice().resource_version;
  for (auto t = 1s; t < 10min; t += 7s)
    BOOST_TEST_REQUIRE(f.step(t0 + t).empty());
  BOOST_TEST(f.only_slice().resource_version == version);
  BOOST_TEST(f.writes == 1);
}

BOOST_AUTO_TEST_CASE(writes_not_yet_seen_are_not_asked_for_again_until_resend_after) {
  dra_fixture f;
  BOOST_TEST(f.step(t0, false).size() == 1u); // the create is in flight
  BOOST_TEST(f.step(t0 + 1s, false).empty());
  BOOST_TEST(f.step(t0 + 3s - 1ms, false).empty());
  auto again = f.step(t0 + 3s); // never seen: asked again
  BOOST_TEST(again.size() == 1u);
  BOOST_TEST(f.step(t0 + 3s + 50ms).empty()); // seen now
}

// The generation fact: the driver's plugin is back before kubelet wiped its slice, and the
// helper updates the slice in place; generation 1 both before and after the repartition.
BOOST_AUTO_TEST_CASE(a_repartition_within_the_wipe_delay_updates_the_slice_in_place) {
  dra_fixture f;
  f.step(t0);
  const auto before = f.only_slice();
  f.taint(true);
  f.step(t0 + 1s); // the plugin goes with the taint
  f.request("cpx-nps1");
  f.step(t0 + 2s);
  f.step(t0 + 12s); // a compute change: 10 s
  BOOST_REQUIRE_EQUAL(f.state(), "success");
  BOOST_TEST(f.only_slice().content.devices.size() == 8u); // the driver is down: no change
  f.taint(false);
  f.step(t0 + 13s);
  auto w = f.step(t0 + 18s); // the plugin's restart: 5 s
  BOOST_REQUIRE_EQUAL(w.size(), 1u);
  BOOST_TEST((w[0].what == sim::slice_write::kind::update));
  const auto& after = f.only_slice();
  BOOST_TEST(after.name == before.name);
  BOOST_TEST(after.generation == 1);
  BOOST_TEST(after.resource_version != before.resource_version);
  BOOST_TEST(after.content.devices.size() == 64u);
  BOOST_TEST(text(after.content.devices[0], "partitionProfile") == "cpx_nps1");
}

BOOST_AUTO_TEST_CASE(kubelet_wipes_the_slices_30_s_scaled_after_the_driver_went) {
  dra_fixture f;
  f.timing.scale = 0.5;
  f.step(t0);
  f.taint(true);
  f.step(t0 + 1s);
  BOOST_TEST(f.step(t0 + 1s + 15s - 1ms).empty());
  BOOST_TEST(f.slices.size() == 1u);
  auto w = f.step(t0 + 1s + 15s);
  BOOST_REQUIRE_EQUAL(w.size(), 1u);
  BOOST_TEST((w[0].what == sim::slice_write::kind::remove));
  BOOST_TEST(w[0].uid.empty()); // kubelet's DeleteCollection: no preconditions
  BOOST_TEST(f.slices.empty());
}

BOOST_AUTO_TEST_CASE(a_driver_back_after_the_wipe_creates_a_new_slice_at_generation_1) {
  dra_fixture f;
  f.step(t0);
  const auto first = f.only_slice().name;
  f.taint(true);
  f.step(t0 + 1s);
  f.request("cpx-nps4");
  f.step(t0 + 2s);
  f.step(t0 + 31s); // wiped
  BOOST_TEST(f.slices.empty());
  f.step(t0 + 142s);
  BOOST_REQUIRE_EQUAL(f.state(), "success");
  f.taint(false);
  f.step(t0 + 150s);
  f.step(t0 + 155s);
  const auto& s = f.only_slice();
  BOOST_TEST(s.name != first);
  BOOST_TEST(s.generation == 1);
  BOOST_TEST(s.content.devices.size() == 64u);
  BOOST_TEST(text(s.content.devices[0], "partitionProfile") == "cpx_nps4");
}

BOOST_AUTO_TEST_CASE(a_driver_back_before_the_wipe_cancels_it) {
  dra_fixture f;
  f.step(t0);
  f.taint(true);
  f.step(t0 + 1s);
  f.taint(false);
  f.step(t0 + 20s);
  f.step(t0 + 25s); // up again, nothing to change
  for (auto t = 26s; t < 2min; t += 1s)
    BOOST_TEST_REQUIRE(f.step(t0 + t).empty());
  BOOST_TEST(f.slices.size() == 1u);
  BOOST_TEST(f.writes == 1);
}

// The plugin's faults apply to the driver's kubelet plugin too.
BOOST_AUTO_TEST_CASE(a_crash_looping_driver_is_wiped_and_never_publishes_again) {
  dra_fixture f;
  f.node.labels[sim::fault_label] = "plugin-crashloop";
  f.step(t0);
  f.taint(true);
  f.step(t0 + 1s);
  f.taint(false);
  for (auto t = 2s; t < 5min; t += 1s)
    f.step(t0 + t);
  BOOST_TEST(f.slices.empty());
}

BOOST_AUTO_TEST_CASE(a_slow_driver_comes_back_after_ten_restarts_worth_and_republishes) {
  dra_fixture f;
  f.node.labels[sim::fault_label] = "slow-plugin";
  f.step(t0);
  f.taint(true);
  f.step(t0 + 1s);
  f.taint(false);
  f.step(t0 + 2s);
  f.step(t0 + 2s + 49s);
  BOOST_TEST(f.slices.empty()); // wiped at 31 s, not back yet
  f.step(t0 + 2s + 50s);
  BOOST_TEST(f.only_slice().generation == 1);
}

BOOST_AUTO_TEST_CASE(wrong_count_publishes_63_cpx_partitions) {
  dra_fixture f;
  f.node.labels[sim::fault_label] = "wrong-count";
  f.node.annotations[sim::partition_annotation] = "CPX/NPS4";
  f.step(t0);
  BOOST_TEST(f.only_slice().content.devices.size() == 63u);
}

// A restarted gpu-sim is not a restarted driver: it finds the slices there and, content
// unchanged, writes nothing.
BOOST_AUTO_TEST_CASE(a_restarted_simulator_adopts_the_slices_it_finds) {
  dra_fixture f;
  f.step(t0);
  f.taint(true);
  f.step(t0 + 1s);
  f.request("cpx-nps1");
  f.step(t0 + 2s);
  f.step(t0 + 12s);
  f.taint(false);
  f.step(t0 + 13s);
  f.step(t0 + 18s);
  const auto before = f.only_slice();
  BOOST_REQUIRE_EQUAL(before.content.devices.size(), 64u);
  f.restart();
  for (auto t = 60s; t < 5min; t += 1s)
    BOOST_TEST_REQUIRE(f.step(t0 + t).empty());
  BOOST_TEST(f.only_slice().resource_version == before.resource_version);
  BOOST_TEST(f.only_slice().name == before.name);
}

BOOST_AUTO_TEST_CASE(a_restarted_simulator_on_a_tainted_node_wipes_30_s_after_its_start) {
  dra_fixture f;
  f.step(t0);
  f.restart();
  f.taint(true);
  f.step(t0 + 1h);
  BOOST_TEST(f.step(t0 + 1h + 29s).empty());
  f.step(t0 + 1h + 30s);
  BOOST_TEST(f.slices.empty());
}

BOOST_AUTO_TEST_CASE(slices_of_another_pool_on_the_node_are_deleted) {
  dra_fixture f;
  sim::observed_slice stray;
  stray.name = "stray";
  stray.uid = "stray-uid";
  stray.resource_version = "3";
  stray.node = f.node.name;
  stray.pool = "someone-else";
  stray.generation = 1;
  stray.slice_count = 1;
  f.slices.push_back(stray);
  f.step(t0);
  BOOST_TEST(f.only_slice().pool == f.node.name);
}

BOOST_AUTO_TEST_CASE(a_node_that_moves_to_the_device_plugin_loses_its_slices_after_the_delay) {
  dra_fixture f;
  f.step(t0);
  f.node.api = sim::gpu_api::device_plugin;
  f.step(t0 + 1s);
  f.step(t0 + 6s); // the device plugin is up
  BOOST_TEST(f.allocatable.at("amd.com/gpu") == 8);
  BOOST_TEST(f.slices.size() == 1u);
  f.step(t0 + 31s);
  BOOST_TEST(f.slices.empty());
}

BOOST_AUTO_TEST_CASE(a_node_that_moves_to_dra_writes_its_amd_resources_as_zero) {
  dra_fixture f(sim::gpu_api::device_plugin);
  f.step(t0);
  BOOST_TEST(f.allocatable.at("amd.com/gpu") == 8);
  BOOST_TEST(f.slices.empty());
  f.node.api = sim::gpu_api::dra;
  f.step(t0 + 1s);
  BOOST_TEST(f.allocatable.at("amd.com/gpu") == 0);
  BOOST_TEST(f.node.gpu_capacity.at("amd.com/gpu") == 0);
  f.step(t0 + 6s);
  BOOST_TEST(f.only_slice().content.devices.size() == 8u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(driver_pods)

namespace {

// A pod as the API server shows it: owned by `owner_kind` (none if empty), with these
// labels and one container per image.
std::string pod_json(const std::string& owner_kind, const std::vector<std::string>& images,
                     const std::string& labels = "{}") {
  std::string owners = owner_kind.empty()
                           ? "[]"
                           : R"([{"apiVersion":"apps/v1","kind":")" + owner_kind +
                                 R"(","name":"amd-gpu-dra-driver-kubeletplugin","uid":"ds-1",)"
                                 R"("controller":true}])";
  std::string containers;
  for (std::size_t i = 0; i < images.size(); ++i)
    containers += std::string(i ? "," : "") + R"({"name":"c)" + std::to_string(i) +
                  R"(","image":")" + images[i] + R"("})";
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"kube-amd-gpu",)"
         R"("uid":"pod-uid","labels":)" +
         labels + R"(,"ownerReferences":)" + owners +
         R"(},"spec":{"nodeName":"gpu-node-01",)"
         R"("containers":[)" +
         containers + "]}}";
}

bool is_driver_pod(const std::string& json) {
  rapidjson::Document d;
  d.Parse(json.c_str());
  BOOST_REQUIRE_MESSAGE(!d.HasParseError(), json);
  return sim::dra_driver_pod(d);
}

const char* driver_images[] = {
    "rocm/k8s-gpu-dra-driver:sim",
    "registry.example/rocm/k8s-gpu-dra-driver@sha256:0123abcd",
    "k8s-gpu-dra-driver:v1",
    "k8s-gpu-dra-driver",
    "registry.example:5000/k8s-gpu-dra-driver:v1@sha256:0123abcd",
};

const char* other_images[] = {
    "rocm/k8s-device-plugin:sim",
    "rocm/k8s-gpu-dra-driver-operator:v1",
    "k8s-gpu-dra-driver.example/rocm/gpu-agent:v1",
    "rocm/k8s-gpu-dra-driver/helper:v1",
    "",
};

} // namespace

BOOST_DATA_TEST_CASE(a_daemonset_pod_of_the_drivers_image_is_a_driver_pod,
                     bdata::make(driver_images), image) {
  BOOST_TEST(is_driver_pod(pod_json("DaemonSet", {image})));
  // Its sidecar may come first.
  BOOST_TEST(is_driver_pod(pod_json("DaemonSet", {"busybox:1.36", image})));
}

BOOST_DATA_TEST_CASE(another_image_is_not, bdata::make(other_images), image) {
  BOOST_TEST(!is_driver_pod(pod_json("DaemonSet", {image})));
}

// The driver's image run by anything but a DaemonSet is not the node's driver.
BOOST_AUTO_TEST_CASE(the_drivers_image_outside_a_daemonset_is_not) {
  BOOST_TEST(!is_driver_pod(pod_json("ReplicaSet", {"rocm/k8s-gpu-dra-driver:sim"})));
  BOOST_TEST(!is_driver_pod(pod_json("", {"rocm/k8s-gpu-dra-driver:sim"})));
}

// AMD's chart: its kubeletplugin DaemonSet's pods carry the label, their container is
// `plugin`, and a site may mirror the image under another name.
BOOST_AUTO_TEST_CASE(a_daemonset_pod_labelled_kubeletplugin_is_a_driver_pod_whatever_its_image) {
  const std::string label = R"({"app.kubernetes.io/component":"kubeletplugin"})";
  BOOST_TEST(is_driver_pod(pod_json("DaemonSet", {"mirror.example/amd/gpu-dra:1.0"}, label)));
  BOOST_TEST(!is_driver_pod(pod_json("ReplicaSet", {"mirror.example/amd/gpu-dra:1.0"}, label)));
  BOOST_TEST(!is_driver_pod(pod_json("DaemonSet", {"mirror.example/amd/gpu-dra:1.0"},
                                     R"({"app.kubernetes.io/component":"controller"})")));
}

// The operator's device-level cordon: DCM repartitions under a DeviceTaintRule, no taint,
// while the driver runs; the driver read the GPUs at its start, so its slice still shows
// the old partitions.
BOOST_AUTO_TEST_CASE(while_the_driver_runs_through_a_repartition_its_slice_shows_the_old_ones) {
  dra_fixture f;
  f.driver_pod("pod-1");
  f.step(t0);
  const auto before = f.only_slice();
  f.request("cpx-nps1");
  for (auto t = 1s; t < 2min; t += 1s)
    BOOST_TEST_REQUIRE(f.step(t0 + t).empty());
  BOOST_REQUIRE_EQUAL(f.state(), "success");
  BOOST_TEST((f.node_state.gpu_modes == modes("CPX/NPS1")));
  BOOST_TEST(f.node_state.plugin_up);
  BOOST_TEST(f.only_slice().resource_version == before.resource_version);
  BOOST_TEST(f.only_slice().content.devices.size() == 8u);
  BOOST_TEST(text(f.only_slice().content.devices[0], "partitionProfile") == "spx_nps1");
}

// ...then the operator deletes the driver's pod: the plugin goes with it, and the pod its
// DaemonSet makes is a new driver, which reads the GPUs again as it starts (5 s, scaled)
// and updates the slice in place (back before kubelet's wipe).
BOOST_AUTO_TEST_CASE(the_pod_its_daemonset_makes_restarts_the_driver_and_it_rediscovers) {
  dra_fixture f;
  f.timing.scale = 0.5;
  f.driver_pod("pod-1");
  f.step(t0);
  const auto before = f.only_slice();
  f.request("cpx-nps1");
  f.step(t0 + 1s);
  f.step(t0 + 6s); // a compute change: 10 s, scaled
  BOOST_REQUIRE_EQUAL(f.state(), "success");
  f.driver_pod(""); // being deleted
  BOOST_TEST(f.step(t0 + 7s).empty());
  BOOST_TEST(!f.node_state.plugin_up);
  BOOST_TEST(!f.node_state.plugin_restarting);
  f.step(t0 + 10s); // no pod, no driver, however long it takes
  BOOST_TEST(!f.node_state.plugin_up);
  f.driver_pod("pod-2");
  f.step(t0 + 11s);
  BOOST_TEST(f.node_state.plugin_restarting);
  BOOST_TEST(f.step(t0 + 11s + 2500ms - 1ms).empty());
  auto w = f.step(t0 + 11s + 2500ms);
  BOOST_REQUIRE_EQUAL(w.size(), 1u);
  BOOST_TEST((w[0].what == sim::slice_write::kind::update));
  const auto& after = f.only_slice();
  BOOST_TEST(after.name == before.name);
  BOOST_TEST(after.generation == before.generation);
  BOOST_TEST(after.content.devices.size() == 64u);
  BOOST_TEST(text(after.content.devices[0], "partitionProfile") == "cpx_nps1");
}

// The watch may show the new pod before it showed the old one going: a pod other than the
// one the plugin runs in restarts it all the same.
BOOST_AUTO_TEST_CASE(a_new_pod_seen_while_the_driver_is_up_restarts_it) {
  dra_fixture f;
  f.driver_pod("pod-1");
  f.step(t0);
  f.request("cpx-nps4");
  f.step(t0 + 1s);
  f.step(t0 + 141s); // a memory change: 140 s
  BOOST_REQUIRE_EQUAL(f.state(), "success");
  BOOST_TEST(f.only_slice().content.devices.size() == 8u);
  f.driver_pod("pod-2");
  f.step(t0 + 142s);
  BOOST_TEST(!f.node_state.plugin_up);
  BOOST_TEST(f.node_state.plugin_restarting);
  BOOST_TEST(f.node_state.driver_pod == "pod-2");
  BOOST_TEST(f.step(t0 + 147s - 1ms).empty());
  f.step(t0 + 147s);
  BOOST_TEST(f.node_state.plugin_up);
  BOOST_TEST(text(f.only_slice().content.devices[0], "partitionProfile") == "cpx_nps4");
}

BOOST_AUTO_TEST_CASE(a_deleted_pod_takes_the_driver_down_and_kubelet_wipes_its_slice) {
  dra_fixture f;
  f.driver_pod("pod-1");
  f.step(t0);
  f.driver_pod("");
  f.step(t0 + 1s);
  BOOST_TEST(!f.node_state.plugin_up);
  BOOST_TEST(f.step(t0 + 31s - 1ms).empty());
  BOOST_TEST(f.slices.size() == 1u);
  auto w = f.step(t0 + 31s);
  BOOST_REQUIRE_EQUAL(w.size(), 1u);
  BOOST_TEST((w[0].what == sim::slice_write::kind::remove));
  BOOST_TEST(w[0].uid.empty());
  for (auto t = 32s; t < 3min; t += 1s)
    f.step(t0 + t);
  BOOST_TEST(f.slices.empty());
  BOOST_TEST(!f.node_state.plugin_up);
}

// The DaemonSet came after the nodes had published (tools/sim up): the first pod seen is
// the one the running plugin is in, not a new driver.
BOOST_AUTO_TEST_CASE(the_first_pod_seen_does_not_restart_a_running_driver) {
  dra_fixture f;
  f.step(t0);
  const auto before = f.only_slice();
  f.driver_pod("pod-1");
  for (auto t = 1s; t < 1min; t += 1s) {
    BOOST_TEST_REQUIRE(f.step(t0 + t).empty());
    BOOST_TEST_REQUIRE(f.node_state.plugin_up);
  }
  BOOST_TEST(f.node_state.driver_pod == "pod-1");
  BOOST_TEST(f.only_slice().resource_version == before.resource_version);
  // From now on the driver follows its pod.
  f.driver_pod("");
  f.step(t0 + 1min);
  BOOST_TEST(!f.node_state.plugin_up);
}

// No driver pod ever seen (the integration tests run no driver DaemonSet): the plugin
// follows the taint alone, as before pods counted.
BOOST_AUTO_TEST_CASE(without_a_driver_pod_ever_seen_only_the_taint_counts) {
  dra_fixture f;
  for (auto t = 0s; t < 1min; t += 1s) {
    f.step(t0 + t);
    BOOST_TEST_REQUIRE(f.node_state.plugin_up);
  }
  BOOST_TEST(f.node_state.driver_pod.empty());
  f.taint(true);
  f.step(t0 + 1min);
  BOOST_TEST(!f.node_state.plugin_up);
  f.taint(false);
  f.step(t0 + 1min + 1s);
  f.step(t0 + 1min + 6s - 1ms);
  BOOST_TEST(!f.node_state.plugin_up);
  f.step(t0 + 1min + 6s);
  BOOST_TEST(f.node_state.plugin_up);
  BOOST_TEST(f.slices.size() == 1u);
}

// With the taint, the taint manager evicts the pod (it does not tolerate amd-dcm) and the
// DaemonSet makes a new one only once the taint is gone: the driver starts in that one.
BOOST_AUTO_TEST_CASE(after_the_taint_the_driver_waits_for_its_new_pod) {
  dra_fixture f;
  f.driver_pod("pod-1");
  f.step(t0);
  f.taint(true);
  f.step(t0 + 1s);
  f.driver_pod("");
  f.step(t0 + 2s);
  f.taint(false);
  f.step(t0 + 3s);
  f.step(t0 + 20s);
  BOOST_TEST(!f.node_state.plugin_up);
  BOOST_TEST(!f.node_state.plugin_restarting);
  f.driver_pod("pod-2");
  f.step(t0 + 21s);
  f.step(t0 + 26s);
  BOOST_TEST(f.node_state.plugin_up);
  BOOST_TEST(f.slices.size() == 1u); // back before the wipe
}

// The device plugin is not the DRA driver: a DRA driver pod's comings and goings do not
// touch it.
BOOST_AUTO_TEST_CASE(a_device_plugin_node_ignores_driver_pods) {
  dra_fixture f(sim::gpu_api::device_plugin);
  f.driver_pod("pod-1");
  f.step(t0);
  f.driver_pod("");
  f.step(t0 + 1s);
  BOOST_TEST(f.node_state.plugin_up);
  BOOST_TEST(f.allocatable.at("amd.com/gpu") == 8);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(dynamic_mode)

BOOST_AUTO_TEST_CASE(eight_gpus_make_one_counter_slice_and_two_device_slices) {
  const auto pool = sim::dynamic_pool(8);
  BOOST_REQUIRE_EQUAL(pool.size(), 3u);
  BOOST_TEST(pool[0].devices.empty());
  BOOST_TEST(pool[0].shared_counters.size() == 8u);
  for (const auto& set : pool[0].shared_counters) {
    BOOST_TEST(set.counters.at("memory") == "192Gi");
    BOOST_TEST(set.counters.at("compute-units") == "304");
  }
  BOOST_TEST(pool[0].shared_counters[3].name == "gpu-3-counters");
  for (std::size_t i : {1u, 2u}) {
    BOOST_TEST(pool[i].shared_counters.empty());
    BOOST_TEST(pool[i].devices.size() == 60u); // 4 GPUs x (1 + 2 + 4 + 8)
  }
}

BOOST_AUTO_TEST_CASE(every_slice_keeps_to_the_api_servers_limits) {
  for (int gpus : {1, 4, 8, 9, 16}) {
    const auto pool = sim::dynamic_pool(gpus);
    std::size_t devices = 0, sets = 0;
    std::set<std::string> names;
    for (const auto& s : pool) {
      BOOST_TEST((s.devices.empty() || s.shared_counters.empty()));
      BOOST_TEST(s.devices.size() <= sim::max_counter_devices_per_slice);
      BOOST_TEST(s.shared_counters.size() <= sim::max_counter_sets_per_slice);
      devices += s.devices.size();
      sets += s.shared_counters.size();
      for (const auto& d : s.devices)
        names.insert(d.name);
    }
    BOOST_TEST(devices == 15u * static_cast<std::size_t>(gpus), gpus << " GPUs");
    BOOST_TEST(names.size() == devices, "device names are unique");
    BOOST_TEST(sets == static_cast<std::size_t>(gpus));
  }
}

BOOST_AUTO_TEST_CASE(each_partition_consumes_its_share_of_its_gpus_counters) {
  const auto pool = sim::dynamic_pool(8);
  std::map<std::string, const sim::dra_device*> by_name;
  for (const auto& s : pool)
    for (const auto& d : s.devices)
      by_name[d.name] = &d;
  const auto& spx = *by_name.at("gpu-5-spx");
  BOOST_TEST(text(spx, "type") == "amdgpu");
  BOOST_REQUIRE_EQUAL(spx.consumes_counters.size(), 1u);
  BOOST_TEST(spx.consumes_counters[0].counter_set == "gpu-5-counters");
  BOOST_TEST(spx.consumes_counters[0].counters.at("memory") == "192Gi");
  BOOST_TEST(spx.consumes_counters[0].counters.at("compute-units") == "304");
  const auto& cpx = *by_name.at("gpu-5-cpx-7");
  BOOST_TEST(text(cpx, "type") == "amdgpu-partition");
  BOOST_TEST(text(cpx, "parentPciAddr") == "0000:af:00.0");
  BOOST_TEST(cpx.consumes_counters[0].counter_set == "gpu-5-counters");
  BOOST_TEST(cpx.consumes_counters[0].counters.at("memory") == "24Gi");
  BOOST_TEST(cpx.consumes_counters[0].counters.at("compute-units") == "38");
  BOOST_TEST(by_name.at("gpu-0-dpx-1")->consumes_counters[0].counters.at("compute-units") == "152");
  BOOST_TEST(by_name.at("gpu-7-qpx-3")->consumes_counters[0].counters.at("memory") == "48Gi");
}

BOOST_AUTO_TEST_CASE(a_dynamic_node_publishes_a_three_slice_pool_that_dcm_does_not_change) {
  dra_fixture f(sim::gpu_api::dra_dynamic);
  f.step(t0);
  BOOST_REQUIRE_EQUAL(f.slices.size(), 3u);
  std::set<std::string> versions;
  for (const auto& s : f.slices) {
    BOOST_TEST(s.generation == 1);
    BOOST_TEST(s.slice_count == 3);
    versions.insert(s.resource_version);
  }
  // DCM repartitions anyway (nothing stops it): the driver's devices stay as they are.
  f.taint(true);
  f.step(t0 + 1s);
  f.request("cpx-nps1");
  f.step(t0 + 2s);
  f.step(t0 + 12s);
  BOOST_REQUIRE_EQUAL(f.state(), "success");
  f.taint(false);
  f.step(t0 + 13s);
  BOOST_TEST(f.step(t0 + 18s).empty());
  BOOST_TEST(f.slices.size() == 3u);
  for (const auto& s : f.slices)
    BOOST_TEST(versions.count(s.resource_version) == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
