// The samples in manifests/samples decode, survive encode -> decode unchanged, lose
// no field on the way, and agree with each other (the node item's hash, the payload
// ConfigMaps the profiles point to).
#include "protocol/canonical_json.hpp"
#include "protocol/desired_hash.hpp"
#include "protocol/json.hpp"
#include "tests/unit/protocol/yaml_json.hpp"

#include <boost/test/unit_test.hpp>

#include <rapidjson/document.h>

#include <map>
#include <set>
#include <string>

namespace gp = gpu_partitioner::protocol;
namespace gpt = gpu_partitioner::protocol::testing;

namespace {

// Bazel runs tests in the runfiles root, where the data files keep their repo paths.
const std::string samples = "manifests/samples/";

template <class T>
T decode_sample(const std::string& file) {
  const std::string json = gpt::yaml_document_to_json(samples + file);
  auto decoded = gp::from_json<T>(json);
  BOOST_TEST_REQUIRE(decoded.ok(), file << ": " << gpt::error_of(decoded));
  return decoded.value();
}

// decode -> encode -> decode gives the same object, a second encoding the same text,
// and the encoding still carries every field the manifest had.
template <class T>
void check_round_trip(const std::string& file) {
  const std::string original = gpt::yaml_document_to_json(samples + file);
  const T first = decode_sample<T>(file);
  const std::string encoded = gp::to_json(first);
  auto second = gp::from_json<T>(encoded);
  BOOST_TEST_REQUIRE(second.ok(), gpt::error_of(second));
  BOOST_TEST((second.value() == first), file << " changed in a round trip: " << encoded);
  BOOST_TEST(gp::to_json(second.value()) == encoded);
  std::string difference;
  BOOST_TEST(gpt::json_contains(encoded, original, &difference), file << ": " << difference);
}

} // namespace

BOOST_AUTO_TEST_SUITE(samples_round_trip)

BOOST_AUTO_TEST_CASE(every_sample_file_is_covered_by_this_suite) {
  const std::set<std::string> covered = {
      "dcm-payload-configmaps.yaml",
      "nodepartitioning-training-pool-partition-gpu-node-02.yaml",
      "plan-training-pool-partition.yaml",
      "plan-night-window-canary.yaml",
      "plan-dra-gpus-only.yaml",
      "profile-mi300x-cpx-nps4.yaml",
      "profile-mi300x-cpx-nps4-dra.yaml",
      "profile-mi300x-spx-nps1.yaml"};
  for (const auto& file : gpt::files_in(samples, ".yaml"))
    BOOST_TEST(covered.count(file) == 1u, file << " has no round-trip test");
  const std::set<std::string> real_cluster = {"amd-config-manager-config.yaml",
                                              "payload-cpx-nps4.yaml", "plan-mi300x-to-cpx.yaml",
                                              "profile-cpx-nps4.yaml"};
  for (const auto& file : gpt::files_in(samples + "real-cluster/", ".yaml"))
    BOOST_TEST(real_cluster.count(file) == 1u, "real-cluster/" << file << " has no test");
}

