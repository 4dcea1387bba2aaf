// controller::assemble_node_inputs and its parts: what one node's step reads from the
// cluster view. A case per rule: the node's pods and only the budgets covering them, and
// only while it drains; the profile with its payload, a payload still being listed, and
// rival profiles; the plan's standing; when DCM's config last changed; DCM's Events from
// the node; the profiles DCM's config may be given, and the nodes a changed meaning would
// repartition.
#include "controller/node_inputs.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;
using namespace std::chrono_literals;

namespace {

const gp::wall_clock::time_point t0 = gp::wall_clock::from_time_t(1800000000);
const std::string cpx =
    R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":8}]})";
const std::string spx =
    R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"SPX","memoryPartition":"NPS1","numGPUsAssigned":8}]})";
const gc::dcm_settings dcm{"kube-amd-gpu", 90s};
// The ConfigMap the DCM pods of view_builder's nodes mount.
const std::string dcm_cm = "default-dcm-config";

gc::config_map_data dcm_config(const std::string& profiles_json) {
  return {{"config.json", R"({"gpu-config-profiles":)" + profiles_json + "}"}};
}

struct view_builder {
  gc::cluster_view v;

  view_builder() {
    v.config_maps_listed.insert(dcm.ns + "/" + dcm_cm);
    config_map(dcm.ns, dcm_cm, dcm_config("{}"));
  }
  view_builder& config_map(const std::string& ns, const std::string& name,
                           gc::config_map_data data) {
    v.config_maps[ns + "/" + name] = std::make_shared<const gc::config_map_data>(std::move(data));
    v.config_maps_listed.insert(ns + "/" + name);
    return *this;
  }
  view_builder& payload(const std::string& name, const std::string& json) {
    return config_map("kube-amd-gpu", name, {{"profile.json", json}});
  }
  view_builder& profile(const std::string& name, const std::string& payload_cm,
                        const std::string& dcm_name = {}) {
    auto p = std::make_shared<gp::partitioning_profile>();
    p->metadata.name = name;
    p->spec.operator_payload.namespace_ = "kube-amd-gpu";
    p->spec.operator_payload.name = payload_cm;
    if (!dcm_name.empty())
      p->spec.operator_payload.profile_name = dcm_name;
    v.profiles[name] = p;
    return *this;
  }
  view_builder& plan(const std::string& name, const std::vector<std::string>& profiles,
                     const std::string& uid = "plan-uid") {
    auto p = std::make_shared<gp::partitioning_plan>();
    p->metadata.name = name;
    p->metadata.uid = uid;
    for (const auto& prof : profiles) {
      gp::partitioning entry;
      entry.name = prof;
      entry.profile_ref.name = prof;
      p->spec.partitionings.push_back(entry);
    }
    v.plans[name] = p;
    return *this;
  }
  view_builder& node(const std::string& name, const std::string& profile_label = {}) {
    auto n = std::make_shared<gc::node_info>();
    n->name = name;
    if (!profile_label.empty())
      n->labels[gc::dcm_profile_label] = profile_label;
    v.nodes[name] = n;
    return *this;
  }
  /// DCM's pod on the node, as the GPU operator's DaemonSet runs it (or, with `app`, as
  /// DCM's own chart does), mounting `config_map` as DCM's config.
  view_builder& dcm_pod(const std::string& node, const std::string& config_map = dcm_cm,
                        bool standalone = false) {
    auto d = std::make_shared<gc::pod_info>();
    d->ns = dcm.ns;
    d->name = "dcm-" + node;
    d->node_name = node;
    if (standalone)
      d->labels = {{"app", "amdgpu-device-config-manager"}};
    else
      d->labels = {{gc::dcm_pod_label, gc::dcm_pod_label_value}};
    d->phase = "Running";
    d->dcm_config_mount = config_map;
    d->dcm_image = "docker.io/rocm/device-config-manager:v1.3.0";
    v.pods_to_edit(node)[dcm.ns + "/dcm-" + node] = d;
    return *this;
  }
  view_builder& pod(const std::string& node, const std::string& name, const std::string& app) {
    auto p = std::make_shared<gc::pod_info>();
    p->ns = "team";
    p->name = name;
    p->node_name = node;
    p->labels = {{"app", app}};
    v.pods_to_edit(node)["team/" + name] = p;
    return *this;
  }
  view_builder& pdb(const std::string& name, const std::string& app) {
    auto b = std::make_shared<gc::pdb_info>();
    b->ns = "team";
    b->name = name;
    b->match_labels = {{"app", app}};
    v.pdbs["team/" + name] = b;
    return *this;
  }
  view_builder& dcm_event(const std::string& node, const std::string& key,
                          gc::dcm_event_info info) {
    gc::dcm_event e;
    e.host = node;
    e.info = std::move(info);
    v.dcm_events_to_edit(node)[key] = std::make_shared<const gc::dcm_event>(std::move(e));
    return *this;
  }
};

