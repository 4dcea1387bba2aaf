#include "controller/plan_resolution.hpp"

#include "controller/item_name.hpp"
#include "controller/rollout_gate.hpp"

#include "controller/selector.hpp"
#include "controller/short_list.hpp"
#include "protocol/codec/pattern.hpp"
#include "protocol/codec/quote.hpp"

#include <set>

namespace gpu_partitioner::controller {

namespace codec = protocol::codec;

namespace {

// The entries or plans a conflict's reason names; the rest are counted ("and 96 more").
constexpr std::size_t names_in_reason = 3;

const std::string limits_note = " (a name of at most 63 letters, digits, '-', '_' or '.', after an "
                                "optional DNS prefix and '/')";

// What Kubernetes would refuse in a label selector: such a selector can never match.
void check_selector(const protocol::label_selector& selector, const std::string& where,
                    std::vector<std::string>& problems) {
  for (const auto& [key, value] : selector.match_labels) {
    if (!codec::is_label_key(key))
      problems.push_back(where + ".matchLabels: " + codec::quote(key) + " is not a label key" +
                         limits_note);
    else if (!value.empty() && !codec::is_label_value(value))
      problems.push_back(where + ".matchLabels: the value of " + codec::quote(key) + ", " +
                         codec::quote(value) + " (" + std::to_string(value.size()) +
                         " characters), is not a label value (at most 63)");
  }
  for (std::size_t i = 0; i < selector.match_expressions.size(); ++i) {
    const auto& r = selector.match_expressions[i];
    const std::string at = where + ".matchExpressions[" + std::to_string(i) + "]";
    if (!codec::is_label_key(r.key))
      problems.push_back(at + ".key: " + codec::quote(r.key) + " is not a label key" + limits_note);
    for (std::size_t v = 0; v < r.values.size(); ++v)
      if (!r.values[v].empty() && !codec::is_label_value(r.values[v]))
        problems.push_back(at + ".values[" + std::to_string(v) + "]: " + codec::quote(r.values[v]) +
                           " is not a label value (at most 63)");
  }
}

void check_spec(const protocol::partitioning_plan& plan, std::vector<std::string>& problems) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < plan.spec.partitionings.size(); ++i) {
    const auto& entry = plan.spec.partitionings[i];
    const std::string where = "spec.partitionings[" + std::to_string(i) + "]";
    if (is_empty(entry.selector))
      problems.push_back(where + ".selector: empty; it would select every node, so the plan "
                                 "does nothing until it names labels");
    check_selector(entry.selector, where + ".selector", problems);
    if (entry.exclude)
      check_selector(*entry.exclude, where + ".exclude", problems);
    if (!names.insert(entry.name).second)
      problems.push_back(where + ".name: \"" + entry.name + "\" is used twice");
  }
  // The node must show these after the change; one Kubernetes cannot hold never shows,
  // and the node would fail only after it was drained and repartitioned.
  const auto& v = plan.spec.verification;
  if (!v.gpu_ready_label.empty() && !codec::is_label_requirement(v.gpu_ready_label))
    problems.push_back("spec.verification.gpuReadyLabel: " + codec::quote(v.gpu_ready_label) +
                       " (" + std::to_string(v.gpu_ready_label.size()) +
                       " characters) is not a node label key or key=value" + limits_note);
  for (std::size_t i = 0; i < v.require_plugin_resources.size(); ++i)
    if (!codec::is_label_key(v.require_plugin_resources[i]))
      problems.push_back("spec.verification.requirePluginResources[" + std::to_string(i) +
                         "]: " + codec::quote(v.require_plugin_resources[i]) +
                         " is not a resource name" + limits_note);
  // Windows: an unknown time zone, or one of no length (the schema checks the rest).
  for (auto& problem : windows_of(plan.spec.rollout).problems)
    problems.push_back(std::move(problem));
  if (const auto& canary = plan.spec.rollout.canary) {
    if (canary->nodes && canary->selector)
      problems.push_back("spec.rollout.canary: set nodes or selector, not both");
    if (canary->selector) {
      if (is_empty(*canary->selector))
        problems.push_back("spec.rollout.canary.selector: empty; name the canary's labels, or "
                           "use nodes");
      check_selector(*canary->selector, "spec.rollout.canary.selector", problems);
    }
  }
}

} // namespace

