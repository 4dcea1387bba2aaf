// Putting a node back as the run found it: the restore that ends a run, the two ways a run
// fails (rolled back, or kept cordoned once DCM was asked), Failed, and deletion.

#include "controller/detail/node_steps.hpp"
#include "controller/verification.hpp"

#include "controller/preflight.hpp"

#include <algorithm>

namespace gpu_partitioner::controller::detail {

namespace {

// Our record says an admin had cordoned the node (anything but "false": a value we did
// not write is never a reason to uncordon).
bool admin_cordoned(const std::string& was_unschedulable) {
  return was_unschedulable != "false";
}

bool we_tainted(const protocol::node_partitioning_status& st) {
  for (const auto& c : st.conditions)
    if (c.type == node_condition::node_tainted)
      return c.status == condition_status::true_;
  return false;
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

} // namespace

bool restore_node(const node_inputs& in, status_editor& s, node_step& out, bool keep_cordon) {
  if (!device_rule(s.status).empty())
    return restore_devices(in, s, out, keep_cordon);
  const auto& node = *in.node;
  const auto was = annotation(node, was_unschedulable_annotation);
  // An earlier run's failure left DCM retrying: the node stays out of service meanwhile.
  if (node.has_dcm_taint() && dcm_hold(in, s.status))
    return false;
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

void fail_and_roll_back(const node_inputs& in, status_editor& s, node_step& out,
                        const std::string& reason, const std::string& message) {
  restore_node(in, s, out, gpus_unsettled(s.status));
  s.error(message);
  s.enter(node_phase::failed, reason, message + "; the node was returned to service", true);
  out.events.push_back({true, "Warning", reason, message});
}

bool dcm_done(const node_inputs& in, const protocol::node_partitioning_status& st) {
  if (in.node && in.node->label(dcm_state_label) == "success")
    return true;
  const auto until = dcm_events_until(st);
  if (!until)
    return false;
  for (const auto& e : in.dcm_events)
    if (e.time > *until && e.profile == in.profile.dcm_name &&
        (dcm_success_reason(e.reason) || e.reason == "PartitionFailure" ||
         dcm_final_failure(e.reason)))
      return true;
  return false;
}

std::optional<protocol::wall_clock::time_point>
dcm_hold(const node_inputs& in, const protocol::node_partitioning_status& st) {
  if (st.dcm_may_change_until.empty())
    return std::nullopt;
  const auto until = protocol::parse_time(st.dcm_may_change_until);
  if (!until || in.now >= *until || dcm_done(in, st))
    return std::nullopt;
  return until;
}

void fail_keeping_cordon(const node_inputs& in, status_editor& s, node_step& out,
                         const std::string& reason, const std::string& message,
                         bool dcm_may_retry) {
  s.error(message);
  const auto rule = device_rule(s.status);
  std::string held;
  if (dcm_may_retry && rule.empty() && !dcm_done(in, s.status)) {
    // Since the label was set (this phase's entry).
    const auto until = s.entered() + in.dcm.retry_bound;
    if (in.now < until) {
      s.status.dcm_may_change_until = protocol::format_time(until);
      held = "; DCM may retry the profile until " + s.status.dcm_may_change_until +
             ": the node keeps the amd-dcm taint and its cordon until then, or until DCM "
             "says it is done";
    }
  }
  s.enter(node_phase::failed, reason,
          message + (!held.empty() ? held
                     : rule.empty()
                         ? "; the node stays cordoned (its GPUs may be in an unknown state)"
                         : "; its GPUs stay tainted by DeviceTaintRule " + rule +
                               " (they may be in an unknown state)"),
          true);
  out.events.push_back({true, "Warning", reason, message + held});
  if (held.empty() && in.node->has_dcm_taint())
    out.taint = false;
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
  // The GPUs are in an unknown state: keep the cordon. Keep the taint too while DCM may
  // still retry the profile; then lift it, so the device plugin and labeller report what
  // they see.
  if (const auto until = dcm_hold(in, s.status)) {
    out.requeue = std::max<std::chrono::milliseconds>(
        poll_interval, std::chrono::duration_cast<std::chrono::milliseconds>(*until - in.now));
  } else {
    if (!s.status.dcm_may_change_until.empty()) {
      s.status.dcm_may_change_until.clear();
      out.events.push_back({true, "Normal", "DCMDone",
                            dcm_done(in, s.status)
                                ? "DCM is done with the profile: lifting the amd-dcm taint; "
                                  "the node stays cordoned until checked"
                                : "DCM's retries are over: lifting the amd-dcm taint; the node "
                                  "stays cordoned until checked"});
    }
    if (in.node->has_dcm_taint())
      out.taint = false;
  }
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
      // DCM may still retry a failed run: the taint, and with it the item, stay until then
      // (the events below are said once, when the item goes).
      if (const auto until = dcm_hold(in, s.status); until && in.node->has_dcm_taint()) {
        out.requeue = std::max<std::chrono::milliseconds>(
            poll_interval, std::chrono::duration_cast<std::chrono::milliseconds>(*until - in.now));
        return;
      }
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

} // namespace gpu_partitioner::controller::detail
