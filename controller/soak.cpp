#include "controller/soak.hpp"

#include "controller/verification.hpp"

#include <set>
#include <string>

namespace gpu_partitioner::controller {

using protocol::node_phase;

namespace {

// Whether the latest entry into Succeeded follows a change of the node: a run (Verifying)
// or a failure retried. A node found in the target state was never touched: nothing of
// ours to watch.
bool success_after_change(const protocol::node_partitioning_status& st) {
  bool seen_success = false;
  for (auto it = st.history.rbegin(); it != st.history.rend(); ++it) {
    if (!seen_success) {
      if (it->phase != node_phase::succeeded)
        return false;
      seen_success = true;
      continue;
    }
    if (it->phase == node_phase::verifying || it->phase == node_phase::failed)
      return true;
    if (it->phase == node_phase::succeeded)
      return false;
  }
  return false;
}

} // namespace

bool dcm_failure_event(const dcm_event_info& e) {
  static const std::set<std::string> failures = {
      "PartitionRetrying",   "PartitionFailure",       "InvalidProfileInfo",
      "NonExistentProfile",  "InvalidJSONInConfigMap", "AMDSMIAPIFailure",
      "ConfigMapNotPresent", "DuplicateProfileExists"};
  if (dcm_success_reason(e.reason))
    return false;
  return e.type != "Normal" || failures.count(e.reason) > 0;
}

finding soak_problem(const node_inputs& in,
                     std::optional<protocol::wall_clock::time_point> dcm_events_until) {
  if (!in.node)
    return {"NodeGone", "the node disappeared"};
  const auto& node = *in.node;
  if (!node.ready)
    return {"NodeNotReady", "the node stopped reporting Ready"};
  if (node.label(dcm_state_label) == "failure")
    return {"DCMFailed", "DCM's state label says failure"};
  for (const auto& e : in.dcm_events)
    if (dcm_events_until && e.time > *dcm_events_until && dcm_failure_event(e))
      return {"DCMFailed", "DCM reported " + e.reason +
                               (e.profile.empty() ? "" : " for " + e.profile) +
                               (e.message.empty() ? "" : ": " + e.message)};
  for (const auto& p : in.pods)
    if (p.crash_looping && p.restarts >= soak_crash_restarts &&
        (p.gpus > 0 || is_gpu_device_plugin(p, in.dcm.ns)))
      return {"PodCrashLooping", p.ns + "/" + p.name + " is in CrashLoopBackOff (" +
                                     std::to_string(p.restarts) + " restarts)"};
  if (const auto gap = verification_gap(in); !gap.empty())
    return {"VerificationLost", gap};
  return {};
}

std::optional<protocol::wall_clock::time_point> soak_end(const protocol::node_partitioning& item) {
  const auto seconds = item.spec.soak_seconds.value_or(0);
  if (seconds <= 0 || item.status.phase != node_phase::succeeded ||
      !success_after_change(item.status))
    return std::nullopt;
  const auto done = protocol::parse_time(item.status.completed_at);
  if (!done)
    return std::nullopt;
  constexpr std::int64_t century = 100LL * 365 * 24 * 3600;
  return *done + std::chrono::seconds(std::min(seconds, century));
}

} // namespace gpu_partitioner::controller
