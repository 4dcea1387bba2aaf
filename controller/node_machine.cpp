// step_node: the dispatch (deletion, ownership, the finalizer, a vanished node, retries)
// and what its phases share (detail/node_steps.hpp). Each phase is in a file of its own.

#include "controller/node_machine.hpp"

#include "controller/dcm_payload.hpp"
#include "controller/detail/node_steps.hpp"
#include "controller/dra.hpp"
#include "controller/preflight.hpp"
#include "protocol/codec/quote.hpp"

#include <algorithm>

namespace gpu_partitioner::controller {

namespace detail {

namespace codec = protocol::codec;

std::string_view phase_name(node_phase p) {
  return codec::to_string(p);
}

std::optional<std::string> annotation(const node_info& node, const char* key) {
  auto it = node.annotations.find(key);
  if (it == node.annotations.end())
    return std::nullopt;
  return it->second;
}

std::optional<dcm_config_write> missing_profiles(const node_inputs& in, bool drained) {
  std::map<std::string, std::string> all = in.plan_profiles;
  if (in.profile.found && in.profile.payload && in.profile.dcm_name_rivals.empty() &&
      in.dcm_name_holders.empty())
    all.emplace(in.profile.dcm_name, *in.profile.payload);
  if (!drained && in.node)
    if (const auto own = in.node->label(dcm_profile_label);
        !own.empty() && all.count(own) && dcm_config_names(in.dcm.config_json, own) &&
        !dcm_config_has(in.dcm.config_json, own, all.at(own)))
      all.erase(own);
  const bool missing = std::any_of(all.begin(), all.end(), [&](const auto& p) {
    return !dcm_config_has(in.dcm.config_json, p.first, p.second);
  });
  if (!missing)
    return std::nullopt;
  return dcm_config_write{in.dcm.ns, in.dcm.name, all};
}

bool gpus_unsettled(const protocol::node_partitioning_status& st) {
  for (auto it = st.history.rbegin(); it != st.history.rend(); ++it) {
    if (it->phase == node_phase::waiting_operator || it->phase == node_phase::verifying)
      return true;
    if (it->phase == node_phase::succeeded)
      return false;
  }
  return false;
}

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

std::string device_rule(const protocol::node_partitioning_status& st) {
  return st.dra ? st.dra->device_taint_rule : std::string();
}

long long timeout_of(std::int64_t seconds) {
  constexpr std::int64_t century = 100LL * 365 * 24 * 3600;
  return std::clamp<std::int64_t>(seconds, 1, century);
}

bool past(const status_editor& s, std::int64_t seconds) {
  return s.now - s.entered() >= std::chrono::seconds(timeout_of(seconds));
}

drain_context drain_context_of(const node_inputs& in, protocol::wall_clock::time_point started) {
  drain_context c{in.now, started, in.node->ready};
  c.node = in.item.spec.node_name;
  c.nodes = in.cluster_nodes.get();
  c.plan_nodes = in.plan_nodes.get();
  c.max_parallel = in.plan_max_parallel;
  c.free_gpu_devices = in.free_gpu_devices.get();
  c.may_delete = in.pods_deletable;
  return c;
}

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

bool cordons_devices(const node_inputs& in) {
  return in.item.spec.drain.cordons_devices() && publishes_gpus(in.slices) &&
         device_cordon_problem(in).empty();
}

std::vector<pod_info> gpu_pods(const std::vector<pod_info>& pods) {
  std::vector<pod_info> out;
  for (const auto& p : pods)
    if (p.gpus > 0)
      out.push_back(p);
  return out;
}

std::string why_profile_unavailable(const node_inputs& in) {
  const auto findings = preflight(in);
  return findings.empty() ? "the profile's payload is gone" : findings.front().text();
}

std::string run_mark(const node_inputs& in, const status_editor& s) {
  return in.item.spec.desired_hash + "@" + s.status.started_at;
}

bool marked_by_this_run(const node_inputs& in, const status_editor& s) {
  return annotation(*in.node, applied_hash_annotation).value_or("") == run_mark(in, s);
}

bool labelled_by_this_run(const node_inputs& in, const status_editor& s) {
  return !in.node->label(dcm_profile_label).empty() && marked_by_this_run(in, s);
}

} // namespace detail

std::string dcm_events_mark(const std::vector<dcm_event_info>& events) {
  auto newest = protocol::wall_clock::time_point{};
  for (const auto& e : events)
    newest = std::max(newest, e.time);
  return protocol::format_time(newest);
}

std::optional<protocol::wall_clock::time_point>
dcm_events_until(const protocol::node_partitioning_status& status) {
  return protocol::parse_time(status.dcm_events_until);
}

namespace {

bool has_finalizer(const protocol::node_partitioning& item) {
  const auto& f = item.metadata.finalizers;
  return std::find(f.begin(), f.end(), item_finalizer) != f.end();
}

} // namespace

node_step step_node(const node_inputs& in) {
  using namespace detail;
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
