// The simulated DCM, device plugin and node labeller for one node (step_node), behaviour
// by behaviour as amd-dcm.md's "Behaviours that bite" lists them: runs only while DCM's pod
// runs, triggers (label, file change, DCM's start), an attempt in flight completing after
// a newer label, one queued trigger, host services, busy GPUs and their retries, Events as
// DCM writes them, the plugin's allocatable 0 while down, naming strategies, the labeller's
// labels, and the injected faults. Each test drives one node with constructed times and
// writes the actions back into the observed node, as the API server would.
#include "tools/simulator/node_model.hpp"

#include <boost/test/unit_test.hpp>

#include <rapidjson/document.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace sim = gpu_partitioner::sim;
using namespace std::chrono_literals;

namespace {

// Two host services: each attempt that reaches the GPUs costs 20 s before its work.
const char* config_text = R"({"gpu-config-profiles":{
  "spx-nps1":{"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"SPX","memoryPartition":"NPS1","numGPUsAssigned":8}]},
  "cpx-nps4":{"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":8}]},
  "cpx-nps1":{"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX","memoryPartition":"NPS1","numGPUsAssigned":8}]},
  "spx-nps4":{"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"SPX","memoryPartition":"NPS4","numGPUsAssigned":8}]},
  "half-cpx":{"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX","memoryPartition":"NPS1","numGPUsAssigned":4},{"computePartition":"SPX","memoryPartition":"NPS1","numGPUsAssigned":4}]}
},"gpuClientSystemdServices":{"names":["amd-metrics-exporter","gpuagent"]}})";

const sim::sim_time t0 = sim::sim_time{} + 1h;

struct node_fixture {
  sim::sim_timing timing;
  sim::stack_options stack;
  sim::node_memory memory;
  sim::observed_node node;
  sim::observed_world world;
  std::vector<sim::sim_event> events;
  std::map<std::string, long long> allocatable;

  node_fixture() {
    node.name = "gpu-node-01";
    node.dcm_pod = "dcm-abcde";
    node.dcm_config = "default-dcm-config";
    sim::dcm_failure error;
    file().config = sim::parse_dcm_config(config_text, error);
    BOOST_REQUIRE_MESSAGE(file().config.has_value(), error.message);
  }

  /// The file DCM's pod mounts.
  sim::dcm_file& file() { return world.files[node.dcm_config]; }

  sim::node_actions step(sim::sim_time now) {
    auto a = sim::step_node(memory, node, world, now, timing, stack);
    for (const auto& [k, v] : a.labels)
      v ? void(node.labels[k] = *v) : void(node.labels.erase(k));
    for (const auto& [k, v] : a.annotations)
      v ? void(node.annotations[k] = *v) : void(node.annotations.erase(k));
    if (a.capacity)
      node.gpu_capacity = *a.capacity;
    if (a.allocatable)
      allocatable = *a.allocatable;
    events.insert(events.end(), a.events.begin(), a.events.end());
    return a;
  }

  std::string label(const char* key) const {
    auto it = node.labels.find(key);
    return it == node.labels.end() ? "<none>" : it->second;
  }
  std::string state() const { return label(sim::state_label); }
  std::string last_reason() const { return events.empty() ? "<none>" : events.back().reason; }

  /// What the operator does: set the profile and drop a stale state in one write.
  void request(const std::string& profile) {
    node.labels[sim::profile_label] = profile;
    node.labels.erase(sim::state_label);
    ++node.profile_changes;
  }
};

rapidjson::Document message_of(const sim::sim_event& e) {
  rapidjson::Document d;
  d.Parse(e.message.c_str());
  BOOST_REQUIRE_MESSAGE(!d.HasParseError() && d.IsObject(), e.message);
  return d;
}

} // namespace

BOOST_AUTO_TEST_SUITE(labeller_and_plugin)

BOOST_AUTO_TEST_CASE(a_new_node_reports_its_gpus_and_amds_labels_but_no_ready_label) {
  node_fixture f;
  f.step(t0);
  BOOST_TEST(f.allocatable.at("amd.com/gpu") == 8);
  BOOST_TEST(f.node.gpu_capacity.at("amd.com/gpu") == 8);
  // As the GPU operator runs the labeller: no partition labels.
  BOOST_TEST(f.label(sim::partition_label) == "<none>");
  BOOST_TEST(f.label("amd.com/gpu.compute-partitioning-supported") == "<none>");
  BOOST_TEST(f.label("amd.com/gpu.memory-partitioning-supported") == "<none>");
  BOOST_TEST(f.label("amd.com/gpu.device-id") == "74a1");
  BOOST_TEST(f.label("amd.com/gpu.family") == "AI");
  BOOST_TEST(f.label("feature.node.kubernetes.io/amd-gpu") == "true");
  BOOST_TEST(f.label("amd.com/gpu.ready") == "<none>");
  BOOST_TEST(f.events.empty());
}

BOOST_AUTO_TEST_CASE(the_labellers_partition_labels_are_set_only_when_turned_on) {
  node_fixture f;
  f.stack.partition_labels = true;
  f.step(t0);
  BOOST_TEST(f.label(sim::partition_label) == "spx_nps1");
  BOOST_TEST(f.label("amd.com/gpu.compute-partitioning-supported") == "true");
  BOOST_TEST(f.label("amd.com/gpu.memory-partitioning-supported") == "true");
}

BOOST_AUTO_TEST_CASE(a_sites_ready_label_is_set_only_when_asked_and_goes_with_the_plugin) {
  node_fixture f;
  f.stack.partition_labels = true;
  f.stack.ready_key = "example.com/gpu-ready";
  f.stack.ready_value = "true";
  f.step(t0);
  BOOST_TEST(f.label("example.com/gpu-ready") == "true");
  f.node.dcm_taint = true;
  f.step(t0 + 1s);
  BOOST_TEST(f.label("example.com/gpu-ready") == "<none>");
  BOOST_TEST(f.label(sim::partition_label) == "spx_nps1"); // AMD's labeller's labels stay
}

