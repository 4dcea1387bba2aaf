#include "controller/verification.hpp"

#include "controller/dcm_payload.hpp"
#include "controller/dra.hpp"
#include "protocol/codec/quote.hpp"

namespace gpu_partitioner::controller {

namespace codec = protocol::codec;

namespace {

// A ready label is "key" (present) or "key=value".
bool has_ready_label(const node_info& node, const std::string& spec) {
  if (spec.empty())
    return true;
  auto eq = spec.find('=');
  if (eq == std::string::npos)
    return node.labels.count(spec) > 0;
  auto it = node.labels.find(spec.substr(0, eq));
  return it != node.labels.end() && it->second == spec.substr(eq + 1);
}

// An allocatable quantity as a whole number; extended resources are integers.
std::optional<long long> whole(const std::string& quantity) {
  if (quantity.empty() || quantity.size() > 18) // more digits would overflow
    return std::nullopt;
  long long v = 0;
  for (char c : quantity) {
    if (c < '0' || c > '9')
      return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// Whether AMD's DRA driver is known to run on the node again. During a run it is down from
// the taint until Verifying takes the taint off (with drainPolicy.cordon Devices: from
// Verifying's restart of its pods), and known back once driver_back_after has passed since:
// kubelet would have deleted the slices of a driver that did not come back.
bool driver_known_back(const node_inputs& in) {
  using p = protocol::node_phase;
  const auto& st = in.item.status;
  const auto phase = st.phase.value_or(p::pending);
  if (!st.dra || (phase != p::applying && phase != p::waiting_operator && phase != p::verifying))
    return true;
  if (phase != p::verifying)
    return false;
  if (!st.dra->device_taint_rule.empty()) {
    const auto restarted = protocol::parse_time(st.dra->driver_restarted_at);
    return restarted && in.now - *restarted >= driver_back_after;
  }
  for (auto it = st.history.rbegin(); it != st.history.rend(); ++it)
    if (it->phase == p::verifying) {
      auto t = protocol::parse_time(it->time);
      return t && in.now - *t >= driver_back_after;
    }
  return false;
}

} // namespace

std::string verification_gap(const node_inputs& in) {
  const auto& node = *in.node;
  std::vector<std::string> gaps;
  const std::string item_ready = in.item.spec.verification.gpu_ready_label;
  const std::string profile_ready =
      in.profile.found ? in.profile.spec.verification.ready_label : std::string{};
  for (const auto& ready : {item_ready, profile_ready != item_ready ? profile_ready : ""})
    if (!has_ready_label(node, ready))
      gaps.push_back("ready label " + ready + " missing");
  // A node in DRA mode shows its GPUs as devices, not extended resources: those are
  // counted instead, from slices its driver published since DCM ran (or, unchanged, that
  // are still there long after the taint went, which kubelet would have deleted had the
  // driver not come back).
  const bool dra = in.item.status.dra || publishes_gpus(in.slices);
  if (dra && in.profile.found) {
    const auto* before = in.item.status.dra ? &in.item.status.dra->slices_before_dcm : nullptr;
    if (auto gap =
            devices_gap(in.slices, in.profile.spec.expected_devices, before, driver_known_back(in));
        !gap.empty())
      gaps.push_back(gap);
  }
  if (in.profile.found && !dra)
    for (const auto& want : in.profile.spec.expected_resources) {
      auto it = node.allocatable.find(want.name);
      auto have = it == node.allocatable.end() ? std::nullopt : whole(it->second);
      if (!have || *have != want.count)
        gaps.push_back("expected " + want.name + "=" + std::to_string(want.count) + ", found " +
                       (it == node.allocatable.end() ? std::string("none") : it->second));
    }
  // The labeller's partition label, where the node has it, names the GPUs' style; it
  // keeps its old value while the labeller restarts after the taint goes.
  if (in.profile.found && in.profile.payload)
    if (auto style = payload_style(*in.profile.payload)) {
      auto it = node.labels.find(partition_label);
      if (it != node.labels.end() && it->second != *style)
        gaps.push_back(std::string(partition_label) + " is " + codec::quote(it->second) +
                       ", expected " + codec::quote(*style));
    }
  for (const auto& name : in.item.spec.verification.require_plugin_resources) {
    if (dra)
      break; // no device plugin runs on a node in DRA mode
    auto it = node.allocatable.find(name);
    auto have = it == node.allocatable.end() ? std::nullopt : whole(it->second);
    if (!have || *have == 0)
      gaps.push_back("plugin resource " + name + " not reported");
  }
  if (!in.profile.found)
    gaps.push_back("profile " + in.profile.name +
                   " no longer exists, so its expected resources cannot be checked");
  std::string out;
  for (const auto& g : gaps)
    out += (out.empty() ? "" : "; ") + g;
  return out;
}

bool in_target_state(const node_inputs& in) {
  if (!in.node || !in.profile.found)
    return false;
  const auto& node = *in.node;
  // Our cordon, or a DeviceTaintRule of ours on its GPUs, still there (a run that failed
  // after DCM was asked keeps them) takes it out of service: a run that verifies the GPUs
  // lifts them.
  return node.label(dcm_profile_label) == in.profile.dcm_name &&
         node.label(dcm_state_label) == "success" && !node.has_dcm_taint() &&
         node.annotations.count(was_unschedulable_annotation) == 0 && in.taint_rules.empty() &&
         verification_gap(in).empty();
}

bool payload_changed(const node_inputs& in, const protocol::node_partitioning_status& st) {
  return !in.profile.payload_hash.empty() && !st.observed_payload_hash.empty() &&
         in.profile.payload_hash != st.observed_payload_hash;
}

} // namespace gpu_partitioner::controller
