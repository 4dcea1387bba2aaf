// The simulated DCM, device plugin and node labeller for one node (step_node), state by
// state: first sight, label-driven runs and their delays, refusals and retries, injected
// faults, the plugin going down under the amd-dcm taint and coming back, and a restarted
// simulator. Each test drives one node with constructed times and writes the actions
// back into the observed node, as the API server would.
#include "tools/simulator/node_model.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <rapidjson/document.h>

#include <ostream>
#include <string>
#include <vector>

namespace sim = gpu_partitioner::sim;
namespace bdata = boost::unit_test::data;
using namespace std::chrono_literals;

namespace {

// The repo's profiles plus one that does not add up for 8 GPUs.
const char* config_text = R"({"gpu-config-profiles":{
  "spx-nps1":{"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"SPX","memoryPartition":"NPS1","numGPUsAssigned":8}]},
  "cpx-nps4":{"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":8}]},
  "cpx-nps1":{"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX","memoryPartition":"NPS1","numGPUsAssigned":8}]},
  "dpx-nps2":{"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"DPX","memoryPartition":"NPS2","numGPUsAssigned":8}]},
  "qpx-nps1":{"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"QPX","memoryPartition":"NPS1","numGPUsAssigned":8}]},
  "cpx-nps4-skip-2":{"skippedGPUs":{"ids":[6,7]},"profiles":[{"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":6}]},
  "cpx-spx-nps1":{"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX","memoryPartition":"NPS1","numGPUsAssigned":4},{"computePartition":"SPX","memoryPartition":"NPS1","numGPUsAssigned":4}]},
  "bad-count":{"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":7}]}
}})";

const sim::sim_time t0 = sim::sim_time{} + 1h;

/// One simulated node, its observed world and the model's memory of it.
struct node_fixture {
  sim::sim_timing timing;
  sim::node_memory memory;
  sim::observed_node node;
  sim::observed_world world;
  /// Every Event the steps so far produced, in order, with the time it was produced.
  std::vector<std::pair<sim::sim_time, sim::sim_event>> events;

  node_fixture() {
    node.name = "gpu-node-01";
    sim::dcm_failure error;
    world.config = sim::parse_dcm_config(config_text, error);
    BOOST_REQUIRE_MESSAGE(world.config.has_value(), error.message);
  }

  /// Runs step_node and applies its writes to the observed node.
  sim::node_actions step(sim::sim_time now) {
    auto a = sim::step_node(memory, node, world, now, timing);
    for (const auto& [k, v] : a.labels)
      v ? void(node.labels[k] = *v) : void(node.labels.erase(k));
    for (const auto& [k, v] : a.annotations)
      v ? void(node.annotations[k] = *v) : void(node.annotations.erase(k));
    if (a.gpu_resources)
      node.gpu_capacity = *a.gpu_resources;
    for (const auto& e : a.events)
      events.emplace_back(now, e);
    return a;
  }

  /// First sight of a node the simulator has already set up in `mode` ("CPX/NPS4"):
  /// resources reported, nothing to do.
  void known_node(const std::string& mode = "SPX/NPS1", long long capacity = 8) {
    node.annotations[sim::partition_annotation] = mode;
    node.gpu_capacity = capacity;
    node.labels[sim::ready_label] = "true";
    auto a = step(t0);
    BOOST_REQUIRE(a.empty());
  }

  /// What the operator does: set the profile and drop a stale state in one write.
  void request(const std::string& profile) {
    node.labels[sim::profile_label] = profile;
    node.labels.erase(sim::state_label);
  }

  std::string state() const {
    auto it = node.labels.find(sim::state_label);
    return it == node.labels.end() ? std::string{} : it->second;
  }

  std::string label(const char* key) const {
    auto it = node.labels.find(key);
    return it == node.labels.end() ? std::string{"<none>"} : it->second;
  }

  /// Steps at every time next_due names, up to `until`; returns how many steps ran.
  int run_until(sim::sim_time until) {
    int steps = 0;
    for (auto due = sim::next_due(memory); due && *due <= until; due = sim::next_due(memory)) {
      step(*due);
      ++steps;
    }
    return steps;
  }

  std::vector<sim::sim_event> events_named(const std::string& reason) const {
    std::vector<sim::sim_event> out;
    for (const auto& [at, e] : events)
      if (e.reason == reason)
        out.push_back(e);
    return out;
  }
};