// The real-cluster samples (docs/install.md's walkthrough) select and verify by what AMD's
// stack and NFD really put on a node, name no ready label, and start as a dry run.
BOOST_AUTO_TEST_CASE(real_cluster_samples_round_trip_and_name_only_amds_labels) {
  check_round_trip<gp::partitioning_profile>("real-cluster/profile-cpx-nps4.yaml");
  check_round_trip<gp::partitioning_plan>("real-cluster/plan-mi300x-to-cpx.yaml");
  const auto profile =
      decode_sample<gp::partitioning_profile>("real-cluster/profile-cpx-nps4.yaml");
  const auto plan = decode_sample<gp::partitioning_plan>("real-cluster/plan-mi300x-to-cpx.yaml");
  BOOST_TEST(plan.spec.dry_run);
  BOOST_TEST(gp::dcm_profile_name(profile) == "cpx-profile");
  const std::map<std::string, std::string> amd = {{"feature.node.kubernetes.io/amd-gpu", "true"},
                                                  {"amd.com/gpu.device-id", "74a1"}};
  BOOST_TEST_REQUIRE(profile.spec.target_selector.has_value());
  BOOST_TEST((profile.spec.target_selector->match_labels == amd));
  BOOST_TEST((plan.spec.partitionings.at(0).selector.match_labels == amd));
  const std::string profile_json =
      gpt::yaml_document_to_json(samples + "real-cluster/profile-cpx-nps4.yaml");
  const std::string plan_json =
      gpt::yaml_document_to_json(samples + "real-cluster/plan-mi300x-to-cpx.yaml");
  for (const auto* json : {&profile_json, &plan_json}) {
    BOOST_TEST(json->find("readyLabel") == std::string::npos);
    BOOST_TEST(json->find("gpuReadyLabel") == std::string::npos);
    BOOST_TEST(json->find("amd.com/gpu.ready") == std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(cpx_profile_round_trips) {
  check_round_trip<gp::partitioning_profile>("profile-mi300x-cpx-nps4.yaml");
}

BOOST_AUTO_TEST_CASE(dra_profile_round_trips_with_its_expected_devices) {
  check_round_trip<gp::partitioning_profile>("profile-mi300x-cpx-nps4-dra.yaml");
  const auto p = decode_sample<gp::partitioning_profile>("profile-mi300x-cpx-nps4-dra.yaml");
  BOOST_TEST_REQUIRE(p.spec.expected_devices.size() == 1u);
  const auto& d = p.spec.expected_devices[0];
  BOOST_TEST(gp::device_driver(d) == "gpu.amd.com");
  BOOST_TEST(d.count == 64);
  BOOST_TEST(d.attributes.at("partitionProfile") == "cpx_nps4");
  BOOST_TEST(d.attributes.at("type") == "amdgpu-partition");
  BOOST_TEST(gp::dcm_profile_name(p) == "mi300x-cpx-nps4");
}

BOOST_AUTO_TEST_CASE(spx_profile_round_trips) {
  check_round_trip<gp::partitioning_profile>("profile-mi300x-spx-nps1.yaml");
}

BOOST_AUTO_TEST_CASE(plan_round_trips) {
  check_round_trip<gp::partitioning_plan>("plan-training-pool-partition.yaml");
}

BOOST_AUTO_TEST_CASE(night_plan_round_trips) {
  check_round_trip<gp::partitioning_plan>("plan-night-window-canary.yaml");
}

BOOST_AUTO_TEST_CASE(dra_plan_round_trips_and_cordons_only_the_gpus) {
  check_round_trip<gp::partitioning_plan>("plan-dra-gpus-only.yaml");
  const auto plan = decode_sample<gp::partitioning_plan>("plan-dra-gpus-only.yaml");
  BOOST_TEST(plan.spec.rollout.drain.cordons_devices());
  BOOST_TEST(plan.spec.partitionings.at(0).profile_ref.name == "mi300x-cpx-nps4-dra");
}

BOOST_AUTO_TEST_CASE(night_plan_has_its_window_canary_soak_and_budget) {
  const auto plan = decode_sample<gp::partitioning_plan>("plan-night-window-canary.yaml");
  const auto& r = plan.spec.rollout;
  BOOST_TEST_REQUIRE(r.windows.size() == 1u);
  BOOST_TEST(r.windows[0].days.size() == 5u);
  BOOST_TEST(r.windows[0].start == "22:00");
  BOOST_TEST(r.windows[0].end == "05:00");
  BOOST_TEST(r.windows[0].time_zone == "Europe/Berlin");
  BOOST_TEST((r.min_window_remaining_seconds == std::int64_t{3600}));
  BOOST_TEST_REQUIRE(r.canary.has_value());
  BOOST_TEST(r.canary->nodes->value() == 1);
  BOOST_TEST(r.canary->soak() == 1800);
  BOOST_TEST((r.canary->promotion_mode() == gp::canary_promotion::manual));
  BOOST_TEST((r.node_soak_seconds == std::int64_t{600}));
  BOOST_TEST(r.max_failures->resolve(10) == 1);
}

BOOST_AUTO_TEST_CASE(node_item_round_trips) {
  check_round_trip<gp::node_partitioning>(
      "nodepartitioning-training-pool-partition-gpu-node-02.yaml");
}

BOOST_AUTO_TEST_CASE(cpx_profile_keeps_the_seed_count_of_63) {
  const auto p = decode_sample<gp::partitioning_profile>("profile-mi300x-cpx-nps4.yaml");
  BOOST_TEST(p.metadata.name == "mi300x-cpx-nps4");
  BOOST_TEST(p.spec.display_name == "MI300X CPX+NPS4 (4 partitions, ~16GB VRAM each)");
  BOOST_TEST_REQUIRE(p.spec.expected_resources.size() == 1u);
  BOOST_TEST(p.spec.expected_resources[0].name == "amd.com/gpu");
  BOOST_TEST(p.spec.expected_resources[0].count == 63);
  BOOST_TEST_REQUIRE(p.spec.target_selector.has_value());
  BOOST_TEST(p.spec.target_selector->match_labels.at("gpu.family") == "mi300x");
  BOOST_TEST(p.spec.verification.ready_label == "amd.com/gpu.ready");
  BOOST_TEST(p.spec.verification.timeout_seconds == 600);
  BOOST_TEST((p.spec.operator_payload.kind == gp::payload_kind::config_map));
  BOOST_TEST(p.spec.operator_payload.namespace_ == "kube-amd-gpu");
  BOOST_TEST(p.spec.operator_payload.name == "dcm-profile-cpx-nps4");
  // No profileName, as the specification writes it: DCM's name is the profile's.
  BOOST_TEST(gp::dcm_profile_name(p) == "mi300x-cpx-nps4");
}

BOOST_AUTO_TEST_CASE(plan_is_the_specifications_two_at_a_time_one_unavailable) {
  const auto plan = decode_sample<gp::partitioning_plan>("plan-training-pool-partition.yaml");
  const auto& rollout = plan.spec.rollout;
  BOOST_TEST(rollout.max_parallel == 2);
  BOOST_TEST(!rollout.max_unavailable.is_percent());
  BOOST_TEST(rollout.max_unavailable.resolve(8) == 1);
  BOOST_TEST(rollout.drain.timeout_seconds == 1200);
  BOOST_TEST(rollout.drain.enabled);
  BOOST_TEST((rollout.drain.kind == gp::eviction_kind::eviction));
  BOOST_TEST(rollout.drain.respect_pdb);
  BOOST_TEST(plan.spec.verification.require_plugin_resources ==
                 std::vector<std::string>{"amd.com/gpu"},
             boost::test_tools::per_element());
  BOOST_TEST(plan.spec.verification.timeout_seconds == 900);
  BOOST_TEST(!plan.spec.paused);
  BOOST_TEST(!plan.spec.dry_run);
  BOOST_TEST_REQUIRE(plan.spec.partitionings.size() == 2u);
  BOOST_TEST(plan.spec.partitionings[0].name == "training-mi300x-to-cpx-nps4");
  BOOST_TEST_REQUIRE(plan.spec.partitionings[0].exclude.has_value());
  BOOST_TEST(plan.spec.partitionings[0].exclude->match_labels.at("maintenance") == "true");
  BOOST_TEST(plan.spec.partitionings[0].selector.match_labels.at("nodepool") == "training-gpu");
  BOOST_TEST(plan.spec.partitionings[0].profile_ref.name == "mi300x-cpx-nps4");
  BOOST_TEST(plan.spec.partitionings[1].profile_ref.name == "mi300x-spx-nps1");
}

BOOST_AUTO_TEST_CASE(node_item_carries_the_plans_policies_and_their_hash) {
  const auto plan = decode_sample<gp::partitioning_plan>("plan-training-pool-partition.yaml");
  const auto profile = decode_sample<gp::partitioning_profile>("profile-mi300x-cpx-nps4.yaml");
  const auto item = decode_sample<gp::node_partitioning>(
      "nodepartitioning-training-pool-partition-gpu-node-02.yaml");
  BOOST_TEST(item.metadata.name == plan.metadata.name + "-" + item.spec.node_name);
  BOOST_TEST(item.spec.plan_ref.name == plan.metadata.name);
  BOOST_TEST(item.spec.profile_ref.name == profile.metadata.name);
  BOOST_TEST((item.spec.drain == plan.spec.rollout.drain));
  BOOST_TEST((item.spec.verification == plan.spec.verification));
  BOOST_TEST(item.spec.desired_hash ==
             gp::desired_hash(profile, plan.spec.rollout.drain, plan.spec.verification));
}

BOOST_AUTO_TEST_CASE(node_item_is_owned_by_the_plan_through_our_api_group) {
  const auto item = decode_sample<gp::node_partitioning>(
      "nodepartitioning-training-pool-partition-gpu-node-02.yaml");
  BOOST_TEST_REQUIRE(item.metadata.owner_references.size() == 1u);
  const auto& owner = item.metadata.owner_references[0];
  BOOST_TEST(owner.api_version == "infrastructure.silogen.ai/v1alpha1");
  BOOST_TEST(owner.kind == "PartitioningPlan");
  BOOST_TEST(owner.name == "training-pool-partition");
  BOOST_TEST(owner.uid == item.spec.plan_ref.uid);
  BOOST_TEST(owner.controller.value_or(false));
  BOOST_TEST(owner.block_owner_deletion.value_or(false));
}

BOOST_AUTO_TEST_CASE(payload_configmaps_exist_for_both_profiles_and_hold_valid_json) {
  const auto docs = gpt::yaml_file_to_json(samples + "dcm-payload-configmaps.yaml");
  BOOST_TEST_REQUIRE(docs.size() == 3u);
  rapidjson::Document ns;
  ns.Parse(docs[0].c_str());
  BOOST_TEST(std::string(ns["kind"].GetString()) == "Namespace"); // applied before its objects
  std::set<std::string> found;
  for (std::size_t i = 1; i < docs.size(); ++i) {
    rapidjson::Document cm;
    cm.Parse(docs[i].c_str());
    BOOST_TEST(std::string(cm["kind"].GetString()) == "ConfigMap");
    BOOST_TEST(std::string(cm["metadata"]["namespace"].GetString()) == "kube-amd-gpu");
    found.insert(cm["metadata"]["name"].GetString());
    const std::string profile_json = cm["data"]["profile.json"].GetString();
    auto canonical = gp::canonical_json(std::string_view(profile_json));
    BOOST_TEST_REQUIRE(canonical.ok(), gpt::error_of(canonical));
    rapidjson::Document dcm;
    dcm.Parse(profile_json.c_str());
    BOOST_TEST(dcm["skippedGPUs"]["ids"].IsArray());
    BOOST_TEST_REQUIRE(dcm["profiles"].IsArray());
    BOOST_TEST(dcm["profiles"][0]["numGPUsAssigned"].GetInt() == 8);
  }
  for (const auto* file : {"profile-mi300x-cpx-nps4.yaml", "profile-mi300x-spx-nps1.yaml"}) {
    const auto p = decode_sample<gp::partitioning_profile>(file);
    BOOST_TEST(found.count(p.spec.operator_payload.name) == 1u, file);
  }
}

BOOST_AUTO_TEST_SUITE_END()
