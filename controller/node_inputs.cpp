#include "controller/node_inputs.hpp"

#include "controller/dcm_payload.hpp"
#include "protocol/codec/quote.hpp"

#include <algorithm>

namespace gpu_partitioner::controller {

namespace {

// A profile's payload (data["profile.json"] of its ConfigMap), or why there is none.
std::optional<std::string> payload_of(const cluster_view& view,
                                      const protocol::partitioning_profile& profile,
                                      std::string* problem, bool* pending = nullptr) {
  const auto& ref = profile.spec.operator_payload;
  const auto key = ref.namespace_ + "/" + ref.name;
  auto cm = view.config_maps.find(key);
  if (cm == view.config_maps.end()) {
    if (pending)
      *pending = !view.config_maps_listed.count(key);
    if (problem)
      *problem = "ConfigMap " + ref.namespace_ + "/" + ref.name + " not found";
    return std::nullopt;
  }
  auto data = cm->second->find("profile.json");
  if (data == cm->second->end()) {
    if (problem)
      *problem = "ConfigMap " + ref.namespace_ + "/" + ref.name + " has no data[\"profile.json\"]";
    return std::nullopt;
  }
  return data->second;
}

} // namespace

resolved_profile resolve_profile(const cluster_view& view, const std::string& name) {
  resolved_profile r;
  r.name = name;
  auto it = view.profiles.find(name);
  if (it == view.profiles.end()) {
    if (auto bad = view.invalid_profiles.find(name); bad != view.invalid_profiles.end())
      r.invalid = bad->second;
    return r;
  }
  r.found = true;
  r.spec = it->second->spec;
  r.dcm_name = protocol::dcm_profile_name(*it->second);
  r.payload = payload_of(view, *it->second, &r.payload_problem, &r.payload_pending);
  // Another profile with this DCM name and a different payload DCM would accept: the two
  // would overwrite each other's entry in DCM's config. A rival whose payload is still
  // being listed leaves the answer unknown, and so the profile pending: preflight would
  // otherwise pass a node that the rival's payload, arriving a moment later, fails mid-drain.
  if (r.payload && !payload_problem(*r.payload))
    for (const auto& [other_name, other] : view.profiles) {
      if (other_name == name || protocol::dcm_profile_name(*other) != r.dcm_name)
        continue;
      bool listing = false;
      auto theirs = payload_of(view, *other, nullptr, &listing);
      r.payload_pending = r.payload_pending || listing;
      if (theirs && !payload_problem(*theirs) &&
          !dcm_config_has(R"({"gpu-config-profiles":{"p":)" + *theirs + "}}", "p", *r.payload))
        r.dcm_name_rivals.push_back(other_name);
    }
  return r;
}

std::vector<std::string> nodes_labelled(const cluster_view& view, const std::string& dcm_name,
                                        const std::string& except) {
  std::vector<std::string> out;
  for (const auto& [name, node] : view.nodes) {
    auto it = node->labels.find(dcm_profile_label);
    if (name != except && it != node->labels.end() && it->second == dcm_name)
      out.push_back(name);
  }
  return out;
}

plan_standing standing_of(const cluster_view& view, const protocol::node_partitioning& item) {
  plan_standing st;
  const auto& ref = item.spec.plan_ref;
  auto plan = view.plans.find(ref.name);
  if (plan == view.plans.end()) {
    if (auto bad = view.invalid_plans.find(ref.name); bad != view.invalid_plans.end()) {
      st.may_start = false;
      st.problem = {"PlanInvalid", "PartitioningPlan \"" + ref.name + "\" is invalid (" +
                                       bad->second + "); no node starts until it is fixed"};
      return st;
    }
    st.owned = st.may_start = false;
    st.problem = {"PlanNotFound", "spec.planRef: PartitioningPlan \"" + ref.name +
                                      "\" does not exist; the operator does not act on this "
                                      "item (delete it, or create the plan)"};
    return st;
  }
  if (plan->second->metadata.uid != ref.uid) {
    st.owned = st.may_start = false;
    st.problem = {"PlanNotFound", "spec.planRef: PartitioningPlan \"" + ref.name + "\" has uid " +
                                      plan->second->metadata.uid + ", not " +
                                      protocol::codec::quote(ref.uid) +
                                      "; the operator does not act on this item"};
    return st;
  }
  if (plan->second->metadata.deletion_timestamp) {
    st.may_start = false;
    st.problem = {"PlanDeleting", "PartitioningPlan \"" + ref.name + "\" is being deleted"};
  }
  return st;
}

dcm_config_state dcm_config_of(const cluster_view& view, const dcm_settings& dcm) {
  dcm_config_state out;
  out.ns = dcm.ns;
  out.name = dcm.name;
  out.sync = dcm.sync;
  auto cm = view.config_maps.find(dcm.ns + "/" + dcm.name);
  if (cm == view.config_maps.end())
    return out;
  out.found = true;
  if (auto data = cm->second->find("config.json"); data != cm->second->end())
    out.config_json = data->second;
  for (const char* key : {config_created_key, config_written_key, config_changed_key})
    if (auto at = cm->second->find(key); at != cm->second->end())
      if (auto t = protocol::parse_time(at->second)) {
        const auto when = key == config_created_key ? *t + std::chrono::seconds(1) : *t;
        if (!out.written_at || when > *out.written_at)
          out.written_at = when;
      }
  return out;
}

node_inputs assemble_node_inputs(const cluster_view& view, protocol::node_partitioning item,
                                 std::optional<node_info> node, const dcm_settings& dcm,
                                 const worker_facts& facts, protocol::wall_clock::time_point now) {
  node_inputs in;
  in.item = std::move(item);
  in.now = now;
  in.node = std::move(node);
  const auto& node_name = in.item.spec.node_name;
  if (auto pods = view.pods_by_node.find(node_name); pods != view.pods_by_node.end())
    for (const auto& [key, pod] : *pods->second)
      in.pods.push_back(*pod);
  // The budgets matter to a drain (and a dry run's preview) only, and only those covering
  // a pod on the node; a large cluster has thousands.
  if (in.item.spec.dry_run || in.item.status.phase == protocol::node_phase::draining)
    for (const auto& entry : view.pdbs) {
      const auto& pdb = *entry.second;
      if (std::any_of(in.pods.begin(), in.pods.end(),
                      [&](const pod_info& p) { return pdb.covers(p); }))
        in.pdbs.push_back(pdb);
    }
  in.profile = resolve_profile(view, in.item.spec.profile_ref.name);
  in.plan = standing_of(view, in.item);
  in.dcm = dcm_config_of(view, dcm);
  in.token = facts.token;
  in.evictions = facts.evictions;
  in.write_error = facts.write_error;
  in.resolved_write_error = facts.resolved_write_error;
  if (auto events = view.dcm_events_by_node.find(node_name);
      events != view.dcm_events_by_node.end())
    for (const auto& entry : *events->second)
      in.dcm_events.push_back(entry.second->info);
  // A payload that differs from what DCM's config holds under a name other nodes carry
  // would repartition them undrained.
  if (in.dcm.found && in.profile.found && in.profile.payload &&
      dcm_config_names(in.dcm.config_json, in.profile.dcm_name) &&
      !dcm_config_has(in.dcm.config_json, in.profile.dcm_name, *in.profile.payload))
    in.dcm_name_holders = nodes_labelled(view, in.profile.dcm_name, node_name);
  // What DCM's config may be given while the node drains or applies: every valid profile
  // of the plan that would not change the meaning of a name other nodes carry.
  const auto phase = in.item.status.phase.value_or(protocol::node_phase::pending);
  const bool writes_dcm =
      phase == protocol::node_phase::draining || phase == protocol::node_phase::applying;
  if (auto plan = view.plans.find(in.item.spec.plan_ref.name);
      writes_dcm && plan != view.plans.end())
    for (const auto& entry : plan->second->spec.partitionings) {
      const auto p = resolve_profile(view, entry.profile_ref.name);
      if (!p.found || !p.payload || payload_problem(*p.payload) || !p.dcm_name_rivals.empty() ||
          in.plan_profiles.count(p.dcm_name))
        continue;
      if (dcm_config_names(in.dcm.config_json, p.dcm_name) &&
          !dcm_config_has(in.dcm.config_json, p.dcm_name, *p.payload) &&
          !nodes_labelled(view, p.dcm_name, node_name).empty())
        continue;
      in.plan_profiles.emplace(p.dcm_name, *p.payload);
    }
  return in;
}

} // namespace gpu_partitioner::controller