/// A time as milliseconds after t0, so failed comparisons print readably.
long long ms(sim::sim_time t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t - t0).count();
}

/// When the model next wants a step, in milliseconds after t0; -1 for never.
long long due_ms(const sim::node_memory& m) {
  auto due = sim::next_due(m);
  return due ? ms(*due) : -1;
}

bool has_reason(const sim::node_actions& a, const std::string& reason) {
  for (const auto& e : a.events)
    if (e.reason == reason)
      return true;
  return false;
}

} // namespace

// -- first sight --

BOOST_AUTO_TEST_SUITE(first_sight)

BOOST_AUTO_TEST_CASE(a_new_node_reports_spx_resources_ready_and_its_partition) {
  node_fixture f;
  auto a = f.step(t0);
  BOOST_REQUIRE(a.gpu_resources.has_value());
  BOOST_TEST(*a.gpu_resources == 8);
  BOOST_TEST(f.label(sim::ready_label) == "true");
  BOOST_TEST(f.label(sim::partition_label) == "spx_nps1");
  BOOST_TEST(f.node.annotations[sim::partition_annotation] == "SPX/NPS1");
  BOOST_TEST(f.state().empty());
  BOOST_TEST(a.events.empty());
  BOOST_TEST(!sim::next_due(f.memory).has_value());
}

BOOST_AUTO_TEST_CASE(a_new_node_with_a_gpu_count_annotation_reports_that_many_gpus) {
  node_fixture f;
  f.node.annotations[sim::gpu_count_annotation] = "4";
  auto a = f.step(t0);
  BOOST_REQUIRE(a.gpu_resources.has_value());
  BOOST_TEST(*a.gpu_resources == 4);
}

BOOST_AUTO_TEST_CASE(a_node_already_reporting_resources_is_left_as_it_is) {
  node_fixture f;
  f.node.annotations[sim::partition_annotation] = "SPX/NPS1";
  f.node.gpu_capacity = 8;
  BOOST_TEST(f.step(t0).empty());
  BOOST_TEST(f.step(t0 + 1h).empty());
}

BOOST_AUTO_TEST_CASE(a_profile_label_without_a_state_label_is_a_request) {
  node_fixture f;
  f.node.labels[sim::profile_label] = "qpx-nps1";
  f.step(t0);
  BOOST_TEST(due_ms(f.memory) == ms(t0 + 10s));
  f.step(t0 + 10s);
  BOOST_TEST(f.state() == "success");
  BOOST_TEST(f.node.annotations[sim::partition_annotation] == "QPX/NPS1");
}

BOOST_AUTO_TEST_CASE(a_profile_label_with_a_state_label_was_answered_before) {
  node_fixture f;
  f.node.labels[sim::profile_label] = "qpx-nps1";
  f.node.labels[sim::state_label] = "success";
  f.node.annotations[sim::partition_annotation] = "QPX/NPS1";
  f.node.gpu_capacity = 32;
  BOOST_TEST(f.step(t0).empty());
  BOOST_TEST(!sim::next_due(f.memory).has_value());
  BOOST_TEST(f.step(t0 + 1h).empty());
}

BOOST_AUTO_TEST_CASE(a_restarted_simulator_remembers_the_mode_from_the_annotation) {
  node_fixture f;
  f.node.labels[sim::profile_label] = "cpx-nps4";
  f.node.labels[sim::state_label] = "success";
  f.known_node("CPX/NPS4", 64);
  // The plugin restarts with the remembered mode's count...
  f.node.dcm_taint = true;
  f.step(t0 + 1s);
  f.node.dcm_taint = false;
  f.step(t0 + 2s);
  auto a = f.step(t0 + 2s + 5s);
  BOOST_REQUIRE(a.gpu_resources.has_value());
  BOOST_TEST(*a.gpu_resources == 64);
  BOOST_TEST(f.label(sim::partition_label) == "cpx_nps4");
  // ...and DCM answers a request for it as already in place, after the no-change delay.
  f.node.labels.erase(sim::profile_label);
  f.step(t0 + 10s);
  f.request("cpx-nps4");
  f.step(t0 + 11s);
  f.step(t0 + 13s);
  BOOST_TEST(f.state() == "success");
  BOOST_TEST(f.events_named("RequestedPartitionConfigAlreadyExists").size() == 1u);
  BOOST_TEST(f.events_named("SuccessfullyPartitioned").empty());
}

