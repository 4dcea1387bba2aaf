// Every way a document can be wrong gets a message naming the JSON path and the
// problem, never a crash or a silently guessed value. One test case per row: each
// row is a valid document changed by a JSON merge patch (or raw text), and the exact
// message the decoder must give.
#include "protocol/json.hpp"
#include "tests/unit/protocol/yaml_json.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

namespace gp = gpu_partitioner::protocol;
namespace gpt = gpu_partitioner::protocol::testing;

namespace {

const std::string valid_plan = R"({
  "apiVersion": "infrastructure.silogen.ai/v1alpha1", "kind": "PartitioningPlan",
  "metadata": {"name": "p"},
  "spec": {"partitionings": [
    {"name": "training", "selector": {"matchLabels": {"nodepool": "training-gpu"}},
     "profileRef": {"name": "mi300x-cpx-nps4"}}]}})";

const std::string valid_profile = R"({
  "apiVersion": "infrastructure.silogen.ai/v1alpha1", "kind": "PartitioningProfile",
  "metadata": {"name": "mi300x-cpx-nps4"},
  "spec": {"expectedResources": [{"name": "amd.com/gpu", "count": 64}],
           "operatorPayload": {"kind": "ConfigMap", "name": "p", "namespace": "kube-amd-gpu"}}})";

const std::string valid_item = R"({
  "apiVersion": "infrastructure.silogen.ai/v1alpha1", "kind": "NodePartitioning",
  "metadata": {"name": "p-gpu-node-01"},
  "spec": {"planRef": {"name": "p", "uid": "u"}, "nodeName": "gpu-node-01",
           "desiredHash": "sha256:75cc631b7bafd7db8980425749892f275713248b205bb47e5809951cdeb9733d",
           "profileRef": {"name": "mi300x-cpx-nps4"}}})";

template <class T>
const std::string& valid_document();
template <>
const std::string& valid_document<gp::partitioning_plan>() {
  return valid_plan;
}
template <>
const std::string& valid_document<gp::partitioning_profile>() {
  return valid_profile;
}
template <>
const std::string& valid_document<gp::node_partitioning>() {
  return valid_item;
}

template <class T>
void expect_refused_text(const std::string& text, const std::string& expected) {
  const auto r = gp::from_json<T>(text);
  BOOST_TEST_REQUIRE(!r.ok(), "accepted: " << text);
  BOOST_TEST(r.error().message() == expected);
}

template <class T>
void expect_refused(const std::string& patch, const std::string& expected) {
  expect_refused_text<T>(gpt::merge_patch(valid_document<T>(), patch), expected);
}

// `n` history entries for a status.
std::string history(int n, const char* entry) {
  std::string s = "[";
  for (int i = 0; i < n; ++i)
    s += std::string(i ? "," : "") + entry;
  return s + "]";
}

const char* const plan_event = R"({"time":"2024-05-01T12:00:00Z","type":"NodeStarted"})";
const char* const node_event = R"({"phase":"Pending","time":"2024-05-01T12:00:00Z"})";

} // namespace

// One Boost test case per row, named for the behaviour it pins.
#define REFUSES(name, kind, patch, message)                                                        \
  BOOST_AUTO_TEST_CASE(name) {                                                                     \
    expect_refused<kind>(patch, message);                                                          \
  }
#define REFUSES_TEXT(name, kind, text, message)                                                    \
  BOOST_AUTO_TEST_CASE(name) {                                                                     \
    expect_refused_text<kind>(text, message);                                                      \
  }

using plan = gp::partitioning_plan;
using profile = gp::partitioning_profile;
using item = gp::node_partitioning;

BOOST_AUTO_TEST_SUITE(plan_decoder_refuses)

REFUSES(max_unavailable_neither_integer_nor_percentage, plan,
        R"({"spec":{"rollout":{"maxUnavailable":"12x"}}})",
        R"(spec.rollout.maxUnavailable: "12x" is neither an integer nor a percentage)")