gp::node_partitioning item(const std::string& node, const std::string& profile,
                           gp::node_phase phase = gp::node_phase::pending,
                           const std::string& plan = "p", const std::string& uid = "plan-uid") {
  gp::node_partitioning i;
  i.metadata.name = plan + "-" + node;
  i.spec.node_name = node;
  i.spec.plan_ref.name = plan;
  i.spec.plan_ref.uid = uid;
  i.spec.profile_ref.name = profile;
  i.status.phase = phase;
  return i;
}

gc::node_inputs assemble(const gc::cluster_view& v, const gp::node_partitioning& i,
                         const gc::worker_facts& facts = {}) {
  std::optional<gc::node_info> node;
  if (auto n = v.nodes.find(i.spec.node_name); n != v.nodes.end())
    node = *n->second;
  return gc::assemble_node_inputs(v, i, node, dcm, facts, t0);
}

} // namespace

BOOST_AUTO_TEST_SUITE(node_inputs)

BOOST_AUTO_TEST_CASE(the_nodes_pods_are_read_and_budgets_only_while_it_drains) {
  view_builder b;
  b.plan("p", {"cpx"})
      .profile("cpx", "cpx-payload")
      .payload("cpx-payload", cpx)
      .node("a")
      .node("b");
  b.pod("a", "web-1", "web").pod("b", "db-1", "db").pdb("web-budget", "web").pdb("db-budget", "db");
  const auto pending = assemble(b.v, item("a", "cpx"));
  BOOST_TEST(pending.pods.size() == 1u);
  BOOST_TEST(pending.pods[0].name == "web-1");
  BOOST_TEST(pending.pdbs.empty(), "budgets are read only while the node drains");
  const auto draining = assemble(b.v, item("a", "cpx", gp::node_phase::draining));
  BOOST_REQUIRE(draining.pdbs.size() == 1u);
  BOOST_TEST(draining.pdbs[0].name == "web-budget", "only the budget covering a pod on the node");
  auto preview = item("a", "cpx");
  preview.spec.dry_run = true;
  BOOST_TEST(assemble(b.v, preview).pdbs.size() == 1u, "a dry run previews the drain");
}

BOOST_AUTO_TEST_CASE(a_pod_a_gpu_claim_is_reserved_for_holds_gpus_and_the_slices_are_read) {
  view_builder b;
  b.plan("p", {"cpx"}).profile("cpx", "cpx-payload").payload("cpx-payload", cpx).node("a");
  b.pod("a", "train", "train").pod("a", "web", "web");
  auto& pods = b.v.pods_to_edit("a");
  std::const_pointer_cast<gc::pod_info>(pods.at("team/train"))->uid = "uid-train";
  std::const_pointer_cast<gc::pod_info>(pods.at("team/web"))->uid = "uid-web";
  auto claim = std::make_shared<gc::resource_claim_info>();
  claim->ns = "team";
  claim->name = "train-gpu";
  claim->node = "a";
  claim->devices = {{gp::amd_dra_driver, "a", "gpu-1-128"}, {gp::amd_dra_driver, "a", "gpu-2-129"}};
  claim->reserved_for = {{"uid-train", "train"}};
  gc::cluster_view::edit(b.v.claims_by_node, "a")["team/train-gpu"] = claim;
  auto slice = std::make_shared<gc::resource_slice_info>();
  slice->name = "a-gpu.amd.com-x1";
  slice->driver = gp::amd_dra_driver;
  slice->node = "a";
  gc::cluster_view::edit(b.v.slices_by_node, "a")[slice->name] = slice;
  const auto in = assemble(b.v, item("a", "cpx"));
  BOOST_TEST_REQUIRE(in.pods.size() == 2u);
  for (const auto& p : in.pods) {
    BOOST_TEST(p.gpus == (p.name == "train" ? 2 : 0), p.name);
    BOOST_TEST(p.gpu_claims == (p.name == "train"), p.name);
  }
  BOOST_TEST(in.claims.size() == 1u);
  BOOST_TEST_REQUIRE(in.slices.size() == 1u);
  BOOST_TEST(in.slices[0].name == "a-gpu.amd.com-x1");
}