BOOST_AUTO_TEST_CASE(a_restarted_simulator_on_a_tainted_node_takes_the_ready_label_down) {
  // The plugin does not run while the node carries the taint, whoever was watching
  // when it was added.
  node_fixture f;
  f.node.annotations[sim::partition_annotation] = "SPX/NPS1";
  f.node.gpu_capacity = 8;
  f.node.labels[sim::ready_label] = "true";
  f.node.dcm_taint = true;
  f.step(t0);
  BOOST_TEST(f.label(sim::ready_label) == "<none>");
}

BOOST_AUTO_TEST_SUITE_END()

// -- DCM runs --

namespace {

struct run_row {
  const char* name;
  const char* from; // the GPUs' mode before
  long long from_capacity;
  const char* profile;
  std::chrono::milliseconds sim::sim_timing::*delay;
  const char* reason;
  const char* to; // the partition annotation after
};

std::ostream& operator<<(std::ostream& os, const run_row& r) {
  return os << r.name;
}

const run_row run_rows[] = {
    {"compute_only_spx_to_qpx", "SPX/NPS1", 8, "qpx-nps1", &sim::sim_timing::compute_change,
     "SuccessfullyPartitioned", "QPX/NPS1"},
    {"compute_only_spx_to_cpx", "SPX/NPS1", 8, "cpx-nps1", &sim::sim_timing::compute_change,
     "SuccessfullyPartitioned", "CPX/NPS1"},
    {"memory_spx_nps1_to_cpx_nps4", "SPX/NPS1", 8, "cpx-nps4", &sim::sim_timing::memory_change,
     "SuccessfullyPartitioned", "CPX/NPS4"},
    {"memory_spx_nps1_to_dpx_nps2", "SPX/NPS1", 8, "dpx-nps2", &sim::sim_timing::memory_change,
     "SuccessfullyPartitioned", "DPX/NPS2"},
    {"memory_cpx_nps4_to_cpx_nps1", "CPX/NPS4", 64, "cpx-nps1", &sim::sim_timing::memory_change,
     "SuccessfullyPartitioned", "CPX/NPS1"},
    {"no_change_spx_nps1", "SPX/NPS1", 8, "spx-nps1", &sim::sim_timing::no_change,
     "RequestedPartitionConfigAlreadyExists", "SPX/NPS1"},
    {"no_change_cpx_nps4", "CPX/NPS4", 64, "cpx-nps4", &sim::sim_timing::no_change,
     "RequestedPartitionConfigAlreadyExists", "CPX/NPS4"},
};

} // namespace

BOOST_AUTO_TEST_SUITE(runs)

BOOST_DATA_TEST_CASE(a_run_succeeds_after_exactly_its_scaled_delay, bdata::make(run_rows), row) {
  node_fixture f;
  f.timing.scale = 0.5;
  f.known_node(row.from, row.from_capacity);
  const auto start = t0 + 3s;
  const auto delay = f.timing.scaled(f.timing.*row.delay);
  BOOST_TEST(std::chrono::duration_cast<std::chrono::milliseconds>(delay).count() ==
             (f.timing.*row.delay).count() / 2);
  f.request(row.profile);
  auto started = f.step(start);
  BOOST_TEST(started.labels.count(sim::state_label) == 0u);
  BOOST_TEST(started.events.empty());
  BOOST_TEST(due_ms(f.memory) == ms(start + delay));

  auto early = f.step(start + delay - 1ms);
  BOOST_TEST(early.empty());
  BOOST_TEST(f.state().empty());

  auto done = f.step(start + delay);
  BOOST_TEST(f.state() == "success");
  BOOST_TEST(f.node.annotations[sim::partition_annotation] == row.to);
  BOOST_REQUIRE(done.events.size() == 1u);
  BOOST_TEST(done.events[0].type == "Normal");
  BOOST_TEST(done.events[0].reason == row.reason);
  // Without the taint the plugin keeps what it reported at start.
  BOOST_TEST(!done.gpu_resources.has_value());
  BOOST_TEST(!sim::next_due(f.memory).has_value());
  BOOST_TEST(f.step(start + delay + 1h).empty());
}