REFUSES(max_unavailable_percentage_over_100, plan,
        R"({"spec":{"rollout":{"maxUnavailable":"150%"}}})",
        R"(spec.rollout.maxUnavailable: "150%" is not a percentage from 1% to 100%)")
REFUSES(max_unavailable_zero, plan, R"({"spec":{"rollout":{"maxUnavailable":0}}})",
        "spec.rollout.maxUnavailable: must be at least 1, got 0")
REFUSES(max_parallel_as_string, plan, R"({"spec":{"rollout":{"maxParallel":"2"}}})",
        "spec.rollout.maxParallel: expected an integer, got string")
REFUSES(max_parallel_zero, plan, R"({"spec":{"rollout":{"maxParallel":0}}})",
        "spec.rollout.maxParallel: must be at least 1, got 0")
REFUSES(max_parallel_fractional, plan, R"({"spec":{"rollout":{"maxParallel":1.5}}})",
        "spec.rollout.maxParallel: expected an integer, got number")
REFUSES(max_parallel_beyond_32_bits, plan, R"({"spec":{"rollout":{"maxParallel":3000000000}}})",
        "spec.rollout.maxParallel: expected a 32-bit integer, got 3000000000")
REFUSES(unknown_eviction_kind, plan,
        R"({"spec":{"rollout":{"drainPolicy":{"evictionKind":"Drain"}}}})",
        R"(spec.rollout.drainPolicy.evictionKind: "Drain" is not one of Eviction, Delete)")
REFUSES(drain_timeout_zero, plan, R"({"spec":{"rollout":{"drainPolicy":{"timeoutSeconds":0}}}})",
        "spec.rollout.drainPolicy.timeoutSeconds: must be at least 1, got 0")
REFUSES(verification_timeout_as_word, plan, R"({"spec":{"verification":{"timeoutSeconds":"ten"}}})",
        "spec.verification.timeoutSeconds: expected an integer, got string")
REFUSES(
    gpu_ready_label_with_a_space, plan,
    R"({"spec":{"verification":{"gpuReadyLabel":"gpu ready"}}})",
    R"(spec.verification.gpuReadyLabel: "gpu ready" is not a label key (like amd.com/gpu.ready) or key=value)")
REFUSES(plugin_resources_not_a_list, plan,
        R"({"spec":{"verification":{"requirePluginResources":"amd.com/gpu"}}})",
        "spec.verification.requirePluginResources: expected an array, got string")
REFUSES(plugin_resource_not_a_string, plan,
        R"({"spec":{"verification":{"requirePluginResources":[7]}}})",
        "spec.verification.requirePluginResources[0]: expected a string, got integer")
REFUSES(paused_as_string, plan, R"({"spec":{"paused":"yes"}})",
        "spec.paused: expected a boolean, got string")
REFUSES(partitionings_missing, plan, R"({"spec":{"partitionings":null,"paused":false}})",
        "spec.partitionings: required field is missing")
REFUSES(partitionings_empty, plan, R"({"spec":{"partitionings":[]}})",
        "spec.partitionings: must have at least 1 item, got 0")
REFUSES(second_partitioning_without_profile_ref_name, plan,
        R"({"spec":{"partitionings":[
            {"name":"training","selector":{},"profileRef":{"name":"mi300x-cpx-nps4"}},
            {"name":"inference","selector":{},"profileRef":{"kind":"PartitioningProfile"}}]}})",
        "spec.partitionings[1].profileRef.name: required field is missing")
REFUSES(
    partitioning_name_not_a_dns_label, plan,
    R"({"spec":{"partitionings":[
            {"name":"Training_Pool","selector":{},"profileRef":{"name":"x"}}]}})",
    R"(spec.partitionings[0].name: "Training_Pool" is not a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit))")
