// desiredHash: a stable function of what the node should become. Hashes are stored in
// NodePartitionings, so an accidental change of the canonical form would re-run every
// Succeeded node: the exact canonical text of one input is pinned here.
#include "protocol/canonical_json.hpp"
#include "protocol/desired_hash.hpp"
#include "protocol/json.hpp"
#include "tests/unit/protocol/yaml_json.hpp"

#include <boost/test/unit_test.hpp>

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace gp = gpu_partitioner::protocol;
namespace gpt = gpu_partitioner::protocol::testing;

namespace {

gp::partitioning_profile profile_from(const std::string& json) {
  auto r = gp::from_json<gp::partitioning_profile>(json);
  BOOST_TEST_REQUIRE(r.ok(), gpt::error_of(r));
  return r.value();
}

// The CPX sample's profile, written with every field explicit.
const char* const explicit_profile = R"J({
  "apiVersion": "infrastructure.silogen.ai/v1alpha1", "kind": "PartitioningProfile",
  "metadata": {"name": "mi300x-cpx-nps4"},
  "spec": {
    "displayName": "MI300X CPX+NPS4 (4 partitions, ~16GB VRAM each)",
    "targetSelector": {"matchLabels": {"gpu.vendor": "amd", "gpu.family": "mi300x"}},
    "expectedResources": [{"name": "amd.com/gpu", "count": 63}],
    "verification": {"readyLabel": "amd.com/gpu.ready", "timeoutSeconds": 600},
    "operatorPayload": {"kind": "ConfigMap", "name": "dcm-profile-cpx-nps4",
                        "namespace": "kube-amd-gpu", "profileName": "mi300x-cpx-nps4"}}})J";

// The same object: keys in another order at every level, whitespace elsewhere.
const char* const reordered_profile =
    R"J({"spec":{"operatorPayload":{"profileName":"mi300x-cpx-nps4",
  "namespace":"kube-amd-gpu","name":"dcm-profile-cpx-nps4","kind":"ConfigMap"},
  "verification":{"timeoutSeconds":600,"readyLabel":"amd.com/gpu.ready"},
  "expectedResources":[{"count":63,"name":"amd.com/gpu"}],
  "targetSelector":{"matchLabels":{"gpu.family":"mi300x","gpu.vendor":"amd"}},
  "displayName":"MI300X CPX+NPS4 (4 partitions, ~16GB VRAM each)"},
  "metadata":{"name":"mi300x-cpx-nps4"},"kind":"PartitioningProfile",
  "apiVersion":"infrastructure.silogen.ai/v1alpha1"})J";

// The plan sample's policies, explicit.
gp::drain_policy sample_drain() {
  return gp::drain_policy{true, 1200, gp::eviction_kind::eviction, true};
}

gp::plan_verification sample_verification() {
  gp::plan_verification v;
  v.gpu_ready_label = "amd.com/gpu.ready";
  v.require_plugin_resources = {"amd.com/gpu"};
  v.timeout_seconds = 900;
  return v;
}

bool is_hash_format(const std::string& h) {
  if (h.size() != 7 + 64 || h.compare(0, 7, "sha256:") != 0)
    return false;
  for (char c : h.substr(7))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

} // namespace

BOOST_AUTO_TEST_SUITE(desired_hash)

BOOST_AUTO_TEST_CASE(format_is_sha256_colon_64_lowercase_hex_digits) {
  const auto h =
      gp::desired_hash(profile_from(explicit_profile), sample_drain(), sample_verification());
  BOOST_TEST(is_hash_format(h), h);
  BOOST_TEST(gp::codec::is_desired_hash(h));
}

