#include "controller/canary_needs.hpp"

#include "controller/item_name.hpp"
#include "controller/item_reconcile.hpp"
#include "controller/preflight.hpp"
#include "controller/verification.hpp"

namespace gpu_partitioner::controller {

using protocol::node_phase;

canary_needs::canary_needs(const protocol::partitioning_plan& plan, const cluster_view& view,
                           const dcm_settings& dcm, protocol::wall_clock::time_point now)
    : plan_(plan), view_(view), slicer_(view, dcm), now_(now) {}

node_need canary_needs::operator()(const selected_node& sel) {
  auto node = view_.nodes.find(sel.node);
  if (node == view_.nodes.end())
    return {};
  // The item as the plan wants it now, with what its last run recorded (the payload DCM
  // was given, its DRA run, a failure).
  auto want = desired_item(plan_, sel, view_, hashes_);
  const auto* have = find_item(view_.items, plan_, sel.node);
  if (have) {
    want.metadata.name = have->metadata.name;
    want.status = have->status;
  }
  want.spec.dry_run = false;
  // The inputs point into the slice: it lives as long as they do.
  const auto slice = slicer_.slice(want);
  const auto in = assemble_node_inputs(slice, want, *node->second, {}, now_);
  if (!payload_changed(in, want.status) && in_target_state(in))
    return {};
  node_need out;
  out.change = true;
  const auto& st = want.status;
  const bool failed_here = st.phase == node_phase::failed && have &&
                           st.observed_hash == want.spec.desired_hash &&
                           !(!st.history.empty() && st.history.back().reason == "PreflightFailed");
  if (failed_here)
    out.blocked = "it failed under this desired state and waits for a retry";
  else if (!node->second->ready)
    out.blocked = "the node is not Ready";
  else if (const auto findings = preflight(in); !findings.empty())
    out.blocked = findings.front().text();
  return out;
}

} // namespace gpu_partitioner::controller
