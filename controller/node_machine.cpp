#include "controller/node_machine.hpp"

#include "controller/drain.hpp"
#include "controller/preflight.hpp"
#include "controller/soak.hpp"
#include "controller/verification.hpp"

#include "controller/dcm_payload.hpp"
#include "controller/selector.hpp"
#include "controller/short_list.hpp"
#include "protocol/codec/pattern.hpp"
#include "protocol/codec/quote.hpp"

#include <algorithm>
#include <set>

namespace gpu_partitioner::controller {

using protocol::condition_status;
using protocol::node_phase;
namespace node_condition = protocol::node_condition;
using namespace std::chrono_literals;
namespace codec = protocol::codec;

namespace {

// How often a waiting phase looks again.
constexpr std::chrono::milliseconds poll_interval = 1s;

std::string_view phase_name(node_phase p) {
  return codec::to_string(p);
}

std::optional<std::string> annotation(const node_info& node, const char* key) {
  auto it = node.annotations.find(key);
  if (it == node.annotations.end())
    return std::nullopt;
  return it->second;
}

// Our record says an admin had cordoned the node (anything but "false": a value we did
// not write is never a reason to uncordon).
bool admin_cordoned(const std::string& was_unschedulable) {
  return was_unschedulable != "false";
}

bool well_formed_record(const std::optional<std::string>& was_unschedulable) {
  return was_unschedulable && (*was_unschedulable == "true" || *was_unschedulable == "false");
}

// The profiles DCM's config lacks (or holds otherwise), as one write of all the plan's:
// every write of the file runs DCM again on every labelled node, so as few as possible.
std::optional<dcm_config_write> missing_profiles(const node_inputs& in) {
  std::map<std::string, std::string> all = in.plan_profiles;
  if (in.profile.found && in.profile.payload && in.profile.dcm_name_rivals.empty() &&
      in.dcm_name_holders.empty())
    all.emplace(in.profile.dcm_name, *in.profile.payload);
  const bool missing = std::any_of(all.begin(), all.end(), [&](const auto& p) {
    return !dcm_config_has(in.dcm.config_json, p.first, p.second);
  });
  if (!missing)
    return std::nullopt;
  return dcm_config_write{in.dcm.ns, in.dcm.name, all};
}

bool has_finalizer(const protocol::node_partitioning& item) {
  const auto& f = item.metadata.finalizers;
  return std::find(f.begin(), f.end(), item_finalizer) != f.end();
}

// -- status helpers: every change goes through these, so history and conditions agree --

struct status_editor {
  protocol::node_partitioning_status status;
  const protocol::node_partitioning_status& original;
  protocol::wall_clock::time_point now;
  node_step& out;

  node_phase phase() const { return status.phase.value_or(node_phase::pending); }

  void enter(node_phase next, const std::string& reason, const std::string& message,
             bool warning = false) {
    status.phase = next;
    status.history.push_back({next, protocol::format_time(now), reason, message});
    while (status.history.size() > protocol::node_partitioning_status::history_limit)
      status.history.erase(status.history.begin());
    out.events.push_back({false, warning ? "Warning" : "Normal", reason,
                          std::string(phase_name(next)) + (message.empty() ? "" : ": " + message)});
  }

  void condition(const std::string& type, bool ok, const std::string& reason,
                 const std::string& message) {
    const auto wanted = ok ? condition_status::true_ : condition_status::false_;
    for (auto& c : status.conditions) {
      if (c.type != type)
        continue;
      if (c.status != wanted)
        c.last_transition_time = protocol::format_time(now);
      c.status = wanted;
      c.reason = reason;
      c.message = message;
      return;
    }
    status.conditions.push_back(
        {type, wanted, std::nullopt, protocol::format_time(now), reason, message});
  }

  void drop_condition(const std::string& type) {
    auto& c = status.conditions;
    c.erase(std::remove_if(c.begin(), c.end(), [&](const auto& x) { return x.type == type; }),
            c.end());
  }

  void error(const std::string& message) { status.last_error = message; }

  // When the current phase was entered (from history), or now if unknown.
  protocol::wall_clock::time_point entered() const {
    for (auto it = status.history.rbegin(); it != status.history.rend(); ++it)
      if (it->phase == phase())
        if (auto t = protocol::parse_time(it->time))
          return *t;
    return now;
  }

