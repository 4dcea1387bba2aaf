#include "controller/rollout_gate.hpp"

#include "controller/item_name.hpp"
#include "controller/selector.hpp"
#include "controller/short_list.hpp"
#include "controller/soak.hpp"
#include "protocol/desired_hash.hpp"

#include <algorithm>

namespace gpu_partitioner::controller {

using protocol::canary_phase;
using protocol::node_phase;

plan_windows windows_of(const protocol::rollout_policy& rollout) {
  plan_windows out;
  for (std::size_t i = 0; i < rollout.windows.size(); ++i) {
    const auto& w = rollout.windows[i];
    const std::string field = "spec.rollout.windows[" + std::to_string(i) + "]";
    window_spec spec;
    for (auto d : w.days)
      spec.days.push_back(static_cast<int>(d));
    // The schema's patterns admit only well-formed times; a plan written before them (or
    // read from a test) is checked all the same.
    const auto start = parse_clock(w.start, false);
    const auto end = parse_clock(w.end, true);
    if (!start)
      out.problems.push_back(field + ".start: \"" + w.start + "\" is not a time HH:MM");
    if (!end)
      out.problems.push_back(field + ".end: \"" + w.end + "\" is not a time HH:MM");
    if (start && end && *start == *end)
      out.problems.push_back(field + ": start and end are both " + w.start +
                             "; a window must have a length (00:00 to 24:00 is a whole day)");
    if (auto problem = time_zone_problem(w.time_zone); !problem.empty())
      out.problems.push_back(field + ".timeZone: " + problem);
    if (start && end) {
      spec.start_minute = *start;
      spec.end_minute = *end;
    }
    spec.time_zone = w.time_zone;
    out.windows.push_back(spec);
  }
  return out;
}

std::string canary_key(const std::map<std::string, std::string>& hashes) {
  std::set<std::string> distinct;
  for (const auto& [profile, hash] : hashes)
    distinct.insert(hash);
  std::string joined;
  for (const auto& h : distinct)
    joined += h + "\n";
  return protocol::sha256_hex(joined).substr(0, 16);
}

std::string promotion_of(const std::string& key, std::int64_t generation) {
  return key + "@" + std::to_string(generation);
}

item_rollout item_rollout_of(const protocol::rollout_policy& rollout, const std::string& node,
                             const std::set<std::string>& canary_nodes) {
  item_rollout out;
  out.canary = canary_nodes.count(node) > 0;
  std::int64_t soak = rollout.node_soak_seconds.value_or(0);
  if (out.canary && rollout.canary)
    soak = std::max(soak, rollout.canary->soak());
  if (soak > 0)
    out.soak_seconds = soak;
  return out;
}

namespace {

const protocol::condition* condition_of(const protocol::node_partitioning& item,
                                        const std::string& type) {
  for (const auto& c : item.status.conditions)
    if (c.type == type)
      return &c;
  return nullptr;
}

// A node whose item found it in the target state under the desired state: nothing was
// run on it, so it teaches the canary nothing.
bool untouched_success(const protocol::node_partitioning& item, const std::string& wanted_hash) {
  return item.status.phase == node_phase::succeeded && item.status.observed_hash == wanted_hash &&
         !item.status.history.empty() &&
         item.status.history.back().reason == "AlreadyInTargetState";
}

// A run that stopped at preflight under the desired state: nothing was disturbed, and it
// clears itself once the cause is fixed.
bool preflight_failure(const protocol::node_partitioning& item) {
  return !item.status.history.empty() && item.status.history.back().reason == "PreflightFailed";
}

// A canary node that has done its part: Succeeded on the desired state, soaked, Ready.
bool canary_done(const protocol::node_partitioning& item, const node_info* node,
                 const std::string& wanted_hash) {
  if (item.status.phase != node_phase::succeeded || item.status.observed_hash != wanted_hash ||
      item.spec.desired_hash != wanted_hash)
    return false;
  if (item.spec.soak_seconds.value_or(0) > 0) {
    const auto* soaked = condition_of(item, protocol::node_condition::soaked);
    if (!soaked || soaked->status != protocol::condition_status::true_)
      return false;
  }
  return node != nullptr && node->ready;
}

struct canary_outcome {
  protocol::canary_status status;
  std::optional<std::set<std::string>> only;
  std::optional<protocol::wall_clock::time_point> wake;
};

// The canary's state carried over from the last decision: the same desired state, and
// not a failed canary the plan has been changed since (a changed plan begins it again).
protocol::canary_status carried(const gate_inputs& in, const std::string& key) {
  const auto generation = in.plan->metadata.generation;
  if (in.previous && in.previous->key == key &&
      !(in.previous->phase == canary_phase::failed && in.previous->generation != 0 &&
        in.previous->generation < generation)) {
    auto st = *in.previous;
    if (st.generation == 0) // written before canaries named their generation
      st.generation = generation;
    return st;
  }
  protocol::canary_status st;
  st.key = key;
  st.generation = generation;
  return st;
}

canary_outcome decide_canary(const gate_inputs& in, const protocol::canary_policy& policy) {
  const auto& plan = *in.plan;
  canary_outcome out;
  auto& st = out.status;
  const std::string key = canary_key(in.hashes);
  st = carried(in, key);
  if (st.phase == canary_phase::passed)
    return out;

  std::map<std::string, const selected_node*> by_node;
  for (const auto& sel : in.resolution->selected)
    by_node.emplace(sel.node, &sel);
  auto item_of = [&](const std::string& node) -> const protocol::node_partitioning* {
    return find_item(*in.items, plan, node);
  };
  auto wanted = [&](const selected_node& sel) {
    auto it = in.hashes.find(sel.profile);
    return it == in.hashes.end() ? std::string() : it->second;
  };
  auto node_of = [&](const std::string& name) -> const node_info* {
    auto it = in.nodes->find(name);
    return it == in.nodes->end() ? nullptr : it->second.get();
  };
  out.only = std::set<std::string>{};

  // A failed node stays failed until it is retried (its item left Failed through a retry),
  // whatever else happens to it: relabelled out of the plan, deleted or replaced, it is
  // still the canary's verdict. Only a change of the plan begins the canary again.
  std::vector<std::string> failed;
  for (const auto& n : st.failed_nodes) {
    const auto sel = by_node.find(n);
    const auto* item = sel == by_node.end() ? nullptr : item_of(n);
    const bool retried =
        item && item->status.phase != node_phase::failed &&
        std::any_of(item->status.history.begin(), item->status.history.end(),
                    [](const protocol::node_transition& t) { return t.reason == "Retry"; });
    if (!retried)
      failed.push_back(n);
  }
  st.failed_nodes = failed;

  // The canary's nodes, chosen once per key: those still in the plan that a run may still
  // teach something (a node found already in its target state teaches nothing).
  std::vector<std::string> members;
  for (const auto& n : st.nodes) {
    auto sel = by_node.find(n);
    if (sel == by_node.end()) {
      if (std::count(failed.begin(), failed.end(), n))
        members.push_back(n);
      continue;
    }
    const auto* item = item_of(n);
    if (item && item->spec.desired_hash == wanted(*sel->second) &&
        untouched_success(*item, wanted(*sel->second)))
      continue;
    members.push_back(n);
  }
  if (members.empty() && failed.empty()) {
    // Chosen from what a run would do to each node now, not from the items: after a spec
    // change they still show the old desired state until their updates land.
    std::vector<std::string> chosen;
    std::size_t needing = 0;
    std::string blocked;
    auto takes = [&](const selected_node& sel) {
      const auto need = in.need ? in.need(sel) : node_need{};
      if (!need.change)
        return false;
      ++needing;
      if (need.blocked.empty())
        return true;
      if (blocked.empty())
        blocked = sel.node + ": " + need.blocked;
      return false;
    };
    if (policy.selector) {
      bool any = false;
      for (const auto& sel : in.resolution->selected) {
        const auto* node = node_of(sel.node);
        if (!node || !matches(*policy.selector, node->labels))
          continue;
        any = true;
        if (takes(sel))
          chosen.push_back(sel.node);
      }
      if (!any) {
        st.phase = canary_phase::selecting;
        st.message = "spec.rollout.canary.selector matches none of the plan's nodes; no node "
                     "starts until it does";
        st.nodes.clear();
        return out;
      }
    } else {
      const auto size = policy.nodes.value_or(protocol::int_or_percent::count(1));
      std::map<std::string, std::int32_t> per_entry;
      for (const auto& sel : in.resolution->selected)
        ++per_entry[sel.entry];
      std::map<std::string, std::int32_t> taken;
      for (const auto& sel : in.resolution->selected) {
        if (taken[sel.entry] >= size.resolve(per_entry[sel.entry]))
          continue;
        if (takes(sel)) {
          chosen.push_back(sel.node);
          ++taken[sel.entry];
        }
      }
    }
    if (chosen.size() > protocol::canary_status::nodes_limit)
      chosen.resize(protocol::canary_status::nodes_limit);
    if (chosen.empty() && needing > 0) {
      // Never passed untried: the nodes that need a change wait for one to be able to start.
      st.phase = canary_phase::selecting;
      st.message = std::to_string(needing) +
                   " node(s) the canary may take need a change, and none can start yet (" +
                   blocked + "); no node starts until one can";
      st.nodes.clear();
      return out;
    }
    if (chosen.empty()) {
      st.phase = canary_phase::passed;
      st.passed_at = protocol::format_time(in.now);
      st.message = "no node the canary may take needs a change: nothing to test";
      st.nodes.clear();
      out.only.reset();
      return out;
    }
    members = chosen;
  }
  st.nodes = members;

  std::vector<std::string> waiting, reasons;
  for (const auto& n : failed)
    reasons.push_back(n + (by_node.count(n) ? "" : " (no longer in the plan)"));
  std::optional<protocol::wall_clock::time_point> soak_ends;
  for (const auto& n : members) {
    auto sel = by_node.find(n);
    if (sel == by_node.end())
      continue; // a failed node that left the plan, counted above
    const auto want = wanted(*sel->second);
    const auto* item = item_of(n);
    // Its item has not caught up with the desired state yet: it waits for the update.
    if (!item || item->spec.desired_hash != want) {
      waiting.push_back(n);
      continue;
    }
    if (item->status.phase == node_phase::failed && item->status.observed_hash == want &&
        !preflight_failure(*item)) {
      if (!std::count(failed.begin(), failed.end(), n)) {
        failed.push_back(n);
        reasons.push_back(
            n + (item->status.last_error.empty() ? "" : " (" + item->status.last_error + ")"));
      }
      continue;
    }
    if (auto end = soak_end(*item))
      soak_ends = soak_ends ? std::max(*soak_ends, *end) : *end;
    if (!canary_done(*item, node_of(n), want))
      waiting.push_back(n);
    // A canary node starts only once its item says it is one (with its soak).
    if (item->spec.canary)
      out.only->insert(item->metadata.name);
  }
  st.failed_nodes = failed;
  st.soak_ends = soak_ends ? protocol::format_time(*soak_ends) : std::string();
  if (soak_ends && *soak_ends > in.now)
    out.wake = *soak_ends;
  if (!failed.empty()) {
    st.phase = canary_phase::failed;
    // Cut short: the message is also the Canary condition's, which holds 32 KiB.
    st.message = "canary node(s) failed: " + listed(reasons) +
                 "; no other node starts (retry a failed node, or change the plan)";
    out.only = std::set<std::string>{};
    return out;
  }
  if (plan.spec.dry_run) {
    st.phase = canary_phase::in_progress;
    st.message = "dry run: these " + std::to_string(members.size()) +
                 " node(s) would be the canary; nothing starts";
    out.only = std::set<std::string>{};
    return out;
  }
  if (!waiting.empty()) {
    st.phase = canary_phase::in_progress;
    st.message = std::to_string(members.size() - waiting.size()) + "/" +
                 std::to_string(members.size()) + " canary node(s) done; waiting for " +
                 waiting.front() + (waiting.size() > 1 ? " and others" : "");
    return out;
  }
  if (policy.promotion_mode() == protocol::canary_promotion::manual) {
    auto promoted = plan.metadata.annotations.find(protocol::promote_canary_annotation);
    if (promoted == plan.metadata.annotations.end() ||
        promoted->second != promotion_of(st.key, st.generation)) {
      st.phase = canary_phase::awaiting_promotion;
      st.message = "the canary passed its soak; promote it with `kubectl partitioning promote " +
                   plan.metadata.name + "`";
      out.only = std::set<std::string>{};
      return out;
    }
  }
  st.phase = canary_phase::passed;
  st.passed_at = protocol::format_time(in.now);
  st.message = std::to_string(members.size()) + " canary node(s) passed" +
               (policy.promotion_mode() == protocol::canary_promotion::manual ? ", promoted" : "");
  out.only.reset();
  return out;
}

} // namespace

gate_decision decide_gate(const gate_inputs& in) {
  const auto& plan = *in.plan;
  const auto& rollout = plan.spec.rollout;
  gate_decision out;
  const auto total = static_cast<std::int32_t>(in.resolution->selected.size());
  out.max_failures = rollout.max_failures ? rollout.max_failures->resolve(total) : 0;

  if (!rollout.windows.empty()) {
    const auto windows = windows_of(rollout);
    const auto guard = std::chrono::seconds(rollout.min_window_remaining_seconds.value_or(0));
    const auto w = evaluate_windows(windows.windows, guard, in.now);
    protocol::window_status ws;
    ws.open = w.open;
    ws.may_start = w.may_start;
    if (w.closes_at)
      ws.closes_at = protocol::format_time(*w.closes_at);
    if (w.next_start)
      ws.next_start = protocol::format_time(*w.next_start);
    out.window = ws;
    out.wake = w.next_change;
    for (auto i : w.too_short)
      out.warnings.push_back("spec.rollout.windows[" + std::to_string(i) +
                             "] lets no node start: whenever it opens, no more than "
                             "minWindowRemainingSeconds (" +
                             std::to_string(guard.count()) +
                             " s) is left of the windows it is open with (those it "
                             "overlaps or touches count as one)");
    if (!w.may_start) {
      out.only = std::set<std::string>{};
      out.outside_window =
          std::string(w.open ? "less than minWindowRemainingSeconds is left of the window"
                             : "outside every change window") +
          "; " +
          (w.next_start ? "nodes may start from " + ws.next_start
                        : std::string("no window opens in the next week")) +
          "; nodes in flight finish";
    }
  }

  if (rollout.canary) {
    auto c = decide_canary(in, *rollout.canary);
    if (c.wake && (!out.wake || *c.wake < *out.wake))
      out.wake = c.wake;
    if (c.only && !out.only)
      out.only = c.only;
    else if (c.only && out.only) {
      std::set<std::string> both;
      for (const auto& x : *out.only)
        if (c.only->count(x))
          both.insert(x);
      out.only = both;
    }
    const auto before = in.previous && in.previous->key == c.status.key
                            ? in.previous->phase
                            : std::optional<canary_phase>{};
    if (c.status.phase != before && c.status.phase) {
      switch (*c.status.phase) {
      case canary_phase::in_progress:
        out.events.push_back({"Normal", "CanaryStarted", c.status.message});
        break;
      case canary_phase::awaiting_promotion:
        out.events.push_back({"Normal", "CanaryAwaitingPromotion", c.status.message});
        break;
      case canary_phase::passed:
        out.events.push_back({"Normal", "CanaryPassed", c.status.message});
        break;
      case canary_phase::failed:
        out.events.push_back({"Warning", "CanaryFailed", c.status.message});
        break;
      case canary_phase::selecting:
        break;
      }
    }
    out.canary = c.status;
  }
  return out;
}

} // namespace gpu_partitioner::controller
