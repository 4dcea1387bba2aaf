// Pending: preflight, the dry run's preview, a node already in its target state, and the
// start of a run once the governor grants a token.

#include "controller/detail/node_steps.hpp"

#include "controller/dra.hpp"
#include "controller/preflight.hpp"
#include "controller/verification.hpp"

namespace gpu_partitioner::controller::detail {

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
  s.status.dcm_events_until = dcm_events_mark(in.dcm_events);
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

} // namespace gpu_partitioner::controller::detail