// Issue 38: a pod's DaemonSet owner counts only if that DaemonSet is there, with that UID;
// otherwise nothing recreates the pod, and the drain treats it as kubectl drain does.
BOOST_AUTO_TEST_CASE(a_daemon_set_owner_counts_only_if_the_daemon_set_exists) {
  view_builder b;
  b.plan("p", {"cpx"}).profile("cpx", "cpx-payload").payload("cpx-payload", cpx).node("a");
  for (const char* name : {"real", "forged", "stale", "driver"})
    b.pod("a", name, name);
  auto& pods = b.v.pods_to_edit("a");
  auto owned = [&](const std::string& name, const std::string& ds, const std::string& uid) {
    auto p = std::const_pointer_cast<gc::pod_info>(pods.at("team/" + name));
    p->daemon_set = true;
    p->daemon_set_key = "team/" + ds;
    p->daemon_set_uid = uid;
    return p;
  };
  owned("real", "agent", "uid-agent");
  owned("forged", "nobody", "uid-x");
  owned("stale", "agent", "uid-of-a-deleted-one");
  owned("driver", "nobody", "uid-x")->dra_driver = true;
  b.v.daemon_sets =
      std::make_shared<gc::daemon_set_uids>(gc::daemon_set_uids{{"team/agent", "uid-agent"}});
  auto in = assemble(b.v, item("a", "cpx"));
  BOOST_TEST_REQUIRE(in.pods.size() == 4u);
  for (const auto& p : in.pods) {
    BOOST_TEST(p.daemon_set == (p.name == "real"), p.name);
    BOOST_TEST(p.unmanaged == (p.name != "real"), p.name);
    BOOST_TEST(!p.dra_driver, p.name);
  }
  // Without the right to list DaemonSets the kind is trusted, as kubectl drain's check.
  b.v.absent_resources.insert(gc::kube_daemon_sets_plural);
  in = assemble(b.v, item("a", "cpx"));
  for (const auto& p : in.pods)
    BOOST_TEST(p.daemon_set, p.name);
}

BOOST_AUTO_TEST_CASE(the_worker_facts_and_the_node_given_are_what_the_step_reads) {
  view_builder b;
  b.plan("p", {"cpx"}).profile("cpx", "cpx-payload").payload("cpx-payload", cpx).node("a");
  gc::worker_facts facts;
  facts.token = true;
  facts.write_error = "PATCH nodes/a: 409";
  facts.evictions["team/web-1"].blocked = true;
  gc::node_info written;
  written.name = "a";
  written.resource_version = "42";
  const auto in = gc::assemble_node_inputs(b.v, item("a", "cpx"), written, dcm, facts, t0);
  BOOST_TEST(in.token);
  BOOST_TEST(in.write_error == "PATCH nodes/a: 409");
  BOOST_TEST(in.evictions.at("team/web-1").blocked);
  BOOST_REQUIRE(in.node.has_value());
  BOOST_TEST(in.node->resource_version == "42", "the node given, not the view's");
  BOOST_TEST((in.now == t0));
  const auto gone = gc::assemble_node_inputs(b.v, item("a", "cpx"), std::nullopt, dcm, facts, t0);
  BOOST_TEST(!gone.node.has_value());
}

BOOST_AUTO_TEST_CASE(a_profiles_payload_is_found_missing_or_still_being_listed) {
  view_builder b;
  b.profile("cpx", "cpx-payload").payload("cpx-payload", cpx);
  auto found = gc::resolve_profile(b.v, "cpx");
  BOOST_TEST(found.found);
  BOOST_REQUIRE(found.payload.has_value());
  BOOST_TEST(*found.payload == cpx);
  BOOST_TEST(found.dcm_name == "cpx", "the profile's own name when profileName is not set");

  b.profile("listing", "new-payload");
  const auto listing = gc::resolve_profile(b.v, "listing");
  BOOST_TEST(!listing.payload.has_value());
  BOOST_TEST(listing.payload_pending, "its ConfigMap's watch has not listed yet");

  b.v.config_maps_listed.insert("kube-amd-gpu/new-payload");
  const auto missing = gc::resolve_profile(b.v, "listing");
  BOOST_TEST(!missing.payload_pending);
  BOOST_TEST(missing.payload_problem == "ConfigMap kube-amd-gpu/new-payload not found");

  b.config_map("kube-amd-gpu", "empty", {{"other.json", "{}"}}).profile("empty", "empty");
  BOOST_TEST(gc::resolve_profile(b.v, "empty").payload_problem ==
             "ConfigMap kube-amd-gpu/empty has no data[\"profile.json\"]");

  const auto absent = gc::resolve_profile(b.v, "nope");
  BOOST_TEST(!absent.found);
  BOOST_TEST(absent.invalid.empty());
  b.v.invalid_profiles["bad"] = "spec.expectedResources: required";
  BOOST_TEST(gc::resolve_profile(b.v, "bad").invalid == "spec.expectedResources: required");
}

// Whoever may edit a payload decides how nodes are partitioned: a payload outside the
// namespaces the operator trusts is not read, even when its ConfigMap is in the view.
BOOST_AUTO_TEST_CASE(a_payload_outside_the_payload_namespaces_is_refused_naming_them) {
  view_builder b;
  b.profile("cpx", "cpx-payload").payload("cpx-payload", cpx);
  b.config_map("team-a", "cpx-payload", {{"profile.json", cpx}});
  b.v.payload_namespaces = {"kube-amd-gpu", "gpu-admins"};
  const auto trusted = gc::resolve_profile(b.v, "cpx");
  BOOST_TEST(trusted.payload.has_value());
  BOOST_TEST(!trusted.payload_forbidden);

  auto tenant = std::make_shared<gp::partitioning_profile>(*b.v.profiles.at("cpx"));
  tenant->metadata.name = "tenant";
  tenant->spec.operator_payload.namespace_ = "team-a";
  b.v.profiles["tenant"] = tenant;
  const auto refused = gc::resolve_profile(b.v, "tenant");
  BOOST_TEST(!refused.payload.has_value());
  BOOST_TEST(refused.payload_forbidden);
  BOOST_TEST(!refused.payload_pending);
  BOOST_TEST(refused.payload_problem ==
             "PartitioningProfile \"tenant\" spec.operatorPayload.namespace: \"team-a\" is not "
             "a namespace payloads may live in (gpu-admins, kube-amd-gpu; the operator's "
             "--payload-namespaces)");

  b.v.payload_namespaces.clear(); // unrestricted (tools and tests)
  BOOST_TEST(gc::resolve_profile(b.v, "tenant").payload.has_value());
}