BOOST_AUTO_TEST_CASE(canonical_input_is_pinned_byte_for_byte) {
  const auto p = profile_from(explicit_profile);
  const std::string expected =
      R"({"drainPolicy":{"enabled":true,"evictionKind":"Eviction","respectPDB":true,)"
      R"J("timeoutSeconds":1200},"profile":{"displayName":"MI300X CPX+NPS4 (4 partitions, ~16GB VRAM each)",)J"
      R"("expectedResources":[{"count":63,"name":"amd.com/gpu"}],"operatorPayload":)"
      R"({"kind":"ConfigMap","name":"dcm-profile-cpx-nps4","namespace":"kube-amd-gpu",)"
      R"("profileName":"mi300x-cpx-nps4"},"targetSelector":{"matchLabels":{"gpu.family":"mi300x",)"
      R"("gpu.vendor":"amd"}},"verification":{"readyLabel":"amd.com/gpu.ready",)"
      R"("timeoutSeconds":600}},"verification":{"gpuReadyLabel":"amd.com/gpu.ready",)"
      R"("requirePluginResources":["amd.com/gpu"],"timeoutSeconds":900}})";
  BOOST_TEST(gp::desired_state_json(p.spec, sample_drain(), sample_verification()) == expected);
  // sha256 of `expected`, computed independently (python3 hashlib).
  BOOST_TEST(gp::desired_hash(p, sample_drain(), sample_verification()) ==
             "sha256:84dfadeab89a55f14b6b803d54c634e29ea95d53892ed78c7ad195d0d05ea318");
}

BOOST_AUTO_TEST_CASE(key_order_of_the_input_does_not_change_the_hash) {
  BOOST_TEST(
      gp::desired_hash(profile_from(explicit_profile), sample_drain(), sample_verification()) ==
      gp::desired_hash(profile_from(reordered_profile), sample_drain(), sample_verification()));
  // And the canonical form itself ignores key order of arbitrary JSON.
  BOOST_TEST(gp::canonical_json(std::string_view(explicit_profile)).value() ==
             gp::canonical_json(std::string_view(reordered_profile)).value());
}

BOOST_AUTO_TEST_CASE(omitted_defaults_hash_like_explicit_defaults) {
  // verification and profileName omitted: their defaults are no ready label, 600 and
  // the profile's own name.
  const auto omitted = profile_from(R"({"metadata":{"name":"cpx-nps4"},"spec":{
      "operatorPayload":{"kind":"ConfigMap","name":"cm","namespace":"ns"}}})");
  const auto explicit_ = profile_from(R"({"metadata":{"name":"cpx-nps4"},"spec":{
      "verification":{"timeoutSeconds":600},
      "operatorPayload":{"kind":"ConfigMap","name":"cm","namespace":"ns",
                         "profileName":"cpx-nps4"}}})");
  // The plan's drainPolicy and verification, omitted versus spelled out.
  auto plan_omitted = gp::from_json<gp::partitioning_plan>(R"({"spec":{"partitionings":[
      {"name":"a","selector":{},"profileRef":{"name":"cpx-nps4"}}]}})");
  auto plan_explicit = gp::from_json<gp::partitioning_plan>(R"({"spec":{
      "rollout":{"drainPolicy":{"enabled":true,"timeoutSeconds":600,"evictionKind":"Eviction",
                                "respectPDB":true}},
      "verification":{"requirePluginResources":[],"timeoutSeconds":900},
      "partitionings":[{"name":"a","selector":{},"profileRef":{"name":"cpx-nps4"}}]}})");
  BOOST_TEST_REQUIRE(plan_omitted.ok(), gpt::error_of(plan_omitted));
  BOOST_TEST_REQUIRE(plan_explicit.ok(), gpt::error_of(plan_explicit));
  const auto& a = plan_omitted.value().spec;
  const auto& b = plan_explicit.value().spec;
  BOOST_TEST(gp::desired_hash(omitted, a.rollout.drain, a.verification) ==
             gp::desired_hash(explicit_, b.rollout.drain, b.verification));
  BOOST_TEST(gp::desired_hash(omitted, a.rollout.drain, a.verification) ==
             gp::desired_hash(omitted, gp::drain_policy{}, gp::plan_verification{}));
}

