#include "controller/plan_status.hpp"

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

// Joins `parts` with "; ", stopping after 10 of them or 4000 characters so that a plan
// with thousands of nodes, or hostile names, still fits a condition's 32 KiB message.
std::string listed(const std::vector<std::string>& parts) {
  constexpr std::size_t max_parts = 10;
  constexpr std::size_t max_chars = 4000;
  std::string out;
  std::size_t shown = 0;
  for (const auto& p : parts) {
    if (shown == max_parts || out.size() + p.size() > max_chars)
      break;
    out += (out.empty() ? "" : "; ") + p;
    ++shown;
  }
  if (shown < parts.size())
    out += (out.empty() ? "" : "; ") + std::string("... and ") +
           std::to_string(parts.size() - shown) + " more";
  return out;
}

} // namespace

protocol::partitioning_plan_status
aggregate_plan_status(const protocol::partitioning_plan& plan, const plan_resolution& resolution,
                      const std::map<std::string, const protocol::node_partitioning*>& items,
                      const protocol::partitioning_plan_status& previous,
                      protocol::wall_clock::time_point now) {
  protocol::partitioning_plan_status st;
  st.conditions = previous.conditions;
  st.observed_generation = plan.metadata.generation;
  const auto gen = plan.metadata.generation;
  for (const auto& sel : resolution.selected)
    st.order.push_back(sel.node);
  st.conflicts = resolution.conflicts;
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
      break;
    case node_phase::failed:
      ++st.nodes.failed;
      failed_nodes.push_back(item->spec.node_name + (item->status.last_error.empty()
                                                         ? ""
                                                         : " (" + item->status.last_error + ")"));
      break;
    }
  }
  const auto in_flight =
      st.nodes.draining + st.nodes.applying + st.nodes.waiting_operator + st.nodes.verifying;

  if (!resolution.problems.empty()) {
    set_condition(st, protocol::plan_condition::invalid, true, "InvalidSpec",
                  listed(resolution.problems) + "; no node starts until it is fixed", now, gen);
  } else {
    set_condition(st, protocol::plan_condition::invalid, false, "Valid", "the plan resolves", now,
                  gen);
  }
  if (!st.conflicts.empty()) {
    std::vector<std::string> which;
    for (const auto& c : st.conflicts)
      which.push_back(c.node + ": " + c.reason);
    set_condition(st, protocol::plan_condition::conflict, true, "NodesSelectedTwice",
                  std::to_string(st.conflicts.size()) + " node(s) left alone: " + listed(which),
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
  set_condition(st, protocol::plan_condition::degraded, st.nodes.failed > 0,
                st.nodes.failed > 0 ? "NodesFailed" : "NoFailures",
                st.nodes.failed > 0 ? "failed: " + listed(failed_nodes) + "; no further nodes start"
                                    : "no node failed",
                now, gen);
  set_condition(st, protocol::plan_condition::paused, plan.spec.paused,
                plan.spec.paused ? "Paused" : "Running",
                plan.spec.paused ? "spec.paused: no node starts; nodes in flight finish"
                                 : "not paused",
                now, gen);
  const bool complete = st.nodes.total > 0 && st.nodes.succeeded == st.nodes.total;
  set_condition(st, protocol::plan_condition::completed, complete,
                complete ? "AllNodesSucceeded" : "InProgress",
                std::to_string(st.nodes.succeeded) + "/" + std::to_string(st.nodes.total) +
                    " nodes succeeded",
                now, gen);
  set_condition(st, protocol::plan_condition::progressing, in_flight > 0,
                in_flight > 0 ? "NodesInFlight" : "Idle",
                std::to_string(in_flight) + " node(s) in flight", now, gen);

  if (!resolution.problems.empty())
    st.phase = plan_phase::degraded;
  else if (st.nodes.failed > 0)
    st.phase = plan_phase::degraded;
  else if (complete)
    st.phase = plan_phase::completed;
  else if (plan.spec.paused)
    st.phase = plan_phase::paused;
  else if (in_flight > 0 || st.nodes.succeeded > 0)
    st.phase = plan_phase::progressing;
  else
    st.phase = plan_phase::pending;
  remember(st, previous, now);
  return st;
}

protocol::partitioning_plan_status
invalid_plan_status(const protocol::partitioning_plan_status& previous, const std::string& problem,
                    protocol::wall_clock::time_point now) {
  protocol::partitioning_plan_status st = previous;
  set_condition(st, protocol::plan_condition::invalid, true, "InvalidSpec",
                problem + "; the plan is not acted on", now, 0);
  st.phase = plan_phase::degraded;
  remember(st, previous, now);
  return st;
}

} // namespace gpu_partitioner::controller