BOOST_AUTO_TEST_CASE(profiles_that_give_one_dcm_name_different_payloads_are_rivals) {
  view_builder b;
  b.payload("cpx-payload", cpx).payload("spx-payload", spx);
  b.profile("mine", "cpx-payload", "shared").profile("theirs", "spx-payload", "shared");
  b.profile("same", "cpx-payload", "shared");
  const auto r = gc::resolve_profile(b.v, "mine");
  BOOST_REQUIRE(r.dcm_name_rivals.size() == 1u);
  BOOST_TEST(r.dcm_name_rivals[0] == "theirs", "the same payload under the name is no rival");
  BOOST_TEST(!r.payload_pending);

  // A rival whose payload's watch is still listing: whether it conflicts is not known yet.
  b.profile("new-rival", "new-payload", "shared");
  const auto waiting = gc::resolve_profile(b.v, "mine");
  BOOST_TEST(waiting.payload_pending, "a rival's payload not yet listed leaves mine pending");
  BOOST_TEST(waiting.dcm_name_rivals.size() == 1u);
  b.v.config_maps_listed.insert("kube-amd-gpu/new-payload");
  BOOST_TEST(!gc::resolve_profile(b.v, "mine").payload_pending, "listed and absent: no rival");
}

BOOST_AUTO_TEST_CASE(the_plan_standing_names_why_the_operator_may_not_act) {
  view_builder b;
  b.plan("p", {"cpx"}, "uid-1");
  BOOST_TEST(gc::standing_of(b.v, item("a", "cpx", gp::node_phase::pending, "p", "uid-1")).owned);

  const auto other_uid =
      gc::standing_of(b.v, item("a", "cpx", gp::node_phase::pending, "p", "uid-0"));
  BOOST_TEST(!other_uid.owned);
  BOOST_TEST(other_uid.problem.reason == "PlanNotFound");
  BOOST_TEST(other_uid.problem.message.rfind("spec.planRef: PartitioningPlan \"p\" has uid uid-1",
                                             0) == 0u,
             other_uid.problem.text());

  const auto none = gc::standing_of(b.v, item("a", "cpx", gp::node_phase::pending, "gone"));
  BOOST_TEST(!none.owned);
  BOOST_TEST(!none.may_start);

  b.v.invalid_plans["broken"] = "spec.rollout.maxParallel: must be at least 1";
  const auto invalid = gc::standing_of(b.v, item("a", "cpx", gp::node_phase::pending, "broken"));
  BOOST_TEST(invalid.owned, "an invalid plan still owns its items");
  BOOST_TEST(!invalid.may_start);
  BOOST_TEST(invalid.problem.reason == "PlanInvalid");

  auto deleting = std::make_shared<gp::partitioning_plan>(*b.v.plans.at("p"));
  deleting->metadata.deletion_timestamp = "2027-01-15T08:00:00Z";
  b.v.plans["p"] = deleting;
  const auto del = gc::standing_of(b.v, item("a", "cpx", gp::node_phase::pending, "p", "uid-1"));
  BOOST_TEST(del.owned);
  BOOST_TEST(!del.may_start);
  BOOST_TEST(del.problem.text() == "PlanDeleting: PartitioningPlan \"p\" is being deleted");
}

// Every node of `b` is selected by each of `plans` (an entry over the label pool=gpu).
void select_every_node(view_builder& b, const std::vector<std::string>& plans) {
  for (const auto& name : plans) {
    if (!b.v.plans.count(name))
      b.plan(name, {"cpx"}, name == "p" ? "plan-uid" : name + "-uid");
    auto plan = std::make_shared<gp::partitioning_plan>(*b.v.plans.at(name));
    for (auto& entry : plan->spec.partitionings)
      entry.selector.match_labels = {{"pool", "gpu"}};
    b.v.plans[name] = plan;
  }
  std::vector<std::shared_ptr<gc::node_info>> labelled;
  for (const auto& entry : b.v.nodes) {
    labelled.push_back(std::make_shared<gc::node_info>(*entry.second));
    labelled.back()->labels["pool"] = "gpu";
  }
  for (const auto& node : labelled)
    b.v.nodes[node->name] = node;
  b.v.selections = gc::select_nodes(b.v.plans, b.v.nodes);
}

