#include "controller/verification.hpp"

#include "controller/dcm_payload.hpp"
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
  if (in.profile.found)
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
  return node.label(dcm_profile_label) == in.profile.dcm_name &&
         node.label(dcm_state_label) == "success" && !node.has_dcm_taint() &&
         verification_gap(in).empty();
}

} // namespace gpu_partitioner::controller
