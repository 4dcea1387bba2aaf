#include "controller/plan_status.hpp"

#include "controller/item_name.hpp"
#include "controller/short_list.hpp"
#include "controller/soak.hpp"

#include <algorithm>
#include <set>

namespace gpu_partitioner::controller {

using protocol::condition_status;
using protocol::node_phase;
using protocol::plan_phase;

namespace {

void set_condition(protocol::partitioning_plan_status& st, const std::string& type, bool on,
                   const std::string& reason, const std::string& message,
                   protocol::wall_clock::time_point now, std::int64_t generation) {
  const auto wanted = on ? condition_status::true_ : condition_status::false_;
  for (auto& c : st.conditions)
    if (c.type == type) {
      if (c.status != wanted)
        c.last_transition_time = protocol::format_time(now);
      c.status = wanted;
      c.reason = reason;
      c.message = message;
      c.observed_generation = generation;
      return;
    }
  st.conditions.push_back({type, wanted, generation, protocol::format_time(now), reason, message});
}

void drop_condition(protocol::partitioning_plan_status& st, const std::string& type) {
  auto& c = st.conditions;
  c.erase(std::remove_if(c.begin(), c.end(), [&](const auto& x) { return x.type == type; }),
          c.end());
}

const protocol::condition* find_condition(const protocol::partitioning_plan_status& st,
                                          const std::string& type) {
  for (const auto& c : st.conditions)
    if (c.type == type)
      return &c;
  return nullptr;
}

// Ready, Reconciling and Stalled, as kstatus reads them, from the phase just worked out.
void set_standing(protocol::partitioning_plan_status& st, protocol::wall_clock::time_point now,
                  std::int64_t generation) {
  namespace pc = protocol::plan_condition;
  const auto phase = st.phase.value_or(plan_phase::pending);
  const auto* done = find_condition(st, pc::completed);
  const std::string progress = done ? done->message : "no node succeeded yet";
  const std::string name(protocol::codec::to_string(phase));
  if (phase == plan_phase::completed) {
    set_condition(st, pc::ready, true, "AllNodesSucceeded", progress, now, generation);
    set_condition(st, pc::reconciling, false, "Completed", progress, now, generation);
    set_condition(st, pc::stalled, false, "Completed", progress, now, generation);
    return;
  }
  set_condition(st, pc::ready, false, name, progress, now, generation);
  if (phase == plan_phase::degraded) {
    const auto* invalid = find_condition(st, pc::invalid);
    const auto* degraded = find_condition(st, pc::degraded);
    const auto* why = invalid && invalid->status == condition_status::true_ ? invalid : degraded;
    set_condition(st, pc::stalled, true, why ? why->reason : name, why ? why->message : progress,
                  now, generation);
    set_condition(st, pc::reconciling, false, "Stalled", "the rollout stopped: see Stalled", now,
                  generation);
    return;
  }
  set_condition(st, pc::stalled, false, name, progress, now, generation);
  set_condition(st, pc::reconciling, phase != plan_phase::paused, name, progress, now, generation);
}

void remember(protocol::partitioning_plan_status& st,
              const protocol::partitioning_plan_status& previous,
              protocol::wall_clock::time_point now) {
  st.history = previous.history;
  if (!previous.phase || *previous.phase != *st.phase) {
    st.history.push_back(
        {protocol::format_time(now), std::string(protocol::codec::to_string(*st.phase)),
         std::to_string(st.nodes.succeeded) + "/" + std::to_string(st.nodes.total) +
             " nodes done, " + std::to_string(st.nodes.failed) + " failed"});
    while (st.history.size() > protocol::partitioning_plan_status::history_limit)
      st.history.erase(st.history.begin());
  }
}

// status.order: the plan's nodes still to come (no item yet, Pending or in flight), in the
// order the rollout takes them: the canary's nodes first until it passes (no other starts
// before), each group by name, as the governor grants tokens. The first order_limit, and
// the count.
void fill_order(protocol::partitioning_plan_status& st, const protocol::partitioning_plan& plan,
                const plan_resolution& resolution,
                const std::map<std::string, const protocol::node_partitioning*>& items) {
  auto to_come = [&](const std::string& node) {
    const auto* item = find_item(items, plan, node);
    if (!item || item->metadata.deletion_timestamp)
      return true;
    const auto phase = item->status.phase.value_or(node_phase::pending);
    return phase != node_phase::succeeded && phase != node_phase::failed;
  };
  std::size_t count = 0;
  auto add = [&](const std::string& node) {
    ++count;
    if (st.order.size() < protocol::partitioning_plan_status::order_limit)
      st.order.push_back(node);
  };
  std::set<std::string> canary;
  if (st.canary && st.canary->phase != protocol::canary_phase::passed)
    canary.insert(st.canary->nodes.begin(), st.canary->nodes.end());
  for (const bool canary_pass : {true, false})
    for (const auto& sel : resolution.selected)
      if (canary.count(sel.node) == (canary_pass ? 1u : 0u) && to_come(sel.node))
        add(sel.node);
  st.order_count = static_cast<std::int32_t>(count);
}

} // namespace

bool failed_in_preflight(const protocol::node_partitioning& item) {
  return item.status.phase == protocol::node_phase::failed && !item.status.history.empty() &&
         item.status.history.back().reason == "PreflightFailed";
}

protocol::partitioning_plan_status
aggregate_plan_status(const protocol::partitioning_plan& plan, const plan_resolution& resolution,
                      const std::map<std::string, const protocol::node_partitioning*>& items,
                      const protocol::partitioning_plan_status& previous,
                      protocol::wall_clock::time_point now, const gate_decision& gate,
                      const std::vector<unmade_item>& unmade) {
  protocol::partitioning_plan_status st;
  st.window = gate.window;
  st.canary = gate.canary;
  st.conditions = previous.conditions;
  st.observed_generation = plan.metadata.generation;
  const auto gen = plan.metadata.generation;
  fill_order(st, plan, resolution, items);
  const auto conflicts_shown =
      std::min(resolution.conflicts.size(), protocol::partitioning_plan_status::conflicts_limit);
  st.conflicts.assign(resolution.conflicts.begin(),
                      resolution.conflicts.begin() + static_cast<std::ptrdiff_t>(conflicts_shown));
  st.conflict_count =
      static_cast<std::int32_t>(std::max(resolution.conflict_count, resolution.conflicts.size()));
  std::vector<std::string> failed_nodes;
  for (const auto& [name, item] : items) {
    if (item->metadata.deletion_timestamp)
      continue;
    ++st.nodes.total;
    switch (item->status.phase.value_or(node_phase::pending)) {
    case node_phase::pending:
      ++st.nodes.pending;
      break;
    case node_phase::draining:
      ++st.nodes.draining;
      break;
    case node_phase::applying:
      ++st.nodes.applying;
      break;
    case node_phase::waiting_operator:
      ++st.nodes.waiting_operator;
      break;
    case node_phase::verifying:
      ++st.nodes.verifying;
      break;
    case node_phase::succeeded:
      ++st.nodes.succeeded;
      if (soak_end(*item).value_or(now) > now)
        ++st.nodes.soaking;
      break;
    case node_phase::failed:
      ++st.nodes.failed;
      failed_nodes.push_back(item->spec.node_name + (item->status.last_error.empty()
                                                         ? ""
                                                         : " (" + item->status.last_error + ")"));
      break;
    }
  }
  const auto in_flight = st.nodes.draining + st.nodes.applying + st.nodes.waiting_operator +
                         st.nodes.verifying + st.nodes.soaking;

  if (!resolution.problems.empty()) {
    set_condition(st, protocol::plan_condition::invalid, true, "InvalidSpec",
                  listed(resolution.problems) + "; no node starts until it is fixed", now, gen);
  } else {
    set_condition(st, protocol::plan_condition::invalid, false, "Valid", "the plan resolves", now,
                  gen);
  }
  if (st.conflict_count > 0) {
    std::vector<std::string> which;
    for (const auto& c : st.conflicts)
      which.push_back(c.node + ": " + c.reason);
    set_condition(st, protocol::plan_condition::conflict, true, "NodesSelectedTwice",
                  std::to_string(st.conflict_count) + " node(s) left alone: " +
                      listed(which, static_cast<std::size_t>(st.conflict_count)),
                  now, gen);
  } else {
    set_condition(st, protocol::plan_condition::conflict, false, "NoConflict",
                  "no node is selected twice", now, gen);
  }
  if (resolution.problems.empty()) {
    // A selector that matches nothing is most often a typo in a label: say which entry.
    if (!resolution.unmatched.empty())
      set_condition(st, protocol::plan_condition::nodes_selected, false, "NoNodesSelected",
                    listed(resolution.unmatched), now, gen);
    else
      set_condition(st, protocol::plan_condition::nodes_selected, true, "NodesSelected",
                    "every partitioning selects at least one node", now, gen);
  }
  // More failures than maxFailures (or a failed canary) stop the rollout; fewer are
  // reported and the rest goes on.
  const bool canary_failed = st.canary && st.canary->phase == protocol::canary_phase::failed;
  const bool stopped = st.nodes.failed > gate.max_failures || canary_failed;
  // A failed canary degrades the plan even once its failed node has left the plan: what
  // it found still holds for the nodes that remain.
  set_condition(
      st, protocol::plan_condition::degraded, st.nodes.failed > 0 || canary_failed,
      canary_failed         ? "CanaryFailed"
      : st.nodes.failed > 0 ? "NodesFailed"
                            : "NoFailures",
      st.nodes.failed > 0
          ? "failed: " + listed(failed_nodes) +
                (canary_failed ? "; the canary failed: no further nodes start"
                 : stopped     ? "; no further nodes start (maxFailures " +
                                 std::to_string(gate.max_failures) + ")"
                           : "; within maxFailures (" + std::to_string(gate.max_failures) +
                                 "): the rollout goes on")
      : canary_failed
          ? "the canary failed (" + listed(st.canary->failed_nodes) + "): no further nodes start"
          : "no node failed",
      now, gen);
  if (st.window) {
    std::string message =
        gate.outside_window.empty()
            ? "inside a change window" +
                  (st.window->closes_at.empty() ? std::string() : " until " + st.window->closes_at)
            : gate.outside_window;
    if (!gate.warnings.empty())
      message += "; " + listed(gate.warnings);
    set_condition(st, protocol::plan_condition::outside_window, !gate.outside_window.empty(),
                  gate.outside_window.empty() ? "InsideWindow" : "OutsideWindow", message, now,
                  gen);
  } else {
    drop_condition(st, protocol::plan_condition::outside_window);
  }
  if (st.canary && st.canary->phase) {
    const auto phase = *st.canary->phase;
    set_condition(st, protocol::plan_condition::canary, phase == protocol::canary_phase::passed,
                  phase == protocol::canary_phase::failed
                      ? "CanaryFailed"
                      : std::string(protocol::codec::to_string(phase)),
                  st.canary->message, now, gen);
  } else {
    drop_condition(st, protocol::plan_condition::canary);
  }
  // A node without its item is neither done nor on its way: say which, and why, until each
  // has one (the condition stays, True, once it appeared).
  if (!unmade.empty()) {
    std::vector<std::string> which;
    for (const auto& u : unmade)
      which.push_back("NodePartitioning " + u.name + " (node " + u.node + "): " + u.why);
    set_condition(st, protocol::plan_condition::items_created, false, "CreateFailed",
                  std::to_string(unmade.size()) + " node(s) have no NodePartitioning: " +
                      listed(which) + "; asked again, and the other nodes go on",
                  now, gen);
  } else if (std::any_of(st.conditions.begin(), st.conditions.end(), [](const auto& c) {
               return c.type == protocol::plan_condition::items_created;
             })) {
    set_condition(st, protocol::plan_condition::items_created, true, "ItemsCreated",
                  "every selected node has its NodePartitioning", now, gen);
  }
  // A dry run's answer is on the items; the plan says once every node has it, so that a
  // user can wait for the plan (kubectl wait --for=condition=DryRun) without naming nodes.
  if (plan.spec.dry_run) {
    std::size_t previewed = 0, evict = 0, findings = 0;
    for (const auto& sel : resolution.selected) {
      const auto* item = find_item(items, plan, sel.node);
      if (!item || item->metadata.deletion_timestamp || !item->spec.dry_run ||
          !item->status.preview)
        continue;
      ++previewed;
      evict += item->status.preview->pods_to_evict.size();
      findings += item->status.preview->findings.size();
    }
    const bool all = resolution.problems.empty() && !resolution.selected.empty() &&
                     previewed == resolution.selected.size();
    set_condition(st, protocol::plan_condition::dry_run, all, all ? "Previewed" : "Previewing",
                  std::to_string(previewed) + "/" + std::to_string(resolution.selected.size()) +
                      " node(s) previewed: " + std::to_string(evict) +
                      " pod(s) would be evicted, " + std::to_string(findings) +
                      " preflight finding(s) (each NodePartitioning's status.preview); nothing "
                      "on any node changes",
                  now, gen);
  } else {
    drop_condition(st, protocol::plan_condition::dry_run);
  }
  set_condition(st, protocol::plan_condition::paused, plan.spec.paused,
                plan.spec.paused ? "Paused" : "Running",
                plan.spec.paused ? "spec.paused: no node starts; nodes in flight finish"
                                 : "not paused",
                now, gen);
  const bool complete = st.nodes.total > 0 && st.nodes.succeeded == st.nodes.total &&
                        st.nodes.soaking == 0 && unmade.empty();
  set_condition(st, protocol::plan_condition::completed, complete,
                complete ? "AllNodesSucceeded" : "InProgress",
                std::to_string(st.nodes.succeeded) + "/" + std::to_string(st.nodes.total) +
                    " nodes succeeded",
                now, gen);
  set_condition(st, protocol::plan_condition::progressing, in_flight > 0,
                in_flight > 0 ? "NodesInFlight" : "Idle",
                std::to_string(in_flight) + " node(s) in flight", now, gen);

  const bool nothing_left =
      st.nodes.succeeded + st.nodes.failed == st.nodes.total && st.nodes.soaking == 0;
  if (!resolution.problems.empty())
    st.phase = plan_phase::degraded;
  else if ((st.nodes.failed > 0 && (stopped || nothing_left)) || canary_failed)
    st.phase = plan_phase::degraded;
  else if (complete)
    st.phase = plan_phase::completed;
  else if (plan.spec.paused)
    st.phase = plan_phase::paused;
  else if (in_flight > 0 || st.nodes.succeeded > 0)
    st.phase = plan_phase::progressing;
  else
    st.phase = plan_phase::pending;
  set_standing(st, now, gen);
  remember(st, previous, now);
  return st;
}

protocol::partitioning_plan_status
invalid_plan_status(const protocol::partitioning_plan_status& previous, const std::string& problem,
                    std::int64_t generation, protocol::wall_clock::time_point now) {
  protocol::partitioning_plan_status st = previous;
  st.observed_generation = generation;
  set_condition(st, protocol::plan_condition::invalid, true, "InvalidSpec",
                problem + "; the plan is not acted on", now, generation);
  st.phase = plan_phase::degraded;
  set_standing(st, now, generation);
  remember(st, previous, now);
  return st;
}

std::vector<protocol::profile_devices> devices_by_profile(const plan_resolution& resolution,
                                                          const cluster_view& view) {
  std::map<std::string, protocol::profile_devices> by_profile;
  for (const auto& selected : resolution.selected) {
    auto profile = view.profiles.find(selected.profile);
    auto slices = view.slices_by_node.find(selected.node);
    if (profile == view.profiles.end() || profile->second->spec.expected_devices.empty() ||
        slices == view.slices_by_node.end() || !slices->second)
      continue;
    std::vector<resource_slice_info> of_node;
    for (const auto& [name, slice] : *slices->second)
      of_node.push_back(*slice);
    if (!publishes_gpus(of_node))
      continue;
    auto& entry = by_profile[selected.profile];
    entry.profile = selected.profile;
    ++entry.nodes;
    for (const auto& want : profile->second->spec.expected_devices) {
      const auto pub = publication_of(of_node, protocol::device_driver(want));
      entry.devices += matching_devices(pub.current, want);
      entry.expected += want.count;
    }
  }
  std::vector<protocol::profile_devices> out;
  for (auto& [name, entry] : by_profile)
    out.push_back(std::move(entry));
  return out;
}

} // namespace gpu_partitioner::controller