REFUSES(
    partitioning_names_twice, plan,
    R"({"spec":{"partitionings":[
            {"name":"training","selector":{},"profileRef":{"name":"a"}},
            {"name":"training","selector":{},"profileRef":{"name":"b"}}]}})",
    R"(spec.partitionings[1].name: "training" is used twice (also at index 0); name must be unique)")
REFUSES(partitioning_without_selector, plan,
        R"({"spec":{"partitionings":[{"name":"training","profileRef":{"name":"a"}}]}})",
        "spec.partitionings[0].selector: required field is missing")
REFUSES(profile_ref_of_unknown_kind, plan,
        R"({"spec":{"partitionings":[
            {"name":"training","selector":{},"profileRef":{"kind":"Profile","name":"a"}}]}})",
        R"(spec.partitionings[0].profileRef.kind: "Profile" is not one of PartitioningProfile)")
REFUSES(selector_in_without_values, plan,
        R"({"spec":{"partitionings":[{"name":"training","profileRef":{"name":"a"},
            "selector":{"matchExpressions":[{"key":"nodepool","operator":"In"}]}}]}})",
        "spec.partitionings[0].selector.matchExpressions[0].values: must not be empty when "
        "operator is In or NotIn")
REFUSES(selector_exists_with_values, plan,
        R"({"spec":{"partitionings":[{"name":"training","profileRef":{"name":"a"},
            "exclude":{"matchExpressions":[{"key":"k","operator":"Exists","values":["v"]}]},
            "selector":{}}]}})",
        "spec.partitionings[0].exclude.matchExpressions[0].values: must be empty when operator "
        "is Exists or DoesNotExist")
REFUSES(
    selector_with_unknown_operator, plan,
    R"({"spec":{"partitionings":[{"name":"training","profileRef":{"name":"a"},
            "selector":{"matchExpressions":[{"key":"k","operator":"Equals","values":["v"]}]}}]}})",
    R"(spec.partitionings[0].selector.matchExpressions[0].operator: "Equals" is not one of In, NotIn, Exists, DoesNotExist)")
REFUSES(selector_label_value_not_a_string, plan,
        R"({"spec":{"partitionings":[{"name":"training","profileRef":{"name":"a"},
            "selector":{"matchLabels":{"nodepool":1}}}]}})",
        "spec.partitionings[0].selector.matchLabels[nodepool]: expected a string, got integer")
REFUSES(spec_not_an_object, plan, R"({"spec":[]})", "spec: expected an object, got array")
REFUSES(kind_of_another_resource, plan, R"({"kind":"PartitioningProfile"})",
        R"(kind: expected "PartitioningPlan", got "PartitioningProfile")")
REFUSES(api_version_of_another_group, plan, R"({"apiVersion":"v1"})",
        R"(apiVersion: expected "infrastructure.silogen.ai/v1alpha1", got "v1")")
REFUSES(
    status_phase_unknown, plan, R"({"status":{"phase":"Exploding"}})",
    R"(status.phase: "Exploding" is not one of Pending, Progressing, Paused, Completed, Degraded)")
REFUSES(status_history_over_50_entries, plan,
        R"({"status":{"history":)" + history(51, plan_event) + "}}",
        "status.history: must have at most 50 items, got 51")
REFUSES(status_count_negative, plan, R"({"status":{"nodes":{"failed":-1}}})",
        "status.nodes.failed: must be at least 0, got -1")
REFUSES(status_conflict_count_negative, plan, R"({"status":{"conflictCount":-1}})",
        "status.conflictCount: must be at least 0, got -1")
REFUSES(status_conflict_node_longer_than_a_node_name, plan,
        R"({"status":{"conflicts":[{"node":")" + std::string(254, 'n') + R"("}]}})",
        "status.conflicts[0].node: must be at most 253 characters long, got 254")
REFUSES(
    condition_time_not_rfc3339, plan,
    R"({"status":{"conditions":[{"type":"Progressing","status":"True",
            "lastTransitionTime":"yesterday","reason":"Rolling","message":""}]}})",
    R"(status.conditions[0].lastTransitionTime: "yesterday" is not an RFC 3339 date-time (like 2024-05-01T12:00:00Z))")
