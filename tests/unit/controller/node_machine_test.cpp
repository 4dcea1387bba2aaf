// controller::step_node (DESIGN.md section 4): one node from Pending to Succeeded or
// Failed, phase by phase, as the code implements it; resuming from every phase after a
// restart; dry runs; deletion; and a seeded property test that drives the machine
// through a small model of the cluster (node, pods, PDBs, DCM, device plugin) and
// checks the safety rules at every step. Time is fixed (`t0` and offsets from it).
#include "controller/drain.hpp"
#include "controller/node_machine.hpp"
#include "controller/preflight.hpp"
#include "controller/verification.hpp"

#include "controller/dcm_payload.hpp"
#include "protocol/desired_hash.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;
namespace bdata = boost::unit_test::data;
using namespace std::chrono_literals;
using gp::node_phase;

namespace {

// -- fixed names and values --

const gp::wall_clock::time_point t0 = gp::wall_clock::from_time_t(1800000000);
const std::string hash_a = "sha256:" + std::string(64, 'a');
const std::string hash_b = "sha256:" + std::string(64, 'b');
const std::string other_hash = "sha256:" + std::string(64, 'c');
const std::string node_name = "gpu-1";
const std::string dcm_name = "cpx-nps4";
const std::string cpx_payload =
    R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":8}]})";
// The same object with its keys in another order.
const std::string cpx_payload_reordered =
    R"({"profiles":[{"numGPUsAssigned":8,"memoryPartition":"NPS4","computePartition":"CPX"}],"skippedGPUs":{"ids":[]}})";
const std::string spx_payload =
    R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"SPX","memoryPartition":"NPS1","numGPUsAssigned":8}]})";
const char* const ready_label = "amd.com/gpu.ready";
const char* const gpu = "amd.com/gpu";

const gc::taint dcm_taint{gc::dcm_taint_key, gc::dcm_taint_value, "NoExecute"};

// -- builders --

gc::pod_info pod(const std::string& name, const std::string& app = "web") {
  gc::pod_info p;
  p.ns = "team";
  p.name = name;
  p.uid = "uid-" + name;
  p.node_name = node_name;
  p.labels = {{"app", app}};
  p.phase = "Running";
  return p;
}

gc::pod_info daemon_pod(const std::string& name) {
  auto p = pod(name, "device-plugin");
  p.ns = "kube-amd-gpu";
  p.daemon_set = true;
  return p;
}

gc::toleration tolerate_dcm(bool bounded = false) {
  gc::toleration t;
  t.key = gc::dcm_taint_key;
  t.op = "Exists";
  t.effect = "NoExecute";
  t.bounded = bounded;
  return t;
}

gc::pdb_info pdb(const std::string& name, const std::string& app, int allowed) {
  gc::pdb_info b;
  b.ns = "team";
  b.name = name;
  b.match_labels = {{"app", app}};
  b.disruptions_allowed = allowed;
  return b;
}

// The node, its item, the profile and DCM's config as a test starts them: a MI300X node
// on SPX/NPS1 (8 GPUs), to become CPX/NPS4 (64), schedulable, nothing of ours on it.
struct world {
  gc::node_inputs in;

  world() {
    auto& item = in.item;
    item.metadata.name = "plan-" + node_name;
    item.metadata.uid = "item-uid";
    item.metadata.finalizers = {gc::item_finalizer};
    item.spec.plan_ref = {"plan", "plan-uid"};
    item.spec.node_name = node_name;
    item.spec.desired_hash = hash_a;
    item.spec.profile_ref.name = "mi300x-cpx-nps4";

    gc::node_info node;
    node.name = node_name;
    node.uid = "node-uid";
    node.resource_version = "1";
    node.labels = {{"amd.com/gpu.product", "MI300X"},
                   {gc::dcm_profile_label, "spx-nps1"},
                   {gc::dcm_state_label, "success"},
                   {ready_label, "true"}};
    node.allocatable = {{gpu, "8"}, {"cpu", "96"}};
    in.node = node;

    auto& profile = in.profile;
    profile.name = "mi300x-cpx-nps4";
    profile.found = true;
    gp::label_selector target;
    target.match_labels = {{"amd.com/gpu.product", "MI300X"}};
    profile.spec.target_selector = target;
    profile.spec.expected_resources = {{gpu, 64}};
    profile.spec.verification.ready_label = ready_label;
    profile.spec.verification.timeout_seconds = 300;
    profile.spec.operator_payload.name = "cpx-nps4";
    profile.spec.operator_payload.namespace_ = "kube-amd-gpu";
    profile.spec.operator_payload.profile_name = dcm_name;
    profile.dcm_name = dcm_name;
    profile.payload = cpx_payload;

    in.dcm.ns = "kube-amd-gpu";
    in.dcm.name = "config-manager-config";
    in.dcm.found = true;
    in.dcm.config_json = R"({"gpu-config-profiles":{"spx-nps1":)" + spx_payload + "}}";
    in.now = t0;
    // DCM's pod, as the GPU operator's DaemonSet runs it on every GPU node.
    gc::pod_info dcm;
    dcm.ns = "kube-amd-gpu";
    dcm.name = "default-device-config-manager-abcde";
    dcm.uid = "uid-dcm";
    dcm.node_name = node_name;
    dcm.labels = {{gc::dcm_pod_label, gc::dcm_pod_label_value}};
    dcm.phase = "Running";
    dcm.daemon_set = true;
    dcm.tolerations = {tolerate_dcm()};
    dcm.dcm_config_mount = "config-manager-config";
    dcm.dcm_image = "docker.io/rocm/device-config-manager:v1.3.0";
    in.pods.push_back(dcm);
    find_dcm();
  }

  // in.dcm's pod part, as the slicer finds it from the node's pods.
  void find_dcm() {
    std::vector<const gc::pod_info*> pods;
    for (const auto& p : in.pods)
      pods.push_back(&p);
    const auto d = gc::find_node_dcm(pods, in.dcm.ns);
    in.dcm.pod = d.pod;
    in.dcm.running = d.running;
    in.dcm.image = d.image;
    in.dcm.version = d.version;
    in.dcm.problem = d.problem;
  }

  gc::node_info& node() { return *in.node; }
  gp::node_partitioning_status& status() { return in.item.status; }

  // Status as if the item went Pending -> ... -> `p`, entering `p` at `entered`.
  world& at(node_phase p, gp::wall_clock::time_point entered = t0) {
    static const std::vector<node_phase> path{node_phase::pending,   node_phase::draining,
                                              node_phase::applying,  node_phase::waiting_operator,
                                              node_phase::verifying, node_phase::succeeded};
    auto& st = status();
    st.phase = p;
    st.observed_hash = in.item.spec.desired_hash;
    st.history.clear();
    if (p == node_phase::failed)
      return *this; // see failed_in()
    for (auto q : path) {
      st.history.push_back({q, gp::format_time(entered), "Test", ""});
      if (q == p)
        break;
    }
    if (p != node_phase::pending) {
      st.started_at = gp::format_time(entered);
      st.dcm_events_until = gc::dcm_events_mark(in.dcm_events); // as the run's start found them
    }
    return *this;
  }

  // DCM's Events so far were there when the run started (the run's mark is their newest).
  world& dcm_events_before_run() {
    status().dcm_events_until = gc::dcm_events_mark(in.dcm_events);
    return *this;
  }

  // Failed after reaching `last` (Draining: before the GPUs were touched).
  world& failed_in(node_phase last, const std::string& reason,
                   gp::wall_clock::time_point when = t0) {
    at(last, when);
    auto& st = status();
    st.phase = node_phase::failed;
    st.history.push_back({node_phase::failed, gp::format_time(when), reason, "failed"});
    st.last_error = "failed";
    return *this;
  }

  // -- node states --
  world& cordoned_by_us() {
    node().unschedulable = true;
    node().annotations[gc::was_unschedulable_annotation] = "false";
    return *this;
  }
  world& admin_cordoned() {
    node().unschedulable = true;
    return *this;
  }
  world& cordoned_over_admin() {
    node().unschedulable = true;
    node().annotations[gc::was_unschedulable_annotation] = "true";
    return *this;
  }
  world& tainted() {
    node().taints.push_back(dcm_taint);
    node().labels.erase(ready_label); // the labeller is gone while tainted
    node().allocatable[gpu] = "0";    // kubelet marks the plugin's devices unhealthy
    return *this;
  }
  world& dcm_config_has_profile() {
    in.dcm.config_json = R"({"gpu-config-profiles":{"spx-nps1":)" + spx_payload +
                         R"(,"cpx-nps4":)" + cpx_payload + "}}";
    return *this;
  }
  // What the applied-hash annotation holds for the current run: `<desiredHash>@<startedAt>`.
  std::string mark() const { return in.item.spec.desired_hash + "@" + in.item.status.started_at; }
  // The profile label, set by the current run (call after at() or failed_in(): the mark
  // names the run's startedAt).
  world& label_ours() {
    dcm_config_has_profile();
    node().labels[gc::dcm_profile_label] = dcm_name;
    node().labels.erase(gc::dcm_state_label);
    node().annotations[gc::applied_hash_annotation] = mark();
    return *this;
  }
  // DCM's state label and its Event for this run's profile (success, or an amd-smi
  // failure), as DCM writes both.
  world& dcm_says(const std::string& state) {
    node().labels[gc::dcm_state_label] = state;
    if (state == "success")
      dcm_event("SuccessfullyPartitioned");
    else if (state == "failure")
      dcm_event("AMDSMIAPIFailure", dcm_name, "amd-smi failed");
    return *this;
  }
  // The state label alone (its Event lost, or not yet seen).
  world& dcm_state_only(const std::string& state) {
    node().labels[gc::dcm_state_label] = state;
    return *this;
  }
  // One of DCM's Events from the node, answering `profile`, at `now`.
  world& dcm_event(const std::string& reason, const std::string& profile = dcm_name,
                   const std::string& message = "{}") {
    gc::dcm_event_info e;
    e.type = reason == "SuccessfullyPartitioned" ? "Normal" : "Warning";
    e.reason = reason;
    e.message = message;
    e.profile = profile;
    e.time = in.now;
    in.dcm_events.push_back(e);
    return *this;
  }
  // The device plugin and labeller report the new partitions.
  world& reports(const std::string& count) {
    node().labels[ready_label] = "true";
    node().allocatable[gpu] = count;
    return *this;
  }
  // Everything a finished run leaves on the node, before the last uncordon.
  world& partitioned() {
    label_ours();
    dcm_says("success");
    reports("64");
    return *this;
  }
  world& with(gc::pod_info p) {
    in.pods.push_back(std::move(p));
    return *this;
  }
  world& with(gc::pdb_info b) {
    in.pdbs.push_back(std::move(b));
    return *this;
  }
  world& later(std::chrono::seconds d) {
    in.now = t0 + d;
    return *this;
  }

  // The evictions a case records are the current run's unless they name a run (the worker
  // stamps each with the run that asked for it).
  gc::node_step step() const {
    const auto unnamed = [](const auto& e) { return e.second.run.empty(); };
    if (std::none_of(in.evictions.begin(), in.evictions.end(), unnamed))
      return gc::step_node(in);
    auto stamped = in;
    for (auto& [pod, memory] : stamped.evictions)
      if (memory.run.empty())
        memory.run = in.item.status.started_at;
    return gc::step_node(stamped);
  }
};

// -- reading a step --

std::string name_of(node_phase p) {
  return std::string(gp::codec::to_string(p));
}

// The phase after the step.
std::string phase_after(const world& w, const gc::node_step& s) {
  const auto& st = s.status ? *s.status : w.in.item.status;
  return name_of(st.phase.value_or(node_phase::pending));
}

const gp::node_partitioning_status& status_after(const world& w, const gc::node_step& s) {
  return s.status ? *s.status : w.in.item.status;
}

std::string last_reason(const world& w, const gc::node_step& s) {
  const auto& h = status_after(w, s).history;
  return h.empty() ? std::string{} : h.back().reason;
}

const gp::condition* condition(const gp::node_partitioning_status& st, const std::string& type) {
  for (const auto& c : st.conditions)
    if (c.type == type)
      return &c;
  return nullptr;
}

// "True/Reason", "False/Reason" or "-".
std::string condition_of(const world& w, const gc::node_step& s, const std::string& type) {
  const auto* c = condition(status_after(w, s), type);
  if (c == nullptr)
    return "-";
  return std::string(gp::codec::to_string(c->status)) + "/" + c->reason;
}

bool no_node_writes(const gc::node_step& s) {
  return !s.patch && !s.taint && s.removals.empty() && !s.dcm;
}

// "cordon", "uncordon" or "-".
std::string cordon_write(const gc::node_step& s) {
  if (!s.patch || !s.patch->unschedulable)
    return "-";
  return *s.patch->unschedulable ? "cordon" : "uncordon";
}

// "add", "remove" or "-".
std::string taint_write(const gc::node_step& s) {
  if (!s.taint)
    return "-";
  return *s.taint ? "add" : "remove";
}

std::string map_write(const std::map<std::string, std::optional<std::string>>& m,
                      const std::string& key) {
  auto it = m.find(key);
  if (it == m.end())
    return "-";
  return it->second ? *it->second : "<remove>";
}

std::string annotation_write(const gc::node_step& s, const std::string& key) {
  return s.patch ? map_write(s.patch->annotations, key) : "-";
}

std::string label_write(const gc::node_step& s, const std::string& key) {
  return s.patch ? map_write(s.patch->labels, key) : "-";
}

// "ns/name:evict" or "ns/name:delete", in order.
std::vector<std::string> removals(const gc::node_step& s) {
  std::vector<std::string> out;
  for (const auto& r : s.removals)
    out.push_back(r.ns + "/" + r.name + (r.evict ? ":evict" : ":delete"));
  return out;
}

bool has_event(const gc::node_step& s, const std::string& reason, bool on_node,
               const std::string& type) {
  return std::any_of(s.events.begin(), s.events.end(), [&](const gc::event_record& e) {
    return e.reason == reason && e.on_node == on_node && e.type == type;
  });
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Applies a step's node writes to the node, as the io executor would (patch, taint).
void apply_node_writes(gc::node_info& node, const gc::node_step& s) {
  if (s.patch) {
    if (s.patch->unschedulable)
      node.unschedulable = *s.patch->unschedulable;
    for (const auto& [k, v] : s.patch->labels)
      if (v)
        node.labels[k] = *v;
      else
        node.labels.erase(k);
    for (const auto& [k, v] : s.patch->annotations)
      if (v)
        node.annotations[k] = *v;
      else
        node.annotations.erase(k);
  }
  if (s.taint) {
    auto& t = node.taints;
    t.erase(std::remove(t.begin(), t.end(), dcm_taint), t.end());
    if (*s.taint)
      t.push_back(dcm_taint);
  }
}

// The step's status becomes the item's (the status writer wrote it).
void keep_status(world& w, const gc::node_step& s) {
  if (s.status)
    w.in.item.status = *s.status;
}

} // namespace

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(finalizer)

BOOST_AUTO_TEST_CASE(finalizer_is_added_when_missing) {
  world w;
  w.in.item.metadata.finalizers.clear();
  auto s = w.step();
  BOOST_TEST(s.add_finalizer);
  BOOST_TEST(!s.remove_finalizer);
}