BOOST_AUTO_TEST_CASE(a_node_another_plan_selects_does_not_start_but_one_in_flight_goes_on) {
  view_builder b;
  b.node("a");
  select_every_node(b, {"p"});
  BOOST_TEST(gc::standing_of(b.v, item("a", "cpx")).may_start, "p alone selects a");

  select_every_node(b, {"p", "q", "r", "s", "t"});
  const auto held = gc::standing_of(b.v, item("a", "cpx"));
  BOOST_TEST(held.owned);
  BOOST_TEST(!held.may_start);
  BOOST_TEST(held.problem.text() == "SelectedByAnotherPlan: node a is also selected by plan q, "
                                    "r, s and 1 more; a node two plans select starts for neither",
             held.problem.text());

  // A node in flight stays with the plan that started it; the others see the conflict.
  for (auto phase : {gp::node_phase::draining, gp::node_phase::applying,
                     gp::node_phase::waiting_operator, gp::node_phase::verifying})
    BOOST_TEST(gc::standing_of(b.v, item("a", "cpx", phase)).may_start);
  // Without the selections worked out (a view before the first), nothing is said.
  b.v.selections = nullptr;
  BOOST_TEST(gc::standing_of(b.v, item("a", "cpx")).may_start);
}

BOOST_AUTO_TEST_CASE(dcm_config_written_at_is_the_latest_of_stamp_sight_and_creation) {
  view_builder b;
  auto data = dcm_config(R"({"cpx":{}})");
  data[gc::config_created_key] = "2027-01-15T08:00:00Z";
  b.config_map(dcm.ns, dcm_cm, data);
  auto state = gc::dcm_config_of(b.v, dcm, dcm_cm);
  BOOST_TEST(state.found);
  BOOST_TEST(state.config_json == R"({"gpu-config-profiles":{"cpx":{}}})");
  BOOST_REQUIRE(state.written_at.has_value());
  BOOST_TEST((*state.written_at == *gp::parse_time("2027-01-15T08:00:01Z")),
             "creation is in whole seconds: taken as a second later");

  data[gc::config_written_key] = "2027-01-15T08:05:00.250000Z";
  data[gc::config_changed_key] = "2027-01-15T08:04:00.000000Z";
  b.config_map(dcm.ns, dcm_cm, data);
  state = gc::dcm_config_of(b.v, dcm, dcm_cm);
  BOOST_TEST((*state.written_at == *gp::parse_time("2027-01-15T08:05:00.250000Z")));

  data[gc::config_changed_key] = "2027-01-15T08:06:00.000000Z";
  b.config_map(dcm.ns, dcm_cm, data);
  BOOST_TEST(
      (*gc::dcm_config_of(b.v, dcm, dcm_cm).written_at == *gp::parse_time("2027-01-15T08:06:00Z")),
      "an admin's edit the root saw counts too");

  b.v.config_maps.erase(dcm.ns + "/" + dcm_cm);
  const auto gone = gc::dcm_config_of(b.v, dcm, dcm_cm);
  BOOST_TEST(!gone.found);
  BOOST_TEST(gone.ns == dcm.ns);
  BOOST_TEST((gone.sync == 90s));
}

BOOST_AUTO_TEST_CASE(dcm_events_from_the_node_are_read_with_the_profile_they_answer) {
  view_builder b;
  b.plan("p", {"cpx"})
      .profile("cpx", "cpx-payload")
      .payload("cpx-payload", cpx)
      .node("a")
      .node("b");
  gc::dcm_event_info retrying{"Warning", "PartitionRetrying", "{}", "cpx",
                              *gp::parse_time("2027-01-15T08:00:00Z")};
  b.dcm_event("a", "kube-amd-gpu/ev-1", retrying);
  gc::dcm_event_info done;
  done.reason = "SuccessfullyPartitioned";
  b.dcm_event("b", "kube-amd-gpu/ev-2", done);
  const auto in = assemble(b.v, item("a", "cpx"));
  BOOST_REQUIRE(in.dcm_events.size() == 1u);
  BOOST_TEST(in.dcm_events[0].reason == "PartitionRetrying");
  BOOST_TEST(in.dcm_events[0].type == "Warning");
  BOOST_TEST(in.dcm_events[0].profile == "cpx");
  BOOST_TEST((in.dcm_events[0].time == *gp::parse_time("2027-01-15T08:00:00Z")));
}