REFUSES(condition_without_reason, plan,
        R"({"status":{"conditions":[{"type":"Progressing","status":"True",
            "lastTransitionTime":"2024-05-01T12:00:00Z","message":""}]}})",
        "status.conditions[0].reason: required field is missing")
REFUSES(
    condition_type_twice, plan,
    R"({"status":{"conditions":[
            {"type":"Progressing","status":"True","lastTransitionTime":"2024-05-01T12:00:00Z",
             "reason":"Rolling","message":""},
            {"type":"Progressing","status":"False","lastTransitionTime":"2024-05-01T12:00:00Z",
             "reason":"Done","message":""}]}})",
    R"(status.conditions[1].type: "Progressing" is used twice (also at index 0); type must be unique)")
REFUSES(condition_status_yes, plan,
        R"({"status":{"conditions":[{"type":"Progressing","status":"yes",
            "lastTransitionTime":"2024-05-01T12:00:00Z","reason":"Rolling","message":""}]}})",
        R"(status.conditions[0].status: "yes" is not one of True, False, Unknown)")

REFUSES_TEXT(document_not_an_object, plan, "[]", "expected an object, got array")
REFUSES_TEXT(document_empty, plan, "", "invalid JSON at offset 0: The document is empty.")
REFUSES_TEXT(document_truncated, plan, R"({"spec": {"paused": tr)",
             "invalid JSON at offset 22: Invalid value.")
REFUSES_TEXT(document_with_trailing_garbage, plan, R"({"spec":{}} x)",
             "invalid JSON at offset 12: The document root must not be followed by other values.")
REFUSES_TEXT(document_with_invalid_utf8, plan, "{\"metadata\":{\"name\":\"\xff\"}}",
             "invalid JSON at offset 21: Invalid encoding in string.")

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(profile_decoder_refuses)

REFUSES(spec_missing, profile, R"({"spec":null})", "spec: required field is missing")
REFUSES(operator_payload_missing, profile, R"({"spec":{"operatorPayload":null}})",
        "spec.operatorPayload: required field is missing")
REFUSES(payload_kind_secret, profile, R"({"spec":{"operatorPayload":{"kind":"Secret"}}})",
        R"(spec.operatorPayload.kind: "Secret" is not one of ConfigMap)")
REFUSES(payload_kind_missing, profile, R"({"spec":{"operatorPayload":{"kind":null}}})",
        "spec.operatorPayload.kind: required field is missing")
REFUSES(payload_namespace_empty, profile, R"({"spec":{"operatorPayload":{"namespace":""}}})",
        "spec.operatorPayload.namespace: must not be empty")
REFUSES(
    dcm_profile_name_starting_with_a_dash, profile,
    R"({"spec":{"operatorPayload":{"profileName":"-bad"}}})",
    R"(spec.operatorPayload.profileName: "-bad" is not a valid label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit))")
REFUSES(
    hostile_value_is_quoted_escaped_and_cut, profile,
    R"({"spec":{"operatorPayload":{"profileName":"a\"b\n)" + std::string(100, 'x') + R"("}}})",
    R"(spec.operatorPayload.profileName: "a\"b\u000a)" + std::string(60, 'x') +
        R"(..." is not a valid label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit))")
REFUSES(expected_count_negative, profile,
        R"({"spec":{"expectedResources":[{"name":"amd.com/gpu","count":-1}]}})",
        "spec.expectedResources[0].count: must be at least 0, got -1")
REFUSES(expected_resource_without_name, profile, R"({"spec":{"expectedResources":[{"count":8}]}})",
        "spec.expectedResources[0].name: required field is missing")