BOOST_AUTO_TEST_CASE(every_meaningful_field_changes_the_hash) {
  struct input {
    gp::partitioning_profile profile;
    gp::drain_policy drain;
    gp::plan_verification verification;
  };
  using change = std::pair<const char*, std::function<void(input&)>>;
  const std::vector<change> changes = {
      {"expected count", [](input& i) { i.profile.spec.expected_resources[0].count = 64; }},
      {"expected resource name",
       [](input& i) { i.profile.spec.expected_resources[0].name = "amd.com/cpx_nps4"; }},
      {"another expected resource",
       [](input& i) {
         i.profile.spec.expected_resources.push_back({"amd.com/xgmi", 1});
       }},
      {"target selector",
       [](input& i) { i.profile.spec.target_selector->match_labels["gpu.family"] = "mi325x"; }},
      {"payload ConfigMap name", [](input& i) { i.profile.spec.operator_payload.name = "other"; }},
      {"payload namespace", [](input& i) { i.profile.spec.operator_payload.namespace_ = "gpu"; }},
      {"DCM profile name",
       [](input& i) { i.profile.spec.operator_payload.profile_name = "cpx-nps1"; }},
      {"profile ready label",
       [](input& i) { i.profile.spec.verification.ready_label = "example.com/ready"; }},
      {"profile timeout", [](input& i) { i.profile.spec.verification.timeout_seconds = 601; }},
      {"drain enabled", [](input& i) { i.drain.enabled = false; }},
      {"drain timeout", [](input& i) { i.drain.timeout_seconds = 600; }},
      {"eviction kind", [](input& i) { i.drain.kind = gp::eviction_kind::delete_pods; }},
      {"respect PDB", [](input& i) { i.drain.respect_pdb = false; }},
      {"gpu ready label", [](input& i) { i.verification.gpu_ready_label = "x.io/ok=yes"; }},
      {"required plugin resources",
       [](input& i) { i.verification.require_plugin_resources.push_back("amd.com/xgmi"); }},
      {"verification timeout", [](input& i) { i.verification.timeout_seconds = 901; }},
      {"expected devices",
       [](input& i) {
         gp::expected_device d;
         d.attributes = {{"partitionProfile", "cpx_nps4"}};
         d.count = 64;
         i.profile.spec.expected_devices.push_back(d);
       }},
  };
  const input base{profile_from(explicit_profile), sample_drain(), sample_verification()};
  const auto hash = [](const input& i) {
    return gp::desired_hash(i.profile, i.drain, i.verification);
  };
  std::set<std::string> seen = {hash(base)};
  for (const auto& [what, apply] : changes) {
    input changed = base;
    apply(changed);
    const auto h = hash(changed);
    BOOST_TEST(h != hash(base), what << " did not change the hash");
    BOOST_TEST(seen.insert(h).second, what << " collided with another change");
  }
}

BOOST_AUTO_TEST_CASE(profile_overload_resolves_the_default_dcm_profile_name) {
  auto p = profile_from(explicit_profile);
  p.spec.operator_payload.profile_name.reset();
  p.metadata.name = "cpx-nps4";
  auto q = p;
  q.spec.operator_payload.profile_name = "cpx-nps4";
  BOOST_TEST(gp::desired_hash(p, sample_drain(), sample_verification()) ==
             gp::desired_hash(q, sample_drain(), sample_verification()));
  // A profile of another name without profileName applies another DCM profile.
  auto r = p;
  r.metadata.name = "other-profile";
  BOOST_TEST(gp::desired_hash(r, sample_drain(), sample_verification()) !=
             gp::desired_hash(p, sample_drain(), sample_verification()));
}

BOOST_AUTO_TEST_CASE(a_device_class_name_does_not_change_the_hash) {
  // A class for workloads to ask by is no change of the nodes: no node runs again.
  auto p = profile_from(explicit_profile);
  auto q = p;
  q.spec.device_class_name = "mi300x-cpx-nps4.amd.com";
  BOOST_TEST(gp::desired_hash(p, sample_drain(), sample_verification()) ==
             gp::desired_hash(q, sample_drain(), sample_verification()));
}

BOOST_AUTO_TEST_SUITE_END()