BOOST_AUTO_TEST_CASE(the_success_event_is_json_with_every_gpus_new_mode) {
  node_fixture f;
  f.known_node();
  f.request("cpx-nps4");
  f.step(t0 + 1s);
  auto done = f.step(t0 + 1s + 140s);
  BOOST_REQUIRE(done.events.size() == 1u);
  rapidjson::Document doc;
  doc.Parse(done.events[0].message.c_str());
  BOOST_REQUIRE_MESSAGE(!doc.HasParseError() && doc.IsObject(), done.events[0].message);
  BOOST_TEST(std::string(doc["profile"].GetString()) == "cpx-nps4");
  BOOST_TEST(std::string(doc["status"].GetString()) == "success");
  BOOST_REQUIRE(doc["gpus"].IsObject());
  BOOST_TEST(doc["gpus"].MemberCount() == 8u);
  BOOST_TEST(std::string(doc["gpus"]["7"].GetString()) == "CPX/NPS4");
}

BOOST_AUTO_TEST_CASE(rewriting_the_same_value_starts_no_run) {
  node_fixture f;
  f.known_node();
  f.request("qpx-nps1");
  f.step(t0 + 1s);
  f.step(t0 + 11s);
  BOOST_REQUIRE(f.state() == "success");
  // The operator's one patch: same profile, stale state dropped.
  f.request("qpx-nps1");
  for (auto t = t0 + 12s; t < t0 + 12s + 10min; t += 1s)
    BOOST_TEST_REQUIRE(f.step(t).empty());
  BOOST_TEST(f.state().empty());
  BOOST_TEST(f.events.size() == 1u);
  BOOST_TEST(!sim::next_due(f.memory).has_value());
}