REFUSES(
    expected_resource_twice, profile,
    R"({"spec":{"expectedResources":[{"name":"amd.com/gpu","count":8},
                                         {"name":"amd.com/gpu","count":64}]}})",
    R"(spec.expectedResources[1].name: "amd.com/gpu" is used twice (also at index 0); name must be unique)")
REFUSES(expected_devices_without_count, profile,
        R"({"spec":{"expectedDevices":[{"attributes":{"type":"amdgpu"}}]}})",
        "spec.expectedDevices[0].count: required field is missing")
REFUSES(expected_devices_negative_count, profile, R"({"spec":{"expectedDevices":[{"count":-8}]}})",
        "spec.expectedDevices[0].count: must be at least 0, got -8")
REFUSES(expected_devices_attribute_not_text, profile,
        R"({"spec":{"expectedDevices":[{"attributes":{"cardIndex":7},"count":1}]}})",
        "spec.expectedDevices[0].attributes[cardIndex]: expected a string, got integer")
REFUSES(expected_devices_empty_driver, profile,
        R"({"spec":{"expectedDevices":[{"driver":"","count":1}]}})",
        "spec.expectedDevices[0].driver: must not be empty")
REFUSES(display_name_over_256_characters, profile,
        R"({"spec":{"displayName":")" + std::string(257, 'x') + R"("}})",
        "spec.displayName: must be at most 256 characters long, got 257")
REFUSES(
    ready_label_with_two_equals_signs, profile,
    R"({"spec":{"verification":{"readyLabel":"amd.com/gpu.ready=a=b"}}})",
    R"(spec.verification.readyLabel: "amd.com/gpu.ready=a=b" is not a label key (like amd.com/gpu.ready) or key=value)")
REFUSES(profile_timeout_negative, profile, R"({"spec":{"verification":{"timeoutSeconds":-5}}})",
        "spec.verification.timeoutSeconds: must be at least 1, got -5")

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(node_item_decoder_refuses)

REFUSES(desired_hash_not_sha256, item, R"({"spec":{"desiredHash":"md5:abc"}})",
        R"(spec.desiredHash: "md5:abc" is not sha256: followed by 64 lowercase hex digits)")
REFUSES(plan_ref_without_uid, item, R"({"spec":{"planRef":{"uid":null}}})",
        "spec.planRef.uid: required field is missing")
REFUSES(node_name_not_a_dns_subdomain, item, R"({"spec":{"nodeName":"GPU_Node"}})",
        R"(spec.nodeName: "GPU_Node" is not a DNS-1123 subdomain (dot-separated DNS-1123 labels))")
REFUSES(
    status_phase_unknown, item, R"({"status":{"phase":"Exploding"}})",
    R"(status.phase: "Exploding" is not one of Pending, Draining, Applying, WaitingOperator, Verifying, Succeeded, Failed)")
REFUSES(status_history_over_32_entries, item,
        R"({"status":{"history":)" + history(33, node_event) + "}}",
        "status.history: must have at most 32 items, got 33")
REFUSES(
    history_entry_with_unknown_phase, item,
    R"({"status":{"history":[{"phase":"Rebooting","time":"2024-05-01T12:00:00Z"}]}})",
    R"(status.history[0].phase: "Rebooting" is not one of Pending, Draining, Applying, WaitingOperator, Verifying, Succeeded, Failed)")
REFUSES(blocking_pdb_without_namespace, item,
        R"({"status":{"drain":{"blockingPDBs":[{"name":"db-pdb"}]}}})",
        "status.drain.blockingPDBs[0].namespace: required field is missing")
REFUSES(
    started_at_not_rfc3339, item, R"({"status":{"startedAt":"2024-05-01 12:00"}})",
    R"(status.startedAt: "2024-05-01 12:00" is not an RFC 3339 date-time (like 2024-05-01T12:00:00Z))")
REFUSES(preview_finding_not_a_string, item,
        R"({"status":{"preview":{"findings":[{"reason":"x"}]}}})",
        "status.preview.findings[0]: expected a string, got object")

