// Draining: cordon (or, drainPolicy.cordon Devices, a DeviceTaintRule on the GPUs), one
// bounded pass of evictions per step, then the taint, until no pod it removes is left.

#include "controller/detail/node_steps.hpp"

#include "controller/dra.hpp"
#include "controller/drain.hpp"
#include "controller/short_list.hpp"

#include <algorithm>

namespace gpu_partitioner::controller::detail {

namespace {

// What became of the evictions this run asked for. Another run's (the node's last one,
// retried or run again for a new spec) say nothing of this one: its pods were evicted
// then, and the drain counts, holds and warns of data loss afresh.
std::map<std::string, eviction_memory> this_run(const node_inputs& in, const status_editor& s) {
  std::map<std::string, eviction_memory> mine;
  for (const auto& [pod, memory] : in.evictions)
    if (memory.run == s.status.started_at)
      mine.emplace(pod, memory);
  return mine;
}

bool well_formed_record(const std::optional<std::string>& was_unschedulable) {
  return was_unschedulable && (*was_unschedulable == "true" || *was_unschedulable == "false");
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
  const auto pass = plan_evictions(holders, in.pdbs, this_run(in, s), drain, context);
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

} // namespace

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
    out.dcm = missing_profiles(in, false);
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
  const auto pass = plan_evictions(in.pods, in.pdbs, this_run(in, s), drain, context);
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

} // namespace gpu_partitioner::controller::detail