BOOST_AUTO_TEST_CASE(allocatable_drops_to_zero_at_the_taint_and_capacity_five_minutes_later) {
  node_fixture f;
  f.step(t0);
  f.node.dcm_taint = true;
  f.step(t0 + 1s);
  BOOST_TEST(f.allocatable.at("amd.com/gpu") == 0);
  BOOST_TEST(f.node.gpu_capacity.at("amd.com/gpu") == 8);
  f.step(t0 + 1s + 299s);
  BOOST_TEST(f.node.gpu_capacity.at("amd.com/gpu") == 8);
  f.step(t0 + 1s + 300s);
  BOOST_TEST(f.node.gpu_capacity.at("amd.com/gpu") == 0);
  // 5 s after the taint goes, the plugin is back.
  f.node.dcm_taint = false;
  f.step(t0 + 400s);
  BOOST_TEST(f.allocatable.at("amd.com/gpu") == 0);
  f.step(t0 + 405s);
  BOOST_TEST(f.allocatable.at("amd.com/gpu") == 8);
  BOOST_TEST(f.node.gpu_capacity.at("amd.com/gpu") == 8);
}

BOOST_AUTO_TEST_CASE(mixed_strategy_names_resources_by_style_and_zeroes_the_old_names) {
  node_fixture f;
  f.stack.strategy = sim::resource_strategy::mixed;
  f.step(t0);
  BOOST_TEST(f.allocatable.at("amd.com/spx_nps1") == 8);
  f.node.dcm_taint = true;
  f.request("cpx-nps4");
  f.step(t0 + 1s);
  f.step(t0 + 1s + 20s + 140s);
  BOOST_TEST(f.state() == "success");
  f.node.dcm_taint = false;
  f.step(t0 + 200s);
  f.step(t0 + 205s);
  BOOST_TEST(f.allocatable.at("amd.com/cpx_nps4") == 64);
  BOOST_TEST(f.allocatable.at("amd.com/spx_nps1") == 0);
}

BOOST_AUTO_TEST_CASE(gpus_of_two_styles_crash_loop_the_single_plugin_and_drop_the_label) {
  node_fixture f;
  f.stack.partition_labels = true;
  f.step(t0);
  f.node.dcm_taint = true;
  f.request("half-cpx");
  f.step(t0 + 1s);
  f.step(t0 + 1s + 20s + 10s);
  BOOST_TEST(f.state() == "success");
  f.node.dcm_taint = false;
  for (auto t = 40s; t < 120s; t += 5s)
    f.step(t0 + t);
  BOOST_TEST(f.allocatable.at("amd.com/gpu") == 0);
  // The labeller is not the plugin: it runs, and a node of two styles has no style label.
  BOOST_TEST(f.label(sim::partition_label) == "spx_nps1"); // still the old value
}

// On a DRA node the GPU operator deploys no device plugin: amd.com/ resources left from
// one are written as 0 once, and the DRA driver's plugin goes and comes with the taint.
BOOST_AUTO_TEST_CASE(a_dra_node_zeroes_resources_a_device_plugin_left_once_and_writes_no_more) {
  node_fixture f;
  f.stack.ready_key = "amd.com/gpu.ready";
  f.stack.ready_value = "true";
  f.node.api = sim::gpu_api::dra;
  f.node.gpu_capacity = {{"amd.com/gpu", 8}};
  auto first = f.step(t0);
  BOOST_REQUIRE(first.capacity.has_value());
  BOOST_TEST(first.capacity->at("amd.com/gpu") == 0);
  BOOST_TEST(f.allocatable.at("amd.com/gpu") == 0);
  BOOST_TEST(f.memory.plugin_up);
  BOOST_TEST(f.label("amd.com/gpu.ready") == "true");
  f.node.dcm_taint = true;
  auto down = f.step(t0 + 1s);
  BOOST_TEST(!f.memory.plugin_up);
  BOOST_TEST(!down.allocatable.has_value());
  BOOST_TEST(f.label("amd.com/gpu.ready") == "<none>");
  f.node.dcm_taint = false;
  f.step(t0 + 2s);
  auto up = f.step(t0 + 7s);
  BOOST_TEST(f.memory.plugin_up);
  BOOST_TEST((!up.allocatable && !up.capacity));
  for (auto t = 8s; t < 10min; t += 10s) {
    auto a = f.step(t0 + t);
    BOOST_TEST_REQUIRE((!a.allocatable && !a.capacity));
  }
}