BOOST_AUTO_TEST_CASE(the_plans_profiles_go_to_dcm_unless_they_would_change_a_name_in_use) {
  view_builder b;
  // DCM holds "spx" with another payload than the plan's; node c carries it.
  b.config_map(dcm.ns, dcm_cm, dcm_config(R"({"spx":)" + cpx + "}"));
  b.plan("p", {"cpx", "spx", "broken"}).payload("cpx-payload", cpx).payload("spx-payload", spx);
  b.profile("cpx", "cpx-payload").profile("spx", "spx-payload").profile("broken", "nowhere");
  b.node("a").node("c", "spx").dcm_pod("a").dcm_pod("c");
  const auto pending = assemble(b.v, item("a", "cpx"));
  BOOST_TEST(pending.plan_profiles.empty(),
             "only a node that drains or applies writes DCM's config");

  const auto draining = assemble(b.v, item("a", "cpx", gp::node_phase::draining));
  BOOST_REQUIRE(draining.plan_profiles.size() == 1u);
  BOOST_TEST(draining.plan_profiles.at("cpx") == cpx);
  BOOST_TEST(draining.dcm_name_holders.empty(), "cpx means nothing else in DCM's config");

  const auto spx_item = assemble(b.v, item("a", "spx", gp::node_phase::draining));
  BOOST_REQUIRE(spx_item.dcm_name_holders.size() == 1u);
  BOOST_TEST(spx_item.dcm_name_holders[0] == "c", "c would be repartitioned undrained");

  // Nobody carries spx: its new payload may go to DCM.
  b.node("c");
  const auto free = assemble(b.v, item("a", "cpx", gp::node_phase::applying));
  BOOST_TEST(free.plan_profiles.count("spx") == 1u);
  BOOST_TEST(free.plan_profiles.count("broken") == 0u);
}

// Each node's DCM reads the ConfigMap its pod mounts: the GPU operator's DeviceConfig may
// name any (AMD's docs: config-manager-config), DCM's own chart mounts dcm-st. A write
// for one node goes there, and only nodes whose DCM reads it hold a name in it.
BOOST_AUTO_TEST_CASE(each_nodes_dcm_config_is_the_configmap_its_dcm_pod_mounts) {
  view_builder b;
  b.config_map(dcm.ns, "config-manager-config", dcm_config(R"({"spx":)" + cpx + "}"));
  b.config_map(dcm.ns, "dcm-st", dcm_config("{}"));
  b.plan("p", {"spx"}).payload("spx-payload", spx).profile("spx", "spx-payload");
  b.node("a").node("s").node("c", "spx").node("d", "spx");
  b.dcm_pod("a", "config-manager-config").dcm_pod("s", "dcm-st", true);
  b.dcm_pod("c", "config-manager-config").dcm_pod("d", "dcm-st", true);
  const auto a = assemble(b.v, item("a", "spx", gp::node_phase::draining));
  BOOST_TEST(a.dcm.name == "config-manager-config");
  BOOST_TEST(a.dcm.found);
  BOOST_TEST(a.dcm.running);
  BOOST_TEST(a.dcm.problem.empty());
  BOOST_REQUIRE(a.dcm.version.has_value());
  BOOST_TEST(a.dcm.version->text() == "1.3.0");
  BOOST_TEST(a.dcm_name_holders == std::vector<std::string>{"c"},
             "d's DCM reads dcm-st, which a write of config-manager-config does not rerun");
  const auto s = assemble(b.v, item("s", "spx", gp::node_phase::draining));
  BOOST_TEST(s.dcm.name == "dcm-st", "standalone DCM, recognised by its chart's label");
  BOOST_TEST(s.dcm.found);
  BOOST_TEST(s.dcm_name_holders.empty(), "dcm-st does not hold spx");
  BOOST_TEST(s.plan_profiles.count("spx") == 1u);
  // A node without a DCM pod: nothing answers, and no ConfigMap is DCM's there.
  b.node("x");
  const auto x = assemble(b.v, item("x", "spx"));
  BOOST_TEST(!x.dcm.running);
  BOOST_TEST(x.dcm.name.empty());
  BOOST_TEST(!x.dcm.found);
}

BOOST_AUTO_TEST_SUITE_END()

// Which workers a view has news for: the supervisor sends slices only to those.
BOOST_AUTO_TEST_CASE(a_view_brings_a_worker_news_of_its_own_of_its_budgets_or_none) {
  view_builder b;
  b.plan("p", {"cpx"}).profile("cpx", "cpx-payload").payload("cpx-payload", cpx);
  b.node("a").node("b").pod("a", "web-1", "web");
  const auto it = item("a", "cpx");
  b.v.items[it.metadata.name] = std::make_shared<const gp::node_partitioning>(it);
  auto update = [&](const gc::node_slice_ptr& last) {
    return gc::view_slicer(b.v, dcm).update(it, last);
  };
  const auto first = update(nullptr);
  BOOST_TEST((first.news == gc::slice_news::own), "a first slice");
  BOOST_REQUIRE(first.slice);
  BOOST_TEST(first.slice->pods->size() == 1u);

  BOOST_TEST((update(first.slice).news == gc::slice_news::none), "nothing marked changed");
  b.v.node_changes["b"] = t0; // another node's
  b.v.item_changes.insert("p-b");
  BOOST_TEST((update(first.slice).news == gc::slice_news::none));
  b.v.node_changes["a"] = t0;
  const auto own = update(first.slice);
  BOOST_TEST((own.news == gc::slice_news::own), "its node changed");
  BOOST_TEST((own.slice->node_changed_at == t0));
  b.v.node_changes.clear();
  b.v.item_changes = {it.metadata.name};
  BOOST_TEST((update(first.slice).news == gc::slice_news::own), "its item changed");
  b.v.item_changes.clear();
  b.v.shared_changed = true;
  BOOST_TEST((update(first.slice).news == gc::slice_news::own), "what all share");
  b.v.shared_changed = false;

  // A budget over a pod of the node comes: news of budgets only, with the budget. One over
  // no pod of the node: none.
  b.v.budget_changes = {"a"};
  b.pdb("web", "web");
  const auto budgets = update(first.slice);
  BOOST_TEST((budgets.news == gc::slice_news::budgets_only));
  BOOST_REQUIRE(budgets.slice);
  BOOST_REQUIRE(budgets.slice->pdbs.size() == 1u);
  BOOST_TEST(budgets.slice->pdbs[0]->name == "web");
  BOOST_TEST((budgets.slice->pods == first.slice->pods), "the rest is the last slice's");
  b.pdb("other", "db");
  BOOST_TEST((update(budgets.slice).news == gc::slice_news::none));
}