BOOST_AUTO_TEST_CASE(finalizer_is_not_added_twice) {
  world w;
  BOOST_TEST(!w.step().add_finalizer);
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(pending)

struct preflight_case {
  const char* cause;
  void (*break_it)(world&);
  void (*fix_it)(world&);
};

std::ostream& operator<<(std::ostream& os, const preflight_case& c) {
  return os << c.cause;
}

const std::vector<preflight_case> preflight_cases{
    {"ProfileNotFound", [](world& w) { w.in.profile.found = false; },
     [](world& w) { w.in.profile.found = true; }},
    {"PayloadNotFound",
     [](world& w) {
       w.in.profile.payload.reset();
       w.in.profile.payload_problem = "ConfigMap kube-amd-gpu/cpx-nps4 not found";
     },
     [](world& w) { w.in.profile.payload = cpx_payload; }},
    {"PayloadInvalid", [](world& w) { w.in.profile.payload = R"({"profiles":[)"; },
     [](world& w) { w.in.profile.payload = cpx_payload; }},
    {"PayloadNamespaceNotAllowed",
     [](world& w) {
       w.in.profile.payload.reset();
       w.in.profile.payload_forbidden = true;
       w.in.profile.payload_problem = "spec.operatorPayload.namespace: \"team-a\" is not allowed";
     },
     [](world& w) {
       w.in.profile.payload = cpx_payload;
       w.in.profile.payload_forbidden = false;
     }},
    {"PodDeleteNotPermitted",
     [](world& w) {
       w.in.pods_deletable = false;
       w.in.item.spec.drain.kind = gp::eviction_kind::delete_pods;
     },
     [](world& w) { w.in.pods_deletable = true; }},
    {"TargetMismatch", [](world& w) { w.node().labels["amd.com/gpu.product"] = "MI250"; },
     [](world& w) { w.node().labels["amd.com/gpu.product"] = "MI300X"; }},
    {"DCMConfigNotFound", [](world& w) { w.in.dcm.found = false; },
     [](world& w) { w.in.dcm.found = true; }},
    {"DCMConfigInvalid", [](world& w) { w.in.dcm.config_json = R"(["not","an","object"])"; },
     [](world& w) { w.in.dcm.config_json = R"({"gpu-config-profiles":{}})"; }},
};

// Deleting pods is needed only by some plans: only they are refused without the grant.
BOOST_AUTO_TEST_CASE(only_plans_that_delete_pods_need_the_grant) {
  world w;
  w.in.pods_deletable = false;
  BOOST_TEST(gc::preflight(w.in).empty(), "evictions need no delete");
  w.in.item.spec.drain.respect_pdb = false;
  auto findings = gc::preflight(w.in);
  BOOST_REQUIRE(findings.size() == 1u);
  BOOST_TEST(findings[0].reason == "PodDeleteNotPermitted");
  BOOST_TEST(findings[0].text().find("respectPDB false") != std::string::npos);
  BOOST_TEST(findings[0].text().find("rbac.podDelete") != std::string::npos);
  w.in.item.spec.drain.enabled = false; // the taint removes the pods: no delete of ours
  BOOST_TEST(gc::preflight(w.in).empty());
}

BOOST_DATA_TEST_CASE(preflight_failure_fails_before_anything_is_written_to_the_node,
                     bdata::make(preflight_cases), c) {
  world w;
  w.with(pod("web-0"));
  c.break_it(w);
  w.in.token = true; // even with a token
  auto s = w.step();
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(!s.wants_token);
  BOOST_TEST(!s.in_flight);
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(last_reason(w, s) == "PreflightFailed");
  BOOST_TEST(condition_of(w, s, "Preflight") == std::string("False/") + c.cause);
  BOOST_TEST(status_after(w, s).last_error.rfind(std::string(c.cause) + ": ", 0) == 0);
  BOOST_TEST(status_after(w, s).started_at.empty());
}

BOOST_DATA_TEST_CASE(preflight_findings_name_the_cause, bdata::make(preflight_cases), c) {
  world w;
  c.break_it(w);
  auto findings = gc::preflight(w.in);
  BOOST_TEST_REQUIRE(findings.size() == 1u);
  BOOST_TEST(findings.front().reason == c.cause, findings.front().text());
}

BOOST_DATA_TEST_CASE(preflight_failure_clears_itself_when_the_cause_is_fixed,
                     bdata::make(preflight_cases), c) {
  world w;
  c.break_it(w);
  auto failed = w.step();
  keep_status(w, failed);
  BOOST_TEST_REQUIRE(phase_after(w, failed) == "Failed");

  // Still broken: stays Failed, looks again later, writes nothing.
  w.later(30s);
  auto still = w.step();
  BOOST_TEST(phase_after(w, still) == "Failed");
  BOOST_TEST(no_node_writes(still));
  BOOST_TEST(still.requeue.count() > 0);

  c.fix_it(w);
  auto fixed = w.step();
  BOOST_TEST(no_node_writes(fixed));
  BOOST_TEST(phase_after(w, fixed) == "Pending");
  BOOST_TEST(last_reason(w, fixed) == "PreflightPassed");
  BOOST_TEST(status_after(w, fixed).last_error.empty());
  BOOST_TEST(condition_of(w, fixed, "Preflight") == "True/PreflightPassed");
}

// Found by the fault suite: DCM's ConfigMap deleted (DCMConfigNotFound), then re-created
// with invalid JSON; the item kept saying the ConfigMap did not exist.
BOOST_DATA_TEST_CASE(a_failed_preflight_reports_the_current_cause_when_it_changes,
                     bdata::make(preflight_cases), c) {
  world w;
  w.in.dcm.found = false;
  auto failed = w.step();
  keep_status(w, failed);
  BOOST_TEST_REQUIRE(condition_of(w, failed, "Preflight") == "False/DCMConfigNotFound");
  w.in.dcm.found = true;
  c.break_it(w);
  w.later(30s);
  auto changed = w.step();
  BOOST_TEST(no_node_writes(changed));
  BOOST_TEST(phase_after(w, changed) == "Failed");
  BOOST_TEST(last_reason(w, changed) == "PreflightFailed");
  const auto& history = status_after(w, changed).history;
  BOOST_TEST(std::count_if(history.begin(), history.end(),
                           [](const auto& h) { return h.reason == "PreflightFailed"; }) == 1);
  BOOST_TEST(condition_of(w, changed, "Preflight") == std::string("False/") + c.cause);
  BOOST_TEST(status_after(w, changed).last_error.rfind(std::string(c.cause) + ": ", 0) == 0);
  BOOST_TEST(changed.requeue.count() > 0);
}

// Found by the soak: a write that failed once (the API server away) left its error in
// lastError of items that went on to succeed.
BOOST_AUTO_TEST_CASE(a_write_error_is_shown_while_it_lasts_and_cleared_once_resolved) {
  world w;
  w.at(node_phase::draining).cordoned_by_us();
  w.with(pod("web-0"));
  w.in.write_error = "evicting: Transport: connection refused";
  auto failing = w.step();
  BOOST_TEST(status_after(w, failing).last_error == w.in.write_error);
  keep_status(w, failing);
  w.in.resolved_write_error = w.in.write_error;
  w.in.write_error.clear();
  auto resolved = w.step();
  BOOST_TEST(status_after(w, resolved).last_error.empty());
  // Another error (not the resolved one) stays.
  keep_status(w, resolved);
  w.in.item.status.last_error = "something else";
  BOOST_TEST(status_after(w, w.step()).last_error == "something else");
}

BOOST_AUTO_TEST_CASE(preflight_accepts_an_empty_dcm_config_and_a_profile_without_target) {
  world w;
  w.in.dcm.config_json.clear();
  w.in.profile.spec.target_selector.reset();
  w.node().labels.erase("amd.com/gpu.product");
  BOOST_TEST(gc::preflight(w.in).empty());
}

BOOST_AUTO_TEST_CASE(node_already_in_target_state_succeeds_without_node_writes) {
  world w;
  w.partitioned();
  w.node().annotations.clear(); // partitioned by hand earlier, not by us
  w.with(pod("web-0"));
  BOOST_TEST(gc::in_target_state(w.in));
  auto s = w.step();
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(!s.wants_token);
  BOOST_TEST(!s.in_flight);
  BOOST_TEST(phase_after(w, s) == "Succeeded");
  BOOST_TEST(last_reason(w, s) == "AlreadyInTargetState");
  BOOST_TEST(status_after(w, s).observed_hash == hash_a);
  BOOST_TEST(condition_of(w, s, "Verified") == "True/AlreadyInTargetState");
}

BOOST_AUTO_TEST_CASE(a_tainted_or_unverified_node_is_not_in_target_state) {
  world w;
  w.partitioned();
  w.node().taints.push_back(dcm_taint);
  BOOST_TEST(!gc::in_target_state(w.in));
  world x;
  x.partitioned();
  x.reports("63");
  BOOST_TEST(!gc::in_target_state(x.in));
  world y;
  y.partitioned();
  y.dcm_says("failure");
  BOOST_TEST(!gc::in_target_state(y.in));
}

BOOST_AUTO_TEST_CASE(pending_without_token_asks_for_one_and_does_nothing_else) {
  world w;
  w.with(pod("web-0"));
  auto s = w.step();
  BOOST_TEST(s.wants_token);
  BOOST_TEST(!s.in_flight);
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(phase_after(w, s) == "Pending");
  BOOST_TEST(condition_of(w, s, "Started") == "False/WaitingForToken");
  BOOST_TEST(status_after(w, s).started_at.empty());
}

BOOST_AUTO_TEST_CASE(pending_with_token_enters_draining_with_startedAt_and_a_history_entry) {
  world w;
  w.with(pod("web-0"));
  w.in.token = true;
  auto s = w.step();
  BOOST_TEST_REQUIRE(s.status.has_value());
  BOOST_TEST(phase_after(w, s) == "Draining");
  BOOST_TEST(s.in_flight);
  BOOST_TEST(s.wants_token);
  BOOST_TEST(s.status->started_at == gp::format_time(t0));
  BOOST_TEST(s.status->observed_hash == hash_a);
  BOOST_TEST_REQUIRE(!s.status->history.empty());
  BOOST_TEST(name_of(s.status->history.back().phase) == "Draining");
  BOOST_TEST(s.status->history.back().time == gp::format_time(t0));
  BOOST_TEST(condition_of(w, s, "Started") == "True/TokenGranted");
  // Entering Draining writes nothing yet: the cordon is the next step's, which comes at
  // once (1 ms), without waiting for the status write to come back through the watch.
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(s.requeue.count() > 0);
  BOOST_TEST(s.requeue.count() <= 1);
  keep_status(w, s);
  auto next = w.step();
  BOOST_TEST(cordon_write(next) == "cordon");
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(draining)

BOOST_AUTO_TEST_CASE(first_step_cordons_and_records_false_in_one_patch) {
  world w;
  w.at(node_phase::draining).with(pod("web-0"));
  auto s = w.step();
  BOOST_TEST(cordon_write(s) == "cordon");
  BOOST_TEST(annotation_write(s, gc::was_unschedulable_annotation) == "false");
  BOOST_TEST(!s.taint);
  BOOST_TEST(s.removals.empty()); // evictions come once the cordon is seen
  BOOST_TEST(s.in_flight);
  BOOST_TEST(has_event(s, "Cordoned", true, "Normal"));
}

BOOST_AUTO_TEST_CASE(an_admin_cordoned_node_is_recorded_as_true) {
  world w;
  w.at(node_phase::draining).admin_cordoned();
  auto s = w.step();
  BOOST_TEST(annotation_write(s, gc::was_unschedulable_annotation) == "true");
  BOOST_TEST(cordon_write(s) == "cordon"); // harmless: it is cordoned already
}

BOOST_AUTO_TEST_CASE(a_node_uncordoned_behind_our_back_is_cordoned_again_keeping_the_record) {
  world w;
  w.at(node_phase::draining).cordoned_over_admin();
  w.node().unschedulable = false; // someone uncordoned it
  auto s = w.step();
  BOOST_TEST(cordon_write(s) == "cordon");
  BOOST_TEST(annotation_write(s, gc::was_unschedulable_annotation) == "-");
}

BOOST_AUTO_TEST_CASE(evicts_only_the_pods_the_taint_would_kill) {
  world w;
  w.at(node_phase::draining).cordoned_by_us();
  auto ds = daemon_pod("device-plugin-x");
  auto mirror = pod("kube-proxy-static");
  mirror.mirror = true;
  auto done = pod("job-done");
  done.phase = "Succeeded";
  auto crashed = pod("job-failed");
  crashed.phase = "Failed";
  auto tolerant = pod("tolerant");
  tolerant.tolerations = {tolerate_dcm()};
  auto tolerates_all = pod("tolerates-all");
  gc::toleration all;
  all.op = "Exists";
  tolerates_all.tolerations = {all};
  auto bounded = pod("bounded");
  bounded.tolerations = {tolerate_dcm(true)}; // tolerationSeconds: evicted anyway
  auto no_schedule_only = pod("no-schedule-only");
  auto ns = tolerate_dcm();
  ns.effect = "NoSchedule";
  no_schedule_only.tolerations = {ns};
  w.with(pod("web-0"))
      .with(ds)
      .with(mirror)
      .with(done)
      .with(crashed)
      .with(tolerant)
      .with(tolerates_all)
      .with(bounded)
      .with(no_schedule_only);
  auto s = w.step();
  const std::vector<std::string> want{"team/web-0:evict", "team/bounded:evict",
                                      "team/no-schedule-only:evict"};
  BOOST_TEST(removals(s) == want, boost::test_tools::per_element());
  BOOST_TEST(!s.taint);
  BOOST_TEST(!s.patch);
  BOOST_TEST(condition_of(w, s, "Drained") == "False/Evicting");
  BOOST_TEST(status_after(w, s).drain.pods_total == 3);
  BOOST_TEST(s.removals.front().uid == "uid-web-0"); // the eviction is for this pod only
}

// Drain progress counts each pod once, and says nothing that changes as evicted pods go:
// each change of the status is a write.
BOOST_AUTO_TEST_CASE(evicted_pods_still_terminating_are_counted_once) {
  world w;
  w.at(node_phase::draining).cordoned_by_us();
  for (const char* name : {"web-0", "web-1", "web-2"}) {
    auto p = pod(name);
    p.deleting = true;
    w.with(p);
    w.in.evictions[std::string("team/") + name] = {t0, false, true, ""};
  }
  w.with(pod("web-3"));
  auto s = w.step();
  const std::vector<std::string> only_left{"team/web-3:evict"};
  BOOST_TEST(removals(s) == only_left, boost::test_tools::per_element());
  BOOST_TEST(status_after(w, s).drain.pods_total == 4);
  BOOST_TEST(status_after(w, s).drain.pods_evicted == 3);
  BOOST_TEST(condition(status_after(w, s), "Drained")->message == "1 pod(s) left to evict");

  // The last one evicted too: all four terminate, and the status stays put while they go.
  w.in.evictions["team/web-3"] = {t0, false, true, ""};
  for (auto& p : w.in.pods)
    p.deleting = true;
  w.in.item.status = status_after(w, w.step());
  BOOST_TEST(w.in.item.status.drain.pods_total == 4);
  BOOST_TEST(w.in.item.status.drain.pods_evicted == 4);
  BOOST_TEST(condition_of(w, gc::node_step{}, "Drained") == "False/Terminating");
  while (w.in.pods.size() > 2) { // DCM's pod and one of the four left
    w.in.pods.pop_back();
    auto next = w.step();
    BOOST_TEST(!next.status); // nothing to write
    BOOST_TEST(!next.taint);
  }
  w.in.pods.clear();
  auto drained = w.step();
  BOOST_TEST(condition_of(w, drained, "Drained") == "True/Drained");
  BOOST_TEST(drained.taint.value_or(false));
}

// A node's eviction memory is its run's: the worker keeps it across runs (a retry, a new
// spec), and the pods of the next run often carry the same names (a StatefulSet's, a
// Deployment's pods back on the node once it was uncordoned).
BOOST_AUTO_TEST_CASE(a_second_run_counts_and_warns_of_its_own_evictions_only) {
  world w;
  const auto first_run = gp::format_time(t0);
  w.at(node_phase::draining, t0 + 3600s).cordoned_by_us().later(3600s);
  auto scratch = pod("scratch");
  scratch.empty_dir = true;
  auto bare = pod("bare");
  bare.unmanaged = true;
  w.with(scratch).with(bare).with(pod("web-0"));
  w.in.item.spec.drain.delete_empty_dir_data = true;
  w.in.item.spec.drain.force = true;
  w.in.evictions["team/scratch"] = {t0, false, true, "", false, 0, first_run};
  w.in.evictions["team/bare"] = {t0, false, true, "", false, 0, first_run};
  w.in.evictions["team/web-0"] = {t0,    true, false,    "Cannot evict pod: budget web-pdb",
                                  false, 0,    first_run};
  auto s = w.step();
  const std::vector<std::string> all_three{"team/scratch:evict", "team/bare:evict",
                                           "team/web-0:evict"};
  BOOST_TEST(removals(s) == all_three, boost::test_tools::per_element());
  for (const auto& r : s.removals)
    BOOST_TEST(!r.again, r.name); // asked for the first time in this run
  const auto st = status_after(w, s);
  BOOST_TEST(st.drain.pods_evicted == 0);
  BOOST_TEST(st.drain.pods_total == 3);
  BOOST_TEST(st.drain.blocking_pods.empty()); // the first run's refusal is not this run's hold
  BOOST_TEST(st.drain.pods_blocked == 0);
  BOOST_TEST(has_event(s, "EmptyDirDataDeleted", false, "Warning"));
  BOOST_TEST(has_event(s, "UnmanagedPodEvicted", false, "Warning"));
  BOOST_TEST(condition_of(w, s, "Drained") == "False/Evicting");

  // The same memory as this run's own: nothing is asked twice, nothing warned twice.
  for (auto& [pod, memory] : w.in.evictions)
    memory.run = w.status().started_at;
  auto own = w.step();
  BOOST_TEST(!has_event(own, "EmptyDirDataDeleted", false, "Warning"));
  BOOST_TEST(!has_event(own, "UnmanagedPodEvicted", false, "Warning"));
  BOOST_TEST(status_after(w, own).drain.pods_evicted == 2);
  BOOST_TEST(status_after(w, own).drain.blocking_pods.size() == 1u);
}

BOOST_AUTO_TEST_CASE(eviction_kind_delete_deletes_instead_of_evicting) {
  world w;
  w.at(node_phase::draining).cordoned_by_us().with(pod("web-0"));
  w.in.item.spec.drain.kind = gp::eviction_kind::delete_pods;
  const std::vector<std::string> want{"team/web-0:delete"};
  BOOST_TEST(removals(w.step()) == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(respectPDB_false_deletes_instead_of_evicting) {
  world w;
  w.at(node_phase::draining).cordoned_by_us().with(pod("web-0")).with(pdb("web-pdb", "web", 0));
  w.in.item.spec.drain.respect_pdb = false;
  const std::vector<std::string> want{"team/web-0:delete"};
  BOOST_TEST(removals(w.step()) == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_blocked_pod_is_not_retried_before_5s_and_is_listed_with_its_pdb) {
  world w;
  w.at(node_phase::draining).cordoned_by_us();
  w.with(pod("web-0")).with(pod("db-0", "db")).with(pdb("web-pdb", "web", 0));
  w.in.evictions["team/web-0"] = {t0, true, false, "Cannot evict pod: disruption budget"};
  w.later(4s);
  auto s = w.step();
  const std::vector<std::string> only_db{"team/db-0:evict"};
  BOOST_TEST(removals(s) == only_db, boost::test_tools::per_element());
  const auto& drain = status_after(w, s).drain;
  BOOST_TEST(drain.pods_blocked == 1);
  BOOST_TEST_REQUIRE(drain.blocking_pdbs.size() == 1u);
  BOOST_TEST(drain.blocking_pdbs[0].namespace_ == "team");
  BOOST_TEST(drain.blocking_pdbs[0].name == "web-pdb");
  BOOST_TEST_REQUIRE(drain.blocking_pods.size() == 1u);
  BOOST_TEST(drain.blocking_pods[0].name == "web-0");
  BOOST_TEST(contains(drain.blocking_pods[0].reason, "team/web-pdb"));
  BOOST_TEST(condition_of(w, s, "Drained") == "False/EvictionBlocked");
  BOOST_TEST(!s.taint);

  w.later(5s);
  const std::vector<std::string> both{"team/web-0:evict", "team/db-0:evict"};
  auto retry = w.step();
  auto got = removals(retry);
  std::sort(got.begin(), got.end());
  auto want = both;
  std::sort(want.begin(), want.end());
  BOOST_TEST(got == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_blocked_pod_is_retried_at_once_when_its_budget_opens) {
  world w;
  w.at(node_phase::draining).cordoned_by_us();
  auto budget = pdb("web-pdb", "web", 1);
  budget.seen = t0 - 1s; // the view from before the refusal: stale
  w.with(pod("web-0")).with(budget);
  w.in.evictions["team/web-0"] = {t0, true, false, "blocked"};
  w.later(1s);
  BOOST_TEST(removals(w.step()).empty());
  w.in.pdbs.back().seen = t0 + 500ms;
  const std::vector<std::string> want{"team/web-0:evict"};
  BOOST_TEST(removals(w.step()) == want, boost::test_tools::per_element());
}

// Found by the fault suite: an operator killed while the API server handled its eviction
// left the pod in the budget's disruptedPods, never deleted; every later eviction was
// refused for the 2 minutes the API server keeps that entry.
BOOST_AUTO_TEST_CASE(a_pod_its_budget_already_counts_as_disrupted_is_deleted_when_evictions_fail) {
  world w;
  w.at(node_phase::draining).cordoned_by_us();
  auto budget = pdb("web-pdb", "web", 0);
  budget.disrupted_pods = {"web-0"};
  w.with(pod("web-0")).with(pod("web-1")).with(budget);
  // At first web-0 is asked as always (the budget's refusal is what tells the operator to
  // finish it); web-1 waits, unasked, for the budget to allow a disruption.
  const std::vector<std::string> evictions{"team/web-0:evict"};
  BOOST_TEST(removals(w.step()) == evictions, boost::test_tools::per_element());
  // Refused; 5 s later the approved one is deleted, and web-1 still waits.
  w.in.evictions["team/web-0"] = {t0, true, false, "Cannot evict pod"};
  w.later(5s);
  const std::vector<std::string> want{"team/web-0:delete"};
  BOOST_TEST(removals(w.step()) == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_new_set_of_blocked_pods_is_announced_once_with_a_DrainBlocked_event) {
  world w;
  w.at(node_phase::draining).cordoned_by_us();
  w.with(pod("web-0")).with(pdb("web-pdb", "web", 0));
  w.in.evictions["team/web-0"] = {t0, true, false, "blocked"};
  w.later(1s);
  auto s = w.step();
  BOOST_TEST(has_event(s, "DrainBlocked", false, "Warning"));
  keep_status(w, s);
  w.later(2s);
  BOOST_TEST(!has_event(w.step(), "DrainBlocked", false, "Warning"));
}

// Issue 23: each kind of hold gives the Drained condition its reason, the worst first.
BOOST_AUTO_TEST_CASE(the_drained_condition_names_what_holds_the_drain_worst_first) {
  // A budget's refusal, where the replacement has nowhere but nodes we hold: a deadlock.
  world w;
  w.at(node_phase::draining).cordoned_by_us();
  w.with(pod("web-0")).with(pdb("web-pdb", "web", 0));
  w.in.evictions["team/web-0"] = {t0, true, false, "blocked"};
  auto others = std::make_shared<gc::shared_map<gc::node_info>>();
  auto held = std::make_shared<gc::node_info>();
  held->name = "gpu-2";
  held->unschedulable = true;
  held->annotations[gc::was_unschedulable_annotation] = "false";
  (*others)["gpu-2"] = held;
  w.in.cluster_nodes = others;
  w.later(1s);
  auto s = w.step();
  BOOST_TEST(condition_of(w, s, "Drained") == "False/DrainDeadlocked");
  BOOST_TEST(contains(status_after(w, s).drain.blocking_pods.at(0).reason, "(gpu-2)"));
  // The same with a node open to it: only a budget's refusal.
  auto open = std::make_shared<gc::node_info>();
  open->name = "gpu-3";
  (*others)["gpu-3"] = open;
  BOOST_TEST(condition_of(w, w.step(), "Drained") == "False/EvictionBlocked");
  // A pod the policy refuses comes first; then the rest.
  auto bare = pod("bare", "bare");
  bare.unmanaged = true;
  w.with(bare);
  BOOST_TEST(condition_of(w, w.step(), "Drained") == "False/EvictionRefused");
}

BOOST_AUTO_TEST_CASE(pods_being_deleted_are_not_evicted_again_but_hold_back_the_taint) {
  world w;
  w.at(node_phase::draining).cordoned_by_us();
  auto leaving = pod("web-0");
  leaving.deleting = true;
  w.with(leaving);
  w.in.evictions["team/web-0"] = {t0, false, true, ""};
  auto s = w.step();
  BOOST_TEST(s.removals.empty());
  BOOST_TEST(!s.taint);
  BOOST_TEST(s.requeue.count() > 0);
  BOOST_TEST(status_after(w, s).drain.pods_evicted == 1);
}

// Found by the fault suite: after the API server came back, the Node and item watches ran
// ahead of the pods' watch, and every step evicted the same (already evicted) pods again,
// up to 8 times in 35 ms.
BOOST_AUTO_TEST_CASE(an_evicted_pod_not_yet_shown_deleting_is_not_evicted_again_for_5s) {
  world w;
  w.at(node_phase::draining).cordoned_by_us();
  w.with(pod("web-0")).with(pod("db-0", "db"));
  w.in.evictions["team/web-0"] = {t0, false, true, ""};
  w.later(1s);
  auto s = w.step();
  const std::vector<std::string> only_db{"team/db-0:evict"};
  BOOST_TEST(removals(s) == only_db, boost::test_tools::per_element());
  BOOST_TEST(!s.taint);
  BOOST_TEST(status_after(w, s).drain.pods_evicted == 1);
  // Still shown without a deletion 5 s later: the eviction was lost, or the pods' watch
  // lags; ask again, marked as a second request (the executor reads the pod first).
  w.later(5s);
  auto second = w.step();
  auto again = removals(second);
  std::sort(again.begin(), again.end());
  const std::vector<std::string> both{"team/db-0:evict", "team/web-0:evict"};
  BOOST_TEST(again == both, boost::test_tools::per_element());
  for (const auto& r : second.removals)
    BOOST_TEST(r.again == (r.name == "web-0"), r.name);
}

BOOST_AUTO_TEST_CASE(taint_is_added_only_once_the_evictable_pods_are_gone) {
  world w;
  w.at(node_phase::draining).cordoned_by_us();
  w.with(daemon_pod("device-plugin-x")); // the taint's to remove, not the drain's
  auto s = w.step();
  BOOST_TEST(taint_write(s) == "add");
  // The executor checks the API server's own list of the node's pods before the taint.
  BOOST_TEST(s.confirm_drained);
  BOOST_TEST(s.removals.empty());
  BOOST_TEST(condition_of(w, s, "Drained") == "True/Drained");
  BOOST_TEST(has_event(s, "Tainted", true, "Normal"));
  BOOST_TEST(phase_after(w, s) == "Draining");
}

BOOST_AUTO_TEST_CASE(drain_disabled_taints_at_once_and_says_pdbs_are_not_respected) {
  world w;
  w.at(node_phase::draining).cordoned_by_us().with(pod("web-0")).with(pdb("web-pdb", "web", 0));
  w.in.item.spec.drain.enabled = false;
  auto s = w.step();
  BOOST_TEST(taint_write(s) == "add");
  BOOST_TEST(!s.confirm_drained); // no drain: the taint is what removes the pods
  BOOST_TEST(s.removals.empty());
  BOOST_TEST(condition_of(w, s, "Drained") == "False/DrainDisabled");
  BOOST_TEST(contains(condition(status_after(w, s), "Drained")->message, "PodDisruptionBudgets"));
}

BOOST_AUTO_TEST_CASE(drain_disabled_still_cordons_first) {
  world w;
  w.at(node_phase::draining).with(pod("web-0"));
  w.in.item.spec.drain.enabled = false;
  auto s = w.step();
  BOOST_TEST(cordon_write(s) == "cordon");
  BOOST_TEST(!s.taint);
}

BOOST_AUTO_TEST_CASE(waits_for_non_tolerating_pods_daemonset_ones_too_before_applying) {
  world w;
  w.at(node_phase::draining).cordoned_by_us().tainted().dcm_config_has_profile();
  auto plugin = daemon_pod("device-plugin-x");
  plugin.deleting = true;
  auto tolerant_ds = daemon_pod("dcm-x");
  tolerant_ds.tolerations = {tolerate_dcm()};
  w.with(plugin).with(tolerant_ds);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Draining");
  BOOST_TEST(condition_of(w, s, "Drained") == "False/WaitingForPods");
  BOOST_TEST(no_node_writes(s));

  w.in.pods = {tolerant_ds};
  auto next = w.step();
  BOOST_TEST(phase_after(w, next) == "Applying");
  BOOST_TEST(last_reason(w, next) == "Drained");
  BOOST_TEST(no_node_writes(next));
  BOOST_TEST(next.in_flight);
}

BOOST_AUTO_TEST_CASE(drain_timeout_rolls_back_and_fails_naming_the_blocking_pdb) {
  world w;
  w.at(node_phase::draining).cordoned_by_us();
  w.with(pod("web-0")).with(pdb("web-pdb", "web", 0));
  w.in.evictions["team/web-0"] = {t0 + 595s, true, false, "blocked"};
  w.later(599s);
  BOOST_TEST(phase_after(w, w.step()) == "Draining");

  w.later(600s);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(last_reason(w, s) == "DrainTimeout");
  BOOST_TEST(contains(status_after(w, s).last_error, "PodDisruptionBudget team/web-pdb"));
  BOOST_TEST(cordon_write(s) == "uncordon");
  BOOST_TEST(annotation_write(s, gc::was_unschedulable_annotation) == "<remove>");
  BOOST_TEST(annotation_write(s, gc::applied_hash_annotation) == "<remove>");
  BOOST_TEST(s.removals.empty());
  BOOST_TEST(has_event(s, "DrainTimeout", true, "Warning"));
}

// The rollback lifts the taint in a step of its own, keeping the cordon record (the mark
// that the node is ours to restore) until the taint is gone; the next step uncordons.
BOOST_AUTO_TEST_CASE(drain_timeout_after_the_taint_lifts_it_first_then_uncordons) {
  world w;
  w.at(node_phase::draining).cordoned_by_us().tainted();
  auto stuck = pod("web-0");
  stuck.deleting = true;
  w.with(stuck).later(600s);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(last_reason(w, s) == "DrainTimeout");
  BOOST_TEST(taint_write(s) == "remove");
  BOOST_TEST(!s.patch);

  apply_node_writes(w.node(), s);
  keep_status(w, s);
  auto then = w.step();
  BOOST_TEST(phase_after(w, then) == "Failed");
  BOOST_TEST(taint_write(then) == "-");
  BOOST_TEST(cordon_write(then) == "uncordon");
  BOOST_TEST(annotation_write(then, gc::was_unschedulable_annotation) == "<remove>");
  BOOST_TEST(annotation_write(then, gc::applied_hash_annotation) == "<remove>");

  apply_node_writes(w.node(), then);
  keep_status(w, then);
  BOOST_TEST(no_node_writes(w.step()));
  BOOST_TEST(!w.node().unschedulable);
  BOOST_TEST(!w.node().has_dcm_taint());
}

BOOST_AUTO_TEST_CASE(drain_timeout_never_uncordons_an_admin_cordoned_node) {
  world w;
  w.at(node_phase::draining).cordoned_over_admin().tainted();
  w.with(pod("web-0")).with(pdb("web-pdb", "web", 0)).later(600s);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(taint_write(s) == "remove");
  BOOST_TEST(!s.patch);

  apply_node_writes(w.node(), s);
  keep_status(w, s);
  auto then = w.step();
  BOOST_TEST(taint_write(then) == "-");
  BOOST_TEST(cordon_write(then) == "-");
  BOOST_TEST(annotation_write(then, gc::was_unschedulable_annotation) == "<remove>");
  apply_node_writes(w.node(), then);
  BOOST_TEST(w.node().unschedulable);
}

BOOST_AUTO_TEST_CASE(evictable_pods_keeps_input_order_and_filters) {
  auto ds = daemon_pod("ds");
  auto tolerant = pod("t");
  tolerant.tolerations = {tolerate_dcm()};
  auto out = gc::evictable_pods({pod("b"), ds, tolerant, pod("a")});
  BOOST_TEST_REQUIRE(out.size() == 2u);
  BOOST_TEST(out[0].name == "b");
  BOOST_TEST(out[1].name == "a");
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(applying)

// What can disappear between preflight and the profile label: the profile, its payload,
// DCM's ConfigMap.
struct vanished_case {
  const char* cause;
  void (*remove_it)(world&);
};

std::ostream& operator<<(std::ostream& os, const vanished_case& c) {
  return os << c.cause;
}

const std::vector<vanished_case> vanished_cases{
    {"ProfileNotFound", [](world& w) { w.in.profile.found = false; }},
    {"PayloadNotFound",
     [](world& w) {
       w.in.profile.payload.reset();
       w.in.profile.payload_problem = "ConfigMap kube-amd-gpu/cpx-nps4 not found";
     }},
    {"DCMConfigNotFound",
     [](world& w) {
       w.in.dcm.found = false;
       w.in.dcm.config_json.clear();
     }},
};

BOOST_AUTO_TEST_CASE(writes_dcm_config_naming_the_configmap_and_the_profile) {
  world w;
  w.at(node_phase::applying).cordoned_by_us().tainted();
  auto s = w.step();
  BOOST_TEST_REQUIRE(s.dcm.has_value());
  BOOST_TEST(s.dcm->ns == "kube-amd-gpu");
  BOOST_TEST(s.dcm->name == "config-manager-config");
  BOOST_TEST(s.dcm->profiles.at(dcm_name) == cpx_payload);
  BOOST_TEST(!s.patch); // the label waits for DCM's config
  BOOST_TEST(condition_of(w, s, "ProfileApplied") == "False/WritingDCMConfig");
}

BOOST_AUTO_TEST_CASE(writes_dcm_config_when_the_profile_is_missing_or_different) {
  world w;
  w.at(node_phase::applying).cordoned_by_us().tainted();
  BOOST_TEST(w.step().dcm.has_value()); // only spx-nps1 there
  w.in.dcm.config_json = R"({"gpu-config-profiles":{"cpx-nps4":)" + spx_payload + "}}";
  BOOST_TEST(w.step().dcm.has_value()); // there, but different
}

BOOST_AUTO_TEST_CASE(does_not_write_dcm_config_when_equal_whatever_the_key_order) {
  world w;
  w.at(node_phase::applying).cordoned_by_us().tainted();
  w.in.dcm.config_json =
      R"({"other":1,"gpu-config-profiles":{"cpx-nps4":)" + cpx_payload_reordered + "}}";
  auto s = w.step();
  BOOST_TEST(!s.dcm);
  BOOST_TEST(label_write(s, gc::dcm_profile_label) == dcm_name);
}

BOOST_AUTO_TEST_CASE(sets_profile_label_removes_state_label_and_marks_it_ours_in_one_patch) {
  world w;
  w.at(node_phase::applying).cordoned_by_us().tainted().dcm_config_has_profile();
  auto s = w.step();
  BOOST_TEST(label_write(s, gc::dcm_profile_label) == dcm_name);
  BOOST_TEST(label_write(s, gc::dcm_state_label) == "<remove>");
  BOOST_TEST(annotation_write(s, gc::applied_hash_annotation) ==
             hash_a + "@" + gp::format_time(t0));
  BOOST_TEST(cordon_write(s) == "-");
  BOOST_TEST(!s.taint);
  BOOST_TEST(phase_after(w, s) == "Applying");
}

BOOST_AUTO_TEST_CASE(a_label_holding_the_profile_but_not_ours_is_removed_first) {
  world w;
  w.at(node_phase::applying).cordoned_by_us().tainted().dcm_config_has_profile();
  w.node().labels[gc::dcm_profile_label] = dcm_name;
  w.node().annotations[gc::applied_hash_annotation] = other_hash; // an earlier run's
  auto s = w.step();
  BOOST_TEST(label_write(s, gc::dcm_profile_label) == "<remove>");
  BOOST_TEST(label_write(s, gc::dcm_state_label) == "<remove>");
  // This run's mark goes with the removal: the drain is over (see the restart case).
  BOOST_TEST(annotation_write(s, gc::applied_hash_annotation) == w.mark());
  BOOST_TEST(phase_after(w, s) == "Applying");

  apply_node_writes(w.node(), s);
  auto then = w.step();
  BOOST_TEST(label_write(then, gc::dcm_profile_label) == dcm_name);
  BOOST_TEST(annotation_write(then, gc::applied_hash_annotation) == w.mark());
}

// A retry runs the same desiredHash again: the label and the annotation of the run
// before (startedAt then) are not this run's, and the label is set afresh.
BOOST_AUTO_TEST_CASE(a_label_of_an_earlier_run_of_the_same_hash_is_removed_first) {
  world w;
  w.at(node_phase::applying, t0 + 600s).cordoned_by_us().tainted().dcm_config_has_profile();
  w.node().labels[gc::dcm_profile_label] = dcm_name;
  w.node().annotations[gc::applied_hash_annotation] = hash_a + "@" + gp::format_time(t0);
  w.later(601s);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Applying");
  BOOST_TEST(label_write(s, gc::dcm_profile_label) == "<remove>");
  BOOST_TEST(label_write(s, gc::dcm_state_label) == "<remove>");

  apply_node_writes(w.node(), s);
  auto then = w.step();
  BOOST_TEST(label_write(then, gc::dcm_profile_label) == dcm_name);
  BOOST_TEST(annotation_write(then, gc::applied_hash_annotation) ==
             hash_a + "@" + gp::format_time(t0 + 600s));
}

BOOST_AUTO_TEST_CASE(a_label_holding_the_profile_without_any_mark_is_removed_first) {
  world w;
  w.at(node_phase::applying).cordoned_by_us().tainted().dcm_config_has_profile();
  w.node().labels[gc::dcm_profile_label] = dcm_name;
  BOOST_TEST(label_write(w.step(), gc::dcm_profile_label) == "<remove>");
}

BOOST_AUTO_TEST_CASE(with_the_label_ours_enters_waiting_operator) {
  world w;
  w.at(node_phase::applying).cordoned_by_us().tainted().label_ours();
  auto s = w.step();
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(phase_after(w, s) == "WaitingOperator");
  BOOST_TEST(condition_of(w, s, "ProfileApplied") == "True/LabelSet");
  BOOST_TEST(has_event(s, "ProfileApplied", true, "Normal"));
  BOOST_TEST(s.in_flight);
}

// Once this run's label is on the node DCM may be repartitioning the GPUs: whatever went
// away since, the node waits for DCM, cordoned and tainted.
BOOST_DATA_TEST_CASE(anything_gone_after_the_label_was_set_still_waits_for_dcm,
                     bdata::make(vanished_cases), c) {
  world w;
  w.at(node_phase::applying).cordoned_by_us().tainted().label_ours();
  c.remove_it(w);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "WaitingOperator");
  BOOST_TEST(no_node_writes(s), "the node is written to while DCM may be applying "
                                    << dcm_name << " (label set, applied-hash this run's)");
  BOOST_TEST(s.in_flight);
  BOOST_TEST(condition_of(w, s, "ProfileApplied") == "True/LabelSet");
  BOOST_TEST(status_after(w, s).last_error.empty());
}

// Before the label, the GPUs were not touched: the node fails and goes back to service,
// the taint first (keeping the cordon record), then the cordon and the annotations.
BOOST_DATA_TEST_CASE(anything_gone_before_the_label_fails_and_returns_the_node_in_two_steps,
                     bdata::make(vanished_cases), c) {
  world w;
  w.at(node_phase::applying).cordoned_by_us().tainted();
  c.remove_it(w);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(last_reason(w, s) == "ProfileUnavailable");
  BOOST_TEST(status_after(w, s).last_error.rfind(std::string(c.cause) + ": ", 0) == 0);
  BOOST_TEST(!s.dcm);
  BOOST_TEST(taint_write(s) == "remove");
  BOOST_TEST(!s.patch);

  apply_node_writes(w.node(), s);
  keep_status(w, s);
  auto then = w.step();
  BOOST_TEST(taint_write(then) == "-");
  BOOST_TEST(cordon_write(then) == "uncordon",
             "a node failed (ProfileUnavailable) before the label was set is not uncordoned "
             "once its taint is gone");
  BOOST_TEST(annotation_write(then, gc::was_unschedulable_annotation) == "<remove>");

  apply_node_writes(w.node(), then);
  keep_status(w, then);
  BOOST_TEST(no_node_writes(w.step()));
  BOOST_TEST(!w.node().unschedulable);
  BOOST_TEST(!w.node().has_dcm_taint());
}

// The label of an earlier run, even of the same desiredHash, is not this run's: with the
// profile gone the node fails and is returned.
BOOST_AUTO_TEST_CASE(a_label_of_an_earlier_run_does_not_hold_the_node_when_the_profile_is_gone) {
  world w;
  w.at(node_phase::applying).cordoned_by_us().tainted().dcm_config_has_profile();
  w.node().labels[gc::dcm_profile_label] = dcm_name;
  w.node().annotations[gc::applied_hash_annotation] = hash_a + "@" + gp::format_time(t0 - 3600s);
  w.in.profile.found = false;
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(last_reason(w, s) == "ProfileUnavailable");
  BOOST_TEST(taint_write(s) == "remove");
}

BOOST_AUTO_TEST_CASE(the_label_goes_before_applying_is_written_and_a_restart_waits_for_dcm) {
  world w;
  w.at(node_phase::applying).cordoned_by_us().tainted().dcm_config_has_profile();
  auto labelled = w.step();
  BOOST_TEST(label_write(labelled, gc::dcm_profile_label) == dcm_name);
  BOOST_TEST(name_of(labelled.enough_on_record.value_or(node_phase::pending)) == "Draining");

  // Killed after the label landed and before Applying was written: the restarted operator
  // reads Draining, and the node tainted, empty and labelled by this run. Even past the
  // drain's timeout, and with the profile gone since, DCM is at work: no roll-back, no
  // second label.
  world restarted;
  restarted.at(node_phase::draining).cordoned_by_us().tainted().label_ours();
  restarted.later(3600s);
  restarted.in.profile.found = false;
  auto applying = restarted.step();
  BOOST_TEST(phase_after(restarted, applying) == "Applying");
  BOOST_TEST(no_node_writes(applying));
  restarted.in.item.status = status_after(restarted, applying);
  auto waiting = restarted.step();
  BOOST_TEST(phase_after(restarted, waiting) == "WaitingOperator");
  BOOST_TEST(no_node_writes(waiting));
}

BOOST_AUTO_TEST_CASE(a_relabel_goes_before_applying_is_written_and_a_restart_labels_again) {
  // The node carries the target profile from an earlier run: the label comes off first.
  world w;
  w.at(node_phase::applying).cordoned_by_us().tainted().dcm_config_has_profile();
  w.node().labels[gc::dcm_profile_label] = dcm_name;
  auto off = w.step();
  BOOST_TEST(label_write(off, gc::dcm_profile_label) == "<remove>");
  BOOST_TEST(annotation_write(off, gc::applied_hash_annotation) == w.mark());
  BOOST_TEST(name_of(off.enough_on_record.value_or(node_phase::pending)) == "Draining");

  // Killed after the label came off: Draining on record, the node without a profile label
  // but with this run's mark, and the drain's timeout past by now.
  world restarted;
  restarted.at(node_phase::draining).cordoned_by_us().tainted().dcm_config_has_profile();
  restarted.node().labels.erase(gc::dcm_profile_label);
  restarted.node().labels.erase(gc::dcm_state_label);
  restarted.node().annotations[gc::applied_hash_annotation] = restarted.mark();
  restarted.later(3600s);
  auto applying = restarted.step();
  BOOST_TEST(phase_after(restarted, applying) == "Applying");
  restarted.in.item.status = status_after(restarted, applying);
  auto again = restarted.step();
  BOOST_TEST(label_write(again, gc::dcm_profile_label) == dcm_name);
  BOOST_TEST(annotation_write(again, gc::applied_hash_annotation) == restarted.mark());
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(waiting_operator)

BOOST_AUTO_TEST_CASE(dcm_success_enters_verifying) {
  world w;
  w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours().dcm_says("success");
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Verifying");
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(condition_of(w, s, "OperatorSucceeded") == "True/DCMSucceeded");
  BOOST_TEST(s.requeue.count() > 0);
}

// Without DCM's Event (lost, or from an older request) the state label decides only once
// half the plan's verification timeout has passed: a stale answer of the previous
// request's run is overwritten long before.
BOOST_AUTO_TEST_CASE(a_state_label_without_dcms_event_decides_only_after_half_the_timeout) {
  for (const std::string state : {"failure", "success"}) {
    world w;
    w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
    w.dcm_state_only(state);
    w.in.item.spec.verification.timeout_seconds = 900;
    // An Event from before this run is not its answer.
    w.in.now -= std::chrono::hours(1);
    w.dcm_event("PartitionFailure", dcm_name, "an old one").dcm_events_before_run();
    w.in.now += std::chrono::hours(1);
    auto first = w.step();
    BOOST_TEST(phase_after(w, first) == "WaitingOperator", state);
    BOOST_TEST(condition_of(w, first, "OperatorSucceeded") == "False/Waiting", state);
    w.later(449s);
    BOOST_TEST(phase_after(w, w.step()) == "WaitingOperator", state);
    w.later(450s);
    auto later = w.step();
    BOOST_TEST(phase_after(w, later) == (state == "success" ? "Verifying" : "Failed"), state);
    BOOST_TEST(!contains(status_after(w, later).last_error, "an old one"), state);
  }
}

// The state label is not tied to a request: a run for the previous label that finishes
// after ours was set writes its success. Only DCM's Event for our profile counts.
BOOST_AUTO_TEST_CASE(a_success_of_the_previous_labels_run_is_not_taken_for_ours) {
  world w;
  w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  w.dcm_state_only("success").dcm_event("SuccessfullyPartitioned", "spx-nps1");
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "WaitingOperator");
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(contains(condition(status_after(w, s), "OperatorSucceeded")->message,
                      "the state label says success"));
  w.in.item.status = status_after(w, s);
  w.later(5s).dcm_event("SuccessfullyPartitioned");
  BOOST_TEST(phase_after(w, w.step()) == "Verifying");
}

// Found by the fault suite: an operator killed after the label enters Applying again when
// it restarts (the drain was over) and goes on to WaitingOperator; DCM answered in
// between, and the first Applying may never have been written. An answer newer than the
// run's start counts.
BOOST_AUTO_TEST_CASE(dcms_answer_between_a_restarts_reentries_of_applying_counts) {
  world w;
  w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  w.later(2s).dcm_state_only("success").dcm_event("SuccessfullyPartitioned");
  auto& h = w.status().history;
  h.erase(h.end() - 2, h.end()); // the first Applying and WaitingOperator were never written
  h.push_back({node_phase::applying, gp::format_time(t0 + 3s), "Drained", "restarted"});
  h.push_back({node_phase::waiting_operator, gp::format_time(t0 + 3s), "Labelled", ""});
  w.later(4s);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Verifying");
  BOOST_TEST(condition_of(w, s, "OperatorSucceeded") == "True/DCMSucceeded");
  // An answer from before the run's start is another run's.
  world old;
  old.at(node_phase::waiting_operator, t0 + 10s).cordoned_by_us().tainted().label_ours();
  old.later(5s).dcm_state_only("success").dcm_event("SuccessfullyPartitioned");
  old.dcm_events_before_run().later(11s);
  BOOST_TEST(phase_after(old, old.step()) == "WaitingOperator");
}

// DCM stamps its Events with the node's clock: its answer is told by being newer than what
// the run found at its start, by that clock, never by comparing it with the operator's.
BOOST_AUTO_TEST_CASE(dcms_answer_is_told_by_the_nodes_clock_not_the_operators) {
  // The node's clock two hours behind: its answer looks older than the run's start.
  world behind;
  behind.in.now = t0 - 7200s;
  behind.dcm_event("PartitionFailure", dcm_name, "an earlier run's");
  behind.in.now = t0;
  behind.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  behind.in.now = t0 - 7190s;
  behind.dcm_state_only("success").dcm_event("SuccessfullyPartitioned");
  behind.in.now = t0 + 10s;
  auto s = behind.step();
  BOOST_TEST(phase_after(behind, s) == "Verifying");
  BOOST_TEST(condition_of(behind, s, "OperatorSucceeded") == "True/DCMSucceeded");
  // DCM's Events up to its answer are the run's: the soak reads only newer ones.
  BOOST_TEST(status_after(behind, s).dcm_events_until == gp::format_time(t0 - 7190s));
  // An hour ahead: a success for the same profile that was there when the run started
  // looks newer than the start by the operator's clock, and is not this run's answer.
  world ahead;
  ahead.in.now = t0 + 3600s;
  ahead.dcm_state_only("success").dcm_event("SuccessfullyPartitioned");
  ahead.in.now = t0;
  ahead.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  ahead.later(10s);
  BOOST_TEST(phase_after(ahead, ahead.step()) == "WaitingOperator");
  // A run started by an operator that recorded no mark takes no Event for its answer:
  // the state label decides, after half the verification timeout.
  world unmarked;
  unmarked.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  unmarked.status().dcm_events_until.clear();
  unmarked.in.item.spec.verification.timeout_seconds = 100;
  unmarked.later(5s).dcm_says("success");
  BOOST_TEST(phase_after(unmarked, unmarked.step()) == "WaitingOperator");
  unmarked.later(50s);
  auto late = unmarked.step();
  BOOST_TEST(condition_of(unmarked, late, "OperatorSucceeded") == "True/DCMSucceededUnconfirmed");
}

// The run's start records the newest of DCM's Events on the node, by its clock.
BOOST_AUTO_TEST_CASE(a_run_records_dcms_clock_when_it_starts) {
  world w;
  w.in.now = t0 - 50s;
  w.dcm_event("SuccessfullyPartitioned", "spx-nps1");
  w.in.now = t0;
  w.in.token = true;
  w.dcm_config_has_profile();
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Draining");
  BOOST_TEST(status_after(w, s).dcm_events_until == gp::format_time(t0 - 50s));
  world none;
  none.in.token = true;
  none.dcm_config_has_profile();
  BOOST_TEST(status_after(none, none.step()).dcm_events_until == "1970-01-01T00:00:00Z");
}

BOOST_AUTO_TEST_CASE(dcms_event_answers_even_when_its_state_write_was_lost) {
  world w;
  w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  w.dcm_event("RequestedPartitionConfigAlreadyExists");
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Verifying");
  BOOST_TEST(condition_of(w, s, "OperatorSucceeded") == "True/DCMSucceeded");
}

// Issue 39: newer DCM sends a Normal Event in the middle of a memory-mode change on a
// KMM-managed driver ("recovering memory partition for KMM driver, might take upto 5
// mins"), with the run's profile. It was taken for a failure: the node failed and, with
// its taint lifted, went back to work while DCM reloaded the driver. A Normal Event of a
// reason DCM does not send on failure is progress; the answer still comes after it.
BOOST_AUTO_TEST_CASE(a_normal_event_mid_run_is_progress_not_an_answer) {
  world w;
  w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  w.dcm_event("RecoveringMemoryPartition", dcm_name,
              "recovering memory partition for KMM driver, might take upto 5 mins");
  w.in.dcm_events.back().type = "Normal";
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "WaitingOperator");
  BOOST_TEST(condition_of(w, s, "OperatorSucceeded") == "False/DCMInProgress");
  BOOST_TEST(contains(condition(status_after(w, s), "OperatorSucceeded")->message,
                      "recovering memory partition for KMM driver"));
  BOOST_TEST(no_node_writes(s));
  w.in.item.status = status_after(w, s);
  w.later(200s).dcm_says("success");
  BOOST_TEST(phase_after(w, w.step()) == "Verifying");
  // AMDSMIAPIFailure comes as Normal after an init failure: still a failure.
  world f;
  f.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  f.dcm_event("AMDSMIAPIFailure", dcm_name, "amd-smi init failed");
  f.in.dcm_events.back().type = "Normal";
  BOOST_TEST(phase_after(f, f.step()) == "Failed");
}

// Busy GPUs: DCM writes failure and PartitionRetrying, and retries for 30 minutes.
BOOST_AUTO_TEST_CASE(dcm_retrying_busy_gpus_keeps_waiting_and_names_the_pods_holding_them) {
  world w;
  w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  auto holder = pod("trainer-0");
  holder.gpus = 1;
  holder.tolerations = {tolerate_dcm()};
  w.with(holder).dcm_state_only("failure").dcm_event("PartitionRetrying");
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "WaitingOperator");
  BOOST_TEST(condition_of(w, s, "OperatorSucceeded") == "False/DCMRetrying");
  BOOST_TEST(
      contains(condition(status_after(w, s), "OperatorSucceeded")->message, "team/trainer-0"));
  BOOST_TEST(no_node_writes(s));
  // A retry that succeeds is the newer answer.
  w.in.item.status = status_after(w, s);
  w.later(60s).dcm_says("success");
  BOOST_TEST(phase_after(w, w.step()) == "Verifying");
  // Still busy at the plan's timeout: the node fails, cordoned.
  world t;
  t.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  t.dcm_state_only("failure").dcm_event("PartitionRetrying");
  t.in.item.spec.verification.timeout_seconds = 900;
  t.later(900s);
  auto timed_out = t.step();
  BOOST_TEST(phase_after(t, timed_out) == "Failed");
  BOOST_TEST(last_reason(t, timed_out) == "OperatorTimeout");
}

BOOST_AUTO_TEST_CASE(non_existent_profile_means_not_delivered_yet_and_keeps_waiting) {
  world w;
  w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  w.dcm_state_only("failure").dcm_event("NonExistentProfile");
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "WaitingOperator");
  BOOST_TEST(condition_of(w, s, "OperatorSucceeded") == "False/DCMConfigNotDelivered");
  // The file arrives: DCM runs the label again, unasked.
  w.in.item.status = status_after(w, s);
  w.later(70s).dcm_says("success");
  BOOST_TEST(phase_after(w, w.step()) == "Verifying");
}

// No AMD source writes a state label other than success or failure; one that says anything
// else (a site's tool, a later DCM) is no answer.
BOOST_AUTO_TEST_CASE(a_state_label_of_another_value_keeps_waiting) {
  world w;
  w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  w.dcm_state_only("in-progress");
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "WaitingOperator");
  BOOST_TEST(contains(condition(status_after(w, s), "OperatorSucceeded")->message, "in-progress"));
}

BOOST_AUTO_TEST_CASE(dcm_failure_fails_keeping_the_cordon_and_lifting_the_taint) {
  world w;
  // DCM's state and its Event about it, from this run: quoted. amd-smi unusable is not
  // retried: DCM is done, and the taint goes.
  w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours().dcm_says("failure");
  auto s = w.step();
  BOOST_TEST(contains(status_after(w, s).last_error, "AMDSMIAPIFailure: amd-smi failed"));
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(last_reason(w, s) == "OperatorFailed");
  BOOST_TEST(taint_write(s) == "remove");
  BOOST_TEST(cordon_write(s) == "-");
  BOOST_TEST(annotation_write(s, gc::was_unschedulable_annotation) == "-");
  BOOST_TEST(has_event(s, "OperatorFailed", true, "Warning"));
  BOOST_TEST(contains(status_after(w, s).last_error, dcm_name));
}

BOOST_AUTO_TEST_CASE(waits_for_dcm_until_the_plan_verification_timeout) {
  world w;
  w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  w.in.item.spec.verification.timeout_seconds = 900;
  w.later(899s);
  auto waiting = w.step();
  BOOST_TEST(phase_after(w, waiting) == "WaitingOperator");
  BOOST_TEST(no_node_writes(waiting));
  BOOST_TEST(waiting.requeue.count() > 0);
  BOOST_TEST(waiting.in_flight);

  w.later(900s);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(last_reason(w, s) == "OperatorTimeout");
  // DCM retries for 30 minutes from the label whatever the operator does: the node stays
  // out of service (taint and cordon) until then, and its status says until when.
  BOOST_TEST(taint_write(s) == "-");
  BOOST_TEST(cordon_write(s) == "-");
  BOOST_TEST(status_after(w, s).dcm_may_change_until == gp::format_time(t0 + gc::dcm_retry_bound));
  BOOST_TEST(contains(status_after(w, s).history.back().message, "keeps the amd-dcm taint"));
}

// DCM retries busy GPUs every minute for 30 minutes from the label, and may then succeed
// under whatever runs on the node: a run the operator gives up on keeps the node out of
// service (taint and cordon) until DCM gives up too, or says it is done.
BOOST_AUTO_TEST_CASE(a_failed_run_dcm_still_retries_keeps_the_taint_until_dcm_gives_up) {
  auto failed = [](world& w) {
    w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
    w.in.item.spec.verification.timeout_seconds = 900;
    w.later(60s).dcm_event("PartitionRetrying");
    w.later(900s);
    auto s = w.step();
    BOOST_TEST(last_reason(w, s) == "OperatorTimeout");
    BOOST_TEST(taint_write(s) == "-");
    w.status() = status_after(w, s);
  };
  const auto until = gp::format_time(t0 + gc::dcm_retry_bound);
  {
    world w;
    failed(w);
    BOOST_TEST(w.status().dcm_may_change_until == until);
    // Still within DCM's retries: the taint stays, and the step looks again at the end.
    w.later(30min);
    auto held = w.step();
    BOOST_TEST(taint_write(held) == "-");
    BOOST_TEST(cordon_write(held) == "-");
    BOOST_TEST((held.requeue == std::chrono::milliseconds(10min)));
    // An admin's retry starts a new run; one that fails before DCM is asked again (DCM's
    // pod gone) gives the node back only as far as DCM allows: the taint stays.
    w.in.item.metadata.annotations[gc::retry_annotation] = "1";
    w.in.pods.clear();
    w.find_dcm();
    w.in.token = true;
    auto retried = w.step();
    BOOST_TEST(phase_after(w, retried) == "Failed");
    BOOST_TEST(taint_write(retried) == "-");
    // DCM's retries are over: the taint goes, the cordon stays until checked.
    w.status() = status_after(w, retried);
    w.in.item.metadata.annotations.clear();
    w.later(40min);
    auto over = w.step();
    BOOST_TEST(taint_write(over) == "remove");
    BOOST_TEST(cordon_write(over) == "-");
    BOOST_TEST(status_after(w, over).dcm_may_change_until.empty());
    BOOST_TEST(has_event(over, "DCMDone", true, "Normal"));
  }
  {
    // DCM says it gave up (PartitionFailure at the end of its retries): no need to wait.
    // One about another profile (an older run's, or the same pod's NIC work) says nothing.
    world w;
    failed(w);
    w.later(31min).dcm_event("PartitionFailure", "spx-nps1");
    BOOST_TEST(taint_write(w.step()) == "-");
    w.dcm_event("PartitionFailure");
    auto s = w.step();
    BOOST_TEST(taint_write(s) == "remove");
  }
  {
    // DCM succeeded after all: the GPUs hold the profile; the taint goes.
    world w;
    failed(w);
    w.later(20min).dcm_state_only("success");
    BOOST_TEST(taint_write(w.step()) == "remove");
  }
  {
    // A NodePartitioning deleted meanwhile keeps its finalizer (and the taint) until then.
    world w;
    failed(w);
    w.later(20min);
    w.in.item.metadata.deletion_timestamp = gp::format_time(w.in.now);
    auto s = w.step();
    BOOST_TEST(!s.remove_finalizer);
    BOOST_TEST(taint_write(s) == "-");
    BOOST_TEST(s.events.empty(), "said once, when the item goes");
    w.later(41min);
    auto after = w.step();
    BOOST_TEST(after.remove_finalizer);
    BOOST_TEST(taint_write(after) == "remove");
  }
}

// DCM's queue holds two triggers, each with the profile read when it fired: a run of the
// old profile may answer after our label, and our trigger may have been dropped. The
// label is set again, once a run.
BOOST_AUTO_TEST_CASE(an_answer_for_another_profile_after_the_label_sets_it_again_once) {
  world w;
  w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  w.in.item.spec.verification.timeout_seconds = 3600;
  w.later(5s).dcm_event("SuccessfullyPartitioned", "spx-nps1");
  BOOST_TEST(phase_after(w, w.step()) == "WaitingOperator", "ours may still be queued");
  w.later(1900s); // as long as the state label is waited for: ours is not coming
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Applying");
  BOOST_TEST(last_reason(w, s) == "DCMAnsweredAnotherProfile");
  BOOST_TEST_REQUIRE(s.patch.has_value());
  BOOST_TEST((s.patch->labels.at(gc::dcm_profile_label) == std::nullopt));
  BOOST_TEST(taint_write(s) == "-");
  w.status() = status_after(w, s);
  apply_node_writes(w.node(), s);
  auto again = w.step();
  BOOST_TEST_REQUIRE(again.patch.has_value());
  BOOST_TEST((again.patch->labels.at(gc::dcm_profile_label) == dcm_name));
  w.status() = status_after(w, again);
  apply_node_writes(w.node(), again);
  w.status() = status_after(w, w.step()); // WaitingOperator
  BOOST_TEST((*w.status().phase == node_phase::waiting_operator));
  // The same answer again, or another: no second relabel; DCM's answer for ours decides.
  w.later(3800s).dcm_event("SuccessfullyPartitioned", "spx-nps1");
  auto waiting = w.step();
  BOOST_TEST(phase_after(w, waiting) == "WaitingOperator");
  BOOST_TEST(!waiting.patch.has_value());
  w.later(3801s).dcm_event("SuccessfullyPartitioned");
  BOOST_TEST(phase_after(w, w.step()) == "Verifying");
}

// A failure DCM does not retry (it refused the profile) ends DCM's work: the taint goes
// at once, as before.
BOOST_AUTO_TEST_CASE(a_failure_dcm_does_not_retry_lifts_the_taint_at_once) {
  world w;
  w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  w.dcm_state_only("failure").dcm_event("InvalidProfileInfo");
  auto s = w.step();
  BOOST_TEST(last_reason(w, s) == "OperatorFailed");
  BOOST_TEST(taint_write(s) == "remove");
  BOOST_TEST(status_after(w, s).dcm_may_change_until.empty());
}

// Found by the soak: a node deleted and created again under the same name while its run
// waited for DCM. The new Node has neither the label nor the mark (nor the cordon and the
// taint); DCM never hears of it, and the run waited for DCM until its timeout.
BOOST_AUTO_TEST_CASE(a_node_created_again_without_the_runs_mark_is_drained_again) {
  world w;
  w.at(node_phase::waiting_operator); // a fresh Node: no cordon, taint, label or mark
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Draining");
  BOOST_TEST(last_reason(w, s) == "NodeReplaced");
  BOOST_TEST(s.in_flight);
  BOOST_TEST(!s.wants_token); // the run keeps the token it holds
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(condition_of(w, s, "ProfileApplied") == "False/RunMarkLost");
  // The drain starts over: the node is cordoned again.
  w.in.item.status = status_after(w, s);
  auto next = w.step();
  BOOST_TEST(phase_after(w, next) == "Draining");
  BOOST_TEST(cordon_write(next) == "cordon");
}

BOOST_AUTO_TEST_CASE(another_runs_mark_is_a_lost_mark_too) {
  world w;
  w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  w.node().annotations[gc::applied_hash_annotation] = "sha256:other@2026-01-01T00:00:00Z";
  BOOST_TEST(last_reason(w, w.step()) == "NodeReplaced");
}

BOOST_AUTO_TEST_CASE(a_mark_of_this_run_under_an_older_spec_is_not_lost) {
  world w;
  w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  w.in.item.spec.desired_hash =
      "sha256:1111111111111111111111111111111111111111111111111111111111111111";
  BOOST_TEST(phase_after(w, w.step()) == "WaitingOperator");
}

BOOST_AUTO_TEST_CASE(the_operator_timeout_counts_from_entering_waiting_operator) {
  world w;
  w.at(node_phase::waiting_operator, t0 + 1000s).cordoned_by_us().tainted().label_ours();
  w.status().history.front().time = gp::format_time(t0); // started long before
  w.in.item.spec.verification.timeout_seconds = 900;
  w.later(1899s);
  BOOST_TEST(phase_after(w, w.step()) == "WaitingOperator");
  w.later(1900s);
  BOOST_TEST(phase_after(w, w.step()) == "Failed");
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(verifying)

BOOST_AUTO_TEST_CASE(a_node_created_again_while_verifying_is_drained_again) {
  world w;
  w.at(node_phase::verifying).reports("64"); // created again: no label, mark or cordon
  w.status().conditions.push_back({"OperatorSucceeded", gp::condition_status::true_, std::nullopt,
                                   gp::format_time(t0), "DCMSucceeded", "DCM reported success"});
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Draining");
  BOOST_TEST(last_reason(w, s) == "NodeReplaced");
  BOOST_TEST(condition_of(w, s, "OperatorSucceeded") == "-");
  BOOST_TEST(s.in_flight);
}

BOOST_AUTO_TEST_CASE(removes_the_taint_first) {
  world w;
  w.at(node_phase::verifying).cordoned_by_us().label_ours().dcm_says("success").tainted();
  auto s = w.step();
  BOOST_TEST(taint_write(s) == "remove");
  BOOST_TEST(cordon_write(s) == "-");
  BOOST_TEST(phase_after(w, s) == "Verifying");
  BOOST_TEST(has_event(s, "Untainted", true, "Normal"));
}

BOOST_AUTO_TEST_CASE(the_untaint_goes_before_its_status_and_a_restart_derives_it_again) {
  world w;
  w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours().dcm_says("success");
  auto verifying = w.step();
  BOOST_TEST(phase_after(w, verifying) == "Verifying");
  world next = w;
  next.in.item.status = status_after(w, verifying);
  auto untaint = next.step();
  BOOST_TEST(taint_write(untaint) == "remove");
  BOOST_TEST(name_of(untaint.enough_on_record.value_or(node_phase::pending)) == "WaitingOperator");

  // Killed after the untaint landed and before Verifying was written: the restarted
  // operator reads WaitingOperator and the node as the untaint left it.
  world restarted = w;
  restarted.node().taints.clear();
  auto again = restarted.step();
  BOOST_TEST(phase_after(restarted, again) == "Verifying");
  BOOST_TEST(no_node_writes(again));
  restarted.in.item.status = status_after(restarted, again);
  auto waits = restarted.step();
  BOOST_TEST(phase_after(restarted, waits) == "Verifying"); // for the plugin's report
  BOOST_TEST(no_node_writes(waits));
  restarted.reports("64");
  auto done = restarted.step();
  BOOST_TEST(phase_after(restarted, done) == "Succeeded");
  BOOST_TEST(cordon_write(done) == "uncordon");
}

BOOST_AUTO_TEST_CASE(the_restore_goes_before_its_status_and_a_restart_succeeds_again) {
  world w;
  w.at(node_phase::verifying).cordoned_by_us().partitioned();
  auto restore = w.step();
  BOOST_TEST(phase_after(w, restore) == "Succeeded");
  BOOST_TEST(cordon_write(restore) == "uncordon");
  BOOST_TEST(name_of(restore.enough_on_record.value_or(node_phase::pending)) == "Verifying");

  // Killed after the restore landed and before Succeeded was written: the restarted
  // operator reads Verifying and the node without our mark or record of its cordon.
  world restarted = w;
  restarted.node().unschedulable = false;
  restarted.node().annotations.erase(gc::was_unschedulable_annotation);
  restarted.node().annotations.erase(gc::applied_hash_annotation);
  auto again = restarted.step();
  BOOST_TEST(phase_after(restarted, again) == "Succeeded");
  BOOST_TEST(last_reason(restarted, again) == "Verified");
  BOOST_TEST(no_node_writes(again));

  // The same node without the new partitions (a machine created again and labelled by
  // hand, say) is not taken for a finished run: it is drained again.
  world replaced = restarted;
  replaced.reports("8");
  BOOST_TEST(phase_after(replaced, replaced.step()) == "Draining");
}

BOOST_AUTO_TEST_CASE(the_other_node_changes_wait_for_their_status) {
  // The cordon, the first change of a run.
  world start;
  start.at(node_phase::draining).with(pod("web-0"));
  auto cordon = start.step();
  BOOST_TEST(cordon_write(cordon) == "cordon");
  BOOST_TEST(!cordon.enough_on_record);

  // Giving the node back after a failure.
  world failing;
  failing.at(node_phase::waiting_operator)
      .cordoned_by_us()
      .tainted()
      .label_ours()
      .dcm_says("failure");
  auto failed = failing.step();
  BOOST_TEST(phase_after(failing, failed) == "Failed");
  BOOST_TEST(taint_write(failed) == "remove");
  BOOST_TEST(!failed.enough_on_record);
}

BOOST_AUTO_TEST_CASE(succeeds_and_uncordons_in_the_same_step_when_everything_matches) {
  world w;
  w.at(node_phase::verifying).cordoned_by_us().partitioned();
  w.in.item.spec.verification.require_plugin_resources = {gpu};
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Succeeded");
  BOOST_TEST(last_reason(w, s) == "Verified");
  BOOST_TEST(cordon_write(s) == "uncordon");
  BOOST_TEST(annotation_write(s, gc::was_unschedulable_annotation) == "<remove>");
  BOOST_TEST(annotation_write(s, gc::applied_hash_annotation) == "<remove>");
  BOOST_TEST(!s.taint);
  BOOST_TEST(status_after(w, s).completed_at == gp::format_time(t0));
  BOOST_TEST(condition_of(w, s, "Verified") == "True/Verified");
  BOOST_TEST(has_event(s, "Partitioned", true, "Normal"));
}

BOOST_AUTO_TEST_CASE(success_on_an_admin_cordoned_node_keeps_the_cordon) {
  world w;
  w.at(node_phase::verifying).cordoned_over_admin().partitioned();
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Succeeded");
  BOOST_TEST(cordon_write(s) == "-");
  BOOST_TEST(annotation_write(s, gc::was_unschedulable_annotation) == "<remove>");
}

struct ready_case {
  const char* behaviour;
  std::string spec;
  std::map<std::string, std::string> labels;
  bool verifies;
};

std::ostream& operator<<(std::ostream& os, const ready_case& c) {
  return os << c.behaviour;
}

const std::vector<ready_case> ready_cases{
    {"a key alone needs only the label", "example.com/ready", {{"example.com/ready", "x"}}, true},
    {"a key alone fails when absent", "example.com/ready", {}, false},
    {"key=value needs that value", "example.com/ready=yes", {{"example.com/ready", "yes"}}, true},
    {"key=value fails on another value",
     "example.com/ready=yes",
     {{"example.com/ready", "no"}},
     false},
    {"key=value fails when absent", "example.com/ready=yes", {}, false},
};

BOOST_DATA_TEST_CASE(plan_ready_label_in_key_and_key_value_forms, bdata::make(ready_cases), c) {
  world w;
  w.at(node_phase::verifying).cordoned_by_us().partitioned();
  w.in.item.spec.verification.gpu_ready_label = c.spec;
  for (const auto& [k, v] : c.labels)
    w.node().labels[k] = v;
  BOOST_TEST(gc::verification_gap(w.in).empty() == c.verifies);
  BOOST_TEST((phase_after(w, w.step()) == "Succeeded") == c.verifies);
}

BOOST_DATA_TEST_CASE(profile_ready_label_in_key_and_key_value_forms, bdata::make(ready_cases), c) {
  world w;
  w.at(node_phase::verifying).cordoned_by_us().partitioned();
  w.in.profile.spec.verification.ready_label = c.spec;
  for (const auto& [k, v] : c.labels)
    w.node().labels[k] = v;
  BOOST_TEST(gc::verification_gap(w.in).empty() == c.verifies);
}

BOOST_AUTO_TEST_CASE(a_missing_plugin_resource_does_not_verify) {
  world w;
  w.at(node_phase::verifying).cordoned_by_us().partitioned();
  w.in.item.spec.verification.require_plugin_resources = {gpu, "amd.com/xgmi"};
  BOOST_TEST(gc::verification_gap(w.in) == "plugin resource amd.com/xgmi not reported");
  w.node().allocatable["amd.com/xgmi"] = "0";
  BOOST_TEST(gc::verification_gap(w.in) == "plugin resource amd.com/xgmi not reported");
  w.node().allocatable["amd.com/xgmi"] = "1";
  BOOST_TEST(gc::verification_gap(w.in).empty());
}

BOOST_AUTO_TEST_CASE(a_resource_mismatch_is_worded_expected_found) {
  world w;
  w.at(node_phase::verifying).cordoned_by_us().partitioned();
  w.in.profile.spec.expected_resources = {{gpu, 63}};
  BOOST_TEST(gc::verification_gap(w.in) == "expected amd.com/gpu=63, found 64");
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Verifying");
  BOOST_TEST(condition_of(w, s, "Verified") == "False/Mismatch");
  BOOST_TEST(condition(status_after(w, s), "Verified")->message ==
             "expected amd.com/gpu=63, found 64");
  BOOST_TEST(no_node_writes(s));
}

BOOST_AUTO_TEST_CASE(a_ready_label_named_by_plan_and_profile_is_reported_once) {
  world w;
  w.at(node_phase::verifying).cordoned_by_us().partitioned();
  w.in.item.spec.verification.gpu_ready_label = "amd.com/gpu.ready";
  w.in.profile.spec.verification.ready_label = "amd.com/gpu.ready";
  w.node().labels.erase("amd.com/gpu.ready");
  BOOST_TEST(gc::verification_gap(w.in) == "ready label amd.com/gpu.ready missing");
  w.in.profile.spec.verification.ready_label = "example.com/ready";
  BOOST_TEST(gc::verification_gap(w.in) ==
             "ready label amd.com/gpu.ready missing; ready label example.com/ready missing");
}

// AMD's components set no readiness label: one the plan or profile names is the site's
// own, and must be on the node before its run, or the node would fail verification.
BOOST_AUTO_TEST_CASE(a_named_ready_label_the_node_lacks_is_a_preflight_finding) {
  world w;
  w.in.token = true;
  w.in.item.spec.verification.gpu_ready_label = "example.com/gpu-ok=yes";
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(last_reason(w, s) == "PreflightFailed");
  BOOST_TEST(status_after(w, s).last_error.rfind("ReadyLabelMissing: the plan's "
                                                 "spec.verification.gpuReadyLabel names "
                                                 "\"example.com/gpu-ok=yes\"",
                                                 0) == 0,
             status_after(w, s).last_error);
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(!s.wants_token);
}

BOOST_AUTO_TEST_CASE(a_named_ready_label_whose_key_is_there_with_another_value_passes_preflight) {
  world w;
  w.in.item.spec.verification.gpu_ready_label = "example.com/gpu-ok=yes";
  w.node().labels["example.com/gpu-ok"] = "no"; // the site's labeller: not ready yet
  BOOST_TEST(gc::preflight(w.in).empty());
}

BOOST_AUTO_TEST_CASE(no_ready_label_by_default_verifies_on_resources_alone) {
  world w;
  w.at(node_phase::verifying).cordoned_by_us().partitioned();
  w.in.profile.spec.verification.ready_label.clear();
  w.node().labels.erase(ready_label);
  BOOST_TEST(gc::verification_gap(w.in).empty());
  BOOST_TEST(gc::preflight(w.in).empty());
}

BOOST_AUTO_TEST_CASE(the_ready_label_is_not_checked_again_mid_run) {
  world w;
  w.at(node_phase::applying).cordoned_by_us().tainted(); // the taint took it off
  BOOST_TEST(!w.node().labels.count(ready_label));
  BOOST_TEST(gc::preflight(w.in).empty());
}

// The labeller's partition label, where present, must show the profile's style; it keeps
// the old style until the labeller has restarted, so the node waits, then fails on timeout.
BOOST_AUTO_TEST_CASE(a_partition_label_showing_another_style_does_not_verify) {
  world w;
  w.at(node_phase::verifying).cordoned_by_us().partitioned();
  w.node().labels[gc::partition_label] = "spx_nps1";
  BOOST_TEST(gc::verification_gap(w.in) ==
             "amd.com/gpu.compute-memory-partition is \"spx_nps1\", expected \"cpx_nps4\"");
  BOOST_TEST(phase_after(w, w.step()) == "Verifying");
  w.node().labels[gc::partition_label] = "cpx_nps4";
  BOOST_TEST(gc::verification_gap(w.in).empty());
  w.node().labels.erase(gc::partition_label); // a heterogeneous node has none
  BOOST_TEST(gc::verification_gap(w.in).empty());
}

// While the device plugin is down kubelet reports allocatable 0: neither a node in the
// target state nor a verified one.
BOOST_AUTO_TEST_CASE(allocatable_zero_while_the_plugin_is_down_is_neither_done_nor_verified) {
  world w;
  w.partitioned();
  w.node().annotations.clear();
  w.node().allocatable[gpu] = "0";
  BOOST_TEST(!gc::in_target_state(w.in));
  BOOST_TEST(gc::verification_gap(w.in) == "expected amd.com/gpu=64, found 0");
  world v;
  v.at(node_phase::verifying).cordoned_by_us().partitioned();
  v.node().allocatable[gpu] = "0";
  BOOST_TEST(phase_after(v, v.step()) == "Verifying");
}

BOOST_AUTO_TEST_CASE(a_resource_not_reported_is_found_none) {
  world w;
  w.at(node_phase::verifying).cordoned_by_us().partitioned();
  w.node().allocatable.erase(gpu);
  BOOST_TEST(gc::verification_gap(w.in) == "expected amd.com/gpu=64, found none");
}

// Issue 23: resources a crash-looping device plugin will never report are not waited for.
BOOST_AUTO_TEST_CASE(a_crash_looping_device_plugin_fails_verification_at_once) {
  auto plugin = [](int restarts, bool looping, const std::string& ns = "kube-amd-gpu") {
    auto p = pod("default-device-plugin-x7k");
    p.ns = ns;
    p.daemon_set = true;
    p.device_plugin = true;
    p.ready = false;
    p.crash_looping = looping;
    p.restarts = restarts;
    return p;
  };
  world w;
  w.at(node_phase::verifying).cordoned_by_us().label_ours();
  w.dcm_says("success");
  w.reports("0");
  w.in.pods = {plugin(3, true)};
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(last_reason(w, s) == "DevicePluginCrashLooping");
  BOOST_TEST(contains(status_after(w, s).last_error,
                      "kube-amd-gpu/default-device-plugin-x7k (CrashLoopBackOff, 3 restarts)"),
             status_after(w, s).last_error);
  BOOST_TEST(cordon_write(s) == "-", "its GPUs were changed: the cordon stays");
  // Not yet: fewer restarts, not backing off, another namespace's pod, or not a plugin.
  for (const auto& p : {plugin(2, true), plugin(5, false), plugin(5, true, "team")}) {
    world x;
    x.at(node_phase::verifying).cordoned_by_us().label_ours();
    x.dcm_says("success");
    x.reports("0");
    x.in.pods = {p};
    BOOST_TEST(phase_after(x, x.step()) == "Verifying");
  }
  // The resources are there: verified, whatever the plugin's pod shows.
  world ok;
  ok.at(node_phase::verifying).cordoned_by_us().partitioned();
  ok.in.pods = {plugin(3, true)};
  BOOST_TEST(phase_after(ok, ok.step()) == "Succeeded");
}

BOOST_AUTO_TEST_CASE(verification_times_out_after_the_profile_timeout_keeping_the_cordon) {
  world w;
  w.at(node_phase::verifying).cordoned_by_us().partitioned();
  w.in.profile.spec.expected_resources = {{gpu, 63}};
  w.in.profile.spec.verification.timeout_seconds = 300;
  w.in.item.spec.verification.timeout_seconds = 900; // not this one
  w.later(299s);
  BOOST_TEST(phase_after(w, w.step()) == "Verifying");
  w.later(300s);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(last_reason(w, s) == "VerificationFailed");
  BOOST_TEST(contains(status_after(w, s).last_error, "expected amd.com/gpu=63, found 64"));
  BOOST_TEST(cordon_write(s) == "-");
  BOOST_TEST(annotation_write(s, gc::was_unschedulable_annotation) == "-");
  BOOST_TEST(!s.taint);
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
// A payload is part of what a run is: an edit of its ConfigMap after a node ran is a new
// run for that node, and one during a run is given with a Warning, never silently.
BOOST_AUTO_TEST_SUITE(payload_changes)

const std::string edited_payload =
    R"({"skippedGPUs":{"ids":[7]},"profiles":[{"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":7}]})";

world& with_payload(world& w, const std::string& payload) {
  w.in.profile.payload = payload;
  w.in.profile.payload_hash = gp::payload_hash(payload);
  return w;
}

BOOST_AUTO_TEST_CASE(a_succeeded_node_whose_payload_was_edited_runs_again) {
  world w;
  w.at(node_phase::succeeded).partitioned();
  w.node().annotations.clear();
  w.status().observed_payload_hash = gp::payload_hash(cpx_payload);
  with_payload(w, edited_payload);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Pending");
  BOOST_TEST(last_reason(w, s) == "PayloadChanged");
  BOOST_TEST(no_node_writes(s));
}

BOOST_AUTO_TEST_CASE(the_same_payload_spaced_or_ordered_otherwise_is_no_change) {
  world w;
  w.at(node_phase::succeeded).partitioned();
  w.node().annotations.clear();
  w.status().observed_payload_hash = gp::payload_hash(cpx_payload);
  const std::string respaced =
      R"({ "profiles" : [ {"numGPUsAssigned": 8, "memoryPartition": "NPS4", "computePartition": "CPX"} ],)"
      R"( "skippedGPUs": {"ids": []} })";
  BOOST_REQUIRE(gp::payload_hash(respaced) == gp::payload_hash(cpx_payload));
  with_payload(w, respaced);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Succeeded");
  BOOST_TEST(last_reason(w, s) != "PayloadChanged");
}

BOOST_AUTO_TEST_CASE(a_success_recorded_before_payloads_were_adopts_the_payload_there_is) {
  world w;
  w.at(node_phase::succeeded).partitioned();
  w.node().annotations.clear();
  with_payload(w, cpx_payload);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Succeeded");
  BOOST_TEST(status_after(w, s).observed_payload_hash == gp::payload_hash(cpx_payload));
  // ... and a later edit is measured from there.
  w.in.item.status = status_after(w, s);
  with_payload(w, edited_payload);
  BOOST_TEST(last_reason(w, w.step()) == "PayloadChanged");
}

BOOST_AUTO_TEST_CASE(a_node_whose_last_run_gave_another_payload_is_not_in_its_target_state) {
  world w;
  w.partitioned();
  w.node().annotations.clear();
  w.in.token = true;
  with_payload(w, cpx_payload);
  BOOST_TEST(last_reason(w, w.step()) == "AlreadyInTargetState", "the control: same payload");

  w.status().observed_payload_hash = gp::payload_hash(cpx_payload);
  with_payload(w, edited_payload);
  auto s = w.step();
  BOOST_TEST(s.wants_token);
  BOOST_TEST(phase_after(w, s) == "Draining");
  BOOST_TEST(status_after(w, s).observed_payload_hash == gp::payload_hash(edited_payload));
}

BOOST_AUTO_TEST_CASE(a_payload_edited_during_the_drain_is_given_with_a_warning) {
  world w;
  w.at(node_phase::applying).cordoned_by_us().tainted();
  w.status().observed_payload_hash = gp::payload_hash(cpx_payload);
  with_payload(w, edited_payload);
  auto s = w.step();
  BOOST_TEST_REQUIRE(s.dcm.has_value());
  BOOST_TEST(s.dcm->profiles.at(dcm_name) == edited_payload);
  BOOST_TEST(status_after(w, s).observed_payload_hash == gp::payload_hash(edited_payload));
  const auto warned = std::count_if(s.events.begin(), s.events.end(), [](const auto& e) {
    return e.reason == "PayloadChanged" && e.type == "Warning";
  });
  BOOST_TEST(warned == 1);
  // Once: the next step knows the run gives the new payload.
  w.in.item.status = status_after(w, s);
  const auto again = w.step();
  BOOST_TEST(std::none_of(again.events.begin(), again.events.end(),
                          [](const auto& e) { return e.reason == "PayloadChanged"; }));
}

// The edit under a DCM name other nodes carry is refused by preflight (DCMProfileInUse):
// the node stays Failed on its old payload, without a loop, and an edit back heals it
// without a run.
BOOST_AUTO_TEST_CASE(a_refused_payload_edit_holds_the_node_and_an_edit_back_heals_it) {
  world w;
  w.partitioned();
  w.node().annotations.clear();
  w.status().observed_payload_hash = gp::payload_hash(cpx_payload);
  with_payload(w, edited_payload);
  w.in.dcm_name_holders = {"gpu-other"};
  auto failed = w.step();
  BOOST_TEST(phase_after(w, failed) == "Failed");
  BOOST_TEST(last_reason(w, failed) == "PreflightFailed");
  BOOST_TEST(no_node_writes(failed));
  BOOST_TEST(status_after(w, failed).observed_payload_hash == gp::payload_hash(cpx_payload),
             "still the payload its last run gave DCM");
  w.in.item.status = status_after(w, failed);
  const auto held = w.step();
  BOOST_TEST(phase_after(w, held) == "Failed", "no loop while the cause stands");

  w.in.dcm_name_holders.clear();
  with_payload(w, cpx_payload);
  const auto passed = w.step();
  BOOST_TEST(last_reason(w, passed) == "PreflightPassed");
  w.in.item.status = status_after(w, passed);
  const auto healed = w.step();
  BOOST_TEST(last_reason(w, healed) == "AlreadyInTargetState");
  BOOST_TEST(no_node_writes(healed));
}

BOOST_AUTO_TEST_CASE(a_node_failed_before_its_gpus_changed_starts_over_on_a_payload_edit) {
  world w;
  w.failed_in(node_phase::draining, "DrainTimeout");
  w.status().observed_payload_hash = gp::payload_hash(cpx_payload);
  with_payload(w, cpx_payload);
  BOOST_TEST(phase_after(w, w.step()) == "Failed", "the control: nothing changed");
  with_payload(w, edited_payload);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Pending");
  BOOST_TEST(last_reason(w, s) == "SpecChanged");
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(succeeded)

BOOST_AUTO_TEST_CASE(a_hash_change_sends_a_succeeded_node_back_to_pending) {
  world w;
  w.at(node_phase::succeeded).partitioned();
  w.node().annotations.clear();
  w.in.item.spec.desired_hash = hash_b;
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Pending");
  BOOST_TEST(last_reason(w, s) == "SpecChanged");
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(s.requeue.count() > 0);
}

BOOST_AUTO_TEST_CASE(finishes_uncordoning_when_an_earlier_step_did_not) {
  world w;
  w.at(node_phase::succeeded).cordoned_by_us().partitioned();
  auto s = w.step();
  BOOST_TEST(cordon_write(s) == "uncordon");
  BOOST_TEST(annotation_write(s, gc::was_unschedulable_annotation) == "<remove>");
  BOOST_TEST(phase_after(w, s) == "Succeeded");
  apply_node_writes(w.node(), s);
  auto quiet = w.step();
  BOOST_TEST(no_node_writes(quiet));
  BOOST_TEST(!quiet.status);
  BOOST_TEST(quiet.requeue.count() == 0);
}

BOOST_AUTO_TEST_CASE(a_settled_succeeded_node_neither_writes_nor_asks) {
  world w;
  w.at(node_phase::succeeded).partitioned();
  w.node().annotations.clear();
  auto s = w.step();
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(!s.status);
  BOOST_TEST(!s.wants_token);
  BOOST_TEST(!s.in_flight);
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(failed)

BOOST_AUTO_TEST_CASE(the_retry_annotation_sends_a_failed_node_to_pending_and_clears_itself) {
  world w;
  w.failed_in(node_phase::verifying, "VerificationFailed").cordoned_by_us().label_ours();
  w.status().drain.pods_total = 3;
  w.in.item.metadata.annotations[gc::retry_annotation] = "1";
  auto s = w.step();
  BOOST_TEST(s.clear_retry);
  BOOST_TEST(phase_after(w, s) == "Pending");
  BOOST_TEST(last_reason(w, s) == "Retry");
  BOOST_TEST(status_after(w, s).last_error.empty());
  BOOST_TEST(status_after(w, s).drain.pods_total == 0);
  BOOST_TEST(s.wants_token);
  BOOST_TEST(cordon_write(s) == "-"); // still cordoned until the new run ends
}

BOOST_AUTO_TEST_CASE(a_retry_annotation_on_a_node_not_failed_is_only_cleared) {
  world w;
  w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  w.in.item.metadata.annotations[gc::retry_annotation] = "";
  auto s = w.step();
  BOOST_TEST(s.clear_retry);
  BOOST_TEST(phase_after(w, s) == "WaitingOperator");
}

BOOST_AUTO_TEST_CASE(a_failure_before_applying_is_rolled_back_taint_first) {
  world w;
  w.failed_in(node_phase::draining, "DrainTimeout").cordoned_by_us().tainted();
  auto s = w.step();
  BOOST_TEST(taint_write(s) == "remove");
  BOOST_TEST(!s.patch); // the cordon record stays until the taint is gone
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(s.requeue.count() > 0);
  apply_node_writes(w.node(), s);
  keep_status(w, s);
  auto then = w.step();
  BOOST_TEST(taint_write(then) == "-");
  BOOST_TEST(cordon_write(then) == "uncordon");
  BOOST_TEST(annotation_write(then, gc::was_unschedulable_annotation) == "<remove>");
  BOOST_TEST(annotation_write(then, gc::applied_hash_annotation) == "<remove>");
  BOOST_TEST(phase_after(w, then) == "Failed");
  apply_node_writes(w.node(), then);
  keep_status(w, then);
  BOOST_TEST(no_node_writes(w.step()));
  BOOST_TEST(!w.node().unschedulable);
}

// A retry runs the same desiredHash again, on a node that still carries the first run's
// label and DCM's `failure` for it. The retry must take the label off and set it again
// (DCM acts on a change) and wait for DCM's new answer, not read the old one as its own.
BOOST_AUTO_TEST_CASE(a_retried_node_sets_the_label_afresh_instead_of_taking_the_old_failure) {
  world w;
  w.in.token = true;
  std::string dcm_answer = "failure"; // DCM's answer to a newly set label; "" for none yet
  // One step as a worker with a token runs it: the node and DCM writes land, the status
  // is kept, DCM answers a change of the label, time moves on.
  auto one = [&] {
    auto s = w.step();
    const auto label_before = w.node().labels[gc::dcm_profile_label];
    apply_node_writes(w.node(), s);
    if (s.dcm)
      w.dcm_config_has_profile();
    if (s.clear_retry)
      w.in.item.metadata.annotations.erase(gc::retry_annotation);
    const auto label_after = w.node().labels[gc::dcm_profile_label];
    if (label_after == dcm_name && label_before != label_after && !dcm_answer.empty())
      w.dcm_says(dcm_answer);
    keep_status(w, s);
    w.in.now += 1s;
    return s;
  };
  auto phase = [&] { return name_of(w.status().phase.value_or(node_phase::pending)); };

  for (int i = 0; i < 20 && phase() != "Failed"; ++i)
    one();
  BOOST_TEST_REQUIRE(phase() == "Failed");
  BOOST_TEST_REQUIRE(w.status().history.back().reason == "OperatorFailed");
  BOOST_TEST_REQUIRE(w.node().labels[gc::dcm_profile_label] == dcm_name);
  BOOST_TEST_REQUIRE(w.node().labels[gc::dcm_state_label] == "failure");
  const auto first_mark = w.node().annotations[gc::applied_hash_annotation];
  BOOST_TEST_REQUIRE(!first_mark.empty());

  w.in.now += 60s;
  w.in.item.metadata.annotations[gc::retry_annotation] = "1";
  dcm_answer.clear(); // DCM has not answered the retry yet
  auto retried = one();
  BOOST_TEST_REQUIRE(last_reason(w, retried) == "Started"); // Retry, then Draining
  bool label_removed = false;
  for (int i = 0; i < 20 && phase() != "WaitingOperator" && phase() != "Failed"; ++i) {
    auto s = one();
    if (label_write(s, gc::dcm_profile_label) == "<remove>")
      label_removed = true;
  }
  BOOST_TEST(phase() == "WaitingOperator",
             "the retry ended " << phase() << " (" << w.status().history.back().reason << ")");
  BOOST_TEST(label_removed, "the old label was taken for the retry's own");
  BOOST_TEST(w.node().labels[gc::dcm_profile_label] == dcm_name);
  BOOST_TEST(w.node().labels.count(gc::dcm_state_label) == 0u);
  BOOST_TEST(w.node().annotations[gc::applied_hash_annotation] != first_mark);
  BOOST_TEST(w.in.item.spec.desired_hash == hash_a); // the same hash all along

  // Still waiting for DCM: the first run's failure is not read as the retry's.
  auto waiting = one();
  BOOST_TEST(phase() == "WaitingOperator");
  BOOST_TEST(condition_of(w, waiting, "OperatorSucceeded") == "False/Waiting");
}

BOOST_AUTO_TEST_CASE(a_failure_after_applying_keeps_the_cordon_and_lifts_the_taint) {
  // Once DCM was asked (WaitingOperator or later); a failure in Applying comes before the
  // label is set and is rolled back (applying/anything_gone_before_the_label_...).
  for (auto last : {node_phase::waiting_operator, node_phase::verifying}) {
    BOOST_TEST_CONTEXT("failed in " << name_of(last)) {
      world w;
      w.failed_in(last, "OperatorFailed").cordoned_by_us().tainted().label_ours();
      auto s = w.step();
      BOOST_TEST(taint_write(s) == "remove");
      BOOST_TEST(cordon_write(s) == "-");
      BOOST_TEST(annotation_write(s, gc::was_unschedulable_annotation) == "-");
      BOOST_TEST(!s.wants_token);
      BOOST_TEST(!s.in_flight);
      apply_node_writes(w.node(), s);
      auto again = w.step();
      BOOST_TEST(no_node_writes(again));
      BOOST_TEST(w.node().unschedulable);
    }
  }
}

// Issue 23: a Failed node whose spec changes does not stay silently Failed. Returned to
// service on untouched GPUs, it starts over by itself; with its GPUs possibly mid-change
// it stays cordoned and says that a retry is needed.
BOOST_AUTO_TEST_CASE(a_node_failed_on_untouched_gpus_starts_over_when_its_spec_changes) {
  world w;
  w.failed_in(node_phase::draining, "DrainTimeout").cordoned_by_us().tainted();
  w.in.item.spec.desired_hash = hash_b;
  // The rollback comes first (untaint, then uncordon): the node is given back before
  // anything else.
  for (int i = 0; i < 2; ++i) {
    auto s = w.step();
    BOOST_TEST_REQUIRE(phase_after(w, s) == "Failed");
    BOOST_TEST_REQUIRE(!no_node_writes(s));
    apply_node_writes(w.node(), s);
    keep_status(w, s);
  }
  BOOST_TEST_REQUIRE(!w.node().unschedulable);
  BOOST_TEST_REQUIRE(!w.node().has_dcm_taint());
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Pending");
  BOOST_TEST(last_reason(w, s) == "SpecChanged");
  BOOST_TEST(status_after(w, s).last_error.empty());
  keep_status(w, s);
  w.node().labels["amd.com/gpu.ready"] = "true"; // the site's labeller, back after the untaint
  auto next = w.step();
  BOOST_TEST(next.wants_token, "it queues for the rollout's limits like any node: "
                                   << phase_after(w, next) << " "
                                   << status_after(w, next).last_error);
  // The same spec does not start it again.
  world same;
  same.failed_in(node_phase::draining, "DrainTimeout");
  same.later(3600s);
  BOOST_TEST(phase_after(same, same.step()) == "Failed");
}

BOOST_AUTO_TEST_CASE(a_preflight_failure_records_its_spec_and_starts_over_on_a_new_one) {
  world w;
  w.in.dcm.found = false;
  auto failed = w.step();
  keep_status(w, failed);
  BOOST_TEST_REQUIRE(phase_after(w, failed) == "Failed");
  BOOST_TEST(status_after(w, failed).observed_hash == hash_a);
  w.later(30s);
  auto still = w.step();
  BOOST_TEST(phase_after(w, still) == "Failed", "no loop through Pending on the same spec");
  w.in.item.spec.desired_hash = hash_b;
  auto changed = w.step();
  BOOST_TEST(phase_after(w, changed) == "Pending");
  BOOST_TEST(last_reason(w, changed) == "SpecChanged");
}

BOOST_AUTO_TEST_CASE(a_node_failed_with_gpus_mid_change_says_a_retry_is_needed_for_a_new_spec) {
  world w;
  w.failed_in(node_phase::waiting_operator, "OperatorFailed").cordoned_by_us().label_ours();
  w.in.item.spec.desired_hash = hash_b;
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(!s.wants_token);
  BOOST_TEST(condition_of(w, s, "UpToDate") == "False/RetryNeeded");
  BOOST_TEST(has_event(s, "RetryNeeded", false, "Warning"));
  BOOST_TEST(w.node().unschedulable);
  keep_status(w, s);
  auto again = w.step();
  BOOST_TEST(!has_event(again, "RetryNeeded", false, "Warning"), "said once");
  BOOST_TEST(!again.status, "nothing new to write");
  // The admin checks the node and asks for the retry: the new spec runs.
  w.in.item.metadata.annotations[gc::retry_annotation] = "1";
  auto retried = w.step();
  BOOST_TEST(phase_after(w, retried) == "Pending");
  BOOST_TEST(condition_of(w, retried, "UpToDate") == "-");
  // The spec changed back before any retry: nothing is pending any more.
  world back;
  back.failed_in(node_phase::waiting_operator, "OperatorFailed").cordoned_by_us().label_ours();
  back.in.item.spec.desired_hash = hash_b;
  auto b = back.step();
  keep_status(back, b);
  back.in.item.spec.desired_hash = hash_a;
  BOOST_TEST(condition_of(back, back.step(), "UpToDate") == "-");
}

BOOST_AUTO_TEST_CASE(an_operator_failure_is_not_retried_by_itself) {
  world w;
  w.failed_in(node_phase::waiting_operator, "OperatorFailed").cordoned_by_us().label_ours();
  w.later(3600s);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(!s.wants_token);
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(deletion)

struct deletion_case {
  const char* behaviour;
  void (*set_up)(world&);
};

std::ostream& operator<<(std::ostream& os, const deletion_case& c) {
  return os << c.behaviour;
}

const std::vector<deletion_case> before_applying{
    {"Draining, cordoned and tainted",
     [](world& w) { w.at(node_phase::draining).cordoned_by_us().tainted(); }},
    {"Draining, just cordoned", [](world& w) { w.at(node_phase::draining).cordoned_by_us(); }},
    {"Failed in Draining", [](world& w) { w.failed_in(node_phase::draining, "DrainTimeout"); }},
    {"Succeeded, uncordon not finished",
     [](world& w) { w.at(node_phase::succeeded).cordoned_by_us().partitioned(); }},
};

// Rolled back in order (the taint alone, then the cordon and the annotations in one
// patch), and only then the finalizer goes.
BOOST_DATA_TEST_CASE(deletion_before_applying_rolls_back_then_drops_the_finalizer,
                     bdata::make(before_applying), c) {
  world w;
  c.set_up(w);
  w.cordoned_by_us();
  w.in.item.metadata.deletion_timestamp = gp::format_time(t0);
  if (w.node().has_dcm_taint()) {
    auto untaint = w.step();
    BOOST_TEST(!untaint.remove_finalizer);
    BOOST_TEST(taint_write(untaint) == "remove");
    BOOST_TEST(!untaint.patch);
    BOOST_TEST(untaint.requeue.count() > 0);
    apply_node_writes(w.node(), untaint);
    keep_status(w, untaint);
  }
  auto s = w.step();
  BOOST_TEST(!s.remove_finalizer);
  BOOST_TEST(cordon_write(s) == "uncordon");
  BOOST_TEST(annotation_write(s, gc::was_unschedulable_annotation) == "<remove>");
  BOOST_TEST(annotation_write(s, gc::applied_hash_annotation) == "<remove>");
  BOOST_TEST(taint_write(s) == "-");
  BOOST_TEST(s.requeue.count() > 0);

  apply_node_writes(w.node(), s);
  keep_status(w, s);
  auto then = w.step();
  BOOST_TEST(then.remove_finalizer);
  BOOST_TEST(no_node_writes(then));
  BOOST_TEST(!w.node().unschedulable);
  BOOST_TEST(!w.node().has_dcm_taint());
  BOOST_TEST(w.node().annotations.count(gc::was_unschedulable_annotation) == 0u);
}

BOOST_AUTO_TEST_CASE(deletion_before_applying_keeps_an_admin_cordon) {
  world w;
  w.at(node_phase::draining).cordoned_over_admin().tainted();
  w.in.item.metadata.deletion_timestamp = gp::format_time(t0);
  auto s = w.step();
  BOOST_TEST(!s.remove_finalizer);
  BOOST_TEST(taint_write(s) == "remove");
  BOOST_TEST(!s.patch);
  apply_node_writes(w.node(), s);
  keep_status(w, s);
  auto then = w.step();
  BOOST_TEST(!then.remove_finalizer);
  BOOST_TEST(cordon_write(then) == "-");
  BOOST_TEST(annotation_write(then, gc::was_unschedulable_annotation) == "<remove>");
  apply_node_writes(w.node(), then);
  keep_status(w, then);
  BOOST_TEST(w.step().remove_finalizer);
  BOOST_TEST(w.node().unschedulable);
}

BOOST_AUTO_TEST_CASE(deletion_of_a_pending_item_drops_the_finalizer_at_once) {
  world w;
  w.in.item.metadata.deletion_timestamp = gp::format_time(t0);
  auto s = w.step();
  BOOST_TEST(s.remove_finalizer);
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(!s.add_finalizer);
}

const std::vector<deletion_case> gpus_touched{
    {"Applying", [](world& w) { w.at(node_phase::applying).label_ours(); }},
    {"WaitingOperator", [](world& w) { w.at(node_phase::waiting_operator).label_ours(); }},
    {"Verifying", [](world& w) { w.at(node_phase::verifying).label_ours(); }},
    {"Failed in WaitingOperator",
     [](world& w) { w.failed_in(node_phase::waiting_operator, "OperatorFailed").label_ours(); }},
};

BOOST_DATA_TEST_CASE(deletion_after_applying_leaves_the_node_cordoned_with_a_warning,
                     bdata::make(gpus_touched), c) {
  world w;
  c.set_up(w);
  w.cordoned_by_us().tainted();
  w.in.item.metadata.deletion_timestamp = gp::format_time(t0);
  auto s = w.step();
  BOOST_TEST(s.remove_finalizer);
  BOOST_TEST(has_event(s, "LeftCordoned", true, "Warning"));
  BOOST_TEST(has_event(s, "LeftCordoned", false, "Warning"));
  BOOST_TEST(cordon_write(s) == "-");
  BOOST_TEST(!s.patch);
  BOOST_TEST(taint_write(s) == "remove");
  BOOST_TEST(!s.dcm);
}

BOOST_AUTO_TEST_CASE(deletion_with_the_node_gone_drops_the_finalizer) {
  for (auto p : {node_phase::pending, node_phase::draining, node_phase::waiting_operator}) {
    BOOST_TEST_CONTEXT(name_of(p)) {
      world w;
      w.at(p);
      w.in.node.reset();
      w.in.item.metadata.deletion_timestamp = gp::format_time(t0);
      auto s = w.step();
      BOOST_TEST(s.remove_finalizer);
      BOOST_TEST(no_node_writes(s));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_node_gone_mid_flight_fails_the_item) {
  world w;
  w.at(node_phase::draining);
  w.in.node.reset();
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(last_reason(w, s) == "NodeGone");
  BOOST_TEST(no_node_writes(s));
}

BOOST_AUTO_TEST_CASE(a_pending_item_of_a_missing_node_waits_and_says_why) {
  world w;
  w.in.node.reset();
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Pending");
  BOOST_TEST(status_after(w, s).last_error == "node gpu-1 not found");
  BOOST_TEST(!s.wants_token);
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(dry_run)

BOOST_AUTO_TEST_CASE(dry_run_previews_pods_pdbs_and_findings_and_writes_nothing_to_the_node) {
  world w;
  w.in.item.spec.dry_run = true;
  w.in.token = true;
  w.with(pod("web-0"))
      .with(pod("db-0", "db"))
      .with(daemon_pod("device-plugin-x"))
      .with(pdb("web-pdb", "web", 0))
      .with(pdb("db-pdb", "db", 1))
      .with(pdb("other-pdb", "other", 0));
  auto s = w.step();
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(!s.wants_token);
  BOOST_TEST(!s.in_flight);
  BOOST_TEST(phase_after(w, s) == "Pending");
  const auto& preview = status_after(w, s).preview;
  BOOST_TEST_REQUIRE(preview.has_value());
  std::vector<std::string> pods;
  for (const auto& p : preview->pods_to_evict)
    pods.push_back(p.namespace_ + "/" + p.name);
  std::sort(pods.begin(), pods.end());
  const std::vector<std::string> want_pods{"team/db-0", "team/web-0"};
  BOOST_TEST(pods == want_pods, boost::test_tools::per_element());
  BOOST_TEST_REQUIRE(preview->blocking_pdbs.size() == 1u);
  BOOST_TEST(preview->blocking_pdbs[0].name == "web-pdb");
  BOOST_TEST(!preview->already_in_target_state);
  BOOST_TEST(preview->findings.empty());
  BOOST_TEST(condition_of(w, s, "DryRun") == "True/DryRun");
}

BOOST_AUTO_TEST_CASE(dry_run_shows_a_node_already_in_target_state) {
  world w;
  w.in.item.spec.dry_run = true;
  w.partitioned();
  auto s = w.step();
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(phase_after(w, s) == "Pending");
  BOOST_TEST(status_after(w, s).preview->already_in_target_state);
}

BOOST_AUTO_TEST_CASE(dry_run_lists_preflight_findings_without_failing) {
  world w;
  w.in.item.spec.dry_run = true;
  w.node().labels["amd.com/gpu.product"] = "MI250";
  auto s = w.step();
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(phase_after(w, s) == "Pending");
  const auto& findings = status_after(w, s).preview->findings;
  BOOST_TEST_REQUIRE(findings.size() == 1u);
  BOOST_TEST(findings[0].rfind("TargetMismatch: ", 0) == 0);
  BOOST_TEST(!status_after(w, s).preview->already_in_target_state);
}

BOOST_AUTO_TEST_CASE(a_dry_run_stays_without_writes_over_many_steps) {
  world w;
  w.in.item.spec.dry_run = true;
  w.in.token = true;
  w.with(pod("web-0"));
  for (int i = 0; i < 5; ++i) {
    auto s = w.step();
    BOOST_TEST(no_node_writes(s));
    keep_status(w, s);
    w.later(std::chrono::seconds(10 * (i + 1)));
  }
  BOOST_TEST(name_of(*w.status().phase) == "Pending");
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
// A controller restarted at any instant reads the same status and node and continues:
// with the same inputs (and no memory of earlier evictions) it decides the same, or
// something idempotent, and never rewrites the cordon record or lifts an admin's cordon.
BOOST_AUTO_TEST_SUITE(resume)

struct resume_case {
  const char* behaviour;
  void (*set_up)(world&, bool admin);
};

std::ostream& operator<<(std::ostream& os, const resume_case& c) {
  return os << c.behaviour;
}

void cordon(world& w, bool admin) {
  if (admin)
    w.cordoned_over_admin();
  else
    w.cordoned_by_us();
}

const std::vector<resume_case> resume_cases{
    {"Pending, token lost with the restart",
     [](world& w, bool admin) {
       if (admin)
         w.admin_cordoned();
       w.with(pod("web-0"));
     }},
    {"Draining before the cordon",
     [](world& w, bool admin) {
       w.at(node_phase::draining).with(pod("web-0"));
       if (admin)
         w.admin_cordoned();
     }},
    {"Draining, evicting",
     [](world& w, bool admin) {
       w.at(node_phase::draining).with(pod("web-0"));
       cordon(w, admin);
     }},
    {"Draining, blocked by a PDB",
     [](world& w, bool admin) {
       w.at(node_phase::draining).with(pod("web-0")).with(pdb("web-pdb", "web", 0));
       cordon(w, admin);
       w.in.evictions["team/web-0"] = {t0 + 10s, true, false, "blocked"};
       w.later(12s);
     }},
    {"Draining, evicted pods terminating",
     [](world& w, bool admin) {
       auto p = pod("web-0");
       p.deleting = true;
       w.at(node_phase::draining).with(p);
       cordon(w, admin);
       w.in.evictions["team/web-0"] = {t0, false, true, ""};
     }},
    {"Draining, tainted, waiting for pods",
     [](world& w, bool admin) {
       auto p = daemon_pod("device-plugin-x");
       p.deleting = true;
       w.at(node_phase::draining).with(p);
       cordon(w, admin);
       w.tainted();
     }},
    {"Draining, drain timed out",
     [](world& w, bool admin) {
       w.at(node_phase::draining).with(pod("web-0")).with(pdb("web-pdb", "web", 0));
       cordon(w, admin);
       w.tainted().later(700s);
     }},
    {"Applying, DCM config to write",
     [](world& w, bool admin) {
       w.at(node_phase::applying);
       cordon(w, admin);
       w.tainted();
     }},
    {"Applying, label to set",
     [](world& w, bool admin) {
       w.at(node_phase::applying);
       cordon(w, admin);
       w.tainted().dcm_config_has_profile();
     }},
    {"Applying, label set",
     [](world& w, bool admin) {
       w.at(node_phase::applying);
       cordon(w, admin);
       w.tainted().label_ours();
     }},
    {"WaitingOperator",
     [](world& w, bool admin) {
       w.at(node_phase::waiting_operator);
       cordon(w, admin);
       w.tainted().label_ours();
     }},
    {"WaitingOperator, DCM answered",
     [](world& w, bool admin) {
       w.at(node_phase::waiting_operator);
       cordon(w, admin);
       w.tainted().label_ours().dcm_says("success");
     }},
    {"Verifying, tainted",
     [](world& w, bool admin) {
       w.at(node_phase::verifying);
       cordon(w, admin);
       w.label_ours().dcm_says("success").tainted();
     }},
    {"Verifying, verified",
     [](world& w, bool admin) {
       w.at(node_phase::verifying);
       cordon(w, admin);
       w.partitioned();
     }},
    {"Succeeded, still cordoned",
     [](world& w, bool admin) {
       w.at(node_phase::succeeded);
       cordon(w, admin);
       w.partitioned();
     }},
    {"Failed in Draining, not yet returned",
     [](world& w, bool admin) {
       w.failed_in(node_phase::draining, "DrainTimeout");
       cordon(w, admin);
       w.tainted();
     }},
    {"Failed in WaitingOperator",
     [](world& w, bool admin) {
       w.failed_in(node_phase::waiting_operator, "OperatorFailed");
       cordon(w, admin);
       w.tainted().label_ours().dcm_says("failure");
     }},
};

// A restart forgets the evictions; the decision about the node is the same.
BOOST_DATA_TEST_CASE(a_restarted_controller_decides_the_same,
                     bdata::make(resume_cases) * bdata::make({false, true}), c, admin) {
  world w;
  c.set_up(w, admin);
  w.in.token = true;
  auto before = w.step();
  auto restarted_world = w;
  restarted_world.in.evictions.clear();
  restarted_world.in.token = false; // the governor restarted too
  auto after = restarted_world.step();

  BOOST_TEST(cordon_write(after) == cordon_write(before));
  BOOST_TEST(taint_write(after) == taint_write(before));
  BOOST_TEST(annotation_write(after, gc::was_unschedulable_annotation) ==
             annotation_write(before, gc::was_unschedulable_annotation));
  BOOST_TEST(label_write(after, gc::dcm_profile_label) ==
             label_write(before, gc::dcm_profile_label));
  BOOST_TEST(after.dcm.has_value() == before.dcm.has_value());
  BOOST_TEST(after.remove_finalizer == before.remove_finalizer);
  // Evictions: the restarted controller may retry a blocked one at once (idempotent), and
  // never evicts a pod the other would not.
  auto a = removals(after);
  for (const auto& r : removals(before))
    BOOST_TEST((std::find(a.begin(), a.end(), r) != a.end()), r);
  std::vector<std::string> evictable;
  for (const auto& p : gc::evictable_pods(w.in.pods))
    evictable.push_back(p.ns + "/" + p.name + ":evict");
  for (const auto& r : a)
    BOOST_TEST((std::find(evictable.begin(), evictable.end(), r) != evictable.end()), r);
  // A lost token only delays the start.
  if (std::string(c.behaviour).rfind("Pending", 0) == 0)
    BOOST_TEST(phase_after(restarted_world, after) == "Pending");
  else
    BOOST_TEST(phase_after(restarted_world, after) == phase_after(w, before));
}

// Every decision after a restart, applied and stepped again, never rewrites the cordon
// record and never uncordons a node an admin had cordoned.
BOOST_DATA_TEST_CASE(resuming_never_overwrites_the_cordon_record_nor_lifts_an_admin_cordon,
                     bdata::make(resume_cases) * bdata::make({false, true}), c, admin) {
  world w;
  c.set_up(w, admin);
  w.in.token = true;
  const auto recorded = w.node().annotations.count(gc::was_unschedulable_annotation)
                            ? w.node().annotations[gc::was_unschedulable_annotation]
                            : std::string();
  for (int i = 0; i < 6; ++i) {
    auto s = w.step();
    const auto written = annotation_write(s, gc::was_unschedulable_annotation);
    if (!recorded.empty())
      BOOST_TEST((written == "-" || written == "<remove>"), "step " << i << " wrote " << written);
    else if (written != "-" && written != "<remove>")
      BOOST_TEST(written == (admin ? "true" : "false"));
    if (admin)
      BOOST_TEST(cordon_write(s) != "uncordon", "step " << i);
    apply_node_writes(w.node(), s);
    keep_status(w, s);
    w.in.evictions.clear(); // restarted again
    if (admin)
      BOOST_TEST(w.node().unschedulable);
  }
}

// The rollback lifts the taint first, alone, and only then drops the cordon record: a
// controller killed in between resumes with the record still there and finishes.
BOOST_AUTO_TEST_CASE(a_rollback_interrupted_after_lifting_the_taint_still_uncordons) {
  world w;
  w.failed_in(node_phase::draining, "DrainTimeout").cordoned_by_us().tainted();
  auto rollback = w.step();
  BOOST_TEST_REQUIRE(taint_write(rollback) == "remove");
  BOOST_TEST(!rollback.patch);
  apply_node_writes(w.node(), rollback);
  keep_status(w, rollback);
  BOOST_TEST_REQUIRE(w.node().annotations.count(gc::was_unschedulable_annotation) == 1u);

  auto restarted = w;
  restarted.in.evictions.clear();
  auto resumed = restarted.step();
  BOOST_TEST(cordon_write(resumed) == "uncordon");
  BOOST_TEST(annotation_write(resumed, gc::was_unschedulable_annotation) == "<remove>");
}

namespace {

// A real run up to its taint: cordoned, tainted, the NodeTainted condition recorded, and a
// terminating device plugin holding the drain.
world tainted_by_a_run() {
  world w;
  auto plugin = daemon_pod("device-plugin-x");
  plugin.deleting = true;
  w.at(node_phase::draining).cordoned_by_us().dcm_config_has_profile().with(plugin);
  auto taint = w.step();
  BOOST_TEST_REQUIRE(taint_write(taint) == "add");
  apply_node_writes(w.node(), taint);
  keep_status(w, taint);
  auto seen = w.step();
  BOOST_TEST_REQUIRE(condition_of(w, seen, "NodeTainted") == "True/Tainted");
  BOOST_TEST_REQUIRE(no_node_writes(seen));
  keep_status(w, seen);
  return w;
}

// What an earlier rollback that patched first (uncordon, annotations off) and was killed
// before its untaint left on the node.
void patched_but_not_untainted(world& w) {
  w.node().unschedulable = false;
  w.node().annotations.erase(gc::was_unschedulable_annotation);
  w.node().annotations.erase(gc::applied_hash_annotation);
  BOOST_TEST_REQUIRE(w.node().has_dcm_taint());
}

} // namespace

// Tainted, the cordon record gone: the item's NodeTainted condition still says the taint
// is ours, and the resumed rollback lifts it.
BOOST_AUTO_TEST_CASE(a_rollback_interrupted_after_its_patch_still_lifts_the_taint) {
  world w = tainted_by_a_run();
  w.later(600s);
  auto timeout = w.step();
  BOOST_TEST_REQUIRE(phase_after(w, timeout) == "Failed");
  BOOST_TEST_REQUIRE(last_reason(w, timeout) == "DrainTimeout");
  keep_status(w, timeout); // its node writes never landed
  patched_but_not_untainted(w);

  auto resumed = w.step();
  BOOST_TEST(taint_write(resumed) == "remove",
             "a Failed (DrainTimeout) node left with amd-dcm=up:NoExecute and no "
             "was-unschedulable annotation is never untainted");
  BOOST_TEST(cordon_write(resumed) == "-");
  apply_node_writes(w.node(), resumed);
  keep_status(w, resumed);
  auto after = w.step();
  BOOST_TEST(no_node_writes(after));
  BOOST_TEST(condition_of(w, after, "NodeTainted") == "False/Untainted");
  BOOST_TEST(!w.node().has_dcm_taint());
}

BOOST_AUTO_TEST_CASE(a_deletion_rollback_interrupted_after_its_patch_still_lifts_the_taint) {
  world w = tainted_by_a_run();
  w.in.item.metadata.deletion_timestamp = gp::format_time(t0);
  patched_but_not_untainted(w);

  auto resumed = w.step();
  BOOST_TEST(taint_write(resumed) == "remove",
             "the finalizer is removed while the node still carries amd-dcm=up:NoExecute");
  BOOST_TEST(!resumed.remove_finalizer);
  apply_node_writes(w.node(), resumed);
  keep_status(w, resumed);
  auto then = w.step();
  BOOST_TEST(then.remove_finalizer);
  BOOST_TEST(no_node_writes(then));
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
// Property: random runs through a small model of the cluster. The model applies each
// step's writes (patch, taint, evictions and deletions, DCM's config), plays the taint
// manager, kubelet, DCM and the device plugin, moves time on, and now and then blocks
// evictions with a PDB, restarts the controller (status kept, eviction memory lost) or
// loses a step's node writes.
BOOST_AUTO_TEST_SUITE(property)

namespace {

enum class dcm_behaviour { succeeds, fails, stuck, wrong_count };

struct model_pod {
  gc::pod_info pod;
  std::optional<gp::wall_clock::time_point> gone_at;
};

struct cluster_model {
  std::mt19937 rng;
  world w;
  bool admin = false;
  bool drain_enabled = true;
  dcm_behaviour dcm = dcm_behaviour::succeeds;
  /// A PDB that never allows a disruption (the drain can only time out).
  bool stubborn_pdb = false;
  std::vector<model_pod> pods;
  std::optional<gp::wall_clock::time_point> dcm_due;
  std::string partition = "spx-nps1"; // what the GPUs run
  int next_pod = 0;

  explicit cluster_model(unsigned seed) : rng(seed) {
    admin = pick(4) == 0;
    drain_enabled = pick(5) != 0;
    dcm = static_cast<dcm_behaviour>(pick(6) < 3 ? 0 : pick(4));
    stubborn_pdb = pick(8) == 0;
    auto& spec = w.in.item.spec;
    spec.drain.enabled = drain_enabled;
    spec.drain.timeout_seconds = 60 + pick(240);
    spec.drain.kind = pick(6) == 0 ? gp::eviction_kind::delete_pods : gp::eviction_kind::eviction;
    spec.drain.respect_pdb = pick(6) != 0;
    spec.verification.timeout_seconds = 120 + pick(300);
    w.in.profile.spec.verification.timeout_seconds = 120 + pick(300);
    w.node().unschedulable = admin;
    switch (pick(4)) {
    case 0: // already partitioned by hand
      partition = dcm_name;
      w.node().labels[gc::dcm_profile_label] = dcm_name;
      w.dcm_config_has_profile();
      break;
    case 1: // the label names the profile, the GPUs are on another (a stale label)
      w.node().labels[gc::dcm_profile_label] = dcm_name;
      break;
    default:
      break;
    }
    if (pick(3) == 0)
      w.in.dcm.config_json = R"({"gpu-config-profiles":{"cpx-nps4":)" + spx_payload + "}}";
    for (int i = 0, n = pick(5); i < n; ++i)
      add_workload();
    add(daemon_pod("device-plugin"));
    auto dcm_ds = daemon_pod("dcm");
    dcm_ds.tolerations = {tolerate_dcm()};
    add(dcm_ds);
    auto mirror = pod("static-proxy", "proxy");
    mirror.mirror = true;
    add(mirror);
    w.in.pdbs = {pdb("web-pdb", "web", 1), pdb("db-pdb", "db", 1)};
    plugin();
  }

  int pick(int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); }

  void add(gc::pod_info p) { pods.push_back({std::move(p), std::nullopt}); }

  void add_workload() {
    const char* apps[] = {"web", "db", "batch"};
    auto p = pod("w-" + std::to_string(next_pod++), apps[pick(3)]);
    if (pick(4) == 0)
      p.tolerations = {tolerate_dcm(pick(2) == 0)};
    if (pick(8) == 0)
      p.phase = "Succeeded";
    add(p);
  }

  gc::node_info& node() { return w.node(); }
  gp::wall_clock::time_point now() const { return w.in.now; }

  // The device plugin and labeller: down while tainted.
  void plugin() {
    auto& n = node();
    if (n.has_dcm_taint()) {
      n.labels.erase(ready_label);
      n.allocatable.erase(gpu);
      return;
    }
    n.labels[ready_label] = "true";
    int count = partition == dcm_name ? 64 : 8;
    if (partition == dcm_name && dcm == dcm_behaviour::wrong_count)
      count = 63;
    n.allocatable[gpu] = std::to_string(count);
  }

  void remove_pod(model_pod& p, std::chrono::seconds grace) {
    if (p.pod.deleting)
      return;
    p.pod.deleting = true;
    p.gone_at = now() + grace;
  }

  void apply(const gc::node_step& s) {
    auto& n = node();
    const auto label_before =
        n.labels.count(gc::dcm_profile_label) ? n.labels[gc::dcm_profile_label] : std::string();
    apply_node_writes(n, s);
    const auto label_after =
        n.labels.count(gc::dcm_profile_label) ? n.labels[gc::dcm_profile_label] : std::string();
    // DCM acts on a change of the label (a re-write of the same value is ignored).
    if (label_after != label_before)
      dcm_due = label_after.empty() ? std::nullopt
                                    : std::optional<gp::wall_clock::time_point>(
                                          now() + std::chrono::seconds(5 + pick(60)));
    if (s.taint && *s.taint)
      for (auto& p : pods)
        if (!p.pod.mirror && !p.pod.finished() && !p.pod.tolerates_dcm_taint())
          remove_pod(p, std::chrono::seconds(pick(30)));
    for (const auto& r : s.removals) {
      auto it = std::find_if(pods.begin(), pods.end(), [&](const model_pod& p) {
        return p.pod.ns == r.ns && p.pod.name == r.name;
      });
      gc::eviction_memory m;
      m.at = now();
      if (it == pods.end()) {
        m.done = true; // gone already
      } else if (r.evict &&
                 std::any_of(w.in.pdbs.begin(), w.in.pdbs.end(), [&](const gc::pdb_info& b) {
                   return b.covers(it->pod) && b.disruptions_allowed <= 0;
                 })) {
        m.blocked = true;
        m.message = "Cannot evict pod as it would violate the pod's disruption budget.";
      } else {
        m.done = true;
        remove_pod(*it, std::chrono::seconds(pick(20)));
      }
      w.in.evictions[r.ns + "/" + r.name] = m;
    }
    if (s.dcm) {
      w.in.dcm.found = true;
      std::string updated = w.in.dcm.config_json;
      for (const auto& [name, payload] : s.dcm->profiles)
        updated = gc::dcm_config_with(updated, name, payload).value();
      w.in.dcm.config_json = updated;
    }
    keep_status(w, s);
    plugin();
  }

  // Time passes: pods finish terminating, DCM answers, PDBs change, pods arrive.
  void advance() {
    w.in.now += std::chrono::seconds(1 + pick(15));
    for (auto it = pods.begin(); it != pods.end();)
      if (it->gone_at && *it->gone_at <= now())
        it = pods.erase(it);
      else
        ++it;
    auto& n = node();
    if (dcm_due && *dcm_due <= now()) {
      dcm_due.reset();
      const auto wanted = n.labels[gc::dcm_profile_label];
      const bool known = contains(w.in.dcm.config_json, "\"" + wanted + "\"");
      if (!known || dcm == dcm_behaviour::fails) {
        n.labels[gc::dcm_state_label] = "failure";
      } else if (dcm != dcm_behaviour::stuck) {
        partition = wanted;
        n.labels[gc::dcm_state_label] = "success";
      }
    }
    for (auto& b : w.in.pdbs)
      b.disruptions_allowed = pick(3) == 0 || (stubborn_pdb && b.name == "web-pdb") ? 0 : 1;
    if (!n.unschedulable && !n.has_dcm_taint() && pick(10) == 0)
      add_workload();
    // The device plugin comes back once the taint is gone.
    if (!n.has_dcm_taint() && std::none_of(pods.begin(), pods.end(), [](const model_pod& p) {
          return p.pod.name == "device-plugin";
        }))
      add(daemon_pod("device-plugin"));
    w.in.pods.clear();
    for (const auto& p : pods)
      w.in.pods.push_back(p.pod);
    plugin();
  }

  bool ended() const {
    auto p = w.in.item.status.phase.value_or(node_phase::pending);
    return p == node_phase::succeeded || p == node_phase::failed;
  }

  std::vector<gc::pod_info> evictable_left() const {
    std::vector<gc::pod_info> all;
    for (const auto& p : pods)
      all.push_back(p.pod);
    return gc::evictable_pods(all);
  }
};

} // namespace

constexpr int max_steps = 1500;

BOOST_DATA_TEST_CASE(random_runs_keep_the_safety_rules_and_end, bdata::xrange(300), seed) {
  cluster_model m(static_cast<unsigned>(seed) * 7919u + 17u);
  m.advance();
  bool token = false;
  for (int step = 0; step < max_steps && !m.ended(); ++step) {
    BOOST_TEST_CONTEXT("seed " << seed << " step " << step << " phase "
                               << name_of(m.w.status().phase.value_or(node_phase::pending))) {
      m.w.in.token = token;
      const auto s = m.w.step();
      auto& n = m.node();
      // The taint comes only after the drain removed every evictable pod.
      if (s.taint && *s.taint && m.drain_enabled)
        BOOST_TEST(m.evictable_left().empty(), "tainted with evictable pods left");
      // The profile label is set only on a cordoned, tainted node.
      if (s.patch) {
        auto it = s.patch->labels.find(gc::dcm_profile_label);
        if (it != s.patch->labels.end() && it->second) {
          BOOST_TEST(n.has_dcm_taint(), "profile label set on an untainted node");
          BOOST_TEST(n.unschedulable, "profile label set on an uncordoned node");
        }
      }
      if (m.admin)
        BOOST_TEST(cordon_write(s) != "uncordon", "an admin's cordon lifted");
      // Now and then the node writes fail (the status is written all the same).
      auto landed = s;
      if (m.pick(20) == 0) {
        landed.patch.reset();
        landed.taint.reset();
      }
      m.apply(landed);
      if (m.admin)
        BOOST_TEST(n.unschedulable);
      // The taint is never on the node without the cordon record that marks it ours.
      if (n.has_dcm_taint())
        BOOST_TEST(n.annotations.count(gc::was_unschedulable_annotation) == 1u,
                   "tainted without " << gc::was_unschedulable_annotation);
      // The governor grants sometimes; a restart loses the token and the eviction memory.
      if (s.wants_token && !token)
        token = m.pick(3) == 0;
      if (!s.wants_token && !s.in_flight)
        token = false;
      if (m.pick(25) == 0) {
        m.w.in.evictions.clear();
        token = false;
      }
      m.advance();
    }
  }
  BOOST_TEST_REQUIRE(m.ended(), "seed " << seed << " did not end within " << max_steps
                                        << " steps; phase " << name_of(*m.w.status().phase));
  // A run failed after DCM was asked keeps the taint while DCM may retry it: never past
  // that time.
  if (!m.w.status().dcm_may_change_until.empty()) {
    const auto until = gp::parse_time(m.w.status().dcm_may_change_until);
    BOOST_TEST_REQUIRE(bool(until));
    BOOST_TEST((*until - m.w.in.now <= gc::dcm_retry_bound));
    BOOST_TEST(m.node().has_dcm_taint());
    m.w.in.now = *until;
  }
  // Let the last writes (uncordon, untaint) happen.
  for (int i = 0; i < 5; ++i) {
    auto s = m.w.step();
    if (m.admin)
      BOOST_TEST(cordon_write(s) != "uncordon");
    m.apply(s);
    m.advance();
  }
  const auto& n = m.node();
  const auto& st = m.w.status();
  BOOST_TEST_CONTEXT("seed " << seed << " ended " << name_of(*st.phase) << " ("
                             << st.history.back().reason << ")") {
    BOOST_TEST(!n.has_dcm_taint());
    if (m.admin)
      BOOST_TEST(n.unschedulable);
    if (*st.phase == node_phase::succeeded) {
      BOOST_TEST(n.unschedulable == m.admin);
      BOOST_TEST(n.annotations.count(gc::was_unschedulable_annotation) == 0u);
      BOOST_TEST(m.partition == dcm_name);
    } else {
      bool touched = false;
      for (auto it = st.history.rbegin(); it != st.history.rend(); ++it) {
        if (it->phase == node_phase::applying)
          touched = true;
        if (it->phase == node_phase::draining || it->phase == node_phase::pending)
          break;
      }
      // Failed after Applying keeps the cordon; before it, the node is back in service.
      if (touched)
        BOOST_TEST(n.unschedulable);
      else
        BOOST_TEST(n.unschedulable == m.admin);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
// Hostile input: garbage in our own annotations, profiles and payloads that could never
// work, items of no live plan, timeouts at int64's limit. Each is refused before the node
// is touched, or leaves the node as the safest reading of it says.
BOOST_AUTO_TEST_SUITE(hostile_input)

BOOST_AUTO_TEST_CASE(junk_in_was_unschedulable_is_rewritten_from_the_node_when_a_run_starts) {
  world w;
  w.at(node_phase::draining);
  w.node().annotations[gc::was_unschedulable_annotation] = "banana";
  auto s = w.step();
  BOOST_TEST(annotation_write(s, gc::was_unschedulable_annotation) == "false");
  BOOST_TEST(cordon_write(s) == "cordon");
  w.node().unschedulable = true;
  w.node().annotations[gc::was_unschedulable_annotation] = "\xF0\x9F\x8D\x8C";
  s = w.step();
  BOOST_TEST(annotation_write(s, gc::was_unschedulable_annotation) == "true");
}

BOOST_AUTO_TEST_CASE(junk_in_was_unschedulable_never_leads_to_an_uncordon) {
  world w;
  w.at(node_phase::succeeded).partitioned().admin_cordoned();
  w.node().annotations[gc::was_unschedulable_annotation] = "yes";
  auto s = w.step();
  BOOST_TEST(cordon_write(s) == "-");
  BOOST_TEST(annotation_write(s, gc::was_unschedulable_annotation) == "<remove>");
}

BOOST_AUTO_TEST_CASE(a_preflight_failure_leaves_a_cordoned_node_and_its_annotations_alone) {
  world w;
  w.admin_cordoned();
  w.node().annotations[gc::was_unschedulable_annotation] = "false"; // stale, or junk
  w.in.profile = gc::resolved_profile{};
  w.in.profile.name = "missing";
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(no_node_writes(s));
  keep_status(w, s);
  for (int i = 0; i < 3; ++i) {
    s = w.step();
    BOOST_TEST(no_node_writes(s));
    keep_status(w, s);
  }
  w.in.item.metadata.deletion_timestamp = gp::format_time(t0);
  s = w.step();
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(s.remove_finalizer);
}

BOOST_AUTO_TEST_CASE(a_retry_that_fails_preflight_keeps_the_cordon_of_gpus_in_an_unknown_state) {
  world w;
  w.failed_in(node_phase::waiting_operator, "OperatorFailed").cordoned_by_us().label_ours();
  w.in.item.metadata.annotations[gc::retry_annotation] = "junk \x07";
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Pending");
  keep_status(w, s);
  w.in.item.metadata.annotations.clear();
  w.in.profile.payload.reset();
  w.in.profile.payload_problem = "ConfigMap kube-amd-gpu/cpx-nps4 not found";
  s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  keep_status(w, s);
  for (int i = 0; i < 3; ++i) {
    s = w.step();
    BOOST_TEST(cordon_write(s) == "-");
    keep_status(w, s);
  }
}

BOOST_AUTO_TEST_CASE(a_drain_timeout_on_a_retry_after_a_dcm_failure_keeps_the_cordon) {
  world w;
  w.failed_in(node_phase::waiting_operator, "OperatorFailed").cordoned_by_us();
  auto& h = w.status().history;
  h.push_back({node_phase::pending, gp::format_time(t0), "Retry", ""});
  h.push_back({node_phase::draining, gp::format_time(t0), "Started", ""});
  w.status().phase = node_phase::draining;
  w.in.item.spec.drain.timeout_seconds = 10;
  w.with(pod("web-0")).with(pdb("web", "web", 0)).later(20s);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(cordon_write(s) == "-");
  keep_status(w, s);
  BOOST_TEST(cordon_write(w.step()) == "-");
}

BOOST_AUTO_TEST_CASE(timeouts_at_int64s_maximum_do_not_expire_at_once) {
  const auto forever = std::numeric_limits<std::int64_t>::max();
  world w;
  w.at(node_phase::draining).cordoned_by_us().with(pod("web-0")).with(pdb("web", "web", 0));
  w.in.item.spec.drain.timeout_seconds = forever;
  w.later(3600s);
  BOOST_TEST(phase_after(w, w.step()) == "Draining");
  world v;
  v.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours();
  v.in.item.spec.verification.timeout_seconds = forever;
  v.later(3600s);
  BOOST_TEST(phase_after(v, v.step()) == "WaitingOperator");
  world u;
  u.at(node_phase::verifying).cordoned_by_us().label_ours().dcm_says("success");
  u.in.profile.spec.verification.timeout_seconds = forever;
  u.later(3600s);
  BOOST_TEST(phase_after(u, u.step()) == "Verifying");
}

BOOST_AUTO_TEST_CASE(a_profile_deleted_mid_drain_returns_the_node_at_once) {
  world w;
  w.at(node_phase::draining).cordoned_by_us().with(pod("web-0")).with(pdb("web", "web", 0));
  w.in.profile = gc::resolved_profile{};
  w.in.profile.name = "mi300x-cpx-nps4";
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(last_reason(w, s) == "ProfileUnavailable");
  BOOST_TEST(contains(status_after(w, s).last_error, "mi300x-cpx-nps4"));
  BOOST_TEST(cordon_write(s) == "uncordon");
  BOOST_TEST(s.removals.empty());
}

struct finding_case {
  std::string name;
  std::function<void(world&)> set_up;
  std::string finding;
};

std::ostream& operator<<(std::ostream& out, const finding_case& c) {
  return out << c.name;
}

std::string payload_with(const std::string& group) {
  return R"({"skippedGPUs":{"ids":[]},"profiles":[)" + group + "]}";
}

const std::vector<finding_case> refused_before_anything{
    {"unknown compute mode",
     [](world& w) {
       w.in.profile.payload = payload_with(
           R"({"computePartition":"XPX","memoryPartition":"NPS4","numGPUsAssigned":8})");
     },
     "PayloadInvalid: profile.json: profiles[0].computePartition \"XPX\""},
    {"unknown memory mode",
     [](world& w) {
       w.in.profile.payload = payload_with(
           R"({"computePartition":"CPX","memoryPartition":"NPS3","numGPUsAssigned":8})");
     },
     "profiles[0].memoryPartition \"NPS3\""},
    {"more memory than compute partitions",
     [](world& w) {
       w.in.profile.payload = payload_with(
           R"({"computePartition":"SPX","memoryPartition":"NPS4","numGPUsAssigned":8})");
     },
     "NPS4 is not possible with SPX"},
    {"negative GPU count",
     [](world& w) {
       w.in.profile.payload = payload_with(
           R"({"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":-8})");
     },
     "numGPUsAssigned"},
    {"two memory modes",
     [](world& w) {
       w.in.profile.payload = payload_with(
           R"({"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":4},)"
           R"({"computePartition":"SPX","memoryPartition":"NPS1","numGPUsAssigned":4})");
     },
     "one memory partition mode"},
    {"skipped GPUs that are not indices",
     [](world& w) {
       w.in.profile.payload =
           R"({"skippedGPUs":{"ids":["zero"]},"profiles":[{"computePartition":"CPX",)"
           R"("memoryPartition":"NPS4","numGPUsAssigned":8}]})";
     },
     "skippedGPUs.ids"},
    {"invalid JSON", [](world& w) { w.in.profile.payload = R"({"profiles": [)"; },
     "PayloadInvalid: profile.json is not valid JSON"},
    {"a DCM name longer than a label value",
     [](world& w) {
       w.in.profile.spec.operator_payload.profile_name.reset();
       w.in.profile.dcm_name = std::string(253, 'l');
     },
     "ProfileInvalid: PartitioningProfile \"mi300x-cpx-nps4\" spec.operatorPayload.profileName"},
    {"a ready label Kubernetes cannot hold",
     [](world& w) {
       w.in.profile.spec.verification.ready_label = "amd.com/" + std::string(64, 'r');
     },
     "spec.verification.readyLabel"},
    {"an expected resource that is not a resource name",
     [](world& w) { w.in.profile.spec.expected_resources[0].name = "amd.com/gpu!!"; },
     "spec.expectedResources[0].name: \"amd.com/gpu!!\""},
    {"a profile that does not decode",
     [](world& w) {
       w.in.profile = gc::resolved_profile{};
       w.in.profile.name = "broken";
       w.in.profile.invalid = "spec.operatorPayload.kind: \"Secret\" is not one of ConfigMap";
     },
     "ProfileInvalid: PartitioningProfile \"broken\" is invalid: spec.operatorPayload.kind"},
    {"another profile with this DCM name and another payload",
     [](world& w) { w.in.profile.dcm_name_rivals = {"rival"}; },
     "DCMProfileNameConflict: PartitioningProfile \"rival\" uses DCM profile name \"cpx-nps4\""},
    {"a node without GPUs",
     [](world& w) {
       w.node().allocatable = {{"cpu", "96"}, {"memory", "1Ti"}};
       w.in.profile.spec.target_selector.reset();
     },
     "NotAGPUNode: node gpu-1"},
};

BOOST_DATA_TEST_CASE(a_profile_that_could_never_work_fails_preflight_with_the_node_untouched,
                     bdata::make(refused_before_anything), c) {
  world w;
  w.in.token = true;
  c.set_up(w);
  const auto findings = gc::preflight(w.in);
  BOOST_TEST_REQUIRE(!findings.empty());
  BOOST_TEST(contains(findings.front().text(), c.finding), findings.front().text());
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(last_reason(w, s) == "PreflightFailed");
  BOOST_TEST(contains(status_after(w, s).last_error, c.finding));
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(!s.wants_token);
}

BOOST_AUTO_TEST_CASE(applying_stops_before_writing_dcm_config_when_a_rival_appeared) {
  world w;
  w.at(node_phase::applying).cordoned_by_us().tainted();
  w.in.profile.dcm_name_rivals = {"rival"};
  auto s = w.step();
  BOOST_TEST(!s.dcm);
  BOOST_TEST(label_write(s, gc::dcm_profile_label) == "-");
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(contains(status_after(w, s).last_error, "DCMProfileNameConflict"));
}

BOOST_AUTO_TEST_CASE(an_item_of_no_live_plan_is_not_acted_on_and_says_so) {
  world w;
  w.in.token = true;
  w.in.item.metadata.finalizers.clear();
  w.in.plan.owned = false;
  w.in.plan.may_start = false;
  w.in.plan.problem = {"PlanNotFound", "spec.planRef: PartitioningPlan \"ghost\" does not exist"};
  for (auto phase : {node_phase::pending, node_phase::draining, node_phase::verifying}) {
    w.at(phase);
    auto s = w.step();
    BOOST_TEST(no_node_writes(s));
    BOOST_TEST(!s.add_finalizer);
    BOOST_TEST(!s.wants_token);
    BOOST_TEST(!s.in_flight);
    BOOST_TEST(phase_after(w, s) == name_of(phase));
    BOOST_TEST(condition_of(w, s, "Owned") == "False/PlanNotFound");
  }
}

// Its owner gone, the garbage collector deletes it: a status would be a wasted write per node.
BOOST_AUTO_TEST_CASE(an_item_whose_owning_plan_is_gone_is_left_to_the_garbage_collector) {
  world w;
  w.in.item.spec.plan_ref.uid = "plan-uid-1";
  gp::owner_reference owner;
  owner.kind = "PartitioningPlan";
  owner.name = w.in.item.spec.plan_ref.name;
  owner.uid = "plan-uid-1";
  w.in.item.metadata.owner_references = {owner};
  w.in.plan.owned = false;
  w.in.plan.may_start = false;
  w.in.plan.problem = {"PlanNotFound", "spec.planRef: PartitioningPlan \"plan\" does not exist"};
  w.at(node_phase::succeeded);
  auto s = w.step();
  BOOST_TEST(!s.status);
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(!s.add_finalizer);
  // The owner is known by its uid, whatever its name: still the collector's.
  w.in.item.metadata.owner_references[0].name = "other";
  BOOST_TEST(!w.step().status);
  // An owner reference to something else: the item says why nothing happens.
  w.in.item.metadata.owner_references[0].uid = "someone-else";
  BOOST_TEST(condition_of(w, w.step(), "Owned") == "False/PlanNotFound");
}

BOOST_AUTO_TEST_CASE(a_pending_item_of_a_plan_that_may_not_start_asks_for_no_token) {
  world w;
  w.in.plan.may_start = false;
  w.in.plan.problem = {"PlanInvalid", "PartitioningPlan \"plan\" is invalid (spec.x: bad)"};
  auto s = w.step();
  BOOST_TEST(!s.wants_token);
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(phase_after(w, s) == "Pending");
  BOOST_TEST(condition_of(w, s, "Started") == "False/PlanInvalid");
  // A node already in flight finishes.
  w.at(node_phase::waiting_operator).cordoned_by_us().tainted().label_ours().dcm_says("success");
  BOOST_TEST(phase_after(w, w.step()) == "Verifying");
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
// What AMD's real stack asks of the operator (amd-dcm.md, "Behaviours that bite").
BOOST_AUTO_TEST_SUITE(real_dcm)

BOOST_AUTO_TEST_CASE(a_node_without_a_running_dcm_pod_fails_preflight_untouched) {
  world w;
  w.in.token = true;
  w.in.pods.clear();
  w.find_dcm();
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(status_after(w, s).last_error.rfind("DCMNotRunning: no DCM pod runs on node", 0) == 0,
             status_after(w, s).last_error);
  BOOST_TEST(no_node_writes(s));
  // A DCM pod of another namespace, or not running, is not DCM's.
  world v;
  v.in.pods.front().ns = "elsewhere";
  v.find_dcm();
  BOOST_TEST(!v.in.pods.empty());
  BOOST_TEST(gc::preflight(v.in).front().reason == "DCMNotRunning");
  world u;
  u.in.pods.front().phase = "Pending";
  u.find_dcm();
  BOOST_TEST(gc::preflight(u.in).front().reason == "DCMNotRunning");
}

// Which ConfigMap DCM reads is its pod's: when that cannot be told (two DCMs on the node,
// nothing mounted), nothing is drained, and the finding names what was found.
BOOST_AUTO_TEST_CASE(a_node_whose_dcm_config_cannot_be_told_fails_preflight_untouched) {
  world w;
  w.in.token = true;
  auto standalone = w.in.pods.front();
  standalone.name = "dcm-st-xyz";
  standalone.labels = {{"app", "amdgpu-device-config-manager"}};
  standalone.dcm_config_mount = "dcm-st";
  w.in.pods.push_back(standalone);
  w.find_dcm();
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(contains(status_after(w, s).last_error, "DCMConfigUnknown: node"));
  BOOST_TEST(contains(status_after(w, s).last_error, "ConfigMap dcm-st"));
  BOOST_TEST(no_node_writes(s));
  world v;
  v.in.pods.front().dcm_config_mount.reset();
  v.find_dcm();
  BOOST_TEST(gc::preflight(v.in).front().reason == "DCMConfigUnknown");
  // One the operator may not write (--dcm-configmaps, as its Role grants) is named.
  world u;
  u.in.dcm.writable = false;
  const auto findings = gc::preflight(u.in);
  BOOST_REQUIRE(!findings.empty());
  BOOST_TEST(findings.front().reason == "DCMConfigNotWritable");
  BOOST_TEST(contains(findings.front().text(), "kube-amd-gpu/config-manager-config"));
}

// What the node's DCM would refuse is found before the drain: a mode the kernel refuses
// on the node's part (DCM 1.3 would retry it for 30 minutes), a group without its count
// on DCM 1.3.
BOOST_AUTO_TEST_CASE(a_profile_the_nodes_dcm_would_refuse_fails_preflight_untouched) {
  world w;
  w.in.token = true;
  w.node().labels[gc::gpu_device_id_label] = "74a1";
  w.in.profile.payload =
      R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX","memoryPartition":"NPS2","numGPUsAssigned":8}]})";
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(contains(status_after(w, s).last_error, "DCMWouldRefuse"));
  BOOST_TEST(contains(status_after(w, s).last_error, "CPX with NPS2"));
  BOOST_TEST(no_node_writes(s));
  world v;
  v.in.profile.payload =
      R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX","memoryPartition":"NPS4"}]})";
  const auto findings = gc::preflight(v.in);
  BOOST_REQUIRE(!findings.empty());
  BOOST_TEST(findings.front().reason == "DCMWouldRefuse");
  BOOST_TEST(contains(findings.front().text(), "DCM 1.3.0 reads as 0"));
  v.in.pods.front().dcm_image = "docker.io/rocm/device-config-manager:v1.4.1";
  v.find_dcm();
  BOOST_TEST(gc::preflight(v.in).empty(), "newer DCM gives the group the remaining GPUs");
}

BOOST_AUTO_TEST_CASE(the_plans_profiles_go_to_dcm_in_one_write_as_the_drain_starts) {
  world w;
  w.at(node_phase::draining);
  w.in.plan_profiles = {{dcm_name, cpx_payload}, {"spx-nps1", spx_payload}, {"qpx", spx_payload}};
  auto s = w.step();
  BOOST_TEST(cordon_write(s) == "cordon");
  BOOST_TEST_REQUIRE(s.dcm.has_value());
  BOOST_TEST(s.dcm->profiles.size() == 3u);
  BOOST_TEST(s.dcm->profiles.at(dcm_name) == cpx_payload);
  // Once DCM's config holds them all, no more writes.
  for (const auto& [name, payload] : s.dcm->profiles)
    w.in.dcm.config_json = gc::dcm_config_with(w.in.dcm.config_json, name, payload).value();
  BOOST_TEST(!w.step().dcm.has_value());
  // A missing ConfigMap is the GPU operator's to provide: the drain does not make one.
  world gone;
  gone.at(node_phase::draining);
  gone.in.dcm.found = false;
  gone.in.dcm.config_json.clear();
  BOOST_TEST(!gone.step().dcm.has_value());
}

// DCM reruns every labelled node when its file changes: a new payload under the DCM name
// the draining node's own label still carries would repartition it under the pods not yet
// gone. That one waits until the node is drained and tainted; the others go at once.
BOOST_AUTO_TEST_CASE(a_new_payload_under_the_nodes_own_label_waits_for_its_drain) {
  world w;
  w.at(node_phase::draining);
  w.node().labels[gc::dcm_profile_label] = dcm_name; // from an earlier run
  w.in.dcm.config_json = R"({"gpu-config-profiles":{")" + dcm_name + R"(":)" + spx_payload + "}}";
  w.in.plan_profiles = {{dcm_name, cpx_payload}, {"spx-nps1", spx_payload}};
  auto s = w.step();
  BOOST_TEST_REQUIRE(s.dcm.has_value());
  BOOST_TEST(s.dcm->profiles.count(dcm_name) == 0u);
  BOOST_TEST(s.dcm->profiles.count("spx-nps1") == 1u);
  // Drained and tainted: now it goes.
  world a;
  a.at(node_phase::applying).cordoned_by_us().tainted();
  a.node().labels[gc::dcm_profile_label] = dcm_name;
  a.in.dcm.config_json = w.in.dcm.config_json;
  auto applying = a.step();
  BOOST_TEST_REQUIRE(applying.dcm.has_value());
  BOOST_TEST(applying.dcm->profiles.at(dcm_name) == cpx_payload);
}

// DCM reads a mounted file kubelet refreshes on its own period: the label waits until the
// config is old enough to have reached it.
BOOST_AUTO_TEST_CASE(the_label_waits_until_kubelet_has_delivered_dcms_config) {
  world w;
  w.at(node_phase::applying).cordoned_by_us().tainted().dcm_config_has_profile();
  w.in.dcm.sync = 90s;
  w.in.dcm.written_at = t0 - 30s;
  auto s = w.step();
  BOOST_TEST(!s.patch);
  BOOST_TEST(!s.dcm);
  BOOST_TEST(phase_after(w, s) == "Applying");
  BOOST_TEST(condition_of(w, s, "ProfileApplied") == "False/WaitingForDCMConfig");
  BOOST_TEST(s.requeue.count() == 60000);
  w.in.item.status = status_after(w, s);
  w.later(60s);
  auto labelled = w.step();
  BOOST_TEST(label_write(labelled, gc::dcm_profile_label) == dcm_name);
  // A config whose time is not known (no annotation, no creation time) is old enough.
  world old;
  old.at(node_phase::applying).cordoned_by_us().tainted().dcm_config_has_profile();
  BOOST_TEST(label_write(old.step(), gc::dcm_profile_label) == dcm_name);
}

// DCM runs every labelled node again when its file changes: a new payload under a name
// in-service nodes carry would repartition them with no drain.
BOOST_AUTO_TEST_CASE(a_payload_that_changes_a_name_other_nodes_carry_is_refused_naming_them) {
  world w;
  w.in.token = true;
  w.in.dcm.config_json = R"({"gpu-config-profiles":{")" + dcm_name + R"(":)" + spx_payload + "}}";
  w.in.dcm_name_holders = {"gpu-node-07", "gpu-node-09"};
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  const auto& error = status_after(w, s).last_error;
  BOOST_TEST(error.rfind("DCMProfileInUse: ", 0) == 0, error);
  BOOST_TEST(contains(error, "gpu-node-07, gpu-node-09"));
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(!s.dcm);
  // In Applying (the holders came meanwhile): refused before the label, node given back.
  world a;
  a.at(node_phase::applying).cordoned_by_us().tainted();
  a.in.dcm.config_json = w.in.dcm.config_json;
  a.in.dcm_name_holders = {"gpu-node-07"};
  auto refused = a.step();
  BOOST_TEST(phase_after(a, refused) == "Failed");
  BOOST_TEST(!refused.dcm);
  BOOST_TEST(label_write(refused, gc::dcm_profile_label) == "-");
  BOOST_TEST(taint_write(refused) == "remove");
}

BOOST_AUTO_TEST_CASE(a_payload_of_two_styles_expecting_amd_com_gpu_is_refused) {
  world w;
  w.in.profile.payload =
      R"({"profiles":[{"computePartition":"CPX","memoryPartition":"NPS1","numGPUsAssigned":4},)"
      R"({"computePartition":"SPX","memoryPartition":"NPS1","numGPUsAssigned":4}]})";
  const auto findings = gc::preflight(w.in);
  BOOST_TEST_REQUIRE(!findings.empty());
  BOOST_TEST(findings.front().reason == "PayloadMixedStyles", findings.front().text());
  // Expecting the mixed strategy's resources instead is fine.
  w.in.profile.spec.expected_resources = {{"amd.com/cpx_nps1", 32}, {"amd.com/spx_nps1", 4}};
  BOOST_TEST(gc::preflight(w.in).empty());
}

BOOST_AUTO_TEST_CASE(a_node_failed_in_preflight_that_goes_not_ready_waits_in_pending) {
  world w;
  w.in.token = true;
  w.in.pods.clear(); // no DCM pod: a preflight finding
  w.find_dcm();
  auto failed = w.step();
  BOOST_TEST_REQUIRE(phase_after(w, failed) == "Failed");
  w.in.item.status = status_after(w, failed);
  w.node().ready = false; // its pods, DCM's among them, are what its kubelet last said
  auto waiting = w.step();
  BOOST_TEST(phase_after(w, waiting) == "Pending");
  w.in.item.status = status_after(w, waiting);
  auto still = w.step();
  BOOST_TEST(phase_after(w, still) == "Pending");
  BOOST_TEST(condition_of(w, still, "Started") == "False/NodeNotReady");
  BOOST_TEST(no_node_writes(still));
  // A finding that does not depend on the kubelet still stands.
  world cpu;
  cpu.node().ready = false;
  cpu.node().allocatable.erase(gpu);
  BOOST_TEST(gc::preflight(cpu.in).front().reason == "NotAGPUNode");
}

BOOST_AUTO_TEST_CASE(a_not_ready_node_waits_in_pending_without_asking_for_a_token) {
  world w;
  w.node().ready = false;
  w.in.token = true;
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Pending");
  BOOST_TEST(!s.wants_token);
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(condition_of(w, s, "Started") == "False/NodeNotReady");
  w.in.item.status = status_after(w, s);
  w.node().ready = true;
  BOOST_TEST(phase_after(w, w.step()) == "Draining");
}

// A pod that holds GPUs makes DCM find them busy, whatever it tolerates.
BOOST_AUTO_TEST_CASE(a_gpu_pod_tolerating_the_taint_is_evicted_and_a_daemon_sets_is_shown) {
  world w;
  w.at(node_phase::draining).cordoned_by_us();
  auto tolerant = pod("trainer-0");
  tolerant.gpus = 1;
  tolerant.tolerations = {tolerate_dcm()};
  auto daemon = daemon_pod("gpu-agent-x");
  daemon.gpus = 8;
  w.with(tolerant).with(daemon);
  auto s = w.step();
  BOOST_TEST_REQUIRE(s.removals.size() == 1u);
  BOOST_TEST(s.removals[0].name == "trainer-0");
  const auto& blocking = status_after(w, s).drain.blocking_pods;
  BOOST_TEST(std::any_of(blocking.begin(), blocking.end(),
                         [](const auto& b) { return b.name == "gpu-agent-x"; }));
}

BOOST_AUTO_TEST_SUITE_END()

// -- soak (spec.soakSeconds): the token held while the node stays verified and healthy --

namespace {

// A node verified at t0 by this run (DCM's answer, at t0, accounted for), back in service,
// soaking for `seconds`.
world soaking_world(std::int64_t seconds) {
  world w;
  w.in.item.spec.soak_seconds = seconds;
  w.at(node_phase::succeeded).partitioned();
  w.dcm_event("SuccessfullyPartitioned").dcm_events_before_run();
  w.status().history.back().reason = "Verified";
  w.status().completed_at = gp::format_time(t0);
  return w;
}

} // namespace

BOOST_AUTO_TEST_SUITE(soak)

BOOST_AUTO_TEST_CASE(a_soaking_node_holds_its_token_until_the_soak_ends) {
  auto w = soaking_world(300);
  w.later(100s);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Succeeded");
  BOOST_TEST(s.in_flight);
  BOOST_TEST(s.soaking);
  BOOST_TEST(condition_of(w, s, "Soaked") == "False/Soaking");
  // It looks again when the soak ends, even if nothing changes.
  BOOST_TEST(s.requeue.count() == 200001);
  BOOST_TEST(no_node_writes(s));
}

BOOST_AUTO_TEST_CASE(the_soak_ends_at_completion_plus_its_length_across_a_restart) {
  // The soak's start is the recorded completion: a restarted operator neither resets nor
  // skips it.
  auto w = soaking_world(300);
  w.later(299s);
  BOOST_TEST(w.step().in_flight);
  w.later(300s);
  auto s = w.step();
  BOOST_TEST(!s.in_flight);
  BOOST_TEST(!s.soaking);
  BOOST_TEST(condition_of(w, s, "Soaked") == "True/Soaked");
}

BOOST_AUTO_TEST_CASE(no_soak_without_soak_seconds) {
  auto w = soaking_world(0);
  w.in.item.spec.soak_seconds.reset();
  auto s = w.step();
  BOOST_TEST(!s.in_flight);
  BOOST_TEST(condition_of(w, s, "Soaked") == "-");
}

BOOST_AUTO_TEST_CASE(a_node_found_in_the_target_state_has_nothing_to_soak) {
  world w;
  w.in.item.spec.soak_seconds = 300;
  w.partitioned();
  auto s = w.step(); // Pending: already partitioned as wanted
  BOOST_TEST(phase_after(w, s) == "Succeeded");
  w.in.item.status = *s.status;
  auto again = w.step();
  BOOST_TEST(!again.in_flight);
  BOOST_TEST(condition_of(w, again, "Soaked") == "True/NothingToSoak");
}

BOOST_AUTO_TEST_CASE(a_retry_that_finds_the_node_in_the_target_state_soaks) {
  // A node failed (its GPUs checked by an admin) and retried: its new success is watched.
  auto w = soaking_world(300);
  auto& h = w.status().history;
  h.back() = {node_phase::failed, gp::format_time(t0), "SoakFailed", "failed"};
  h.push_back({node_phase::pending, gp::format_time(t0), "Retry", ""});
  h.push_back({node_phase::succeeded, gp::format_time(t0), "AlreadyInTargetState", ""});
  w.status().phase = node_phase::succeeded;
  w.later(10s);
  auto s = w.step();
  BOOST_TEST(s.in_flight);
  BOOST_TEST(condition_of(w, s, "Soaked") == "False/Soaking");
}

struct soak_case {
  const char* name;
  std::function<void(world&)> harm;
  const char* reason;
};

std::ostream& operator<<(std::ostream& os, const soak_case& c) {
  return os << c.name;
}

const soak_case soak_cases[] = {
    {"not ready", [](world& w) { w.node().ready = false; }, "NodeNotReady"},
    {"ready label gone", [](world& w) { w.node().labels.erase(ready_label); }, "VerificationLost"},
    {"allocatable changed", [](world& w) { w.node().allocatable[gpu] = "8"; }, "VerificationLost"},
    {"state label failure", [](world& w) { w.node().labels[gc::dcm_state_label] = "failure"; },
     "DCMFailed"},
    {"new DCM failure event", [](world& w) { w.dcm_event("PartitionRetrying"); }, "DCMFailed"},
    {"GPU pod crash-looping",
     [](world& w) {
       auto p = pod("trainer");
       p.gpus = 8;
       p.crash_looping = true;
       p.restarts = 3;
       w.with(p);
     },
     "PodCrashLooping"},
    {"device plugin crash-looping",
     [](world& w) {
       auto p = daemon_pod("device-plugin-x");
       p.device_plugin = true;
       p.crash_looping = true;
       p.restarts = 5;
       w.with(p);
     },
     "PodCrashLooping"},
};

BOOST_DATA_TEST_CASE(a_problem_during_the_soak_fails_the_node_in_service, bdata::make(soak_cases),
                     c) {
  auto w = soaking_world(300);
  w.later(60s);
  c.harm(w);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(last_reason(w, s) == "SoakFailed");
  BOOST_TEST(condition_of(w, s, "Soaked") == std::string("False/") + c.reason);
  BOOST_TEST(has_event(s, "SoakFailed", true, "Warning"));
  // Left in service as it is: no cordon, no taint.
  BOOST_TEST(no_node_writes(s));
  BOOST_TEST(!s.in_flight);
}

BOOST_AUTO_TEST_CASE(what_does_not_fail_a_soak) {
  auto w = soaking_world(300);
  w.later(60s);
  // DCM's success Event from the run itself (at t0, not after), a crash-looping pod that
  // holds no GPU, one with fewer restarts than the bound.
  auto web = pod("web");
  web.crash_looping = true;
  web.restarts = 10;
  auto young = pod("young");
  young.gpus = 1;
  young.crash_looping = true;
  young.restarts = 2;
  w.with(web).with(young);
  // Issue 38: a tenant's pod with a container named device-plugin, bare or of the tenant's
  // own DaemonSet, is not the GPU operator's device plugin.
  auto impostor = pod("impostor", "device-plugin");
  impostor.device_plugin = true;
  impostor.crash_looping = true;
  impostor.restarts = 10;
  // A Normal Event of DCM's pod that is no failure (an AI NIC's, say) after the run.
  w.dcm_event("NICPartitioned", "nic-profile-a");
  w.in.dcm_events.back().type = "Normal";
  auto tenant_ds = daemon_pod("tenant-plugin");
  tenant_ds.ns = "team";
  tenant_ds.device_plugin = true;
  tenant_ds.crash_looping = true;
  tenant_ds.restarts = 10;
  w.with(impostor).with(tenant_ds);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Succeeded");
  BOOST_TEST(s.soaking);
}

BOOST_AUTO_TEST_CASE(after_the_soak_a_problem_is_not_the_soaks) {
  auto w = soaking_world(300);
  w.later(300s);
  w.in.item.status = status_after(w, w.step()); // looked at when it ended: Soaked
  w.later(301s);
  w.node().ready = false;
  w.dcm_event("PartitionRetrying");
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Succeeded");
  BOOST_TEST(condition_of(w, s, "Soaked") == "True/Soaked");
  BOOST_TEST(!s.in_flight);
}

// The soak ran out while the operator was down (or its worker busy): it is not declared
// passed before the node is looked at.
BOOST_DATA_TEST_CASE(a_soak_that_ended_unseen_ends_with_a_look_at_the_node, bdata::make(soak_cases),
                     c) {
  auto w = soaking_world(300);
  w.later(3600s);
  c.harm(w);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(last_reason(w, s) == "SoakFailed");
  BOOST_TEST(condition_of(w, s, "Soaked") == std::string("False/") + c.reason);
  BOOST_TEST(no_node_writes(s));
  // Healthy when looked at: passed, and the token goes back.
  auto healthy = soaking_world(300);
  healthy.later(3600s);
  auto passed = healthy.step();
  BOOST_TEST(condition_of(healthy, passed, "Soaked") == "True/Soaked");
  BOOST_TEST(!passed.in_flight);
}

// DCM stamps its Events with the node's clock. Whether an Event is new to a run is told by
// DCM's own clock (the run's mark), never by comparing it with the operator's.
BOOST_AUTO_TEST_CASE(dcm_events_are_new_by_the_nodes_clock_not_the_operators) {
  // The node's clock an hour behind: a failure DCM sends during the soak is still new.
  auto behind = soaking_world(300);
  behind.status().dcm_events_until = gp::format_time(t0 - 3600s);
  behind.in.dcm_events.back().time = t0 - 3600s; // DCM's answer, by the node's clock
  behind.later(60s);
  behind.in.now -= 3600s;
  behind.dcm_event("PartitionRetrying"); // at t0 + 60 s - 1 h by the node's clock
  behind.in.now += 3600s;
  auto s = behind.step();
  BOOST_TEST(phase_after(behind, s) == "Failed");
  BOOST_TEST(condition_of(behind, s, "Soaked") == "False/DCMFailed");
  // An hour ahead: the run's own PartitionRetrying before DCM's success (both there at the
  // answer) is not soak trouble, however late after the completion it looks by the
  // operator's clock.
  auto ahead = soaking_world(300);
  ahead.in.dcm_events.back().time = t0 + 3600s;
  ahead.in.now = t0 + 3590s;
  ahead.dcm_event("PartitionRetrying").dcm_events_before_run(); // at the answer, by its clock
  ahead.later(60s);
  BOOST_TEST(phase_after(ahead, ahead.step()) == "Succeeded");
}

BOOST_AUTO_TEST_CASE(a_new_run_forgets_the_last_runs_soak) {
  // The canary reads Soaked=True as "this success has soaked": a new run must not show
  // the last run's.
  world w;
  w.in.item.spec.soak_seconds = 300;
  w.status().conditions.push_back({"Soaked", gp::condition_status::true_, std::nullopt,
                                   gp::format_time(t0), "Soaked", "old run"});
  w.in.token = true;
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Draining");
  BOOST_TEST(condition_of(w, s, "Soaked") == "-");
  // Retried into the target state: likewise.
  world r;
  r.in.item.spec.soak_seconds = 300;
  r.failed_in(node_phase::verifying, "VerificationFailed");
  r.status().conditions.push_back({"Soaked", gp::condition_status::true_, std::nullopt,
                                   gp::format_time(t0), "Soaked", "old run"});
  r.in.item.metadata.annotations[gc::retry_annotation] = "now";
  r.partitioned();
  auto retried = r.step();
  BOOST_TEST(phase_after(r, retried) == "Succeeded");
  BOOST_TEST(last_reason(r, retried) == "AlreadyInTargetState");
  BOOST_TEST(condition_of(r, retried, "Soaked") == "-");
}

BOOST_AUTO_TEST_CASE(a_retry_of_a_node_left_cordoned_runs_and_uncordons_it) {
  // Failed after DCM was asked, so kept cordoned; DCM did finish. A retry finds the
  // profile in place but the node out of service: a run verifies it and gives it back.
  world w;
  w.failed_in(node_phase::verifying, "VerificationFailed");
  w.cordoned_by_us().partitioned();
  w.in.item.metadata.annotations[gc::retry_annotation] = "now";
  w.in.token = true;
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Draining");
  // An admin's own cordon is not ours: that node is in the target state.
  world admin;
  admin.failed_in(node_phase::verifying, "VerificationFailed");
  admin.admin_cordoned().partitioned();
  admin.in.item.metadata.annotations[gc::retry_annotation] = "now";
  BOOST_TEST(last_reason(admin, admin.step()) == "AlreadyInTargetState");
}

BOOST_AUTO_TEST_CASE(the_token_stays_while_the_node_is_being_returned) {
  // Verified this step, the uncordon not yet seen: the soak has not begun, the token stays.
  auto w = soaking_world(300);
  w.cordoned_by_us();
  auto s = w.step();
  BOOST_TEST(cordon_write(s) == "uncordon");
  BOOST_TEST(s.in_flight);
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
// A node whose GPUs AMD's DRA driver publishes in ResourceSlices, not as amd.com/ extended
// resources: found by what it publishes, drained of the pods its GPU claims are reserved
// for, the label held until those claims are released, verified by its devices.
BOOST_AUTO_TEST_SUITE(dra)

gc::resource_slice_info gpu_slice(const std::string& uid, const std::string& rv, int devices,
                                  const std::string& profile = "cpx_nps4") {
  gc::resource_slice_info s;
  s.name = node_name + "-gpu.amd.com-" + uid;
  s.uid = uid;
  s.resource_version = rv;
  s.driver = gp::amd_dra_driver;
  s.node = node_name;
  s.pool = node_name;
  s.generation = 1;
  for (int i = 0; i < devices; ++i)
    s.devices.push_back({"gpu-" + std::to_string(i + 1) + "-" + std::to_string(128 + i),
                         {{"type", profile == "spx_nps1" ? "amdgpu" : "amdgpu-partition"},
                          {"partitionProfile", profile}},
                         false});
  return s;
}

gc::resource_claim_info gpu_claim(const std::string& name, const std::string& pod_uid) {
  gc::resource_claim_info c;
  c.ns = "team";
  c.name = name;
  c.node = node_name;
  c.devices = {{gp::amd_dra_driver, node_name, "gpu-1-128"}};
  if (!pod_uid.empty())
    c.reserved_for = {{pod_uid, "train"}};
  return c;
}

// The world's node in DRA mode: 8 GPUs in SPX as slices, no amd.com/ resources, a profile
// that expects 64 CPX partitions.
world dra_world() {
  world w;
  w.node().allocatable.erase(gpu);
  w.in.slices = {gpu_slice("s1", "10", 8, "spx_nps1")};
  gp::expected_device cpx;
  cpx.attributes = {{"type", "amdgpu-partition"}, {"partitionProfile", "cpx_nps4"}};
  cpx.count = 64;
  w.in.profile.spec.expected_devices = {cpx};
  return w;
}

BOOST_AUTO_TEST_CASE(a_node_publishing_slices_is_a_gpu_node_and_its_run_records_dra) {
  auto w = dra_world();
  w.in.token = true;
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Draining");
  const auto& st = status_after(w, s);
  BOOST_TEST_REQUIRE(st.dra.has_value());
  BOOST_TEST(st.dra->driver == "gpu.amd.com");
  // Without slices or resources: not a GPU node.
  w.in.slices.clear();
  auto refused = w.step();
  BOOST_TEST(phase_after(w, refused) == "Failed");
  BOOST_TEST(contains(status_after(w, refused).last_error, "no ResourceSlice of gpu.amd.com"));
}

BOOST_AUTO_TEST_CASE(a_driver_that_partitions_the_gpus_itself_is_refused_in_preflight) {
  auto w = dra_world();
  w.in.token = true;
  auto counters = gpu_slice("k1", "3", 0);
  counters.shared_counters = true;
  w.in.slices.push_back(counters);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(condition_of(w, s, "Preflight") == "False/DRADynamicPartitioning");
  BOOST_TEST(no_node_writes(s));
  // A dry run names it too.
  w.in.item.spec.dry_run = true;
  auto preview = w.step();
  BOOST_TEST_REQUIRE(status_after(w, preview).preview.has_value());
  BOOST_TEST(contains(status_after(w, preview).preview->findings.at(0), "DRADynamicPartitioning"));
}

BOOST_AUTO_TEST_CASE(a_profile_without_expected_devices_is_refused_on_a_dra_node) {
  auto w = dra_world();
  w.in.token = true;
  w.in.profile.spec.expected_devices.clear();
  auto s = w.step();
  BOOST_TEST(condition_of(w, s, "Preflight") == "False/ExpectedDevicesMissing");
  BOOST_TEST(contains(status_after(w, s).last_error, "spec.expectedDevices"));
}

// Issue 38: a 403 on ResourceClaims was read as "not served": pods holding a DRA node's
// GPUs through claims counted as holding none. Such a node is not started.
BOOST_AUTO_TEST_CASE(a_dra_node_is_not_started_when_claims_may_not_be_listed) {
  auto w = dra_world();
  w.in.token = true;
  w.in.claims_forbidden = true;
  auto s = w.step();
  BOOST_TEST(condition_of(w, s, "Preflight") == "False/ResourceClaimsForbidden");
  BOOST_TEST(contains(status_after(w, s).last_error, "may not list ResourceClaims (403)"));
  BOOST_TEST(no_node_writes(s));
  // A node whose GPUs are extended resources has no claims on them to see.
  world plugin_node;
  plugin_node.in.token = true;
  plugin_node.in.claims_forbidden = true;
  BOOST_TEST(gc::preflight(plugin_node.in).empty());
}

BOOST_AUTO_TEST_CASE(the_drain_evicts_a_claim_holder_that_tolerates_the_taint) {
  auto w = dra_world();
  w.at(node_phase::draining).cordoned_by_us();
  w.status().dra = gp::dra_run{gp::amd_dra_driver, {}};
  auto holder = pod("train");
  holder.tolerations = {tolerate_dcm()};
  holder.gpus = 1; // assemble_node_inputs marks the pods a GPU claim is reserved for
  holder.gpu_claims = true;
  auto bystander = pod("cpu-only");
  bystander.tolerations = {tolerate_dcm()};
  w.with(holder).with(bystander);
  auto s = w.step();
  BOOST_TEST(removals(s) == std::vector<std::string>{"team/train:evict"});
}

BOOST_AUTO_TEST_CASE(entering_applying_records_the_slices_published_before_dcm) {
  auto w = dra_world();
  w.at(node_phase::draining).cordoned_by_us().tainted();
  w.status().dra = gp::dra_run{gp::amd_dra_driver, {}};
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Applying");
  BOOST_TEST(status_after(w, s).dra->slices_before_dcm == std::vector<std::string>{"s1@10"});
}

BOOST_AUTO_TEST_CASE(the_label_waits_until_the_claims_on_the_gpus_are_released) {
  auto w = dra_world();
  w.at(node_phase::applying).cordoned_by_us().tainted().dcm_config_has_profile();
  w.status().dra = gp::dra_run{gp::amd_dra_driver, {"s1@10"}};
  // Its pod is gone; kube-controller-manager has not cleared the allocation yet.
  w.in.claims = {gpu_claim("train-gpu-x7k2p", "")};
  auto s = w.step();
  BOOST_TEST(label_write(s, gc::dcm_profile_label) == "-");
  BOOST_TEST(condition_of(w, s, "ProfileApplied") == "False/WaitingForClaims");
  BOOST_TEST(
      contains(condition(status_after(w, s), "ProfileApplied")->message, "team/train-gpu-x7k2p"));
  // A claim on another driver's devices does not hold the label.
  w.in.claims[0].devices = {{"nic.example.com", node_name, "eth1"}};
  BOOST_TEST(label_write(w.step(), gc::dcm_profile_label) == dcm_name);
  w.in.claims.clear();
  BOOST_TEST(label_write(w.step(), gc::dcm_profile_label) == dcm_name);
  // Past the verification timeout the claims fail the node back into service.
  w.in.claims = {gpu_claim("train-gpu-x7k2p", "")};
  w.later(std::chrono::seconds(w.in.item.spec.verification.timeout_seconds + 1));
  auto late = w.step();
  BOOST_TEST(phase_after(w, late) == "Failed");
  BOOST_TEST(last_reason(w, late) == "ApplyTimeout");
}

BOOST_AUTO_TEST_CASE(verification_counts_devices_published_after_dcm) {
  auto w = dra_world();
  w.at(node_phase::verifying).cordoned_by_us().label_ours().dcm_says("success");
  w.status().dra = gp::dra_run{gp::amd_dra_driver, {"s1@10"}};
  // The driver not back yet: the old slice (SPX) is still there.
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Verifying");
  BOOST_TEST(condition_of(w, s, "Verified") == "False/Mismatch");
  // Updated in place with 63 partitions: the count is the gap.
  w.in.slices = {gpu_slice("s1", "11", 63)};
  s = w.step();
  BOOST_TEST(contains(condition(status_after(w, s), "Verified")->message, "found 63"));
  // 64: verified, and amd.com/gpu (absent on a DRA node) is not asked for.
  w.in.slices = {gpu_slice("s1", "12", 64)};
  s = w.step();
  BOOST_TEST(phase_after(w, s) == "Succeeded");
  BOOST_TEST(cordon_write(s) == "uncordon");
}

BOOST_AUTO_TEST_CASE(unchanged_slices_count_once_the_driver_must_be_back) {
  // A change the devices do not show (the driver writes nothing when its devices are
  // unchanged): the recorded slice counts once kubelet would have deleted it.
  auto w = dra_world();
  w.in.slices = {gpu_slice("s1", "10", 64)};
  w.at(node_phase::verifying).cordoned_by_us().label_ours().dcm_says("success");
  w.status().dra = gp::dra_run{gp::amd_dra_driver, {"s1@10"}};
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Verifying");
  BOOST_TEST(contains(condition(status_after(w, s), "Verified")->message,
                      "has not published the node's devices again since DCM ran"));
  w.later(gc::driver_back_after);
  BOOST_TEST(phase_after(w, w.step()) == "Succeeded");
}

BOOST_AUTO_TEST_CASE(a_dra_node_already_showing_the_devices_is_in_the_target_state) {
  auto w = dra_world();
  w.in.slices = {gpu_slice("s1", "10", 64)};
  w.node().labels[gc::dcm_profile_label] = dcm_name;
  w.dcm_config_has_profile();
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Succeeded");
  BOOST_TEST(last_reason(w, s) == "AlreadyInTargetState");
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------
// drainPolicy.cordon Devices on a DRA node: a DeviceTaintRule on the node's GPU devices
// instead of the cordon and the amd-dcm taint; the pods that use no GPU stay; the driver's
// pod is restarted after DCM; the rule goes once the node is verified.
BOOST_AUTO_TEST_SUITE(device_cordon)

using dra::dra_world;
using dra::gpu_slice;

const std::string rule_name = "gpu-partitioner-" + node_name;

world devices_world() {
  auto w = dra_world();
  w.in.item.spec.drain.cordon = gp::cordon_scope::devices;
  w.in.device_taints_served = true;
  return w;
}

// The run as it is once started in devices mode.
world& devices_run(world& w, node_phase p) {
  w.at(p);
  w.status().dra = gp::dra_run{};
  w.status().dra->driver = gp::amd_dra_driver;
  w.status().dra->device_taint_rule = rule_name;
  w.status().dra->pool = node_name;
  if (p != node_phase::draining)
    w.status().conditions.push_back({gp::node_condition::node_tainted, gp::condition_status::true_,
                                     std::nullopt, gp::format_time(t0), "DevicesTainted",
                                     "NoExecute"});
  return w;
}

world& rule(world& w, const std::string& effect) {
  gc::device_taint_rule_info r;
  r.name = rule_name;
  r.node = node_name;
  r.driver = gp::amd_dra_driver;
  r.pool = node_name;
  r.effect = effect;
  r.ours = true;
  w.in.taint_rules = {r};
  return w;
}

// "NoSchedule", "NoExecute", "delete" or "-".
std::string rule_write(const gc::node_step& s) {
  if (!s.device_taint)
    return "-";
  return s.device_taint->effect.empty() ? "delete" : s.device_taint->effect;
}

gc::pod_info claim_holder() {
  auto p = pod("train", "train");
  p.gpus = 1;
  p.gpu_claims = true;
  return p;
}

gc::pod_info driver_pod(const std::string& uid) {
  auto p = daemon_pod("gpu-dra-driver-" + uid);
  p.uid = uid;
  p.dra_driver = true;
  return p;
}

BOOST_AUTO_TEST_CASE(a_run_starts_in_devices_mode_only_where_the_rules_are_served) {
  auto w = devices_world();
  w.in.token = true;
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Draining");
  BOOST_TEST(status_after(w, s).dra->device_taint_rule == rule_name);
  BOOST_TEST(status_after(w, s).dra->pool == node_name);
  BOOST_TEST(!has_event(s, "DeviceCordonUnavailable", false, "Warning"));
  // Not served: the node is cordoned instead, and the item says why.
  w.in.device_taints_served = false;
  s = w.step();
  BOOST_TEST(status_after(w, s).dra->device_taint_rule.empty());
  BOOST_TEST(has_event(s, "DeviceCordonUnavailable", false, "Warning"));
  // Devices in two pools: one rule cannot select them.
  w.in.device_taints_served = true;
  auto other = gpu_slice("s2", "4", 8, "spx_nps1");
  other.pool = "second-pool";
  w.in.slices.push_back(other);
  s = w.step();
  BOOST_TEST(status_after(w, s).dra->device_taint_rule.empty());
  BOOST_TEST(has_event(s, "DeviceCordonUnavailable", false, "Warning"));
  // A node of the device plugin in the same plan: cordoned, as the only way there is.
  auto plugin = world();
  plugin.in.item.spec.drain.cordon = gp::cordon_scope::devices;
  plugin.in.device_taints_served = true;
  plugin.in.token = true;
  s = plugin.step();
  BOOST_TEST(phase_after(plugin, s) == "Draining");
  BOOST_TEST(!status_after(plugin, s).dra.has_value());
  BOOST_TEST(!has_event(s, "DeviceCordonUnavailable", false, "Warning"));
}

BOOST_AUTO_TEST_CASE(the_drain_taints_the_devices_evicts_their_holders_and_keeps_the_rest) {
  auto w = devices_world();
  devices_run(w, node_phase::draining);
  auto bystander = pod("cpu-only"); // tolerates nothing: the node taint would remove it
  w.with(claim_holder()).with(bystander);
  // First the rule, NoSchedule; the node is neither cordoned nor marked.
  auto s = w.step();
  BOOST_TEST(rule_write(s) == "NoSchedule");
  BOOST_TEST(s.device_taint->pool == node_name);
  BOOST_TEST(s.device_taint->name == rule_name);
  BOOST_TEST(!s.patch.has_value());
  BOOST_TEST(taint_write(s) == "-");
  BOOST_TEST(removals(s).empty());
  // Then the holder alone is evicted.
  rule(w, "NoSchedule");
  s = w.step();
  BOOST_TEST(removals(s) == std::vector<std::string>{"team/train:evict"});
  BOOST_TEST(condition_of(w, s, "NodeCordoned") == "True/DevicesCordoned");
  BOOST_TEST(rule_write(s) == "-");
  BOOST_TEST(cordon_write(s) == "-");
  // Gone: NoExecute as the backstop.
  w.in.pods.erase(std::remove_if(w.in.pods.begin(), w.in.pods.end(),
                                 [](const auto& p) { return p.name == "train"; }),
                  w.in.pods.end());
  s = w.step();
  BOOST_TEST(rule_write(s) == "NoExecute");
  BOOST_TEST(removals(s).empty());
  // NoExecute in place: Applying, with the slices recorded; the bystander never touched.
  rule(w, "NoExecute");
  s = w.step();
  BOOST_TEST(phase_after(w, s) == "Applying");
  BOOST_TEST(condition_of(w, s, "NodeTainted") == "True/DevicesTainted");
  BOOST_TEST(status_after(w, s).dra->slices_before_dcm == std::vector<std::string>{"s1@10"});
  BOOST_TEST(taint_write(s) == "-");
  BOOST_TEST(cordon_write(s) == "-");
}

BOOST_AUTO_TEST_CASE(a_holder_still_terminating_under_no_execute_holds_applying) {
  auto w = devices_world();
  devices_run(w, node_phase::draining);
  rule(w, "NoExecute");
  auto holder = claim_holder();
  holder.deleting = true;
  w.with(holder);
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Draining");
  BOOST_TEST(condition_of(w, s, "Drained") == "False/WaitingForPods");
}

BOOST_AUTO_TEST_CASE(without_a_drain_the_rule_goes_no_execute_at_once) {
  auto w = devices_world();
  devices_run(w, node_phase::draining);
  w.in.item.spec.drain.enabled = false;
  rule(w, "NoSchedule");
  w.with(claim_holder());
  auto s = w.step();
  BOOST_TEST(rule_write(s) == "NoExecute");
  BOOST_TEST(removals(s).empty());
  BOOST_TEST(condition_of(w, s, "Drained") == "False/DrainDisabled");
}

BOOST_AUTO_TEST_CASE(a_drain_timeout_deletes_the_rule_then_the_run_fails) {
  auto w = devices_world();
  devices_run(w, node_phase::draining);
  rule(w, "NoSchedule");
  w.with(claim_holder()).with(pdb("train-pdb", "train", 0));
  w.later(std::chrono::seconds(w.in.item.spec.drain.timeout_seconds + 1));
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(last_reason(w, s) == "DrainTimeout");
  BOOST_TEST(rule_write(s) == "delete");
  BOOST_TEST(cordon_write(s) == "-");
}

BOOST_AUTO_TEST_CASE(verifying_restarts_the_driver_once_then_verifies_and_deletes_the_rule) {
  auto w = devices_world();
  devices_run(w, node_phase::verifying).label_ours().dcm_says("success");
  w.status().dra->slices_before_dcm = {"s1@10"};
  rule(w, "NoExecute");
  w.with(driver_pod("drv-1"));
  auto s = w.step();
  BOOST_TEST(removals(s) == std::vector<std::string>{"kube-amd-gpu/gpu-dra-driver-drv-1:delete"});
  BOOST_TEST(s.removals.at(0).uid == "drv-1");
  BOOST_TEST(has_event(s, "DRADriverRestarted", true, "Normal"));
  BOOST_TEST(status_after(w, s).dra->driver_restarted_at == gp::format_time(t0));
  BOOST_TEST(status_after(w, s).dra->restarted_driver_pods == std::vector<std::string>{"drv-1"});
  BOOST_TEST(phase_after(w, s) == "Verifying");
  keep_status(w, s);
  // Not again: the DaemonSet's new pod runs, the old slice is still there.
  w.in.pods.back() = driver_pod("drv-2");
  s = w.step();
  BOOST_TEST(removals(s).empty());
  BOOST_TEST(condition_of(w, s, "Verified") == "False/Mismatch");
  // The new driver publishes 64 partitions: verified; the rule goes, then the mark.
  w.in.slices = {gpu_slice("s1", "11", 64)};
  s = w.step();
  BOOST_TEST(phase_after(w, s) == "Succeeded");
  BOOST_TEST(rule_write(s) == "delete");
  BOOST_TEST(cordon_write(s) == "-");
  keep_status(w, s);
  w.in.taint_rules.clear();
  s = w.step();
  BOOST_TEST(annotation_write(s, gc::applied_hash_annotation) == "<remove>");
  BOOST_TEST(cordon_write(s) == "-");
  BOOST_TEST(condition_of(w, s, "NodeTainted") == "False/Untainted");
}

BOOST_AUTO_TEST_CASE(unchanged_slices_count_once_the_restarted_driver_must_be_back) {
  auto w = devices_world();
  w.in.slices = {gpu_slice("s1", "10", 64)};
  devices_run(w, node_phase::verifying).label_ours().dcm_says("success");
  w.status().dra->slices_before_dcm = {"s1@10"};
  rule(w, "NoExecute");
  w.with(driver_pod("drv-1"));
  auto s = w.step();
  keep_status(w, s);
  w.later(std::chrono::seconds(30));
  BOOST_TEST(phase_after(w, w.step()) == "Verifying");
  w.later(gc::driver_back_after);
  BOOST_TEST(phase_after(w, w.step()) == "Succeeded");
}

BOOST_AUTO_TEST_CASE(no_driver_pod_to_restart_is_said_and_verification_goes_on) {
  auto w = devices_world();
  devices_run(w, node_phase::verifying).label_ours().dcm_says("success");
  rule(w, "NoExecute");
  auto s = w.step();
  BOOST_TEST(removals(s).empty());
  BOOST_TEST(has_event(s, "DRADriverNotFound", true, "Warning"));
  BOOST_TEST(!status_after(w, s).dra->driver_restarted_at.empty());
}

BOOST_AUTO_TEST_CASE(a_failure_after_dcm_keeps_the_devices_tainted) {
  auto w = devices_world();
  devices_run(w, node_phase::waiting_operator).label_ours().dcm_says("failure");
  rule(w, "NoExecute");
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Failed");
  BOOST_TEST(rule_write(s) == "-");
  BOOST_TEST(contains(status_after(w, s).history.back().message, "DeviceTaintRule " + rule_name));
  keep_status(w, s);
  s = w.step(); // Failed with the GPUs unsettled: nothing is lifted
  BOOST_TEST(rule_write(s) == "-");
  BOOST_TEST(!s.patch.has_value());
}

BOOST_AUTO_TEST_CASE(deleting_the_item_mid_change_leaves_the_rule_and_says_so) {
  auto w = devices_world();
  devices_run(w, node_phase::waiting_operator).label_ours();
  rule(w, "NoExecute");
  w.in.item.metadata.deletion_timestamp = gp::format_time(t0);
  auto s = w.step();
  BOOST_TEST(rule_write(s) == "-");
  BOOST_TEST(has_event(s, "LeftTainted", true, "Warning"));
  BOOST_TEST(s.remove_finalizer);
  // Before DCM was asked: the rule is deleted first.
  auto early = devices_world();
  devices_run(early, node_phase::draining);
  rule(early, "NoSchedule");
  early.in.item.metadata.deletion_timestamp = gp::format_time(t0);
  s = early.step();
  BOOST_TEST(rule_write(s) == "delete");
  BOOST_TEST(!s.remove_finalizer);
}

BOOST_AUTO_TEST_CASE(the_dry_run_lists_only_the_pods_holding_gpus) {
  auto w = devices_world();
  w.in.item.spec.dry_run = true;
  w.with(claim_holder()).with(pod("cpu-only"));
  auto s = w.step();
  const auto& preview = status_after(w, s).preview;
  BOOST_TEST_REQUIRE(preview.has_value());
  BOOST_TEST_REQUIRE(preview->pods_to_evict.size() == 1u);
  BOOST_TEST(preview->pods_to_evict[0].name == "train");
  // Without the rules served, the node drain would take both.
  w.in.device_taints_served = false;
  BOOST_TEST(status_after(w, w.step()).preview->pods_to_evict.size() == 2u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(device_cordon)

BOOST_AUTO_TEST_CASE(a_rule_left_by_a_failed_run_is_lifted_only_by_a_verified_run) {
  // The node shows the profile, but an earlier run's rule still holds its GPUs: not the
  // target state, so a retry runs (here with the node cordoned) and lifts it once verified.
  auto w = dra_world();
  w.in.slices = {gpu_slice("s1", "10", 64)};
  w.node().labels[gc::dcm_profile_label] = dcm_name;
  w.dcm_config_has_profile();
  rule(w, "NoExecute");
  w.in.token = true;
  auto s = w.step();
  BOOST_TEST(phase_after(w, s) == "Draining");
  BOOST_TEST(rule_write(s) == "-");
  // Verified at the end of that run: the taint goes first, then the left rule, then the
  // cordon.
  w.at(node_phase::verifying).cordoned_by_us().label_ours().dcm_says("success");
  w.status().dra = gp::dra_run{};
  w.status().dra->driver = gp::amd_dra_driver;
  w.status().dra->slices_before_dcm = {"s1@9"};
  s = w.step();
  BOOST_TEST(phase_after(w, s) == "Succeeded");
  BOOST_TEST(rule_write(s) == "delete");
  BOOST_TEST(s.device_taint->name == rule_name);
  BOOST_TEST(cordon_write(s) == "-");
  keep_status(w, s);
  w.in.taint_rules.clear();
  BOOST_TEST(cordon_write(w.step()) == "uncordon");
}

BOOST_AUTO_TEST_SUITE_END()