BOOST_AUTO_TEST_CASE(a_dra_node_without_amd_resources_writes_none) {
  node_fixture f;
  f.node.api = sim::gpu_api::dra_dynamic;
  auto first = f.step(t0);
  BOOST_TEST((!first.allocatable && !first.capacity));
  BOOST_TEST(f.memory.plugin_up);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(dcm_runs)

BOOST_AUTO_TEST_CASE(a_label_gets_no_answer_while_no_dcm_pod_runs_on_the_node) {
  node_fixture f;
  f.node.dcm_pod.clear();
  f.step(t0);
  f.request("cpx-nps4");
  for (auto t = 1s; t < 600s; t += 10s)
    f.step(t0 + t);
  BOOST_TEST(f.state() == "<none>");
  BOOST_TEST(f.events.empty());
  // DCM's pod starts: it runs the label it finds.
  f.node.dcm_pod = "dcm-abcde";
  f.step(t0 + 600s);
  f.step(t0 + 600s + 160s);
  BOOST_TEST(f.state() == "success");
  BOOST_TEST(f.last_reason() == "SuccessfullyPartitioned");
}

BOOST_AUTO_TEST_CASE(dcm_reads_the_configmap_its_own_pod_mounts) {
  node_fixture f;
  // Another ConfigMap of DCM's namespace holds a profile the mounted one does not.
  sim::dcm_failure error;
  f.world.files["dcm-st"].config = sim::parse_dcm_config(
      R"({"gpu-config-profiles":{"qpx-nps1":{"profiles":[{"computePartition":"QPX",)"
      R"("memoryPartition":"NPS1","numGPUsAssigned":8}]}}})",
      error);
  f.step(t0);
  f.request("qpx-nps1");
  f.step(t0 + 1s);
  f.step(t0 + 3s);
  BOOST_TEST(f.last_reason() == "NonExistentProfile");
  // A DCM pod mounting dcm-st (standalone DCM's chart) reads that one.
  f.node.dcm_pod = "dcm-st-xyz";
  f.node.dcm_config = "dcm-st";
  f.step(t0 + 10s);
  f.step(t0 + 10s + 12s);
  BOOST_TEST(f.state() == "success");
  BOOST_TEST(f.last_reason() == "SuccessfullyPartitioned");
}

BOOST_AUTO_TEST_CASE(a_change_of_a_configmap_no_dcm_pod_mounts_runs_nothing) {
  node_fixture f;
  f.step(t0);
  f.request("spx-nps1");
  f.step(t0 + 1s);
  f.step(t0 + 30s);
  BOOST_TEST(f.events.size() == 1u);
  ++f.world.files["some-payload"].generation;
  f.step(t0 + 60s);
  f.step(t0 + 100s);
  BOOST_TEST(f.events.size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_dcm_pod_without_the_mount_finds_no_file_InvalidJSONInConfigMap) {
  node_fixture f;
  f.node.dcm_config.clear();
  f.step(t0);
  f.request("spx-nps1");
  f.step(t0 + 1s);
  f.step(t0 + 3s);
  BOOST_TEST(f.state() == "failure");
  BOOST_TEST(f.last_reason() == "InvalidJSONInConfigMap");
}

BOOST_AUTO_TEST_CASE(the_config_volume_is_found_by_its_mount_path_with_or_without_a_slash) {
  const std::vector<std::pair<std::string, std::string>> volumes{
      {"other", "payload"}, {"config-manager-config-volume", "config-manager-config"}};
  BOOST_TEST(sim::mounted_dcm_config(volumes,
                                     {{"config-manager-config-volume", "/etc/config-manager/"}}) ==
             "config-manager-config");
  BOOST_TEST(
      sim::mounted_dcm_config(volumes, {{"config-manager-config-volume", "/etc/config-manager"}}) ==
      "config-manager-config");
  BOOST_TEST(sim::mounted_dcm_config(volumes, {{"other", "/etc/other"}}).empty());
  BOOST_TEST(sim::mounted_dcm_config(volumes, {}).empty());
}

BOOST_AUTO_TEST_CASE(dcm_pods_are_the_gpu_operators_or_standalone_dcms) {
  BOOST_TEST(sim::is_dcm_pod({{"app.kubernetes.io/name", "device-config-manager"}}));
  BOOST_TEST(sim::is_dcm_pod({{"app", "amdgpu-device-config-manager"}}));
  BOOST_TEST(!sim::is_dcm_pod({{"app", "device-config-manager"}}));
  BOOST_TEST(!sim::is_dcm_pod({}));
}

BOOST_AUTO_TEST_CASE(a_run_stops_the_host_services_then_partitions_and_says_so_as_dcm_does) {
  node_fixture f;
  f.step(t0);
  f.node.dcm_taint = true;
  f.request("cpx-nps4");
  f.step(t0 + 1s);
  // Two services at 10 s each, then a memory change that reloads the driver: 140 s.
  f.step(t0 + 1s + 159s);
  BOOST_TEST(f.state() == "<none>");
  f.step(t0 + 1s + 160s);
  BOOST_TEST(f.state() == "success");
  BOOST_REQUIRE(f.events.size() == 1u);
  BOOST_TEST(f.events[0].type == "Normal");
  BOOST_TEST(f.events[0].reason == "SuccessfullyPartitioned");
  auto m = message_of(f.events[0]);
  BOOST_TEST(std::string(m["SelectedProfile"].GetString()) == "cpx-nps4");
  BOOST_TEST(std::string(m["FinalStatus"].GetString()) == "Success");
  BOOST_REQUIRE(m["GPUStatus"].IsArray());
  BOOST_TEST(m["GPUStatus"].Size() == 8u);
  BOOST_TEST(std::string(m["GPUStatus"][0]["PartitionType"].GetString()) == "CPX-NPS4");
  BOOST_TEST(f.node.annotations.at(sim::partition_annotation) == "CPX/NPS4");
}

BOOST_AUTO_TEST_CASE(the_mode_the_gpus_are_in_already_is_a_warning_and_success) {
  node_fixture f;
  f.step(t0);
  f.request("spx-nps1");
  f.step(t0 + 1s);
  f.step(t0 + 1s + 22s);
  BOOST_TEST(f.state() == "success");
  BOOST_TEST(f.events.back().type == "Warning");
  BOOST_TEST(f.last_reason() == "RequestedPartitionConfigAlreadyExists");
}

BOOST_AUTO_TEST_CASE(rewriting_the_same_label_does_nothing_and_a_removal_then_set_runs_again) {
  node_fixture f;
  f.step(t0);
  f.request("spx-nps1");
  f.step(t0 + 1s);
  f.step(t0 + 30s);
  BOOST_TEST(f.events.size() == 1u);
  f.node.labels.erase(sim::state_label); // a rewrite of the same value: no change seen
  f.step(t0 + 40s);
  f.step(t0 + 80s);
  BOOST_TEST(f.events.size() == 1u);
  BOOST_TEST(f.state() == "<none>");
  f.node.profile_changes += 2; // removed and set again between two looks
  f.step(t0 + 90s);
  f.step(t0 + 120s);
  BOOST_TEST(f.events.size() == 2u);
  BOOST_TEST(f.state() == "success");
}

// The state label is not tied to a request: an attempt in flight completes and writes its
// state after a newer label was set, then the newer label's run starts.
BOOST_AUTO_TEST_CASE(
    an_attempt_in_flight_writes_its_state_after_a_newer_label_then_the_new_run_starts) {
  node_fixture f;
  f.step(t0);
  f.request("cpx-nps1"); // compute change: 20 s + 10 s
  f.step(t0 + 1s);
  f.request("cpx-nps4"); // the label moves on mid-attempt
  f.step(t0 + 10s);
  f.step(t0 + 31s);
  BOOST_TEST(f.state() == "success"); // the old request's answer, under the new label
  BOOST_TEST(f.label(sim::profile_label) == "cpx-nps4");
  BOOST_TEST(std::string(message_of(f.events.back())["SelectedProfile"].GetString()) == "cpx-nps1");
  // Then cpx-nps4 runs: 20 s services + a memory change.
  f.step(t0 + 31s + 159s);
  BOOST_TEST(f.events.size() == 1u);
  f.step(t0 + 31s + 160s);
  BOOST_TEST(f.events.size() == 2u);
  BOOST_TEST(std::string(message_of(f.events.back())["SelectedProfile"].GetString()) == "cpx-nps4");
  BOOST_TEST(f.node.annotations.at(sim::partition_annotation) == "CPX/NPS4");
}

BOOST_AUTO_TEST_CASE(one_trigger_waits_behind_an_attempt_and_further_ones_are_dropped) {
  node_fixture f;
  f.step(t0);
  f.request("cpx-nps1");
  f.step(t0 + 1s);
  f.request("spx-nps1");
  f.step(t0 + 2s);
  f.request("cpx-nps4");
  f.step(t0 + 3s);
  f.step(t0 + 31s); // cpx-nps1 ends; one queued run starts, for the label now: cpx-nps4
  f.step(t0 + 31s + 160s);
  f.step(t0 + 400s);
  BOOST_REQUIRE(f.events.size() == 2u);
  BOOST_TEST(std::string(message_of(f.events[1])["SelectedProfile"].GetString()) == "cpx-nps4");
}

// Worker/TriggerRetryLoop: the worker holds one trigger, its channel one more, each with
// the profile read when it fired; a fourth label is dropped, so an older profile is
// applied under a newer label and the newest never runs.
BOOST_AUTO_TEST_CASE(an_older_queued_profile_is_applied_after_a_newer_label_that_was_dropped) {
  node_fixture f;
  f.step(t0);
  f.request("cpx-nps1"); // runs: 20 s services + 10 s compute change
  f.step(t0 + 1s);
  f.request("spx-nps1"); // the worker takes it and cancels the run
  f.step(t0 + 2s);
  f.request("cpx-nps4"); // waits in the channel
  f.step(t0 + 3s);
  f.request("half-cpx"); // dropped
  f.step(t0 + 4s);
  for (auto t = 5s; t < 20min; t += 1s)
    f.step(t0 + t);
  BOOST_REQUIRE(f.events.size() == 2u);
  BOOST_TEST(std::string(message_of(f.events[0])["SelectedProfile"].GetString()) == "cpx-nps1");
  BOOST_TEST(std::string(message_of(f.events[1])["SelectedProfile"].GetString()) == "cpx-nps4");
  BOOST_TEST(f.label(sim::profile_label) == "half-cpx");
  BOOST_TEST(f.state() == "success");
  BOOST_TEST(f.node.annotations.at(sim::partition_annotation) == "CPX/NPS4");
}

BOOST_AUTO_TEST_CASE(a_trigger_carries_the_profile_it_read_even_if_the_label_is_removed) {
  node_fixture f;
  f.step(t0);
  f.request("cpx-nps1");
  f.step(t0 + 1s);
  f.request("cpx-nps4"); // held by the worker
  f.step(t0 + 2s);
  f.node.labels.erase(sim::profile_label); // a removal is only logged
  ++f.node.profile_changes;
  f.step(t0 + 3s);
  for (auto t = 4s; t < 10min; t += 1s)
    f.step(t0 + t);
  BOOST_REQUIRE(f.events.size() == 2u);
  BOOST_TEST(std::string(message_of(f.events[1])["SelectedProfile"].GetString()) == "cpx-nps4");
}

BOOST_AUTO_TEST_CASE(a_change_of_the_file_runs_the_label_again_on_every_labelled_node) {
  node_fixture f;
  f.step(t0);
  f.request("spx-nps1");
  f.step(t0 + 1s);
  f.step(t0 + 30s);
  BOOST_TEST(f.events.size() == 1u);
  ++f.file().generation; // kubelet delivered a new config.json
  f.step(t0 + 60s);
  f.step(t0 + 60s + 22s);
  BOOST_TEST(f.events.size() == 2u);
  BOOST_TEST(f.last_reason() == "RequestedPartitionConfigAlreadyExists");
  // A node without the label does not run.
  node_fixture g;
  g.step(t0);
  ++g.file().generation;
  g.step(t0 + 1s);
  g.step(t0 + 100s);
  BOOST_TEST(g.events.empty());
}

BOOST_AUTO_TEST_CASE(a_profile_the_file_does_not_hold_yet_fails_with_NonExistentProfile) {
  node_fixture f;
  f.step(t0);
  f.request("qpx-nps1");
  f.step(t0 + 1s);
  f.step(t0 + 3s);
  BOOST_TEST(f.state() == "failure");
  BOOST_TEST(f.last_reason() == "NonExistentProfile");
  BOOST_TEST(message_of(f.events.back())["GPUStatus"].IsNull());
  // Not retried; the file's arrival runs it again, unasked, and it succeeds.
  f.step(t0 + 200s);
  BOOST_TEST(f.events.size() == 1u);
  sim::dcm_failure error;
  f.file().config = sim::parse_dcm_config(
      R"({"gpu-config-profiles":{"qpx-nps1":{"profiles":[{"computePartition":"QPX",)"
      R"("memoryPartition":"NPS1","numGPUsAssigned":8}]}}})",
      error);
  ++f.file().generation;
  f.step(t0 + 210s);
  f.step(t0 + 230s);
  BOOST_TEST(f.state() == "success");
}

BOOST_AUTO_TEST_CASE(dcm_1_3_fails_a_refused_mode_and_retries_every_minute_for_30_minutes) {
  node_fixture f;
  f.step(t0);
  f.request("spx-nps4");
  f.step(t0 + 1s);
  // The compute mode stays SPX: the kernel refuses the memory set, nothing changes.
  f.step(t0 + 1s + 22s);
  BOOST_TEST(f.state() == "failure");
  BOOST_TEST(f.last_reason() == "PartitionRetrying");
  BOOST_TEST(f.events.size() == 1u);
  BOOST_TEST(f.node.annotations.at(sim::partition_annotation) == "SPX/NPS1");
  // Retried every minute for 30 minutes: no more Events, then PartitionFailure.
  for (auto t = 170s; t < 40min; t += 1s)
    f.step(t0 + t);
  BOOST_TEST(f.last_reason() == "PartitionFailure");
  BOOST_TEST(f.events.size() == 2u);
  BOOST_TEST(f.state() == "failure");
  for (const auto& e : f.events)
    BOOST_TEST(e.reason != "AMDSMIAPIFailure");
}

BOOST_AUTO_TEST_CASE(newer_dcm_refuses_a_mode_the_gpu_does_not_take_as_InvalidProfileInfo_at_once) {
  for (auto version : {sim::dcm_version::v1_4, sim::dcm_version::v1_5}) {
    node_fixture f;
    f.stack.version = version;
    f.step(t0);
    f.request("spx-nps4");
    f.step(t0 + 1s);
    f.step(t0 + 1s + 22s);
    BOOST_TEST(f.state() == "failure");
    BOOST_TEST(f.last_reason() == "InvalidProfileInfo");
    BOOST_TEST(f.events.back().type == "Warning");
    BOOST_TEST(f.node.annotations.at(sim::partition_annotation) == "SPX/NPS1"); // nothing set
    for (auto t = 30s; t < 10min; t += 1s)
      f.step(t0 + t);
    BOOST_TEST(f.events.size() == 1u); // no retry
  }
}

// From SPX/NPS1 to CPX/NPS2 (not on MI300X): 1.3 sets NPS2, then the kernel refuses CPX.
BOOST_AUTO_TEST_CASE(dcm_1_3_sets_the_memory_mode_before_the_refused_compute_mode) {
  node_fixture f;
  sim::dcm_failure error;
  f.file().config = sim::parse_dcm_config(
      R"({"gpu-config-profiles":{"cpx-nps2":{"profiles":[{"computePartition":"CPX",)"
      R"("memoryPartition":"NPS2","numGPUsAssigned":8}]}}})",
      error);
  f.step(t0);
  f.request("cpx-nps2");
  f.step(t0 + 1s);
  f.step(t0 + 1s + 145s);
  BOOST_TEST(f.state() == "failure");
  BOOST_TEST(f.last_reason() == "PartitionRetrying");
  BOOST_TEST(f.node.annotations.at(sim::partition_annotation) == "SPX/NPS2");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(dcm_events)

BOOST_AUTO_TEST_CASE(an_event_is_a_new_object_named_after_its_reason_and_stamped_by_the_node) {
  const auto at = std::chrono::system_clock::from_time_t(1796572800); // 2026-12-06T16:00:00Z
  rapidjson::Document d;
  const auto text = sim::dcm_event_object({"Warning", "PartitionRetrying", R"({"a":"b"})"},
                                          "kube-amd-gpu", "dcm-abcde", "gpu-node-01", at);
  d.Parse(text.c_str());
  BOOST_REQUIRE(!d.HasParseError());
  BOOST_TEST(std::string(d["metadata"]["generateName"].GetString()) == "PartitionRetrying");
  BOOST_TEST(!d["metadata"].HasMember("name"));
  BOOST_TEST(!d.HasMember("reportingComponent"));
  BOOST_TEST(!d.HasMember("eventTime"));
  BOOST_TEST(std::string(d["involvedObject"]["name"].GetString()) == "dcm-abcde");
  BOOST_TEST(std::string(d["source"]["component"].GetString()) == "amd-device-config-manager");
  BOOST_TEST(std::string(d["source"]["host"].GetString()) == "gpu-node-01");
  BOOST_TEST(std::string(d["firstTimestamp"].GetString()) == "2026-12-06T16:00:00Z");
  BOOST_TEST(std::string(d["lastTimestamp"].GetString()) == "2026-12-06T16:00:00Z");
  BOOST_TEST(d["count"].GetInt() == 1);
  BOOST_TEST(std::string(d["message"].GetString()) == R"({"a":"b"})");
}

BOOST_AUTO_TEST_CASE(the_nodes_clock_skew_label_shifts_its_events) {
  node_fixture f;
  f.node.labels[sim::clock_skew_label] = "n90"; // 90 s behind
  f.step(t0);
  f.request("spx-nps1");
  f.step(t0 + 1s);
  auto a = f.step(t0 + 30s);
  BOOST_REQUIRE(a.events.size() == 1u);
  BOOST_TEST(a.clock_skew.count() == -90);
  f.node.labels[sim::clock_skew_label] = "3600"; // an hour ahead
  f.request("cpx-nps1");
  f.step(t0 + 40s);
  a = f.step(t0 + 80s);
  BOOST_REQUIRE(a.events.size() == 1u);
  BOOST_TEST(a.clock_skew.count() == 3600);
}

BOOST_AUTO_TEST_CASE(amd_smis_init_failure_is_a_normal_AMDSMIAPIFailure) {
  node_fixture f;
  f.node.labels[sim::fault_label] = "dcm-failure";
  f.step(t0);
  f.request("cpx-nps4");
  for (auto t = 1s; t < 60s; t += 1s)
    f.step(t0 + t);
  BOOST_REQUIRE(f.events.size() == 1u);
  BOOST_TEST(f.last_reason() == "AMDSMIAPIFailure");
  BOOST_TEST(f.events[0].type == "Normal");
  BOOST_TEST(f.state() == "failure");
}

BOOST_AUTO_TEST_CASE(a_file_that_is_no_json_is_reported_with_the_previous_runs_profile) {
  node_fixture f;
  f.step(t0);
  f.request("spx-nps1");
  for (auto t = 1s; t < 40s; t += 1s)
    f.step(t0 + t);
  BOOST_REQUIRE(f.events.size() == 1u);
  sim::dcm_failure error;
  f.file().config = sim::parse_dcm_config("{not json", error, &f.file().unreadable);
  f.file().problem = error;
  ++f.file().generation;
  f.request("cpx-nps4");
  for (auto t = 40s; t < 80s; t += 1s)
    f.step(t0 + t);
  BOOST_REQUIRE(f.events.size() == 2u);
  BOOST_TEST(f.last_reason() == "InvalidJSONInConfigMap");
  BOOST_TEST(std::string(message_of(f.events[1])["SelectedProfile"].GetString()) == "spx-nps1");
  // A file of JSON with a wrong type fails later, in PartitionGPU: the run's own profile.
  f.file().config = sim::parse_dcm_config(
      R"({"gpu-config-profiles":{"x":{"profiles":[{"numGPUsAssigned":"8"}]}}})", error,
      &f.file().unreadable);
  f.file().problem = error;
  ++f.file().generation;
  for (auto t = 80s; t < 120s; t += 1s)
    f.step(t0 + t);
  BOOST_REQUIRE(f.events.size() == 3u);
  BOOST_TEST(f.last_reason() == "InvalidJSONInConfigMap");
  BOOST_TEST(std::string(message_of(f.events[2])["SelectedProfile"].GetString()) == "cpx-nps4");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(dcm_cost)

BOOST_AUTO_TEST_CASE(each_attempt_past_amd_smis_init_lists_every_pod_of_the_cluster) {
  node_fixture f;
  f.world.gpu_pods[f.node.name] = 8; // busy: retried every minute
  f.step(t0);
  f.request("cpx-nps4");
  int lists = 0;
  for (auto t = 1s; t < 200s; t += 1s)
    lists += f.step(t0 + t).pod_lists;
  BOOST_TEST(lists == 3); // attempts at 1 s, 83 s, 165 s
  // Refusals before amd-smi (an unknown profile) list nothing.
  node_fixture g;
  g.step(t0);
  g.request("no-such-profile");
  int refused = 0;
  for (auto t = 1s; t < 60s; t += 1s)
    refused += g.step(t0 + t).pod_lists;
  BOOST_TEST(refused == 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(kmm_driver)

BOOST_AUTO_TEST_CASE(newer_dcm_says_a_kmm_memory_change_in_a_normal_event_and_takes_5_minutes) {
  for (auto version : {sim::dcm_version::v1_4, sim::dcm_version::v1_5}) {
    node_fixture f;
    f.stack.version = version;
    f.node.labels[sim::kmm_driver_label] = "true";
    f.step(t0);
    f.request("cpx-nps4");
    f.step(t0 + 1s);
    f.step(t0 + 1s + 20s); // the services are stopped: the memory change starts
    BOOST_REQUIRE(f.events.size() == 1u);
    BOOST_TEST(f.events[0].type == "Normal");
    BOOST_TEST(f.events[0].reason ==
               "recovering memory partition for KMM driver, might take upto 5 mins");
    BOOST_TEST(std::string(message_of(f.events[0])["SelectedProfile"].GetString()) == "cpx-nps4");
    BOOST_TEST(f.state() == "<none>");
    // 140 s is not enough with KMM: up to 5 minutes.
    f.step(t0 + 1s + 20s + 140s);
    BOOST_TEST(f.state() == "<none>");
    f.step(t0 + 1s + 20s + 300s);
    BOOST_TEST(f.state() == "success");
    BOOST_TEST(f.last_reason() == "SuccessfullyPartitioned");
    BOOST_TEST(f.events.size() == 2u);
  }
}

BOOST_AUTO_TEST_CASE(a_compute_only_change_or_a_driver_not_under_kmm_says_nothing_mid_run) {
  node_fixture f;
  f.stack.version = sim::dcm_version::v1_5;
  f.node.labels[sim::kmm_driver_label] = "true";
  f.step(t0);
  f.request("cpx-nps1"); // compute only
  for (auto t = 1s; t < 60s; t += 1s)
    f.step(t0 + t);
  BOOST_REQUIRE(f.events.size() == 1u);
  BOOST_TEST(f.last_reason() == "SuccessfullyPartitioned");
  node_fixture g;
  g.stack.version = sim::dcm_version::v1_5;
  g.step(t0);
  g.request("cpx-nps4");
  for (auto t = 1s; t < 200s; t += 1s)
    g.step(t0 + t);
  BOOST_REQUIRE(g.events.size() == 1u);
  BOOST_TEST(g.last_reason() == "SuccessfullyPartitioned");
}

BOOST_AUTO_TEST_CASE(dcm_1_3_takes_the_kmm_reload_time_without_an_event) {
  node_fixture f;
  f.node.labels[sim::kmm_driver_label] = "true";
  f.step(t0);
  f.request("cpx-nps4");
  for (auto t = 1s; t < 200s; t += 1s)
    f.step(t0 + t);
  BOOST_TEST(f.events.empty());
  f.step(t0 + 1s + 20s + 300s);
  BOOST_TEST(f.events.size() == 1u);
  BOOST_TEST(f.state() == "success");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(busy_gpus)

BOOST_AUTO_TEST_CASE(busy_gpus_fail_and_retry_every_minute_and_succeed_once_free) {
  node_fixture f;
  f.step(t0);
  f.world.gpu_pods[f.node.name] = 1;
  f.request("cpx-nps4");
  f.step(t0 + 1s);
  // GPUs 1-7 change (a memory change: 140 s after the services' 20 s); GPU 0 is busy.
  f.step(t0 + 1s + 160s);
  BOOST_TEST(f.state() == "failure");
  BOOST_TEST(f.last_reason() == "PartitionRetrying");
  BOOST_TEST(std::string(message_of(f.events.back())["FinalStatus"].GetString()) ==
             "Partition failed, retrying.");
  // The second busy attempt says nothing new.
  f.step(t0 + 1s + 160s + 60s);
  f.step(t0 + 1s + 160s + 60s + 22s);
  BOOST_TEST(f.events.size() == 1u);
  // The GPUs free up: the next attempt partitions.
  f.world.gpu_pods.clear();
  for (auto t = 250s; t < 600s; t += 1s)
    f.step(t0 + t);
  BOOST_TEST(f.state() == "success");
  BOOST_TEST(f.last_reason() == "SuccessfullyPartitioned");
}

BOOST_AUTO_TEST_CASE(idle_gpus_change_and_busy_ones_fail_leaving_mixed_modes) {
  node_fixture f;
  f.step(t0);
  f.world.gpu_pods[f.node.name] = 2; // two SPX GPUs held: GPUs 0 and 1
  f.request("cpx-nps4");
  f.step(t0 + 1s);
  f.step(t0 + 1s + 160s);
  BOOST_TEST(f.state() == "failure");
  BOOST_TEST(f.last_reason() == "PartitionRetrying");
  BOOST_TEST(f.node.annotations.at(sim::partition_annotation) ==
             "SPX/NPS1,SPX/NPS1,CPX/NPS4,CPX/NPS4,CPX/NPS4,CPX/NPS4,CPX/NPS4,CPX/NPS4");
  const auto message = message_of(f.events.back());
  const auto gpus = message["GPUStatus"].GetArray();
  BOOST_TEST(std::string(gpus[0]["Status"].GetString()) == "Failure");
  BOOST_TEST(std::string(gpus[1]["Status"].GetString()) == "Failure");
  // The single-strategy plugin cannot start on GPUs of two styles: once the taint goes
  // it crash-loops and advertises nothing.
  f.node.dcm_taint = true;
  f.step(t0 + 170s);
  f.node.dcm_taint = false;
  f.step(t0 + 171s);
  f.step(t0 + 200s);
  BOOST_TEST(f.allocatable.at("amd.com/gpu") == 0);
}

BOOST_AUTO_TEST_CASE(held_partitions_are_packed_onto_the_gpus_from_gpu_0) {
  const std::vector<std::string> cpx(8, "CPX/NPS4");
  auto busy = sim::busy_gpu_map(cpx, 9, false); // 9 CPX partitions: GPUs 0 and 1
  BOOST_TEST(std::count(busy.begin(), busy.end(), true) == 2);
  BOOST_TEST((busy[0] && busy[1] && !busy[2]));
  busy = sim::busy_gpu_map(std::vector<std::string>(8, "SPX/NPS1"), 0, false);
  BOOST_TEST(std::count(busy.begin(), busy.end(), true) == 0);
  busy = sim::busy_gpu_map(std::vector<std::string>(8, "SPX/NPS1"), 0, true); // gpu-held
  BOOST_TEST(std::count(busy.begin(), busy.end(), true) == 8);
}

BOOST_AUTO_TEST_CASE(gpus_busy_for_thirty_minutes_end_in_PartitionFailure) {
  node_fixture f;
  f.step(t0);
  f.world.gpu_pods[f.node.name] = 2;
  f.request("cpx-nps4");
  for (auto t = 1s; t < 40min; t += 1s)
    f.step(t0 + t);
  BOOST_TEST(f.state() == "failure");
  BOOST_TEST(f.last_reason() == "PartitionFailure");
  BOOST_TEST(f.events.size() == 2u);
}

BOOST_AUTO_TEST_CASE(newer_dcm_writes_failure_while_it_retries_as_no_source_has_in_progress) {
  node_fixture f;
  f.stack.version = sim::dcm_version::v1_5;
  f.step(t0);
  f.world.gpu_pods[f.node.name] = 8; // every GPU held
  f.request("cpx-nps4");
  f.step(t0 + 1s);
  f.step(t0 + 1s + 22s);
  BOOST_TEST(f.state() == "failure");
  BOOST_TEST(f.last_reason() == "PartitionRetrying");
}

BOOST_AUTO_TEST_CASE(a_new_label_cancels_a_wait_between_attempts) {
  node_fixture f;
  f.step(t0);
  f.world.gpu_pods[f.node.name] = 8; // every GPU held
  f.request("cpx-nps4");
  f.step(t0 + 1s);
  f.step(t0 + 1s + 22s); // busy: waits 60 s
  f.world.gpu_pods.clear();
  f.request("spx-nps1");
  f.step(t0 + 30s); // starts at once, not after the wait
  f.step(t0 + 30s + 22s);
  BOOST_TEST(f.state() == "success");
  BOOST_TEST(f.last_reason() == "RequestedPartitionConfigAlreadyExists");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(faults)

BOOST_AUTO_TEST_CASE(all_fault_words_parse_and_unknown_ones_are_reported) {
  std::vector<std::string> unknown;
  auto f = sim::parse_faults("dcm-failure, dcm-stuck,wrong-count,slow-plugin,dcm-missing,"
                             "kubelet-stopped,state-lost,gpu-held,plugin-crashloop,bogus",
                             &unknown);
  BOOST_TEST((f.dcm_failure && f.dcm_stuck && f.wrong_count && f.slow_plugin && f.dcm_missing &&
              f.kubelet_stopped && f.state_lost && f.gpu_held && f.plugin_crashloop));
  BOOST_TEST(unknown == (std::vector<std::string>{"bogus"}));
}

BOOST_AUTO_TEST_CASE(state_lost_writes_the_event_but_no_state_label) {
  node_fixture f;
  f.node.labels[sim::fault_label] = "state-lost";
  f.step(t0);
  f.request("spx-nps1");
  f.step(t0 + 1s);
  f.step(t0 + 30s);
  BOOST_TEST(f.state() == "<none>");
  BOOST_TEST(f.last_reason() == "RequestedPartitionConfigAlreadyExists");
}

BOOST_AUTO_TEST_CASE(gpu_held_makes_every_attempt_busy) {
  node_fixture f;
  f.node.labels[sim::fault_label] = "gpu-held";
  f.step(t0);
  f.request("cpx-nps4");
  f.step(t0 + 1s);
  f.step(t0 + 30s);
  BOOST_TEST(f.last_reason() == "PartitionRetrying");
}

BOOST_AUTO_TEST_CASE(dcm_failure_is_an_amd_smi_failure_not_retried) {
  node_fixture f;
  f.node.labels[sim::fault_label] = "dcm-failure";
  f.step(t0);
  f.request("cpx-nps4");
  f.step(t0 + 1s);
  f.step(t0 + 30s);
  f.step(t0 + 200s);
  BOOST_TEST(f.state() == "failure");
  BOOST_TEST(f.last_reason() == "AMDSMIAPIFailure");
  BOOST_TEST(f.events.size() == 1u);
}

BOOST_AUTO_TEST_CASE(dcm_stuck_never_answers) {
  node_fixture f;
  f.node.labels[sim::fault_label] = "dcm-stuck";
  f.step(t0);
  f.request("cpx-nps4");
  for (auto t = 1s; t < 600s; t += 10s)
    f.step(t0 + t);
  BOOST_TEST(f.state() == "<none>");
  BOOST_TEST(f.events.empty());
}

BOOST_AUTO_TEST_CASE(plugin_crashloop_never_reports_after_the_untaint) {
  node_fixture f;
  f.step(t0);
  f.node.labels[sim::fault_label] = "plugin-crashloop";
  f.node.dcm_taint = true;
  f.step(t0 + 1s);
  f.node.dcm_taint = false;
  for (auto t = 2s; t < 120s; t += 5s)
    f.step(t0 + t);
  BOOST_TEST(f.allocatable.at("amd.com/gpu") == 0);
}

BOOST_AUTO_TEST_CASE(wrong_count_shows_63_in_cpx) {
  node_fixture f;
  f.node.labels[sim::fault_label] = "wrong-count";
  f.node.annotations[sim::partition_annotation] = "CPX/NPS4";
  f.step(t0);
  BOOST_TEST(f.allocatable.at("amd.com/gpu") == 63);
}

BOOST_AUTO_TEST_CASE(a_restarted_simulator_keeps_the_modes_from_the_annotation) {
  node_fixture f;
  f.stack.partition_labels = true;
  f.node.annotations[sim::partition_annotation] = "CPX/NPS4";
  f.step(t0);
  BOOST_TEST(f.allocatable.at("amd.com/gpu") == 64);
  BOOST_TEST(f.label(sim::partition_label) == "cpx_nps4");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(jitter)

BOOST_AUTO_TEST_CASE(jitter_is_the_same_for_a_node_and_seed_and_stays_within_the_fraction) {
  std::set<double> dcm;
  for (int i = 0; i < 200; ++i) {
    const std::string node = "gpu-node-" + std::to_string(i);
    const auto j = sim::jitter_of(node, 0.25, 7);
    const auto again = sim::jitter_of(node, 0.25, 7);
    BOOST_TEST(j.dcm == again.dcm);
    BOOST_TEST(j.plugin == again.plugin);
    BOOST_TEST(j.dcm >= 0.75);
    BOOST_TEST(j.dcm <= 1.25);
    BOOST_TEST(j.plugin >= 0.75);
    BOOST_TEST(j.plugin <= 1.25);
    dcm.insert(j.dcm);
  }
  // Nodes do not share factors, and they spread over the range.
  BOOST_TEST(dcm.size() == 200u);
  BOOST_TEST(*dcm.begin() < 0.85);
  BOOST_TEST(*dcm.rbegin() > 1.15);
}

BOOST_AUTO_TEST_CASE(another_seed_gives_a_node_other_factors) {
  BOOST_TEST(sim::jitter_of("gpu-node-01", 0.2, 1).dcm !=
             sim::jitter_of("gpu-node-01", 0.2, 2).dcm);
}

BOOST_AUTO_TEST_CASE(no_jitter_leaves_every_delay_as_configured) {
  const auto j = sim::jitter_of("gpu-node-01", 0.0, 1);
  BOOST_TEST(j.dcm == 1.0);
  BOOST_TEST(j.plugin == 1.0);
  const sim::sim_timing base;
  const auto t = sim::jittered(base, j);
  BOOST_TEST(t.memory_change.count() == base.memory_change.count());
  BOOST_TEST(t.plugin_restart.count() == base.plugin_restart.count());
}

BOOST_AUTO_TEST_CASE(jitter_scales_dcms_delays_and_the_plugin_restart_by_their_own_factors) {
  sim::sim_timing base;
  base.scale = 0.1;
  const auto t = sim::jittered(base, sim::node_jitter{1.5, 0.5});
  BOOST_TEST(t.scale == 0.1);
  BOOST_TEST(t.memory_change.count() == 210000);
  BOOST_TEST(t.host_service.count() == 15000);
  BOOST_TEST(t.compute_change.count() == 15000);
  BOOST_TEST(t.plugin_restart.count() == 2500);
  // What is not DCM's or the plugin's stays: kubelet's and the retry loop's.
  BOOST_TEST(t.capacity_follows.count() == base.capacity_follows.count());
  BOOST_TEST(t.retry_period.count() == base.retry_period.count());
}

BOOST_AUTO_TEST_SUITE_END()