// A node labelled with a DCM name whose payload in DCM's config differs from the profile's
// is news to the workers of that profile: writing it would repartition that node.
BOOST_AUTO_TEST_CASE(a_new_holder_of_a_changed_dcm_name_is_news) {
  view_builder b;
  b.config_map(dcm.ns, dcm_cm, dcm_config(R"({"spx":)" + cpx + "}"));
  b.plan("p", {"spx"}).payload("spx-payload", spx).profile("spx", "spx-payload");
  b.node("a").node("c").dcm_pod("a").dcm_pod("c");
  const auto it = item("a", "spx");
  b.v.items[it.metadata.name] = std::make_shared<const gp::node_partitioning>(it);
  const auto first = gc::view_slicer(b.v, dcm).update(it, nullptr);
  BOOST_REQUIRE(first.slice->dcm_name_labelled);
  BOOST_TEST(first.slice->dcm_name_labelled->empty());
  b.node("c", "spx");
  b.v.relabelled_keys = {"amd.com/gpu.ready"};
  BOOST_TEST((gc::view_slicer(b.v, dcm).update(it, first.slice).news == gc::slice_news::none),
             "another label changed: who carries the name is not looked at again");
  b.v.relabelled_keys = {gc::dcm_profile_label};
  const auto next = gc::view_slicer(b.v, dcm).update(it, first.slice);
  BOOST_TEST((next.news == gc::slice_news::own));
  BOOST_REQUIRE(next.slice->dcm_name_labelled);
  BOOST_TEST(*next.slice->dcm_name_labelled == std::vector<std::string>{"c"});
  const auto again = gc::view_slicer(b.v, dcm).update(it, next.slice);
  BOOST_TEST((again.news == gc::slice_news::none), "the same holders: no news");
}

// A supervisor's memo keeps what several slices share from view to view while nothing it
// depends on changes, and works it out afresh when something does.
BOOST_AUTO_TEST_CASE(the_memo_keeps_shared_objects_until_what_they_depend_on_changes) {
  view_builder b;
  b.plan("p", {"cpx"}).profile("cpx", "cpx-payload").payload("cpx-payload", cpx).node("a");
  b.dcm_pod("a");
  const auto it = item("a", "cpx");
  gc::slice_memo memo;
  const auto first = gc::view_slicer(b.v, dcm, memo).slice(it);
  BOOST_REQUIRE(memo.dcm.count(dcm_cm) == 1u);
  const auto config = memo.dcm.at(dcm_cm);
  const auto second = gc::view_slicer(b.v, dcm, memo).slice(it);
  BOOST_TEST((first.profile == second.profile), "the same profile object");
  BOOST_TEST((memo.dcm.at(dcm_cm) == config), "DCM's config read once");
  BOOST_TEST(second.dcm->found);
  BOOST_TEST(second.dcm->pod == dcm.ns + "/dcm-a");
  BOOST_TEST((first.plan_profiles == second.plan_profiles));

  b.v.relabelled_keys = {"amd.com/gpu.ready"};
  const auto other = gc::view_slicer(b.v, dcm, memo).slice(it);
  BOOST_TEST((other.plan_profiles == first.plan_profiles), "no DCM profile label changed");
  b.v.relabelled_keys = {gc::dcm_profile_label};
  const auto relabelled = gc::view_slicer(b.v, dcm, memo).slice(it);
  BOOST_TEST((relabelled.profile == first.profile), "labels change no profile");
  BOOST_TEST((relabelled.plan_profiles != first.plan_profiles), "but who carries a name");
  b.v.relabelled_keys.clear();

  b.payload("cpx-payload", spx);
  b.v.shared_changed = true;
  const auto changed = gc::view_slicer(b.v, dcm, memo).slice(it);
  BOOST_TEST((changed.profile != first.profile));
  BOOST_REQUIRE(changed.profile->payload.has_value());
  BOOST_TEST(*changed.profile->payload == spx, "the new payload, not the memo's");
}