BOOST_AUTO_TEST_SUITE_END()

// The other direction: what the decoder must accept, so the refusals above are not
// the result of refusing everything.
BOOST_AUTO_TEST_SUITE(decoder_accepts)

BOOST_AUTO_TEST_CASE(the_valid_base_documents_decode) {
  const auto a = gp::from_json<plan>(valid_plan);
  const auto b = gp::from_json<profile>(valid_profile);
  const auto c = gp::from_json<item>(valid_item);
  BOOST_TEST(a.ok(), gpt::error_of(a));
  BOOST_TEST(b.ok(), gpt::error_of(b));
  BOOST_TEST(c.ok(), gpt::error_of(c));
}

BOOST_AUTO_TEST_CASE(unknown_fields_are_ignored) {
  const auto r = gp::from_json<plan>(gpt::merge_patch(
      valid_plan, R"({"spec":{"futureField":{"x":1},"rollout":{"surge":3}},"extra":[]})"));
  BOOST_TEST(r.ok(), gpt::error_of(r));
}

BOOST_AUTO_TEST_CASE(null_is_treated_as_absent_and_gets_the_default) {
  const auto r = gp::from_json<plan>(
      gpt::merge_patch(valid_plan, R"({"spec":{"rollout":{"drainPolicy":{}}}})"));
  BOOST_TEST_REQUIRE(r.ok(), gpt::error_of(r));
  // merge_patch cannot write a null, so spell it out.
  const auto n = gp::from_json<plan>(
      R"({"spec":{"rollout":{"maxParallel":null},"partitionings":[{"name":"a","selector":{},)"
      R"("profileRef":{"name":"p"}}]}})");
  BOOST_TEST_REQUIRE(n.ok(), gpt::error_of(n));
  BOOST_TEST(n.value().spec.rollout.max_parallel == 1);
}

BOOST_AUTO_TEST_CASE(omitted_fields_get_the_crd_defaults) {
  const auto r = gp::from_json<plan>(valid_plan);
  BOOST_TEST_REQUIRE(r.ok(), gpt::error_of(r));
  const auto& spec = r.value().spec;
  BOOST_TEST(!spec.paused);
  BOOST_TEST(!spec.dry_run);
  BOOST_TEST(spec.rollout.max_parallel == 1);
  BOOST_TEST(spec.rollout.max_unavailable.to_string() == "1");
  BOOST_TEST(spec.rollout.drain.enabled);
  BOOST_TEST(spec.rollout.drain.timeout_seconds == 600);
  BOOST_TEST((spec.rollout.drain.kind == gp::eviction_kind::eviction));
  BOOST_TEST(spec.rollout.drain.respect_pdb);
  BOOST_TEST(spec.verification.gpu_ready_label.empty()); // AMD sets no ready label
  BOOST_TEST(spec.verification.timeout_seconds == 900);
  BOOST_TEST((spec.partitionings[0].profile_ref.kind == gp::profile_kind::partitioning_profile));
  BOOST_TEST(!r.value().status.phase.has_value());
}

BOOST_AUTO_TEST_CASE(a_document_without_api_version_and_kind_is_accepted) {
  // List items and patches may omit them; when present they must be ours.
  const auto r =
      gp::from_json<plan>(gpt::merge_patch(valid_plan, R"({"apiVersion":null,"kind":null})"));
  BOOST_TEST(r.ok(), gpt::error_of(r));
}