BOOST_AUTO_TEST_CASE(removing_then_re_adding_the_same_value_starts_a_new_run) {
  node_fixture f;
  f.known_node();
  f.request("qpx-nps1");
  f.step(t0 + 1s);
  f.step(t0 + 11s);
  BOOST_REQUIRE(f.state() == "success");
  f.node.labels.erase(sim::profile_label);
  f.node.labels.erase(sim::state_label);
  BOOST_TEST(f.step(t0 + 20s).empty()); // DCM only logs a removal
  f.request("qpx-nps1");
  f.step(t0 + 21s);
  BOOST_TEST(due_ms(f.memory) == ms(t0 + 21s + 2s));
  f.step(t0 + 23s);
  BOOST_TEST(f.state() == "success");
  BOOST_TEST(f.events_named("RequestedPartitionConfigAlreadyExists").size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_new_value_during_a_run_replaces_the_run) {
  node_fixture f;
  f.known_node();
  f.request("cpx-nps4");
  f.step(t0 + 1s);
  f.request("qpx-nps1");
  f.step(t0 + 5s);
  f.step(t0 + 15s); // the compute-only run of the new value is done
  BOOST_TEST(f.state() == "success");
  BOOST_TEST(f.node.annotations[sim::partition_annotation] == "QPX/NPS1");
  BOOST_TEST(f.step(t0 + 141s).empty()); // the replaced run never completes
  BOOST_TEST(f.events.size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

// -- refusals --

namespace {

struct refusal_row {
  const char* name;
  const char* profile;
  /// How the world is broken: "" fine, "missing" no ConfigMap, "invalid" bad JSON.
  const char* config;
  const char* reason;
};

std::ostream& operator<<(std::ostream& os, const refusal_row& r) {
  return os << r.name;
}

const refusal_row refusal_rows[] = {
    {"unknown_profile", "no-such-profile", "", "NonExistentProfile"},
    {"profile_with_bad_counts", "bad-count", "", "InvalidProfileInfo"},
    {"config_map_missing", "cpx-nps4", "missing", "ConfigMapNotPresent"},
    {"config_map_not_json", "cpx-nps4", "invalid", "InvalidJSONInConfigMap"},
};

} // namespace

BOOST_AUTO_TEST_SUITE(refusals)

BOOST_DATA_TEST_CASE(a_refused_run_fails_once_with_dcms_reason, bdata::make(refusal_rows), row) {
  node_fixture f;
  f.known_node();
  const std::string broken = row.config;
  if (broken == "missing") {
    f.world.config.reset(); // config_problem defaults to ConfigMapNotPresent
  } else if (broken == "invalid") {
    f.world.config = sim::parse_dcm_config("{not json", f.world.config_problem);
    BOOST_REQUIRE(!f.world.config.has_value());
  }
  f.request(row.profile);
  f.step(t0 + 1s);
  BOOST_TEST(f.step(t0 + 1s + 2s - 1ms).empty());
  auto failed = f.step(t0 + 1s + 2s);
  BOOST_TEST(f.state() == "failure");
  BOOST_REQUIRE(failed.events.size() == 1u);
  BOOST_TEST(failed.events[0].type == "Warning");
  BOOST_TEST(failed.events[0].reason == row.reason);
  // Nothing changed on the GPUs, and a bad request is not retried.
  BOOST_TEST(f.node.annotations[sim::partition_annotation] == "SPX/NPS1");
  BOOST_TEST(!sim::next_due(f.memory).has_value());
  BOOST_TEST(f.step(t0 + 1h).empty());
}

BOOST_DATA_TEST_CASE(a_failure_event_is_json_with_the_reason, bdata::make(refusal_rows), row) {
  // The operator quotes DCM's event: its message must parse whatever the problem says.
  node_fixture f;
  f.known_node();
  const std::string broken = row.config;
  if (broken == "missing")
    f.world.config.reset();
  else if (broken == "invalid")
    f.world.config = sim::parse_dcm_config("{not json", f.world.config_problem);
  f.request(row.profile);
  f.step(t0 + 1s);
  auto failed = f.step(t0 + 3s);
  BOOST_REQUIRE(failed.events.size() == 1u);
  rapidjson::Document doc;
  doc.Parse(failed.events[0].message.c_str());
  BOOST_REQUIRE_MESSAGE(!doc.HasParseError() && doc.IsObject(),
                        "not JSON: " + failed.events[0].message);
  BOOST_TEST(std::string(doc["status"].GetString()) == "failure");
  BOOST_TEST(doc.HasMember("reason"));
}

BOOST_AUTO_TEST_CASE(gpu_pods_fail_the_run_and_it_succeeds_on_a_retry_once_they_are_gone) {
  node_fixture f;
  f.known_node();
  f.world.gpu_pods[f.node.name] = 2;
  f.world.gpu_pods["another-node"] = 0;
  f.request("qpx-nps1");
  f.step(t0 + 1s);
  auto failed = f.step(t0 + 3s);
  BOOST_TEST(f.state() == "failure");
  BOOST_TEST(has_reason(failed, "PartitionFailure"));
  // Retried every retry_period: the next try is a minute after the failure.
  BOOST_TEST(due_ms(f.memory) == ms(t0 + 3s + 60s));
  BOOST_TEST(f.step(t0 + 3s + 60s - 1ms).empty());
  f.step(t0 + 63s); // still busy
  auto again = f.step(t0 + 65s);
  BOOST_TEST(has_reason(again, "PartitionFailure"));
  BOOST_TEST(f.events_named("PartitionFailure").size() == 2u);

  f.world.gpu_pods.erase(f.node.name);
  BOOST_TEST(due_ms(f.memory) == ms(t0 + 65s + 60s));
  f.step(t0 + 125s); // the retry finds the GPUs free and starts the compute change
  BOOST_TEST(f.state() == "failure");
  f.step(t0 + 135s);
  BOOST_TEST(f.state() == "success");
  BOOST_TEST(f.node.annotations[sim::partition_annotation] == "QPX/NPS1");
  BOOST_TEST(f.events_named("SuccessfullyPartitioned").size() == 1u);
  BOOST_TEST(!sim::next_due(f.memory).has_value());
}

BOOST_AUTO_TEST_CASE(gpu_pods_that_stay_make_dcm_give_up_after_the_retry_window) {
  node_fixture f;
  f.known_node();
  f.world.gpu_pods[f.node.name] = 1;
  f.request("qpx-nps1");
  const auto start = t0 + 1s;
  f.step(start);
  f.run_until(start + 2h);
  BOOST_TEST(!sim::next_due(f.memory).has_value());
  std::vector<sim::sim_time> failures;
  for (const auto& [at, e] : f.events) {
    BOOST_TEST(e.reason == "PartitionFailure");
    failures.push_back(at);
  }
  // Every retry_period (plus the refusal itself) for retry_window, then no more.
  BOOST_REQUIRE(failures.size() >= 2u);
  for (std::size_t i = 1; i < failures.size(); ++i) {
    BOOST_TEST((failures[i] - failures[i - 1] >= 60s));
    BOOST_TEST((failures[i] - failures[i - 1] <= 62s));
  }
  BOOST_TEST(failures.size() >= 29u);
  BOOST_TEST(failures.size() <= 31u);
  BOOST_TEST((failures.back() <= start + 30min + 2s));
  // The GPUs freed after DCM gave up change nothing.
  f.world.gpu_pods.clear();
  BOOST_TEST(f.step(start + 3h).empty());
  BOOST_TEST(f.state() == "failure");
  BOOST_TEST(f.node.annotations[sim::partition_annotation] == "SPX/NPS1");
}

BOOST_AUTO_TEST_SUITE_END()

// -- faults --

BOOST_AUTO_TEST_SUITE(faults)

BOOST_AUTO_TEST_CASE(fault_label_words_parse_and_unknown_ones_are_reported) {
  std::vector<std::string> unknown;
  auto f = sim::parse_faults(" dcm-failure, wrong-count,,nonsense ", &unknown);
  BOOST_TEST(f.dcm_failure);
  BOOST_TEST(f.wrong_count);
  BOOST_TEST(!f.dcm_stuck);
  BOOST_TEST(!f.slow_plugin);
  BOOST_TEST(unknown == (std::vector<std::string>{"nonsense"}));
}

BOOST_AUTO_TEST_CASE(dcm_failure_fails_every_run_with_AMDSMIAPIFailure_and_retries) {
  node_fixture f;
  f.known_node();
  f.node.labels[sim::fault_label] = "dcm-failure";
  f.request("cpx-nps4");
  f.step(t0 + 1s);
  auto failed = f.step(t0 + 3s);
  BOOST_TEST(f.state() == "failure");
  BOOST_REQUIRE(failed.events.size() == 1u);
  BOOST_TEST(failed.events[0].reason == "AMDSMIAPIFailure");
  BOOST_TEST(failed.events[0].type == "Warning");
  BOOST_TEST(due_ms(f.memory) == ms(t0 + 63s));
  f.run_until(t0 + 10min);
  BOOST_TEST(f.events_named("AMDSMIAPIFailure").size() > 5u);
  BOOST_TEST(f.events_named("SuccessfullyPartitioned").empty());
  BOOST_TEST(f.node.annotations[sim::partition_annotation] == "SPX/NPS1");
}

BOOST_AUTO_TEST_CASE(dcm_stuck_never_writes_a_state_label) {
  node_fixture f;
  f.known_node();
  f.node.labels[sim::fault_label] = "dcm-stuck";
  f.request("cpx-nps4");
  for (auto t = t0 + 1s; t < t0 + 1h; t += 5s)
    f.step(t);
  BOOST_TEST(f.state().empty());
  BOOST_TEST(f.events.empty());
  BOOST_TEST(!sim::next_due(f.memory).has_value());
  BOOST_TEST(f.node.annotations[sim::partition_annotation] == "SPX/NPS1");
}

BOOST_AUTO_TEST_CASE(the_taint_takes_the_plugin_down_without_changing_resources) {
  node_fixture f;
  f.known_node();
  f.node.dcm_taint = true;
  auto a = f.step(t0 + 1s);
  BOOST_TEST(a.labels.count(sim::ready_label) == 1u);
  BOOST_TEST(f.label(sim::ready_label) == "<none>");
  BOOST_TEST(!a.gpu_resources.has_value());
  BOOST_TEST(*f.node.gpu_capacity == 8);
  BOOST_TEST(f.step(t0 + 1h).empty()); // down for as long as the taint stays
}

namespace {

struct plugin_row {
  const char* name;
  const char* faults;
  const char* profile;
  std::chrono::milliseconds restart; // unscaled
  long long resources;
  const char* partition;
};

std::ostream& operator<<(std::ostream& os, const plugin_row& r) {
  return os << r.name;
}

const plugin_row plugin_rows[] = {
    {"cpx_nps4", "", "cpx-nps4", 5s, 64, "cpx_nps4"},
    {"dpx_nps2", "", "dpx-nps2", 5s, 16, "dpx_nps2"},
    {"qpx_nps1", "", "qpx-nps1", 5s, 32, "qpx_nps1"},
    {"spx_nps1_unchanged", "", "spx-nps1", 5s, 8, "spx_nps1"},
    {"slow_plugin_cpx", "slow-plugin", "cpx-nps4", 50s, 64, "cpx_nps4"},
    {"wrong_count_cpx", "wrong-count", "cpx-nps4", 5s, 63, "cpx_nps4"},
    {"slow_wrong_count_cpx", "wrong-count,slow-plugin", "cpx-nps4", 50s, 63, "cpx_nps4"},
    {"skipped_gpus_stay_spx", "", "cpx-nps4-skip-2", 5s, 6 * 8 + 2 * 1, "cpx_nps4"},
    {"two_compute_modes", "", "cpx-spx-nps1", 5s, 4 * 8 + 4 * 1, "cpx_nps1"},
};

} // namespace

BOOST_DATA_TEST_CASE(after_the_taint_goes_the_plugin_reports_the_new_mode_after_its_restart,
                     bdata::make(plugin_rows), row) {
  node_fixture f;
  f.timing.scale = 0.1;
  f.known_node();
  f.node.labels[sim::fault_label] = row.faults;
  // The operator's order: taint, then the profile; untaint after success.
  f.node.dcm_taint = true;
  f.step(t0 + 1s);
  f.request(row.profile);
  f.step(t0 + 2s);
  f.run_until(t0 + 1min);
  BOOST_REQUIRE(f.state() == "success");
  BOOST_TEST(f.label(sim::ready_label) == "<none>");
  BOOST_TEST(*f.node.gpu_capacity == 8);

  const auto untaint = t0 + 2min;
  f.node.dcm_taint = false;
  BOOST_TEST(!f.step(untaint).gpu_resources.has_value());
  const auto restart = f.timing.scaled(row.restart);
  BOOST_TEST(due_ms(f.memory) == ms(untaint + restart));
  auto early = f.step(untaint + restart - 1ms);
  BOOST_TEST(!early.gpu_resources.has_value());
  BOOST_TEST(f.label(sim::ready_label) == "<none>");
  auto up = f.step(untaint + restart);
  BOOST_REQUIRE(up.gpu_resources.has_value());
  BOOST_TEST(*up.gpu_resources == row.resources);
  BOOST_TEST(f.label(sim::ready_label) == "true");
  BOOST_TEST(f.label(sim::partition_label) == row.partition);
  BOOST_TEST(!sim::next_due(f.memory).has_value());
}

BOOST_AUTO_TEST_CASE(wrong_count_also_shows_when_a_cpx_node_first_reports) {
  node_fixture f;
  f.node.labels[sim::fault_label] = "wrong-count";
  f.node.annotations[sim::partition_annotation] = "CPX/NPS4";
  auto a = f.step(t0);
  BOOST_REQUIRE(a.gpu_resources.has_value());
  BOOST_TEST(*a.gpu_resources == 63);
}

BOOST_AUTO_TEST_CASE(a_taint_back_during_the_restart_keeps_the_plugin_down) {
  node_fixture f;
  f.known_node();
  f.node.dcm_taint = true;
  f.step(t0 + 1s);
  f.node.dcm_taint = false;
  f.step(t0 + 2s);
  f.node.dcm_taint = true;
  f.step(t0 + 3s);
  BOOST_TEST(!sim::next_due(f.memory).has_value());
  BOOST_TEST(f.step(t0 + 1min).empty());
  BOOST_TEST(f.label(sim::ready_label) == "<none>");
}

BOOST_AUTO_TEST_SUITE_END()

// -- next_due --

BOOST_AUTO_TEST_SUITE(scheduling)

BOOST_AUTO_TEST_CASE(next_due_is_the_earlier_of_the_run_and_the_plugin_restart) {
  node_fixture f;
  f.known_node();
  BOOST_TEST(!sim::next_due(f.memory).has_value());
  f.node.dcm_taint = true;
  f.step(t0 + 1s);
  BOOST_TEST(!sim::next_due(f.memory).has_value()); // down, waiting for nothing
  f.request("cpx-nps4");
  f.step(t0 + 2s);
  BOOST_TEST(due_ms(f.memory) == ms(t0 + 2s + 140s));
  f.node.dcm_taint = false; // untainted mid-run: the plugin restart comes first
  f.step(t0 + 3s);
  BOOST_TEST(due_ms(f.memory) == ms(t0 + 3s + 5s));
  f.step(t0 + 8s);
  BOOST_TEST(due_ms(f.memory) == ms(t0 + 2s + 140s));
  f.step(t0 + 142s);
  BOOST_TEST(!sim::next_due(f.memory).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