// Budgets that changed where none of the node's pods are (the root names the nodes with a
// pod in their namespace) are no news to it.
// A draining node's deadlock check reads every node: a change of some node's cordon is
// news to it (with the view's nodes), and to no item past its drain.
BOOST_AUTO_TEST_CASE(a_schedulability_change_brings_a_draining_worker_the_views_nodes) {
  view_builder b;
  b.plan("p", {"cpx"}).profile("cpx", "cpx-payload").payload("cpx-payload", cpx);
  b.node("a").node("b");
  auto it = item("a", "cpx");
  it.status.phase = gp::node_phase::draining;
  b.v.items[it.metadata.name] = std::make_shared<const gp::node_partitioning>(it);
  const auto first = gc::view_slicer(b.v, dcm).update(it, nullptr);
  BOOST_REQUIRE(first.slice->all_nodes);
  BOOST_TEST(first.slice->all_nodes->size() == 2u);
  b.node("c");
  b.v.schedulability_changed = true;
  const auto next = gc::view_slicer(b.v, dcm).update(it, first.slice);
  BOOST_TEST((next.news == gc::slice_news::budgets_only));
  BOOST_REQUIRE(next.slice);
  BOOST_TEST(next.slice->all_nodes->size() == 3u);
  const auto in = gc::assemble_node_inputs(*next.slice, it, std::nullopt, {}, t0);
  BOOST_REQUIRE(in.cluster_nodes);
  BOOST_TEST(in.cluster_nodes->size() == 3u);
  auto verifying = it;
  verifying.status.phase = gp::node_phase::verifying;
  BOOST_TEST(
      (gc::view_slicer(b.v, dcm).update(verifying, first.slice).news == gc::slice_news::none));
  BOOST_TEST(!gc::assemble_node_inputs(*next.slice, verifying, std::nullopt, {}, t0).cluster_nodes);
}

// With every node, a draining worker reads each DRA node's free devices (a pod holding GPUs
// through claims finds room there); a claim made on one is news to it.
BOOST_AUTO_TEST_CASE(a_draining_worker_reads_every_dra_nodes_free_devices) {
  view_builder b;
  b.plan("p", {"cpx"}).profile("cpx", "cpx-payload").payload("cpx-payload", cpx);
  b.node("a").node("b").node("c");
  auto slice = std::make_shared<gc::resource_slice_info>();
  slice->name = "b-gpu.amd.com-x1";
  slice->driver = gp::amd_dra_driver;
  slice->node = "b";
  slice->pool = "b";
  slice->generation = 1;
  for (int i = 0; i < 8; ++i)
    slice->devices.push_back({"gpu-" + std::to_string(i + 1) + "-" + std::to_string(128 + i), {}});
  gc::cluster_view::edit(b.v.slices_by_node, "b")[slice->name] = slice;
  auto it = item("a", "cpx");
  it.status.phase = gp::node_phase::draining;
  b.v.items[it.metadata.name] = std::make_shared<const gp::node_partitioning>(it);
  const auto first = gc::view_slicer(b.v, dcm).update(it, nullptr);
  BOOST_REQUIRE(first.slice->free_gpu_devices);
  BOOST_TEST((*first.slice->free_gpu_devices == std::map<std::string, std::int64_t>{{"b", 8}}),
             "only the node that publishes devices");
  auto claim = std::make_shared<gc::resource_claim_info>();
  claim->ns = "team";
  claim->name = "train-gpu";
  claim->node = "b";
  claim->devices = {{gp::amd_dra_driver, "b", "gpu-1-128"}, {gp::amd_dra_driver, "b", "gpu-2-129"}};
  gc::cluster_view::edit(b.v.claims_by_node, "b")["team/train-gpu"] = claim;
  b.v.schedulability_changed = true;
  const auto next = gc::view_slicer(b.v, dcm).update(it, first.slice);
  BOOST_REQUIRE(next.slice);
  const auto in = gc::assemble_node_inputs(*next.slice, it, std::nullopt, {}, t0);
  BOOST_REQUIRE(in.free_gpu_devices);
  BOOST_TEST(in.free_gpu_devices->at("b") == 6);
}

BOOST_AUTO_TEST_CASE(budgets_changed_elsewhere_are_not_walked) {
  view_builder b;
  b.plan("p", {"cpx"}).profile("cpx", "cpx-payload").payload("cpx-payload", cpx);
  b.node("a").pod("a", "web-1", "web");
  const auto it = item("a", "cpx");
  b.v.items[it.metadata.name] = std::make_shared<const gp::node_partitioning>(it);
  const auto first = gc::view_slicer(b.v, dcm).update(it, nullptr);
  b.pdb("web", "web"); // in "team", the pod's namespace
  b.v.budget_changes = {"b"};
  BOOST_TEST((gc::view_slicer(b.v, dcm).update(it, first.slice).news == gc::slice_news::none));
  b.v.budget_changes = {"a"};
  BOOST_TEST(
      (gc::view_slicer(b.v, dcm).update(it, first.slice).news == gc::slice_news::budgets_only));
}
