// DCM's part: Applying (DCM's config, then the profile label and this run's mark),
// WaitingOperator (DCM's answer to this request) and Verifying (the untaint, and the
// resources the device plugin reports).

#include "controller/detail/node_steps.hpp"

#include "controller/dcm_payload.hpp"
#include "controller/dra.hpp"
#include "controller/preflight.hpp"
#include "controller/short_list.hpp"
#include "controller/verification.hpp"

#include <algorithm>

namespace gpu_partitioner::controller::detail {

namespace {

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

// The pods on the node that hold GPUs (they request an amd.com/ resource), for messages.
std::string gpu_holders(const node_inputs& in) {
  std::string who;
  for (const auto& p : in.pods)
    if (p.gpus > 0 && !p.finished())
      who += (who.empty() ? "" : ", ") + p.ns + "/" + p.name;
  return who;
}

// The GPU operator's device plugin on the node crash-looping after the untaint (it exits,
// say, on GPUs of mixed styles): the resources will not come. Its pod and restarts, or "".
std::string crash_looping_plugin(const node_inputs& in) {
  for (const auto& pod : in.pods)
    if (is_gpu_device_plugin(pod, in.dcm.ns) && pod.crash_looping &&
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

// The reason of the step back to Applying when DCM answered another profile.
const char* const relabelled_reason = "DCMAnsweredAnotherProfile";

bool relabelled_this_run(const protocol::node_partitioning_status& st) {
  for (auto it = st.history.rbegin(); it != st.history.rend(); ++it) {
    if (it->reason == relabelled_reason)
      return true;
    if (it->phase == node_phase::draining || it->phase == node_phase::pending)
      return false;
  }
  return false;
}

} // namespace

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
    out.dcm = missing_profiles(in, true);
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

void on_waiting_operator(const node_inputs& in, status_editor& s, node_step& out) {
  out.in_flight = true;
  if (run_mark_lost(in, s, out))
    return;
  const std::string& profile = in.profile.dcm_name;
  // The state label is not tied to a request: a run for the previous label may finish
  // and write it after ours was set. DCM's Event names the profile it served: the newest
  // one for ours among those the run did not find at its start (the cordon: no DCM run
  // for the label this run sets can be older) is DCM's answer. Newer by DCM's own clock,
  // the node's: never compared with ours. Not since the latest entry into Applying: an
  // operator restarted after the label was set enters Applying again, and DCM may have
  // answered in between.
  const auto until = dcm_events_until(s.status);
  const dcm_event_info* answer = nullptr;
  const dcm_event_info* progress = nullptr; // a Normal Event that answers nothing yet
  const dcm_event_info* other = nullptr;    // an answer for another profile
  for (const auto& e : in.dcm_events) {
    if (!until || e.time <= *until)
      continue;
    const bool final = dcm_success_reason(e.reason) || dcm_failure_event(e);
    if (e.profile != profile) {
      if (final && !e.profile.empty() && (!other || e.time >= other->time))
        other = &e;
      continue;
    }
    auto& newest = final ? answer : progress;
    if (!newest || e.time >= newest->time)
      newest = &e;
  }
  const std::string state = in.node->label(dcm_state_label);
  // Without DCM's Events (lost, or not permitted) the state label alone decides, once
  // longer than any run of DCM's has passed (half the plan's verification timeout).
  const auto fallback = std::chrono::seconds(
      std::max<long long>(30, timeout_of(in.item.spec.verification.timeout_seconds) / 2));
  const bool unconfirmed_for_long = !answer && in.now - s.entered() >= fallback;
  // DCM's queue holds two triggers, each with the profile read when it fired: a run of an
  // older profile (the file's change during the drain reruns the old label) may finish
  // after our label was set, and our trigger may have been dropped. Once per run, the
  // label is set again (off, then on: DCM ignores a rewrite of the same value), when ours
  // has not answered as long as the state label is waited for.
  if (unconfirmed_for_long && other && (!progress || other->time > progress->time) &&
      !relabelled_this_run(s.status)) {
    node_patch p;
    p.labels[dcm_profile_label] = std::nullopt;
    p.labels[dcm_state_label] = std::nullopt;
    out.patch = p;
    s.enter(node_phase::applying, relabelled_reason,
            "DCM answered for profile " + other->profile + " (" + other->reason +
                ") after the label was set: setting the label again");
    out.requeue = poll_interval;
    return;
  }
  auto succeed = [&](const std::string& reason, const std::string& message) {
    s.condition(node_condition::operator_succeeded, true, reason, message);
    s.status.dcm_may_change_until.clear(); // an earlier run's retries are over
    // DCM's Events until its answer are this run's: a soak reads only newer ones.
    s.status.dcm_events_until = dcm_events_mark(in.dcm_events);
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
    // A failure DCM retries (a busy GPU, a mode the kernel refused on 1.3) goes on for 30
    // minutes whatever the operator does.
    fail_keeping_cordon(in, s, out, "OperatorFailed", why,
                        !answer || !dcm_final_failure(answer->reason));
    return;
  } else if (progress) {
    s.condition(node_condition::operator_succeeded, false, "DCMInProgress",
                "DCM is working on profile " + profile + ": " + progress->reason +
                    (progress->message.empty() ? std::string() : ": " + progress->message));
  } else {
    s.condition(node_condition::operator_succeeded, false, "Waiting",
                "waiting for DCM's answer for profile " + profile +
                    (state.empty() ? std::string() : " (the state label says " + state + ")"));
  }
  const auto timeout = in.item.spec.verification.timeout_seconds;
  if (past(s, timeout)) {
    s.condition(node_condition::operator_succeeded, false, "DCMTimeout", "DCM did not answer");
    fail_keeping_cordon(
        in, s, out, "OperatorTimeout",
        "DCM did not report a result within " + std::to_string(timeout_of(timeout)) + " s", true);
    return;
  }
  out.requeue = poll_interval;
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

} // namespace gpu_partitioner::controller::detail