  void finish() {
    if (!(status == original))
      out.status = status;
  }
};

// Whether the GPUs may be in an unknown state: DCM was asked (a run got to
// WaitingOperator or beyond) and no run has been verified since. A run that failed in
// Applying failed before the label was set; a retry of a node that failed after DCM was
// asked does not make its GPUs known again until it succeeds.
bool gpus_unsettled(const protocol::node_partitioning_status& st) {
  for (auto it = st.history.rbegin(); it != st.history.rend(); ++it) {
    if (it->phase == node_phase::waiting_operator || it->phase == node_phase::verifying)
      return true;
    if (it->phase == node_phase::succeeded)
      return false;
  }
  return false;
}

// Whether the current run got past Pending, so it may have cordoned or tainted the node:
// a run that never started (a preflight failure, a plan gone before its turn) has nothing
// of its own to undo and leaves the node as it found it.
bool run_started(const protocol::node_partitioning_status& st) {
  switch (st.phase.value_or(node_phase::pending)) {
  case node_phase::draining:
  case node_phase::applying:
  case node_phase::waiting_operator:
  case node_phase::verifying:
    return true;
  default:
    break;
  }
  for (auto it = st.history.rbegin(); it != st.history.rend(); ++it) {
    if (it->phase == node_phase::draining)
      return true;
    if (it->phase == node_phase::pending)
      return false;
  }
  return false;
}

bool we_tainted(const protocol::node_partitioning_status& st) {
  for (const auto& c : st.conditions)
    if (c.type == node_condition::node_tainted)
      return c.status == condition_status::true_;
  return false;
}

// The run cordons the node's GPUs, not the node (drainPolicy.cordon Devices): the name of
// its DeviceTaintRule, else "".
std::string device_rule(const protocol::node_partitioning_status& st) {
  return st.dra ? st.dra->device_taint_rule : std::string();
}

// The operator's rule of that name on the node, as observed; null if there is none.
const device_taint_rule_info* observed_rule(const node_inputs& in, const std::string& name) {
  for (const auto& r : in.taint_rules)
    if (r.name == name)
      return &r;
  return nullptr;
}

device_taint_write rule_write(const node_inputs& in, const protocol::dra_run& dra,
                              const std::string& effect) {
  device_taint_write w;
  w.name = dra.device_taint_rule;
  w.node = in.item.spec.node_name;
  w.pool = dra.pool;
  w.effect = effect;
  return w;
}

// Deletes a DeviceTaintRule of ours on the node's GPUs, if one is there: true if so.
bool delete_a_rule(const node_inputs& in, node_step& out) {
  if (in.taint_rules.empty())
    return false;
  device_taint_write w;
  w.name = in.taint_rules.front().name;
  w.node = in.item.spec.node_name;
  out.device_taint = w;
  out.events.push_back(
      {true, "Normal", "DevicesUncordoned", "DeviceTaintRule " + w.name + " deleted"});
  return true;
}

// restore_node for a run that cordoned the GPUs: the rule goes first, then the run's mark.
bool restore_devices(const node_inputs& in, status_editor& s, node_step& out, bool keep_taint) {
  if (keep_taint)
    return false;
  const auto& dra = *s.status.dra;
  if (delete_a_rule(in, out))
    return true;
  if (we_tainted(s.status))
    s.condition(node_condition::node_tainted, false, "Untainted",
                "DeviceTaintRule " + dra.device_taint_rule + " is gone");
  if (annotation(*in.node, applied_hash_annotation)) {
    node_patch p;
    p.annotations[applied_hash_annotation] = std::nullopt;
    out.patch = p;
    return true;
  }
  return false;
}

// Puts the node back as we found it: no taint, and schedulable unless an admin had
// cordoned it. The taint goes first, in a step of its own: until it is gone, our
// annotation stays as the mark that the node is ours to restore. Returns true if
// anything is left to do.
bool restore_node(const node_inputs& in, status_editor& s, node_step& out, bool keep_cordon) {
  if (!device_rule(s.status).empty())
    return restore_devices(in, s, out, keep_cordon);
  const auto& node = *in.node;
  const auto was = annotation(node, was_unschedulable_annotation);
  if (node.has_dcm_taint() && (was || we_tainted(s.status))) {
    out.taint = false;
    return true;
  }
  if (!node.has_dcm_taint() && we_tainted(s.status))
    s.condition(node_condition::node_tainted, false, "Untainted",
                "amd-dcm=up:NoExecute is off the node");
  // A rule an earlier run left on the GPUs (it failed after DCM was asked, with
  // drainPolicy.cordon Devices): this run has verified them.
  if (!keep_cordon && delete_a_rule(in, out))
    return true;
  if (was && !keep_cordon) {
    node_patch p;
    if (!admin_cordoned(*was) && node.unschedulable)
      p.unschedulable = false;
    p.annotations[was_unschedulable_annotation] = std::nullopt;
    p.annotations[applied_hash_annotation] = std::nullopt;
    out.patch = p;
    return true;
  }
  return false;
}

// At most a century: the clock counts nanoseconds, so a longer timeout (int64's maximum
// in seconds, say) would overflow and expire at once.
long long timeout_of(std::int64_t seconds) {
  constexpr std::int64_t century = 100LL * 365 * 24 * 3600;
  return std::clamp<std::int64_t>(seconds, 1, century);
}

bool past(const status_editor& s, std::int64_t seconds) {
  return s.now - s.entered() >= std::chrono::seconds(timeout_of(seconds));
}

// -- phases --

// Where and when a drain of the node runs (and what it reads of the other nodes).
drain_context drain_context_of(const node_inputs& in, protocol::wall_clock::time_point started) {
  drain_context c{in.now, started, in.node->ready};
  c.node = in.item.spec.node_name;
  c.nodes = in.cluster_nodes.get();
  c.plan_nodes = in.plan_nodes.get();
  c.may_delete = in.pods_deletable;
  return c;
}

// What keeps drainPolicy.cordon Devices from cordoning only the node's GPUs ("" if nothing:
// the node publishes them through AMD's DRA driver, in one pool, and the API server serves
// DeviceTaintRules). Not asked: "".
std::string device_cordon_problem(const node_inputs& in) {
  if (!in.item.spec.drain.cordons_devices() || !publishes_gpus(in.slices))
    return {};
  if (!in.device_taints_served)
    return "the API server does not serve DeviceTaintRules (resource.k8s.io/v1alpha3, feature "
           "gate DRADeviceTaintRules)";
  if (gpu_pool(in.slices).empty())
    return std::string("the node's devices of ") + protocol::amd_dra_driver +
           " are in more than one pool";
  return {};
}

// The run will cordon the node's GPUs only.
bool cordons_devices(const node_inputs& in) {
  return in.item.spec.drain.cordons_devices() && publishes_gpus(in.slices) &&
         device_cordon_problem(in).empty();
}

// The pods a drain of the node's GPUs removes: those holding them. (The rest stay.)
std::vector<pod_info> gpu_pods(const std::vector<pod_info>& pods) {
  std::vector<pod_info> out;
  for (const auto& p : pods)
    if (p.gpus > 0)
      out.push_back(p);
  return out;
}

void on_pending(const node_inputs& in, status_editor& s, node_step& out) {
  const auto& node = *in.node;
  if (!in.plan.may_start) {
    const auto& p = in.plan.problem;
    s.condition(node_condition::started, false, p.reason, p.text());
    out.requeue = 10s;
    return;
  }
  auto findings = preflight(in);
  if (in.item.spec.dry_run) {
    auto preview = preview_drain(cordons_devices(in) ? gpu_pods(in.pods) : in.pods, in.pdbs,
                                 in.item.spec.drain, drain_context_of(in, in.now));
    preview.already_in_target_state = findings.empty() && in_target_state(in);
    for (const auto& f : findings)
      preview.findings.push_back(f.text());
    s.status.preview = preview;
    s.condition(node_condition::dry_run, true, "DryRun",
                "dry run: " + std::to_string(preview.pods_to_evict.size()) +
                    " pod(s) would be evicted, " + std::to_string(preview.pods_to_wait_for.size()) +
                    " let finish first, " + std::to_string(preview.pods_refused.size()) +
                    " refused by the drain policy" +
                    (preview.warnings.empty()
                         ? ""
                         : ", " + std::to_string(preview.warnings.size()) + " warning(s)") +
                    "; nothing on the node changes");
    out.requeue = 10s;
    return;
  }
  s.status.preview.reset();
  if (!findings.empty()) {
    const auto first = findings.front().text();
    s.condition(node_condition::preflight, false, findings.front().reason, first);
    s.error(first);
    // The spec that failed: a later change of it starts the node over (on_failed).
    s.status.observed_hash = in.item.spec.desired_hash;
    s.enter(node_phase::failed, "PreflightFailed", first, true);
    return;
  }
  s.condition(node_condition::preflight, true, "PreflightPassed",
              "profile, DCM payload and node agree");
  // A NotReady node (its kubelet stopped, or cut off) would not drain: its pods stay
  // Terminating. It waits here, counted unavailable, and starts once Ready.
  if (!node.ready) {
    s.condition(node_condition::started, false, "NodeNotReady",
                "the node is not Ready; it starts once its kubelet reports Ready again");
    out.requeue = 10s;
    return;
  }
  // A node whose last run gave DCM another payload is not in its target state, whatever
  // its labels say: DCM still holds that payload's layout for it.
  if (!payload_changed(in, s.status) && in_target_state(in)) {
    s.status.observed_hash = in.item.spec.desired_hash;
    s.status.observed_payload_hash = in.profile.payload_hash;
    s.status.completed_at = protocol::format_time(in.now);
    s.error("");
    // A soak of an earlier run says nothing of this success.
    s.drop_condition(node_condition::soaked);
    s.condition(node_condition::verified, true, "AlreadyInTargetState",
                "the node already runs profile " + in.profile.dcm_name);
    s.enter(node_phase::succeeded, "AlreadyInTargetState",
            "already partitioned as " + in.profile.dcm_name + "; nothing to do");
    return;
  }
  out.wants_token = true;
  if (!in.token) {
    s.condition(node_condition::started, false, "WaitingForToken",
                "waiting for the plan's rollout limits to allow this node");
    return;
  }
  s.drop_condition(node_condition::soaked);
  s.condition(node_condition::started, true, "TokenGranted",
              "the rollout limits allow this node to start");
  s.status.observed_hash = in.item.spec.desired_hash;
  s.status.observed_payload_hash = in.profile.payload_hash;
  s.status.started_at = protocol::format_time(in.now);
  s.status.completed_at.clear();
  s.status.drain = {};
  s.error("");
  // A node that publishes its GPUs through DRA is verified by its devices (verification.cpp).
  s.status.dra.reset();
  if (publishes_gpus(in.slices)) {
    s.status.dra = protocol::dra_run{};
    s.status.dra->driver = protocol::amd_dra_driver;
  }
  if (cordons_devices(in)) {
    s.status.dra->device_taint_rule = device_taint_rule_name(in.item.spec.node_name);
    s.status.dra->pool = gpu_pool(in.slices);
  } else if (const auto problem = device_cordon_problem(in); !problem.empty()) {
    out.events.push_back(
        {false, "Warning", "DeviceCordonUnavailable",
         "drainPolicy.cordon is Devices, but " + problem + ": the node is cordoned instead"});
  }
  out.in_flight = true;
  s.enter(node_phase::draining, "Started",
          device_rule(s.status).empty()
              ? "cordoning and draining the node"
              : "tainting the node's GPU devices and evicting the pods that hold them");
  out.requeue = 1ms;
}

void fail_and_roll_back(const node_inputs& in, status_editor& s, node_step& out,
                        const std::string& reason, const std::string& message) {
  restore_node(in, s, out, gpus_unsettled(s.status));
  s.error(message);
  s.enter(node_phase::failed, reason, message + "; the node was returned to service", true);
  out.events.push_back({true, "Warning", reason, message});
}

// Why a node that passed preflight cannot go on: what preflight finds now.
std::string why_profile_unavailable(const node_inputs& in) {
  const auto findings = preflight(in);
  return findings.empty() ? "the profile's payload is gone" : findings.front().text();
}

// The mark a run writes beside the profile label: the label is this run's when the node's
// annotation holds it.
std::string run_mark(const node_inputs& in, const status_editor& s) {
  return in.item.spec.desired_hash + "@" + s.status.started_at;
}

// The node carries this run's mark: written with the profile label, or with its removal
// for a relabel, once the drain is over.
bool marked_by_this_run(const node_inputs& in, const status_editor& s) {
  return annotation(*in.node, applied_hash_annotation).value_or("") == run_mark(in, s);
}

// The node carries this run's profile label and mark.
bool labelled_by_this_run(const node_inputs& in, const status_editor& s) {
  return !in.node->label(dcm_profile_label).empty() && marked_by_this_run(in, s);
}

// What the drain allows but loses is said once, as the evictions go out.
void name_losses(const eviction_pass& pass, node_step& out) {
  if (!pass.losing_empty_dir.empty())
    out.events.push_back({false, "Warning", "EmptyDirDataDeleted",
                          "evicting " + comma_list(pass.losing_empty_dir) +
                              ": the data of their emptyDir volumes is deleted "
                              "(drainPolicy.deleteEmptyDirData)"});
  if (!pass.losing_unmanaged.empty())
    out.events.push_back({false, "Warning", "UnmanagedPodEvicted",
                          "evicting " + comma_list(pass.losing_unmanaged) +
                              ": no controller owns them, nothing recreates them "
                              "(drainPolicy.force)"});
}

// An Event when what holds the drain changes: a warning for what blocks it, a note for
// pods let finish.
void announce_holds(const std::vector<protocol::blocking_pod>& shown, node_step& out) {
  std::string blocks;
  std::string waits;
  for (const auto& b : shown) {
    auto& text = b.cause == protocol::pod_hold::waiting_for_completion ? waits : blocks;
    text += (text.empty() ? "" : "; ") + b.namespace_ + "/" + b.name + ": " + b.reason;
  }
  if (!blocks.empty())
    out.events.push_back({false, "Warning", "DrainBlocked", blocks});
  if (!waits.empty())
    out.events.push_back({false, "Normal", "WaitingForCompletion", waits});
}

// The Drained condition of a drain not over: what holds it, the worst first.
std::pair<std::string, std::string> drain_holds(const eviction_pass& pass) {
  std::string reason;
  std::vector<std::string> parts;
  auto add = [&](std::size_t n, const char* why, const std::string& text) {
    if (n == 0)
      return;
    if (reason.empty())
      reason = why;
    parts.push_back(std::to_string(n) + " pod(s) " + text);
  };
  add(pass.refused.size(), "EvictionRefused", "refused by the drain policy");
  add(static_cast<std::size_t>(pass.deadlocked), "DrainDeadlocked",
      "held by a budget that only drains this operator holds could open (their replacements "
      "have nowhere else to run)");
  add(pass.blocked.size(), "EvictionBlocked",
      "blocked by a PodDisruptionBudget; retrying every 5 s");
  add(pass.failed.size(), "EvictionFailed", "whose eviction failed; retrying with backoff");
  add(pass.stuck.size(), "PodsStuckTerminating", "stuck terminating past their grace period");
  add(pass.waiting.size(), "WaitingForCompletion", "let finish (drainPolicy.waitForCompletion)");
  if (parts.empty()) {
    // No count here: it would change, and be written, as each pod goes.
    if (pass.not_evicted > 0)
      return {"Evicting", std::to_string(pass.not_evicted) + " pod(s) left to evict"};
    return {"Terminating", "no pod is left to evict; waiting for the evicted ones to terminate"};
  }
  std::string message;
  for (const auto& p : parts)
    message += (message.empty() ? "" : "; ") + p;
  return {reason, message};
}

// On a node in DRA mode, once the taint has taken the driver down: what it published so far
// is from before DCM ran, and verification does not count it as the change's result.
void record_slices_before_dcm(const node_inputs& in, status_editor& s) {
  if (!s.status.dra)
    return;
  auto& marks = s.status.dra->slices_before_dcm;
  marks.clear();
  for (const auto& slice : in.slices)
    if (slice.driver == s.status.dra->driver && marks.size() < 64)
      marks.push_back(slice_mark(slice));
}

// One pass of the drain's evictions, written to status: true while pods are left to go
// (the Drained condition says what holds them), else Drained with `done`.
bool evicting(const eviction_pass& pass, status_editor& s, node_step& out,
              const std::string& done) {
  out.removals = pass.removals;
  name_losses(pass, out);
  s.status.drain.pods_evicted = pass.evicted;
  s.status.drain.pods_total =
      std::max<std::int32_t>(s.status.drain.pods_total, pass.evicted + pass.uncounted);
  if (!(pass.shown == s.original.drain.blocking_pods))
    announce_holds(pass.shown, out);
  s.status.drain.pods_blocked =
      static_cast<std::int32_t>(pass.blocked.size() + pass.refused.size() + pass.failed.size());
  s.status.drain.blocking_pdbs = pass.blocking_pdbs;
  s.status.drain.blocking_pods = pass.shown;
  if (pass.left > 0) {
    const auto [reason, message] = drain_holds(pass);
    s.condition(node_condition::drained, false, reason, message);
    out.requeue = poll_interval;
    return true;
  }
  s.condition(node_condition::drained, true, "Drained", done);
  return false;
}

// The drain before its taint is on (`tainted`): its timeout, then a pass of evictions (Drained
// with `done` once none is left), or the note that the drain is disabled and what removes
// the pods instead (`remover`). True when the step ends here.
bool drain_stops_here(const node_inputs& in, status_editor& s, node_step& out,
                      const eviction_pass& pass, bool tainted, const std::string& done,
                      const std::string& remover) {
  const auto& drain = in.item.spec.drain;
  if (past(s, drain_timeout_seconds(drain))) {
    fail_and_roll_back(
        in, s, out, "DrainTimeout",
        drain_timeout_reason(pass, in.pdbs, timeout_of(drain_timeout_seconds(drain))));
    return true;
  }
  if (!drain.enabled) {
    s.condition(node_condition::drained, false, "DrainDisabled",
                "drainPolicy.enabled is false: " + remover +
                    " without regard for PodDisruptionBudgets");
    return false;
  }
  return !tainted && evicting(pass, s, out, done);
}

// The end of a drain, its taint on: `left` pods it removes (`which`) still terminating hold
// it; then Applying.
void drained_once_gone(const node_inputs& in, status_editor& s, node_step& out, std::int32_t left,
                       const std::string& which, const std::string& drained) {
  if (left > 0) {
    s.condition(node_condition::drained, false, "WaitingForPods",
                std::to_string(left) + " pod(s) " + which + " are still terminating");
    out.requeue = poll_interval;
    return;
  }
  if (in.item.spec.drain.enabled)
    s.condition(node_condition::drained, true, "Drained", drained);
  record_slices_before_dcm(in, s);
  s.enter(node_phase::applying, "Drained", "handing profile " + in.profile.dcm_name + " to DCM");
  out.requeue = 1ms;
}

// drainPolicy.cordon Devices: a DeviceTaintRule keeps new claims off the node's GPU
// devices (NoSchedule) while the pods holding them are evicted through the Eviction API;
// then NoExecute, which has kube-controller-manager delete whatever still uses them
// (without regard for budgets: a backstop once the drain is over). The node stays
// schedulable and keeps the pods that use no GPU.
void drain_devices(const node_inputs& in, status_editor& s, node_step& out) {
  const auto& drain = in.item.spec.drain;
  const auto& dra = *s.status.dra;
  const auto* rule = observed_rule(in, dra.device_taint_rule);
  if (rule == nullptr) {
    out.device_taint = rule_write(in, dra, "NoSchedule");
    out.events.push_back({true, "Normal", "DevicesCordoned",
                          "DeviceTaintRule " + dra.device_taint_rule +
                              " keeps new claims off the " + dra.driver + " devices of pool " +
                              dra.pool + " (NoSchedule); pods without GPUs keep running"});
    out.requeue = poll_interval;
    return;
  }
  s.condition(node_condition::node_cordoned, true, "DevicesCordoned",
              "DeviceTaintRule " + dra.device_taint_rule +
                  ": no new claim gets the node's GPUs; the node stays schedulable");
  const auto holders = gpu_pods(in.pods);
  const auto context = drain_context_of(in, s.entered());
  const auto pass = plan_evictions(holders, in.pdbs, in.evictions, drain, context);
  const bool no_execute = rule->effect == "NoExecute";
  if (drain_stops_here(in, s, out, pass, no_execute,
                       "every pod holding the node's GPUs was evicted",
                       "the NoExecute device taint removes the pods holding GPUs"))
    return;
  if (!no_execute) {
    out.device_taint = rule_write(in, dra, "NoExecute");
    out.events.push_back({true, "Normal", "DevicesTainted",
                          "DeviceTaintRule " + dra.device_taint_rule + ": NoExecute"});
    out.requeue = poll_interval;
    return;
  }
  s.condition(node_condition::node_tainted, true, "DevicesTainted",
              "DeviceTaintRule " + dra.device_taint_rule + " is NoExecute");
  std::int32_t left = 0;
  for (const auto& pod : holders)
    if (!pod.mirror && !pod.finished() && !deletion_not_awaited(pod, drain, context))
      ++left;
  drained_once_gone(in, s, out, left, "holding the node's GPUs", "no pod holds the node's GPUs");
}

void on_draining(const node_inputs& in, status_editor& s, node_step& out) {
  const auto& node = *in.node;
  const auto& drain = in.item.spec.drain;
  out.in_flight = true;
  // The drain ended and Applying wrote to the node before Applying was written (the label,
  // or its removal for a relabel, goes out once Draining is on record, see on_applying):
  // DCM may be at work, whatever the drain's timeout or the profile says now. Applying
  // finds the label and waits for DCM, or sets the label again.
  if (marked_by_this_run(in, s)) {
    s.condition(node_condition::drained, true, "Drained",
                "the node runs no pod that holds its GPUs");
    record_slices_before_dcm(in, s);
    s.enter(node_phase::applying, "Drained", "the drain was over: handing the profile to DCM");
    out.requeue = 1ms;
    return;
  }
  // The profile (or its payload) went away: the plan no longer says what this node is to
  // become, so stop draining it and give it back.
  if (!in.profile.found || !in.profile.payload) {
    fail_and_roll_back(in, s, out, "ProfileUnavailable", why_profile_unavailable(in));
    return;
  }
  // The plan's profiles go to DCM's config now, while the node drains: DCM sees them only
  // once kubelet has refreshed its mounted file, and the label waits for that. A missing
  // ConfigMap is not made here: DCM's pods mount the one the GPU operator provides, and
  // Applying fails the node without it.
  if (in.dcm.found)
    out.dcm = missing_profiles(in);
  if (!device_rule(s.status).empty()) {
    drain_devices(in, s, out);
    return;
  }
  // Cordon, remembering whether an admin had cordoned it already. A record that is not
  // "true" or "false" (garbage, edited by hand) is written afresh.
  if (!well_formed_record(annotation(node, was_unschedulable_annotation))) {
    node_patch p;
    p.annotations[was_unschedulable_annotation] = node.unschedulable ? "true" : "false";
    p.unschedulable = true;
    out.patch = p;
    out.events.push_back({true, "Normal", "Cordoned",
                          node.unschedulable ? "already cordoned (kept after the change)"
                                             : "cordoned for repartitioning"});
    out.requeue = poll_interval;
    return;
  }
  if (!node.unschedulable) {
    node_patch p;
    p.unschedulable = true;
    out.patch = p;
    out.requeue = poll_interval;
    return;
  }
  s.condition(node_condition::node_cordoned, true, "Cordoned",
              "no new pods are scheduled to the node");

  const auto context = drain_context_of(in, s.entered());
  const auto pass = plan_evictions(in.pods, in.pdbs, in.evictions, drain, context);
  if (drain_stops_here(in, s, out, pass, node.has_dcm_taint(),
                       "every pod the taint would remove was evicted", "the taint removes pods"))
    return;
  // The taint comes after the PDB-respecting drain: it removes what is left (the GPU
  // operator's device plugin and labeller among them) regardless of PDBs.
  if (!node.has_dcm_taint()) {
    out.taint = true;
    out.confirm_drained = drain.enabled;
    out.not_awaited = pass.not_awaited;
    out.events.push_back({true, "Normal", "Tainted", "amd-dcm=up:NoExecute added"});
    out.requeue = poll_interval;
    return;
  }
  s.condition(node_condition::node_tainted, true, "Tainted", "amd-dcm=up:NoExecute is on the node");
  std::int32_t left = 0;
  for (const auto& pod : in.pods)
    if (!pod.mirror && !pod.finished() && !pod.tolerates_dcm_taint() &&
        !deletion_not_awaited(pod, drain, context))
      ++left;
  drained_once_gone(in, s, out, left, "not tolerating the taint",
                    "the node runs no pod that holds its GPUs");
}

// Once DCM was asked, the node carries this run's mark until the run ends. A node without
// it was deleted and created again under the same name (or our label and mark were taken
// off): DCM was never asked on this Node, which is neither cordoned nor tainted any more
// and may run pods again. The run goes back to its drain and keeps its token. (Only the
// run's start is compared: a spec changed since the label was written is not a lost mark.)
bool run_mark_lost(const node_inputs& in, status_editor& s, node_step& out) {
  const auto held = annotation(*in.node, applied_hash_annotation);
  const std::string mark = held.value_or("");
  const auto at = mark.rfind('@');
  if (at != std::string::npos && mark.substr(at + 1) == s.status.started_at)
    return false;
  // Nothing of ours on a node in the target state: the run's end (the restore, which takes
  // the mark off) reached the node before its status was written. Nothing is left to do.
  if (!held && !annotation(*in.node, was_unschedulable_annotation) && in_target_state(in))
    return false;
  auto& c = s.status.conditions;
  c.erase(std::remove_if(c.begin(), c.end(),
                         [](const auto& x) {
                           return x.type == node_condition::operator_succeeded ||
                                  x.type == node_condition::verified ||
                                  x.type == node_condition::node_tainted;
                         }),
          c.end());
  s.condition(node_condition::profile_applied, false, "RunMarkLost",
              "the node no longer carries this run's profile label and mark");
  s.status.drain = {};
  s.enter(node_phase::draining, "NodeReplaced",
          "the node lost this run's profile label and mark (deleted and created again?): "
          "draining it again",
          true);
  out.in_flight = true;
  out.requeue = 1ms;
  return true;
}

void on_applying(const node_inputs& in, status_editor& s, node_step& out) {
  const auto& node = *in.node;
  out.in_flight = true;
  // The label is ours for this run when the annotation holds this run's mark: then DCM
  // is (or may be) at work, whatever happened to the profile since.
  const std::string mark = run_mark(in, s);
  const std::string labelled = node.label(dcm_profile_label);
  if (labelled_by_this_run(in, s)) {
    s.condition(node_condition::profile_applied, true, "LabelSet",
                std::string(dcm_profile_label) + "=" + labelled + " is set");
    s.enter(node_phase::waiting_operator, "ProfileApplied",
            "waiting for DCM to partition the GPUs");
    out.events.push_back(
        {true, "Normal", "ProfileApplied", "DCM profile " + labelled + " requested"});
    out.requeue = poll_interval;
    return;
  }
  const std::string& profile = in.profile.dcm_name;
  if (!in.profile.found || !in.profile.payload || !in.dcm.found ||
      payload_problem(*in.profile.payload)) {
    // Preflight passed earlier; the profile, its payload or DCM's ConfigMap went away
    // since. The GPUs were not touched yet: give the node back.
    fail_and_roll_back(in, s, out, "ProfileUnavailable", why_profile_unavailable(in));
    return;
  }
  const auto timeout = in.item.spec.verification.timeout_seconds;
  if (past(s, timeout)) {
    // The profile never reached DCM (its ConfigMap cannot be written, say): nothing on
    // the GPUs changed, so the node goes back to service.
    fail_and_roll_back(in, s, out, "ApplyTimeout",
                       "the profile could not be handed to DCM within " +
                           std::to_string(timeout_of(timeout)) + " s" +
                           (in.write_error.empty() ? "" : ": " + in.write_error));
    return;
  }
  if (!in.profile.dcm_name_rivals.empty()) {
    // Writing now would replace another profile's payload under the same DCM name.
    fail_and_roll_back(in, s, out, "ProfileUnavailable",
                       rival_finding(in.profile, in.profile.dcm_name_rivals.front()).text());
    return;
  }
  if (!in.dcm_name_holders.empty()) {
    fail_and_roll_back(in, s, out, "ProfileUnavailable", holders_finding(in).text());
    return;
  }
  if (in.profile.payload_hash != s.status.observed_payload_hash) {
    // The payload was edited while the node drained: it gets the new one, and says so.
    if (!s.status.observed_payload_hash.empty())
      out.events.push_back({false, "Warning", "PayloadChanged",
                            "the payload of profile " + in.profile.name +
                                " changed during the run: the node gets the new one (" +
                                in.profile.payload_hash +
                                "), which the nodes done before "
                                "get in runs of their own"});
    s.status.observed_payload_hash = in.profile.payload_hash;
  }
  if (!dcm_config_has(in.dcm.config_json, profile, *in.profile.payload)) {
    out.dcm = missing_profiles(in);
    s.condition(node_condition::profile_applied, false, "WritingDCMConfig",
                "adding profile " + profile + " to " + in.dcm.ns + "/" + in.dcm.name);
    out.requeue = poll_interval;
    return;
  }
  // DCM reads its config as a mounted file that kubelet refreshes on its own period: a
  // label set before the file holds the profile gets NonExistentProfile.
  if (in.dcm.written_at && in.now < *in.dcm.written_at + in.dcm.sync) {
    const auto at = *in.dcm.written_at + in.dcm.sync;
    s.condition(node_condition::profile_applied, false, "WaitingForDCMConfig",
                "DCM's config holds profile " + profile + " since " +
                    protocol::format_time(*in.dcm.written_at) +
                    "; kubelet delivers it to DCM's file within " +
                    std::to_string(in.dcm.sync.count() / 1000) + " s: labelling at " +
                    protocol::format_time(at));
    out.requeue =
        std::max(poll_interval, std::chrono::duration_cast<std::chrono::milliseconds>(at - in.now));
    return;
  }
  // Claims on the node's GPUs outlive their pods briefly: kube-controller-manager clears
  // a claim's allocation once no pod holds it. DCM must not change devices still allocated.
  if (s.status.dra)
    if (const auto claims = gpu_claims(in.claims); !claims.empty()) {
      std::vector<std::string> names;
      for (const auto* c : claims)
        names.push_back(c->ns + "/" + c->name);
      s.condition(node_condition::profile_applied, false, "WaitingForClaims",
                  std::to_string(claims.size()) +
                      " ResourceClaim(s) still allocated on the node's GPUs: " + comma_list(names));
      out.requeue = poll_interval;
      return;
    }
  node_patch p;
  if (node.label(dcm_profile_label) == profile) {
    // DCM ignores a re-write of the same value: take the label off first (with this
    // run's mark, so that a restarted operator knows the drain was over).
    p.labels[dcm_profile_label] = std::nullopt;
    p.labels[dcm_state_label] = std::nullopt;
    p.annotations[applied_hash_annotation] = mark;
  } else {
    // One patch: the new profile, no stale state (a `success` left from an earlier run
    // must not be taken for this one's), and the mark that the label is ours.
    p.labels[dcm_profile_label] = profile;
    p.labels[dcm_state_label] = std::nullopt;
    p.annotations[applied_hash_annotation] = mark;
  }
  out.patch = p;
  // Without waiting for Applying to be written: an operator restarted in between reads
  // Draining and a node with this run's mark, and goes on to Applying, which waits for
  // DCM (the label is there) or sets the label again (it was taken off).
  out.enough_on_record = node_phase::draining;
  out.requeue = poll_interval;
}

void fail_keeping_cordon(const node_inputs& in, status_editor& s, node_step& out,
                         const std::string& reason, const std::string& message) {
  s.error(message);
  const auto rule = device_rule(s.status);
  s.enter(node_phase::failed, reason,
          message + (rule.empty()
                         ? "; the node stays cordoned (its GPUs may be in an unknown state)"
                         : "; its GPUs stay tainted by DeviceTaintRule " + rule +
                               " (they may be in an unknown state)"),
          true);
  out.events.push_back({true, "Warning", reason, message});
  if (in.node->has_dcm_taint())
    out.taint = false;
}

// When the current run entered Applying (the label is written after): DCM's answers to
// this request are no older. Events carry whole seconds.
// DCM's answer to this run is newer than the run's start (the cordon): no DCM run for the
// label this run sets can be older. Not the latest entry into Applying: an operator
// restarted after the label was set enters Applying again, and DCM may have answered in
// between; nor the first on record, as the label may go out before Applying is written.
// In whole seconds, as Events are.
protocol::wall_clock::time_point run_started_at(const status_editor& s) {
  if (auto started = protocol::parse_time(s.status.started_at))
    return std::chrono::time_point_cast<std::chrono::seconds>(*started);
  return std::chrono::time_point_cast<std::chrono::seconds>(s.entered());
}

// The pods on the node that hold GPUs (they request an amd.com/ resource), for messages.
std::string gpu_holders(const node_inputs& in) {
  std::string who;
  for (const auto& p : in.pods)
    if (p.gpus > 0 && !p.finished())
      who += (who.empty() ? "" : ", ") + p.ns + "/" + p.name;
  return who;
}

void on_waiting_operator(const node_inputs& in, status_editor& s, node_step& out) {
  out.in_flight = true;
  if (run_mark_lost(in, s, out))
    return;
  const std::string& profile = in.profile.dcm_name;
  // The state label is not tied to a request: a run for the previous label may finish
  // and write it after ours was set. DCM's Event names the profile it served: the newest
  // one for ours since this run's label is DCM's answer.
  const auto since = run_started_at(s);
  const dcm_event_info* answer = nullptr;
  for (const auto& e : in.dcm_events)
    if (e.profile == profile && e.time >= since && (!answer || e.time >= answer->time))
      answer = &e;
  const std::string state = in.node->label(dcm_state_label);
  // Without DCM's Events (lost, or not permitted) the state label alone decides, once
  // longer than any run of DCM's has passed (half the plan's verification timeout).
  const auto fallback = std::chrono::seconds(
      std::max<long long>(30, timeout_of(in.item.spec.verification.timeout_seconds) / 2));
  const bool unconfirmed_for_long = !answer && in.now - s.entered() >= fallback;
  auto succeed = [&](const std::string& reason, const std::string& message) {
    s.condition(node_condition::operator_succeeded, true, reason, message);
    s.enter(node_phase::verifying, "OperatorSucceeded",
            device_rule(s.status).empty()
                ? "DCM partitioned the GPUs; removing the taint so the device plugin restarts"
                : "DCM partitioned the GPUs; restarting the DRA driver so it publishes them");
    out.requeue = 1ms;
  };
  if (answer && dcm_success_reason(answer->reason)) {
    succeed("DCMSucceeded",
            "DCM reported success for profile " + profile + " (" + answer->reason + ")");
    return;
  }
  if (state == "success" && unconfirmed_for_long) {
    succeed("DCMSucceededUnconfirmed",
            "DCM's state label says success; no Event of DCM's confirmed it for profile " +
                profile);
    return;
  }
  if (answer && answer->reason == "PartitionRetrying") {
    // DCM retries busy GPUs every minute for up to 30 minutes: keep waiting, bounded by
    // the plan's verification timeout below.
    const std::string who = gpu_holders(in);
    s.condition(node_condition::operator_succeeded, false, "DCMRetrying",
                "DCM finds the GPUs busy and retries every minute for up to 30 minutes" +
                    (who.empty() ? std::string(" (no pod here holds GPUs: a host process may)")
                                 : "; pods holding GPUs: " + who));
  } else if (answer && answer->reason == "NonExistentProfile") {
    // The label went out once the config was old enough; kubelet may still be slower.
    // DCM runs the label again when its file changes.
    s.condition(node_condition::operator_succeeded, false, "DCMConfigNotDelivered",
                "DCM's file does not hold profile " + profile +
                    " yet; DCM runs the label again when kubelet delivers it");
  } else if (answer || (state == "failure" && unconfirmed_for_long)) {
    std::string why = "DCM reported failure for profile " + profile;
    if (answer)
      why += ": " + answer->reason + ": " + answer->message;
    s.condition(node_condition::operator_succeeded, false, "DCMFailed", "DCM reported failure");
    fail_keeping_cordon(in, s, out, "OperatorFailed", why);
    return;
  } else {
    s.condition(node_condition::operator_succeeded, false, "Waiting",
                "waiting for DCM's answer for profile " + profile +
                    (state.empty() ? std::string() : " (the state label says " + state + ")"));
  }
  const auto timeout = in.item.spec.verification.timeout_seconds;
  if (past(s, timeout)) {
    s.condition(node_condition::operator_succeeded, false, "DCMTimeout", "DCM did not answer");
    fail_keeping_cordon(in, s, out, "OperatorTimeout",
                        "DCM did not report a result within " +
                            std::to_string(timeout_of(timeout)) + " s");
    return;
  }
  out.requeue = poll_interval;
}

// The GPU operator's device plugin on the node crash-looping after the untaint (it exits,
// say, on GPUs of mixed styles): the resources will not come. Its pod and restarts, or "".
std::string crash_looping_plugin(const node_inputs& in) {
  for (const auto& pod : in.pods)
    if (pod.device_plugin && pod.daemon_set && pod.ns == in.dcm.ns && pod.crash_looping &&
        pod.restarts >= plugin_crash_restarts)
      return pod.ns + "/" + pod.name + " (CrashLoopBackOff, " + std::to_string(pod.restarts) +
             " restarts)";
  return {};
}

// drainPolicy.cordon Devices: AMD's DRA driver ran on through DCM's change and still
// publishes the partitions it found at its start. Its pods on the node are deleted once
// (their DaemonSet starts them again, and the new driver publishes what DCM made); true
// while that is being asked.
bool restarting_driver(const node_inputs& in, status_editor& s, node_step& out) {
  auto& dra = *s.status.dra;
  if (!dra.driver_restarted_at.empty())
    return false;
  std::vector<std::string> names;
  dra.restarted_driver_pods.clear();
  for (const auto& pod : in.pods) {
    if (!pod.dra_driver || pod.deleting || pod.finished())
      continue;
    pod_removal r;
    r.ns = pod.ns;
    r.name = pod.name;
    r.uid = pod.uid;
    r.evict = false;
    out.removals.push_back(r);
    names.push_back(pod.ns + "/" + pod.name);
    if (dra.restarted_driver_pods.size() < 16)
      dra.restarted_driver_pods.push_back(pod.uid);
  }
  dra.driver_restarted_at = protocol::format_time(in.now);
  if (names.empty())
    out.events.push_back({true, "Warning", "DRADriverNotFound",
                          "no pod of AMD's DRA driver runs on the node to restart: its devices "
                          "are verified as it publishes them"});
  else
    out.events.push_back({true, "Normal", "DRADriverRestarted",
                          "deleted " + comma_list(names) +
                              " so that the DRA driver starts again and publishes the new "
                              "partitions"});
  out.requeue = poll_interval;
  return true;
}

void on_verifying(const node_inputs& in, status_editor& s, node_step& out) {
  const auto& node = *in.node;
  out.in_flight = true;
  if (run_mark_lost(in, s, out))
    return;
  if (node.has_dcm_taint()) {
    out.taint = false;
    // Without waiting for Verifying to be written: an operator restarted in between reads
    // WaitingOperator, DCM's `success` (DCM keeps it) and this run's mark, enters
    // Verifying again and finds the taint gone.
    out.enough_on_record = node_phase::waiting_operator;
    out.events.push_back({true, "Normal", "Untainted", "amd-dcm=up:NoExecute removed"});
    out.requeue = poll_interval;
    return;
  }
  if (device_rule(s.status).empty())
    s.condition(node_condition::node_tainted, false, "Untainted",
                "the taint is gone; the device plugin restarts");
  else if (restarting_driver(in, s, out))
    return;
  const std::string gap = verification_gap(in);
  if (gap.empty()) {
    s.condition(node_condition::verified, true, "Verified",
                "the node reports the expected GPU resources");
    s.status.completed_at = protocol::format_time(in.now);
    s.error("");
    s.enter(node_phase::succeeded, "Verified", "profile " + in.profile.dcm_name + " is in place");
    out.events.push_back(
        {true, "Normal", "Partitioned", "profile " + in.profile.dcm_name + " verified"});
    // Without waiting for Succeeded to be written: an operator restarted in between reads
    // Verifying and a node in the target state without our mark, and succeeds again.
    if (restore_node(in, s, out, false))
      out.enough_on_record = node_phase::verifying;
    return;
  }
  s.condition(node_condition::verified, false, "Mismatch", gap);
  // No use waiting out the timeout for resources a crash-looping plugin will not report.
  if (const auto plugin = crash_looping_plugin(in); !plugin.empty()) {
    fail_keeping_cordon(in, s, out, "DevicePluginCrashLooping",
                        "the device plugin's pod " + plugin +
                            " is crash-looping since the taint was removed: " + gap);
    return;
  }
  const auto timeout = in.profile.found ? in.profile.spec.verification.timeout_seconds
                                        : in.item.spec.verification.timeout_seconds;
  if (past(s, timeout)) {
    fail_keeping_cordon(in, s, out, "VerificationFailed",
                        "verification failed after " + std::to_string(timeout_of(timeout)) +
                            " s: " + gap);
    return;
  }
  out.requeue = poll_interval;
}

// spec.soakSeconds after a success that changed the node: it holds its token while it
// stays verified and healthy, and fails (left in service, as it is) if it does not.
void soak(const node_inputs& in, status_editor& s, node_step& out) {
  if (in.item.spec.soak_seconds.value_or(0) <= 0) {
    s.drop_condition(node_condition::soaked);
    return;
  }
  protocol::node_partitioning current = in.item;
  current.status = s.status;
  const auto end = soak_end(current);
  if (!end) {
    s.condition(node_condition::soaked, true, "NothingToSoak",
                "the node was already in the target state");
    return;
  }
  if (in.now >= *end) {
    s.condition(node_condition::soaked, true, "Soaked",
                "verified and healthy for " + std::to_string(*in.item.spec.soak_seconds) + " s");
    return;
  }
  const auto since = *protocol::parse_time(s.status.completed_at);
  if (const auto problem = soak_problem(in, since); !problem.empty()) {
    s.condition(node_condition::soaked, false, problem.reason, problem.message);
    const std::string why = "during its soak: " + problem.text();
    s.error(why);
    s.enter(node_phase::failed, "SoakFailed", why + "; the node is left in service as it is", true);
    out.events.push_back({true, "Warning", "SoakFailed", why});
    return;
  }
  s.condition(node_condition::soaked, false, "Soaking",
              "watched until " + protocol::format_time(*end) +
                  ": Ready, verified, no crash-looping GPU pod, no new DCM failure");
  out.in_flight = true;
  out.soaking = true;
  out.requeue = std::chrono::duration_cast<std::chrono::milliseconds>(*end - in.now) + 1ms;
}

void on_succeeded(const node_inputs& in, status_editor& s, node_step& out) {
  if (s.status.observed_hash != in.item.spec.desired_hash) {
    s.enter(node_phase::pending, "SpecChanged",
            "the desired profile or policy changed: re-running");
    out.requeue = 1ms;
    return;
  }
  if (payload_changed(in, s.status)) {
    s.enter(node_phase::pending, "PayloadChanged",
            "the payload of profile " + in.profile.name + " changed since the node ran (now " +
                in.profile.payload_hash + "): re-running");
    out.requeue = 1ms;
    return;
  }
  // A success recorded before payloads were: it ran the payload there is now, as far as
  // anyone knows, and a later edit is measured from here.
  if (s.status.observed_payload_hash.empty())
    s.status.observed_payload_hash = in.profile.payload_hash;
  // Finish returning the node: uncordon (unless an admin had cordoned it). A node that
  // was already in the target state was never taken.
  if (run_started(s.status) && restore_node(in, s, out, false)) {
    out.requeue = poll_interval;
    if (soak_end(in.item))
      out.in_flight = true; // its soak has not begun: the token stays
    return;
  }
  soak(in, s, out);
}

void on_failed(const node_inputs& in, status_editor& s, node_step& out) {
  const auto& history = s.status.history;
  const bool preflight_failure = !history.empty() && history.back().reason == "PreflightFailed";
  // The plan's profile or policies changed since the node failed, or the payload since
  // its last run (a failed preflight gave DCM nothing: it clears itself when fixed).
  const bool spec_changed = s.status.observed_hash != in.item.spec.desired_hash ||
                            (!preflight_failure && payload_changed(in, s.status));
  if (!gpus_unsettled(s.status)) {
    // Nothing on the GPUs was touched: the node goes back to service (if this run took
    // it), and a failure of preflight clears itself once the cause is fixed.
    if (run_started(s.status) && restore_node(in, s, out, false)) {
      out.requeue = poll_interval;
      return;
    }
    // A new spec is a new attempt, and a safe one: the node is in service on GPUs
    // nothing changed. It queues for a token like any other.
    if (spec_changed) {
      s.error("");
      s.status.drain = {};
      s.enter(node_phase::pending, "SpecChanged",
              "the desired profile or policy changed since the failure: starting over");
      out.requeue = 1ms;
      return;
    }
    if (!preflight_failure)
      return;
    const auto findings = preflight(in);
    if (findings.empty()) {
      s.condition(node_condition::preflight, true, "PreflightPassed",
                  "the preflight finding was resolved");
      s.error("");
      s.enter(node_phase::pending, "PreflightPassed", "the cause was fixed: starting over");
      out.requeue = 1ms;
    } else {
      // The cause may have changed (DCM's ConfigMap came back, but invalid): say what it
      // is now, not what it was.
      const auto first = findings.front().text();
      s.condition(node_condition::preflight, false, findings.front().reason, first);
      s.error(first);
      out.requeue = 10s;
    }
    return;
  }
  // The GPUs are in an unknown state: keep the cordon, lift the taint so the device
  // plugin and labeller report what they see.
  if (in.node->has_dcm_taint())
    out.taint = false;
  // A new spec is not started on such a node by itself: an admin checks it first, and
  // the status says what is pending.
  if (spec_changed) {
    const bool known =
        std::any_of(s.original.conditions.begin(), s.original.conditions.end(), [](const auto& c) {
          return c.type == node_condition::up_to_date && c.reason == "RetryNeeded";
        });
    const std::string message =
        "the desired profile or policy changed after this node failed with its GPUs in an "
        "unknown state; it stays cordoned until checked: annotate " +
        std::string(retry_annotation) + " to apply the new spec";
    s.condition(node_condition::up_to_date, false, "RetryNeeded", message);
    if (!known)
      out.events.push_back({false, "Warning", "RetryNeeded", message});
  } else {
    s.drop_condition(node_condition::up_to_date);
  }
}

void on_deleting(const node_inputs& in, status_editor& s, node_step& out) {
  const node_phase phase = s.phase();
  const bool touched_gpus =
      (phase == node_phase::applying || phase == node_phase::waiting_operator ||
       phase == node_phase::verifying || gpus_unsettled(s.status));
  if (in.node) {
    if (touched_gpus) {
      const auto rule = device_rule(s.status);
      if (rule.empty()) {
        out.events.push_back({true, "Warning", "LeftCordoned",
                              "NodePartitioning deleted while in " +
                                  std::string(phase_name(phase)) +
                                  ": the node stays cordoned (its GPUs may be mid-change); "
                                  "uncordon it once checked"});
        out.events.push_back({false, "Warning", "LeftCordoned",
                              "deleted in " + std::string(phase_name(phase)) + ": node " +
                                  in.item.spec.node_name + " left cordoned"});
      } else {
        out.events.push_back({true, "Warning", "LeftTainted",
                              "NodePartitioning deleted while in " +
                                  std::string(phase_name(phase)) + ": DeviceTaintRule " + rule +
                                  " stays on the node's GPUs (they may be mid-change); delete "
                                  "it once they are checked"});
      }
      if (in.node->has_dcm_taint() && annotation(*in.node, was_unschedulable_annotation))
        out.taint = false;
    } else if (run_started(s.status) && restore_node(in, s, out, false)) {
      // Undo first; the finalizer goes on the next step, once the node is back.
      out.requeue = poll_interval;
      return;
    }
  }
  out.remove_finalizer = true;
}

} // namespace

node_step step_node(const node_inputs& in) {
  node_step out;
  status_editor s{in.item.status, in.item.status, in.now, out};
  if (!s.status.phase)
    s.status.phase = node_phase::pending;

  if (in.item.metadata.deletion_timestamp) {
    on_deleting(in, s, out);
    s.finish();
    return out;
  }
  if (!in.plan.owned) {
    // Its plan (by uid) is gone and the item names it as owner: the garbage collector
    // deletes it. No status for it, which would be a write per node of a deleted plan.
    const auto& owners = in.item.metadata.owner_references;
    if (std::any_of(owners.begin(), owners.end(), [&](const auto& o) {
          return o.kind == "PartitioningPlan" && o.uid == in.item.spec.plan_ref.uid;
        })) {
      s.finish();
      return out;
    }
    // Not an item of a live plan: say so, and do nothing else (no finalizer either).
    const auto& p = in.plan.problem;
    s.condition(node_condition::owned, false, p.reason, p.text());
    s.finish();
    return out;
  }
  if (!has_finalizer(in.item))
    out.add_finalizer = true;
  if (!in.node) {
    const bool flying = s.phase() != node_phase::pending && s.phase() != node_phase::succeeded &&
                        s.phase() != node_phase::failed;
    s.error("node " + in.item.spec.node_name + " not found");
    if (flying)
      s.enter(node_phase::failed, "NodeGone", "the node disappeared", true);
    s.finish();
    return out;
  }
  if (!in.write_error.empty())
    s.error(in.write_error);
  else if (!in.resolved_write_error.empty() && s.status.last_error == in.resolved_write_error)
    s.error(""); // the write went through after all: no stale error on a node that is fine

  const bool retry = in.item.metadata.annotations.count(retry_annotation) > 0;
  if (retry) {
    out.clear_retry = true;
    if (s.phase() == node_phase::failed) {
      s.error("");
      s.status.drain = {};
      s.drop_condition(node_condition::up_to_date);
      s.enter(node_phase::pending, "Retry", "retry requested by " + std::string(retry_annotation));
    }
  }
  switch (s.phase()) {
  case node_phase::pending:
    on_pending(in, s, out);
    break;
  case node_phase::draining:
    on_draining(in, s, out);
    break;
  case node_phase::applying:
    on_applying(in, s, out);
    break;
  case node_phase::waiting_operator:
    on_waiting_operator(in, s, out);
    break;
  case node_phase::verifying:
    on_verifying(in, s, out);
    break;
  case node_phase::succeeded:
    on_succeeded(in, s, out);
    break;
  case node_phase::failed:
    on_failed(in, s, out);
    break;
  }
  s.finish();
  return out;
}

} // namespace gpu_partitioner::controller
