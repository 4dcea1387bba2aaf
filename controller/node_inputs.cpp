#include "controller/node_inputs.hpp"

#include "controller/dcm_payload.hpp"
#include "controller/short_list.hpp"
#include "protocol/codec/quote.hpp"
#include "protocol/desired_hash.hpp"

#include <algorithm>
#include <set>

namespace gpu_partitioner::controller {

namespace {

// A profile's payload (data["profile.json"] of its ConfigMap), or why there is none.
std::optional<std::string> payload_of(const cluster_view& view,
                                      const protocol::partitioning_profile& profile,
                                      std::string* problem, bool* pending = nullptr,
                                      bool* forbidden = nullptr) {
  const auto& ref = profile.spec.operator_payload;
  const auto key = ref.namespace_ + "/" + ref.name;
  if (!view.payload_namespaces.empty() && !view.payload_namespaces.count(ref.namespace_)) {
    if (forbidden)
      *forbidden = true;
    if (problem) {
      std::string allowed;
      for (const auto& ns : view.payload_namespaces)
        allowed += (allowed.empty() ? "" : ", ") + ns;
      *problem = "PartitioningProfile \"" + profile.metadata.name +
                 "\" spec.operatorPayload.namespace: " + protocol::codec::quote(ref.namespace_) +
                 " is not a namespace payloads may live in (" + allowed +
                 "; the operator's --payload-namespaces)";
    }
    return std::nullopt;
  }
  auto cm = view.config_maps.find(key);
  if (cm == view.config_maps.end()) {
    if (pending)
      *pending = !view.config_maps_listed.count(key) &&
                 !view.config_maps_listed.count(ref.namespace_ + "/*");
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

std::string payload_hash_of(const cluster_view& view, const std::string& profile) {
  auto it = view.profiles.find(profile);
  if (it == view.profiles.end())
    return {};
  const auto payload = payload_of(view, *it->second, nullptr);
  return payload ? protocol::payload_hash(*payload) : std::string{};
}

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
  r.payload =
      payload_of(view, *it->second, &r.payload_problem, &r.payload_pending, &r.payload_forbidden);
  if (r.payload)
    r.payload_hash = protocol::payload_hash(*r.payload);
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
    return st;
  }
  // A node two plans select starts for neither. The plan's supervisor removes such an item
  // once it resolves the plan again; until then (a plan created a moment ago, a busy
  // operator) the node must not start on an older resolution.
  if (view.selections &&
      item.status.phase.value_or(protocol::node_phase::pending) == protocol::node_phase::pending) {
    const auto rivals = view.selections->others(item.spec.node_name, ref.name);
    if (!rivals.empty()) {
      st.may_start = false;
      st.problem = {"SelectedByAnotherPlan",
                    "node " + item.spec.node_name + " is also selected by plan " +
                        comma_list(rivals, 3) + "; a node two plans select starts for neither"};
    }
  }
  return st;
}

dcm_config_state dcm_config_of(const cluster_view& view, const dcm_settings& dcm,
                               const std::string& name) {
  dcm_config_state out;
  out.ns = dcm.ns;
  out.name = name;
  out.sync = dcm.sync;
  out.writable = dcm.writable.empty() || dcm.writable.count(name) > 0;
  out.retry_bound = dcm.retry_bound;
  if (name.empty())
    return out;
  auto cm = view.config_maps.find(dcm.ns + "/" + name);
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

namespace {

node_dcm dcm_on(const cluster_view& view, const dcm_settings& dcm, const std::string& node) {
  std::vector<const pod_info*> pods;
  if (auto it = view.pods_by_node.find(node); it != view.pods_by_node.end() && it->second)
    for (const auto& [key, pod] : *it->second)
      pods.push_back(pod.get());
  return find_node_dcm(pods, dcm.ns);
}

void fill_node_dcm(dcm_config_state& out, const node_dcm& d) {
  out.pod = d.pod;
  out.running = d.running;
  out.image = d.image;
  out.version = d.version;
  out.problem = d.problem;
}

// A memo key of a name and the DCM ConfigMap it was worked out against.
std::string dcm_keyed(const std::string& name, const std::string& config_map) {
  return name + '\n' + config_map;
}

} // namespace

dcm_config_state node_dcm_config(const cluster_view& view, const dcm_settings& dcm,
                                 const std::string& node) {
  const auto d = dcm_on(view, dcm, node);
  auto out = dcm_config_of(view, dcm, d.config_map);
  fill_node_dcm(out, d);
  return out;
}

view_slicer::view_slicer(const cluster_view& view, dcm_settings dcm, slice_memo& memo)
    : view_(view), settings_(std::move(dcm)), memo_(memo) {
  if (view.shared_changed) {
    memo_ = {};
  } else if (view.relabelled(dcm_profile_label)) {
    memo_.plans.clear();
    memo_.holders.clear();
    memo_.by_dcm_name.reset();
  }
}

view_slicer::view_slicer(const cluster_view& view, dcm_settings dcm)
    : view_(view), settings_(std::move(dcm)), memo_(own_) {}

std::shared_ptr<const dcm_config_state> view_slicer::dcm(const std::string& node) {
  const auto d = dcm_on(view_, settings_, node);
  auto& config = memo_.dcm[d.config_map];
  if (!config)
    config =
        std::make_shared<const dcm_config_state>(dcm_config_of(view_, settings_, d.config_map));
  auto out = std::make_shared<dcm_config_state>(*config);
  fill_node_dcm(*out, d);
  return out;
}

std::shared_ptr<const resolved_profile> view_slicer::profile(const std::string& name) {
  auto& slot = memo_.profiles[name];
  if (!slot)
    slot = std::make_shared<const resolved_profile>(resolve_profile(view_, name));
  return slot;
}

std::shared_ptr<const std::vector<std::string>>
view_slicer::labelled(const std::string& dcm_name, const std::string& config_map) {
  auto& index = memo_.by_dcm_name;
  if (!index) {
    index.emplace();
    for (const auto& [name, node] : view_.nodes)
      if (auto it = node->labels.find(dcm_profile_label); it != node->labels.end())
        (*index)[it->second].push_back(name);
  }
  std::vector<std::string> out;
  if (auto it = index->find(dcm_name); it != index->end())
    // Only the nodes whose DCM reads that ConfigMap: another's is not rerun by its change.
    // A node whose DCM cannot be told counts (it may read it).
    for (const auto& node : it->second) {
      const auto d = dcm_on(view_, settings_, node);
      if (d.config_map == config_map || !d.problem.empty())
        out.push_back(node);
    }
  return std::make_shared<const std::vector<std::string>>(std::move(out));
}

bool reads_every_node(const protocol::node_partitioning& item) {
  return item.spec.dry_run || item.status.phase == protocol::node_phase::draining;
}

std::shared_ptr<const shared_map<node_info>> view_slicer::all_nodes() {
  if (!all_nodes_)
    all_nodes_ = std::make_shared<const shared_map<node_info>>(view_.nodes);
  return all_nodes_;
}

std::shared_ptr<const std::map<std::string, std::int64_t>> view_slicer::free_gpu_devices() {
  if (!free_gpu_devices_) {
    std::map<std::string, std::int64_t> all;
    for (const auto& [node, slices] : view_.slices_by_node) {
      if (!slices)
        continue;
      std::vector<resource_slice_info> published;
      for (const auto& [name, s] : *slices)
        published.push_back(*s);
      std::vector<resource_claim_info> claims;
      if (auto on = view_.claims_by_node.find(node); on != view_.claims_by_node.end() && on->second)
        for (const auto& [key, c] : *on->second)
          claims.push_back(*c);
      if (publishes_gpus(published))
        all[node] = controller::free_gpu_devices(published, claims);
    }
    free_gpu_devices_ = std::make_shared<const std::map<std::string, std::int64_t>>(std::move(all));
  }
  return free_gpu_devices_;
}

std::shared_ptr<const std::set<std::string>> view_slicer::plan_nodes(const std::string& plan) {
  auto& nodes = plan_nodes_[plan];
  if (!nodes) {
    std::set<std::string> all;
    for (const auto& [name, item] : view_.items)
      if (item->spec.plan_ref.name == plan)
        all.insert(item->spec.node_name);
    nodes = std::make_shared<const std::set<std::string>>(std::move(all));
  }
  return nodes;
}

node_slice view_slicer::slice(const protocol::node_partitioning& item) {
  node_slice out;
  if (auto it = view_.items.find(item.metadata.name); it != view_.items.end())
    out.item = it->second;
  const auto& node_name = item.spec.node_name;
  if (auto it = view_.nodes.find(node_name); it != view_.nodes.end())
    out.node = it->second;
  if (auto it = view_.pods_by_node.find(node_name); it != view_.pods_by_node.end())
    out.pods = it->second;
  if (view_.absent_resources.count(kube_daemon_sets_plural) == 0)
    out.daemon_sets = view_.daemon_sets;
  if (auto it = view_.dcm_events_by_node.find(node_name); it != view_.dcm_events_by_node.end())
    out.dcm_events = it->second;
  if (auto it = view_.slices_by_node.find(node_name); it != view_.slices_by_node.end())
    out.slices = it->second;
  if (auto it = view_.claims_by_node.find(node_name); it != view_.claims_by_node.end())
    out.claims = it->second;
  if (auto it = view_.taint_rules_by_node.find(node_name); it != view_.taint_rules_by_node.end())
    out.taint_rules = it->second;
  out.device_taints_served = view_.absent_resources.count(kube_device_taint_rules_plural) == 0;
  out.claims_forbidden = view_.forbidden_resources.count(kube_resource_claims_plural) > 0;
  out.pods_deletable = view_.pods_deletable;
  if (auto it = view_.node_changes.find(node_name); it != view_.node_changes.end())
    out.node_changed_at = it->second;
  out.pdbs = budgets(out);
  // Also before the drain: the view's item may not show the Draining its worker wrote.
  if (reads_every_node(item) ||
      item.status.phase.value_or(protocol::node_phase::pending) == protocol::node_phase::pending) {
    out.all_nodes = all_nodes();
    out.free_gpu_devices = free_gpu_devices();
  }
  if (item.spec.dry_run) {
    out.plan_nodes = plan_nodes(item.spec.plan_ref.name);
    if (auto plan = view_.plans.find(item.spec.plan_ref.name);
        plan != view_.plans.end() && plan->second)
      out.plan_max_parallel = plan->second->spec.rollout.max_parallel;
  }
  out.profile = profile(item.spec.profile_ref.name);
  out.plan = standing_of(view_, item);
  out.dcm = dcm(node_name);
  const auto& config = out.dcm->config_json;
  out.dcm_name_labelled = labelled_if_differs(*out.profile, *out.dcm);
  // What DCM's config may be given while the node drains or applies: every valid profile
  // of the plan, with the nodes a write of it would repartition.
  const auto& plan_name = item.spec.plan_ref.name;
  auto& candidates = memo_.plans[dcm_keyed(plan_name, out.dcm->name)];
  if (!candidates) {
    std::vector<plan_profile_candidate> all;
    std::set<std::string> names;
    if (auto plan = view_.plans.find(plan_name); plan != view_.plans.end())
      for (const auto& entry : plan->second->spec.partitionings) {
        const auto q = profile(entry.profile_ref.name);
        if (!q->found || !q->payload || payload_problem(*q->payload) ||
            !q->dcm_name_rivals.empty() || !names.insert(q->dcm_name).second)
          continue;
        plan_profile_candidate c{q->dcm_name, *q->payload, {}};
        if (dcm_config_names(config, q->dcm_name) &&
            !dcm_config_has(config, q->dcm_name, *q->payload))
          c.labelled = *labelled(q->dcm_name, out.dcm->name);
        all.push_back(std::move(c));
      }
    candidates = std::make_shared<const std::vector<plan_profile_candidate>>(std::move(all));
  }
  out.plan_profiles = candidates;
  return out;
}

std::vector<std::shared_ptr<const pdb_info>> view_slicer::budgets(const node_slice& s) const {
  std::vector<std::shared_ptr<const pdb_info>> out;
  if (!s.pods)
    return out;
  // A budget covers pods of its own namespace only: the walk is over those namespaces'.
  std::set<std::string> namespaces;
  for (const auto& [key, pod] : *s.pods)
    namespaces.insert(pod->ns + "/");
  for (const auto& prefix : namespaces)
    for (auto it = view_.pdbs.lower_bound(prefix);
         it != view_.pdbs.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
      if (std::any_of(s.pods->begin(), s.pods->end(),
                      [&](const auto& pod) { return it->second->covers(*pod.second); }))
        out.push_back(it->second);
  return out;
}

std::shared_ptr<const std::vector<std::string>>
view_slicer::labelled_if_differs(const resolved_profile& p, const dcm_config_state& d) {
  const auto key = dcm_keyed(p.name, d.name);
  auto known = memo_.holders.find(key);
  if (known != memo_.holders.end())
    return known->second;
  // A payload that differs from what DCM's config holds under a name other nodes carry
  // would repartition them undrained.
  std::shared_ptr<const std::vector<std::string>> out;
  if (d.found && p.found && p.payload && dcm_config_names(d.config_json, p.dcm_name) &&
      !dcm_config_has(d.config_json, p.dcm_name, *p.payload))
    out = labelled(p.dcm_name, d.name);
  memo_.holders.emplace(key, out);
  return out;
}

slice_update view_slicer::update(const protocol::node_partitioning& item,
                                 const node_slice_ptr& last) {
  const bool own = !last || view_.shared_changed || view_.item_changes.count(item.metadata.name) ||
                   view_.node_changes.count(item.spec.node_name);
  if (own)
    return {slice_news::own, std::make_shared<const node_slice>(slice(item))};
  // Nothing of the node's own changed: its pods, profile and DCM's config are the last
  // slice's. The budgets over its pods may have, or who carries its DCM name.
  const bool walk = view_.budget_changes.count(item.spec.node_name) > 0;
  const bool relabelled = view_.relabelled(dcm_profile_label);
  const bool rescheduled = view_.schedulability_changed && reads_every_node(item);
  if (!walk && !relabelled && !rescheduled)
    return {};
  auto pdbs = walk ? budgets(*last) : last->pdbs;
  auto labelled = relabelled && last->profile && last->dcm
                      ? labelled_if_differs(*last->profile, *last->dcm)
                      : last->dcm_name_labelled;
  auto same = [](const auto& a, const auto& b) { return a == b || (a && b && *a == *b); };
  const bool holders = !same(labelled, last->dcm_name_labelled);
  if (!holders && pdbs == last->pdbs && !rescheduled)
    return {};
  auto next = std::make_shared<node_slice>(*last);
  next->pdbs = std::move(pdbs);
  if (rescheduled) {
    next->all_nodes = all_nodes();
    next->free_gpu_devices = free_gpu_devices();
  }
  next->dcm_name_labelled = std::move(labelled);
  next->node_changed_at.reset();
  return {holders ? slice_news::own : slice_news::budgets_only, std::move(next)};
}

node_inputs assemble_node_inputs(const node_slice& slice, protocol::node_partitioning item,
                                 std::optional<node_info> node, const worker_facts& facts,
                                 protocol::wall_clock::time_point now) {
  node_inputs in;
  in.item = std::move(item);
  in.now = now;
  in.node = std::move(node);
  const auto& node_name = in.item.spec.node_name;
  if (slice.slices)
    for (const auto& [name, s] : *slice.slices)
      in.slices.push_back(*s);
  if (slice.claims)
    for (const auto& [key, c] : *slice.claims)
      in.claims.push_back(*c);
  if (slice.taint_rules)
    for (const auto& [name, r] : *slice.taint_rules)
      in.taint_rules.push_back(*r);
  in.device_taints_served = slice.device_taints_served;
  in.claims_forbidden = slice.claims_forbidden;
  in.pods_deletable = slice.pods_deletable;
  // A pod a claim on the node's GPUs is reserved for holds them, as one requesting an
  // amd.com/ resource does: the drain removes it whatever it tolerates.
  const auto holders = claim_holders(in.claims);
  if (slice.pods)
    for (const auto& [key, pod] : *slice.pods) {
      in.pods.push_back(*pod);
      if (slice.daemon_sets)
        resolve_daemon_set_owner(in.pods.back(), *slice.daemon_sets);
      if (auto h = holders.find(pod->uid); h != holders.end()) {
        in.pods.back().gpus += h->second;
        in.pods.back().gpu_claims = true;
      }
    }
  // The budgets matter to a drain (and a dry run's preview) only.
  if (in.item.spec.dry_run || in.item.status.phase == protocol::node_phase::draining)
    for (const auto& pdb : slice.pdbs)
      in.pdbs.push_back(*pdb);
  if (slice.profile)
    in.profile = *slice.profile;
  in.plan = slice.plan;
  if (slice.dcm)
    in.dcm = *slice.dcm;
  if (reads_every_node(in.item)) {
    in.cluster_nodes = slice.all_nodes;
    in.free_gpu_devices = slice.free_gpu_devices;
    in.plan_nodes = slice.plan_nodes;
    in.plan_max_parallel = slice.plan_max_parallel;
  }
  in.token = facts.token;
  in.evictions = facts.evictions;
  in.write_error = facts.write_error;
  in.resolved_write_error = facts.resolved_write_error;
  if (slice.dcm_events)
    for (const auto& entry : *slice.dcm_events)
      in.dcm_events.push_back(entry.second->info);
  auto others = [&](const std::vector<std::string>& nodes) {
    std::vector<std::string> out;
    for (const auto& n : nodes)
      if (n != node_name)
        out.push_back(n);
    return out;
  };
  if (slice.dcm_name_labelled)
    in.dcm_name_holders = others(*slice.dcm_name_labelled);
  // The plan's profiles go to DCM's config while the node drains or applies, except one
  // whose name other nodes carry with another payload in DCM's config.
  const auto phase = in.item.status.phase.value_or(protocol::node_phase::pending);
  const bool writes_dcm =
      phase == protocol::node_phase::draining || phase == protocol::node_phase::applying;
  if (writes_dcm && slice.plan_profiles)
    for (const auto& c : *slice.plan_profiles)
      if (others(c.labelled).empty())
        in.plan_profiles.emplace(c.dcm_name, c.payload);
  return in;
}

node_inputs assemble_node_inputs(const cluster_view& view, protocol::node_partitioning item,
                                 std::optional<node_info> node, const dcm_settings& dcm,
                                 const worker_facts& facts, protocol::wall_clock::time_point now) {
  const auto slice = view_slicer(view, dcm).slice(item);
  return assemble_node_inputs(slice, std::move(item), std::move(node), facts, now);
}

} // namespace gpu_partitioner::controller