// status.order and status.conflicts are summaries (the first 100, and a count): a longer
// list stored in an object is read as its first 100 entries, not refused, so the plan stays
// usable; the next status replaces it.
BOOST_AUTO_TEST_CASE(a_longer_order_or_conflict_list_is_read_as_its_first_100_entries) {
  std::string order, conflicts;
  for (int i = 0; i < 5000; ++i) {
    const std::string node = "\"gpu-node-" + std::to_string(10000 + i) + "\"";
    order += (i ? "," : "") + node;
    conflicts += std::string(i ? "," : "") + R"({"node":)" + node + R"(,"reason":"r"})";
  }
  const auto r = gp::from_json<plan>(gpt::merge_patch(
      valid_plan, R"({"status":{"order":[)" + order + R"(],"conflicts":[)" + conflicts + "]}}"));
  BOOST_TEST_REQUIRE(r.ok(), gpt::error_of(r));
  const auto& st = r.value().status;
  BOOST_TEST(st.order.size() == gp::partitioning_plan_status::order_limit);
  BOOST_TEST(st.order.front() == "gpu-node-10000");
  BOOST_TEST(st.order.back() == "gpu-node-10099");
  BOOST_TEST(st.conflicts.size() == gp::partitioning_plan_status::conflicts_limit);
  BOOST_TEST(st.conflicts.back().node == "gpu-node-10099");
  BOOST_TEST(st.order_count == 0); // absent: counts are optional
  BOOST_TEST(st.conflict_count == 0);
}

BOOST_AUTO_TEST_CASE(utf8_lengths_count_characters_not_bytes) {
  std::string name;
  for (int i = 0; i < 256; ++i)
    name += "\xc3\xa9"; // é: two bytes, one character
  const auto r = gp::from_json<profile>(
      gpt::merge_patch(valid_profile, R"({"spec":{"displayName":")" + name + R"("}})"));
  BOOST_TEST(r.ok(), gpt::error_of(r));
}

// Found by fuzz/canonical_json_fuzz.cpp, and then in the round trip of
// fuzz/protocol_codec_fuzz.cpp: a \u escape of a lone low surrogate (RapidJSON refuses a
// lone high one) decoded into bytes that are not UTF-8, and the encoder wrote them into
// a document that no decoder (ours included) accepts.
BOOST_AUTO_TEST_CASE(a_lone_surrogate_escape_is_refused_and_a_pair_is_not) {
  auto with = [](const std::string& spec_members) {
    std::string text = valid_profile;
    text.replace(text.find(R"("spec": {)"), 9, R"("spec": {)" + spec_members + ",");
    return text;
  };
  auto lone = gp::from_json<profile>(with(R"("displayName": "MI300X \udc00 CPX")"));
  BOOST_TEST_REQUIRE(!lone.ok());
  BOOST_TEST(lone.error().message() == "spec.displayName: is not valid UTF-8 text");
  auto key = gp::from_json<profile>(with(R"("targetSelector": {"matchLabels": {"\udfff": "x"}})"));
  BOOST_TEST_REQUIRE(!key.ok());
  BOOST_TEST(key.error().problem == "the key is not valid UTF-8 text");
  auto pair = gp::from_json<profile>(with(R"("displayName": "\ud83d\ude00")"));
  BOOST_TEST_REQUIRE(pair.ok(), gpt::error_of(pair));
  BOOST_TEST(pair.value().spec.display_name == "\xf0\x9f\x98\x80");
}

BOOST_AUTO_TEST_CASE(utf8_check_takes_every_well_formed_sequence_and_nothing_else) {
  using gpu_partitioner::protocol::codec::is_utf8;
  BOOST_TEST(is_utf8("plain \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"));
  BOOST_TEST(!is_utf8("\x80"));                 // a stray continuation byte
  BOOST_TEST(!is_utf8("\xc3"));                 // cut short
  BOOST_TEST(!is_utf8("\xc0\xaf"));             // overlong '/'
  BOOST_TEST(!is_utf8("\xe0\x80\xaf"));         // overlong, three bytes
  BOOST_TEST(!is_utf8("\xed\xb0\x80"));         // U+DC00, a surrogate
  BOOST_TEST(!is_utf8("\xf4\x90\x80\x80"));     // past U+10FFFF
  BOOST_TEST(!is_utf8("\xf8\x88\x80\x80\x80")); // five bytes
}

BOOST_AUTO_TEST_SUITE_END()