plan_resolution resolve_plan(const protocol::partitioning_plan& plan,
                             const std::vector<protocol::partitioning_plan>& other_plans,
                             const shared_map<node_info>& nodes,
                             const std::map<std::string, std::string>& in_flight) {
  std::map<std::string, std::shared_ptr<const protocol::partitioning_plan>> plans;
  for (const auto& other : other_plans)
    if (other.metadata.name != plan.metadata.name)
      plans.emplace(other.metadata.name, std::make_shared<protocol::partitioning_plan>(other));
  return resolve_plan(plan, *select_nodes(plans, nodes), nodes, in_flight);
}

plan_resolution resolve_plan(const protocol::partitioning_plan& plan,
                             const plan_selections& selections, const shared_map<node_info>& nodes,
                             const std::map<std::string, std::string>& in_flight) {
  plan_resolution out;
  check_spec(plan, out.problems);
  if (!out.problems.empty())
    return out;

  std::map<std::string, std::size_t> matched;               // entry -> nodes
  std::map<std::string, std::string> control_plane_matched; // entry -> node
  for (const auto& entry : nodes) {
    // Named, not a structured binding: C++17 lambdas cannot capture bindings.
    const std::string& name = entry.first;
    const node_info& node = *entry.second;
    if (node.is_control_plane()) {
      for (const auto* e : entries_matching(plan, node))
        control_plane_matched.emplace(e->name, name);
      continue;
    }
    auto mine = entries_selecting(plan, node);
    for (const auto* e : mine)
      ++matched[e->name];
    if (mine.empty())
      continue;
    // Only the conflicts a status shows are spelt out; the rest are counted.
    auto conflict = [&](auto reason) {
      if (out.conflicts.size() < protocol::partitioning_plan_status::conflicts_limit)
        out.conflicts.push_back({name, reason()});
      ++out.conflict_count;
    };
    if (mine.size() > 1) {
      conflict([&] {
        std::vector<std::string> which;
        for (const auto* e : mine)
          which.push_back(e->name);
        return "selected by several partitionings of this plan: " +
               comma_list(which, names_in_reason);
      });
      continue;
    }
    const auto holder = in_flight.find(name);
    if (holder != in_flight.end() && holder->second != plan.metadata.name) {
      conflict([&] { return "in flight for plan " + holder->second; });
      continue;
    }
    std::vector<std::string> others; // the first names_in_reason
    std::size_t other_count = 0;
    if (holder == in_flight.end())
      for (const auto& other : selections.of(name)) {
        if (other == plan.metadata.name)
          continue;
        if (others.size() < names_in_reason)
          others.push_back(other);
        ++other_count;
      }
    if (other_count > 0) {
      conflict([&] {
        return "also selected by plan " + comma_list(others, names_in_reason, other_count);
      });
      continue;
    }
    out.selected.push_back({name, mine.front()->name, mine.front()->profile_ref.name});
  }
  for (std::size_t i = 0; i < plan.spec.partitionings.size(); ++i) {
    const auto& entry = plan.spec.partitionings[i];
    if (matched.count(entry.name))
      continue;
    std::string why =
        "spec.partitionings[" + std::to_string(i) + "] (" + entry.name + ") selects no node";
    if (auto cp = control_plane_matched.find(entry.name); cp != control_plane_matched.end())
      why += "; it matches control-plane node " + cp->second +
             ", and control-plane nodes are "
             "never selected";
    out.unmatched.push_back(why);
  }
  for (const auto& sel : out.selected) {
    const auto item = item_names_of(plan.metadata.name, sel.node).plain;
    if (item.size() > max_object_name)
      out.problems.push_back(
          "metadata.name: the NodePartitioning of node " + sel.node + " would be named " +
          codec::quote(item) + ", " + std::to_string(item.size()) + " characters, over the " +
          std::to_string(max_object_name) + " Kubernetes allows; use a shorter plan name");
  }
  return out;
}

} // namespace gpu_partitioner::controller
