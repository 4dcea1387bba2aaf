#include "controller/drain.hpp"

#include "controller/selector.hpp"
#include "controller/short_list.hpp"

#include <algorithm>
#include <iterator>
#include <set>

namespace gpu_partitioner::controller {

namespace {

using protocol::pod_hold;

std::string key_of(const pod_info& p) {
  return p.ns + "/" + p.name;
}

protocol::blocking_pod hold(const pod_info& pod, std::string reason, pod_hold cause) {
  return {pod.ns, pod.name, std::move(reason), cause};
}

} // namespace

std::vector<pod_info> evictable_pods(const std::vector<pod_info>& pods) {
  std::vector<pod_info> out;
  for (const auto& p : pods)
    if (!p.daemon_set && !p.mirror && !p.finished() && (!p.tolerates_dcm_taint() || p.gpus > 0))
      out.push_back(p);
  return out;
}

std::vector<protocol::namespaced_name> pdbs_covering(const std::vector<pdb_info>& pdbs,
                                                     const pod_info& pod) {
  std::vector<protocol::namespaced_name> out;
  for (const auto& pdb : pdbs)
    if (pdb.covers(pod))
      out.push_back({pdb.ns, pdb.name});
  return out;
}

pod_judgement judge_pod(const pod_info& pod, const protocol::drain_policy& drain,
                        const drain_context& context) {
  pod_judgement j;
  j.loses_empty_dir = pod.empty_dir;
  j.unmanaged = pod.unmanaged;
  if (drain.pod_selector && !matches(*drain.pod_selector, pod.labels)) {
    j.verdict = pod_verdict::refuse;
    j.why = std::string("drainPolicy.podSelector does not select it, and it ") +
            (pod.gpus > 0 ? "holds GPUs" : "does not tolerate the amd-dcm taint");
    return j;
  }
  if (drain.wait && matches(drain.wait->pod_selector, pod.labels)) {
    const auto until = context.started + std::chrono::seconds(drain.wait->timeout_seconds);
    if (context.now < until) {
      j.verdict = pod_verdict::wait;
      j.why = "drainPolicy.waitForCompletion: let finish until " + protocol::format_time(until) +
              ", evicted then";
      return j;
    }
  }
  if (pod.unmanaged && !drain.forces()) {
    j.verdict = pod_verdict::refuse;
    j.why = "no controller owns it: evicted, it is gone for good (drainPolicy.force allows it)";
    return j;
  }
  if (pod.empty_dir && !drain.deletes_empty_dir_data()) {
    j.verdict = pod_verdict::refuse;
    j.why = "it mounts an emptyDir volume whose data eviction deletes "
            "(drainPolicy.deleteEmptyDirData allows it)";
    return j;
  }
  return j;
}

std::int64_t drain_timeout_seconds(const protocol::drain_policy& drain) {
  return drain.timeout_seconds + (drain.wait ? drain.wait->timeout_seconds : 0);
}

bool deletion_not_awaited(const pod_info& pod, const protocol::drain_policy& drain,
                          const drain_context& context) {
  return pod.deleting && !context.node_ready && pod.deletion_deadline &&
         context.now - *pod.deletion_deadline >= std::chrono::seconds(drain.skip_wait_seconds());
}

namespace {

bool tolerated(const pod_info& pod, const taint& t) {
  return std::any_of(pod.tolerations.begin(), pod.tolerations.end(),
                     [&](const toleration& tol) { return tolerates(tol, t); });
}

// The node-lifecycle controller marks it not Ready: no kubelet there starts a replacement,
// whatever the pod tolerates.
bool marked_down(const node_info& node) {
  return std::any_of(node.taints.begin(), node.taints.end(), [](const taint& t) {
    return t.key == not_ready_taint_key || t.key == unreachable_taint_key;
  });
}

// The GPUs a replacement would ask for: through claims, as many devices of AMD's DRA driver
// free; else some amd.com/ resource.
bool gpus_fit(const pod_info& pod, const std::string& name, const node_info& node,
              const drain_context& context) {
  if (pod.gpus <= 0)
    return true;
  if (pod.gpu_claims) {
    if (context.free_gpu_devices == nullptr)
      return false;
    auto free = context.free_gpu_devices->find(name);
    return free != context.free_gpu_devices->end() && free->second >= pod.gpus;
  }
  return std::any_of(node.allocatable.begin(), node.allocatable.end(), [](const auto& r) {
    return r.first.rfind("amd.com/", 0) == 0 && r.second != "0";
  });
}

} // namespace

namespace {

// room_for_replacement's scan; with `until_open`, it ends at the first open node (the
// rest of the room is then incomplete): a deadlock needs none, and a drain asks for each
// pod a budget holds on every pass, over every node of the cluster.
replacement_room scan_room(const pod_info& pod, const drain_context& context, bool until_open) {
  replacement_room room;
  if (context.nodes == nullptr)
    return room;
  const taint cordon_taint{unschedulable_taint_key, "", "NoSchedule"};
  const bool tolerates_cordon = tolerated(pod, cordon_taint);
  for (const auto& [name, node] : *context.nodes) {
    if (name == context.node || !node->ready || marked_down(*node))
      continue;
    bool fits = !pod.node_selector_cut;
    for (const auto& [key, value] : pod.node_selector)
      fits = fits && node->label(key) == value;
    // Its taints, but ours and the cordon's (as the node-lifecycle controller shows it too):
    // those are what holds the node.
    bool cordoned = node->unschedulable;
    for (const auto& t : node->taints) {
      if (t.key == unschedulable_taint_key) {
        cordoned = true;
        continue;
      }
      if (fits && t.effect != "PreferNoSchedule" && t.key != dcm_taint_key)
        fits = tolerated(pod, t);
    }
    if (!fits || !gpus_fit(pod, name, *node, context))
      continue;
    room.candidates.push_back(name);
    // A pod that tolerates the cordon may be scheduled on a cordoned node.
    const bool closed = cordoned && !tolerates_cordon;
    const bool ours = node->annotations.count(was_unschedulable_annotation) > 0 &&
                      (closed || node->has_dcm_taint());
    if (ours) {
      room.held.push_back(name);
    } else if (!closed) {
      room.open.push_back(name);
      if (until_open)
        break;
    }
  }
  return room;
}

} // namespace

replacement_room room_for_replacement(const pod_info& pod, const drain_context& context) {
  return scan_room(pod, context, false);
}

std::string deadlock_of(const pod_info& pod, const drain_context& context) {
  const auto room = scan_room(pod, context, true);
  if (room.held.empty() || !room.open.empty())
    return {};
  return "its replacement could run only on node(s) this operator holds cordoned (" +
         comma_list(room.held) + "): those drains and this one wait on each other until a timeout";
}

std::chrono::seconds eviction_backoff(int failures) {
  auto wait = eviction_retry;
  for (int i = 1; i < failures && wait < eviction_backoff_limit; ++i)
    wait *= 2;
  return std::min(wait, eviction_backoff_limit);
}

void record_eviction(std::map<std::string, eviction_memory>& memory, const std::string& pod,
                     eviction_memory outcome) {
  for (auto it = memory.begin(); it != memory.end();)
    it = it->second.run == outcome.run ? std::next(it) : memory.erase(it);
  if (outcome.failed) {
    auto was = memory.find(pod);
    outcome.failures = was != memory.end() && was->second.failed ? was->second.failures + 1 : 1;
  }
  memory[pod] = std::move(outcome);
}

eviction_pass plan_evictions(const std::vector<pod_info>& pods, const std::vector<pdb_info>& pdbs,
                             const std::map<std::string, eviction_memory>& evictions,
                             const protocol::drain_policy& drain, const drain_context& context) {
  const auto now = context.now;
  eviction_pass pass;
  pass.evictable = evictable_pods(pods);
  // Progress counts each pod once: an evicted pod still terminating is evicted, not also
  // left to evict.
  for (const auto& [key, mem] : evictions)
    if (mem.done)
      ++pass.evicted;
  for (const auto& pod : pass.evictable) {
    auto mem = evictions.find(key_of(pod));
    const bool done = mem != evictions.end() && mem->second.done;
    if (!done)
      ++pass.uncounted;
    if (!done && !pod.deleting)
      ++pass.not_evicted;
  }
  const bool evict = drain.kind == protocol::eviction_kind::eviction && drain.respect_pdb;
  // Evictions this pass sends, by the budget ("namespace/name") that covers their pod.
  std::map<std::string, int> planned_under;
  for (const auto& pod : pass.evictable) {
    // Read gone from the API server: a lagging watch still shows it, and asking again every
    // eviction_retry would read it again each time until the watch catches up.
    if (auto mem = evictions.find(key_of(pod));
        mem != evictions.end() && !mem->second.gone_uid.empty() && mem->second.gone_uid == pod.uid)
      continue;
    if (pod.deleting) {
      if (deletion_not_awaited(pod, drain, context)) {
        pass.not_awaited.push_back(pod.uid);
        continue;
      }
      ++pass.left;
      if (pod.deletion_deadline && now - *pod.deletion_deadline >= stuck_after)
        pass.stuck.push_back(hold(pod,
                                  "still terminating; its deletion was due at " +
                                      protocol::format_time(*pod.deletion_deadline) +
                                      ": its kubelet has not confirmed it gone" +
                                      (context.node_ready ? "" : " (the node is not Ready)"),
                                  pod_hold::terminating));
      continue;
    }
    ++pass.left;
    const auto judged = judge_pod(pod, drain, context);
    if (judged.verdict == pod_verdict::refuse) {
      pass.refused.push_back(hold(pod, judged.why, pod_hold::policy));
      continue;
    }
    if (judged.verdict == pod_verdict::wait) {
      pass.waiting.push_back(hold(pod, judged.why, pod_hold::waiting_for_completion));
      continue;
    }
    auto mem = evictions.find(key_of(pod));
    // Evicted already, and the pods' watch has not shown the deletion yet (it may lag
    // behind the other watches, say after the API server came back): asking again would
    // be a duplicate. Only a pod still shown undeleted after the retry interval is.
    if (mem != evictions.end() && mem->second.done && now - mem->second.at < eviction_retry)
      continue;
    if (mem != evictions.end() && mem->second.failed) {
      // Not a budget's refusal: the server's own answer (a namespace being deleted, a pod
      // two budgets cover, a denied request). Shown as it came, and asked again slower.
      const auto wait = eviction_backoff(mem->second.failures);
      const auto next = mem->second.at + wait;
      pass.failed.push_back(hold(pod,
                                 "eviction failed " + std::to_string(mem->second.failures) +
                                     " time(s): " + mem->second.message + "; asked again at " +
                                     protocol::format_time(next),
                                 pod_hold::eviction_error));
      if (now < next)
        continue;
    }
    if (mem != evictions.end() && mem->second.blocked) {
      auto covering = pdbs_covering(pdbs, pod);
      pass.blocking_pdbs.insert(pass.blocking_pdbs.end(), covering.begin(), covering.end());
      std::string reason = mem->second.message;
      if (!covering.empty())
        reason = "PodDisruptionBudget " + covering.front().namespace_ + "/" +
                 covering.front().name + " does not allow it now";
      if (!pod.ready)
        for (const auto& pdb : pdbs)
          if (pdb.covers(pod) && !pdb.always_allow_unhealthy) {
            reason += "; the pod is not Ready, and under unhealthyPodEvictionPolicy "
                      "IfHealthyBudget an unhealthy pod goes only while its budget has the "
                      "healthy pods it wants (" +
                      std::to_string(pdb.current_healthy) + " of " +
                      std::to_string(pdb.desired_healthy) + "): AlwaysAllow lets it go";
            break;
          }
      if (const auto deadlock = deadlock_of(pod, context); !deadlock.empty()) {
        reason += "; " + deadlock;
        ++pass.deadlocked;
      }
      pass.blocked.push_back(hold(pod, reason, pod_hold::budget));
      // Asked again at once when the budget allows a disruption now: news only if its
      // status was seen after the refusal. Right after an API server restart the
      // disruption controller's status lags; a stale "allowed" retried at once raced it.
      const auto refused_at = mem->second.at;
      const bool budget_open = std::any_of(pdbs.begin(), pdbs.end(), [&](const auto& pdb) {
        return pdb.covers(pod) && pdb.disruptions_allowed > 0 && pdb.seen > refused_at;
      });
      if (now - mem->second.at < eviction_retry && !budget_open)
        continue;
      // The budget already counts this very pod as disrupted: an eviction of it was
      // approved, but the pod was never deleted (the evicting client died mid-request,
      // say, an operator killed). The API server refuses every further eviction until it
      // forgets that entry, after 2 minutes; finish the approved one by deleting the pod.
      const bool approved = std::any_of(pdbs.begin(), pdbs.end(), [&](const auto& pdb) {
        return pdb.covers(pod) && pdb.disrupted_pods.count(pod.name) > 0;
      });
      if (approved && context.may_delete) {
        pass.removals.push_back(
            {pod.ns, pod.name, pod.uid, false, false, drain.grace_period_seconds});
        continue;
      }
    }
    // Never asked in this run, Ready, under one budget whose status shows no disruption
    // left once the evictions this pass already sends under it are counted: the API
    // server would refuse it (429) after reading and checking the budget, work that a
    // wave of hundreds of nodes pays for in every eviction's wait. It is held without a
    // request, shown as a refused one is, and asked as soon as the budget's status
    // allows a disruption (a budget's change wakes the node's worker). Not held: a pod
    // the API server judges otherwise (not Ready: unhealthyPodEvictionPolicy; under two
    // budgets: an error), and one the budget counts disrupted already (its approved
    // eviction is finished below, once refused).
    if (mem == evictions.end() && evict && pod.ready) {
      const pdb_info* only = nullptr;
      int covering = 0;
      for (const auto& pdb : pdbs)
        if (pdb.covers(pod)) {
          only = &pdb;
          ++covering;
        }
      if (covering == 1 && only->disrupted_pods.count(pod.name) == 0 &&
          only->disruptions_allowed - planned_under[only->ns + "/" + only->name] <= 0) {
        std::string reason =
            "PodDisruptionBudget " + only->ns + "/" + only->name + " does not allow it now";
        if (const auto deadlock = deadlock_of(pod, context); !deadlock.empty()) {
          reason += "; " + deadlock;
          ++pass.deadlocked;
        }
        pass.blocking_pdbs.push_back({only->ns, only->name});
        pass.blocked.push_back(hold(pod, reason, pod_hold::budget));
        continue;
      }
    }
    if (evict)
      for (const auto& pdb : pdbs)
        if (pdb.covers(pod))
          ++planned_under[pdb.ns + "/" + pdb.name];
    const bool again = mem != evictions.end() && mem->second.done;
    if (mem == evictions.end()) {
      if (judged.loses_empty_dir)
        pass.losing_empty_dir.push_back(key_of(pod));
      if (judged.unmanaged)
        pass.losing_unmanaged.push_back(key_of(pod));
    }
    pass.removals.push_back({pod.ns, pod.name, pod.uid, evict, again, drain.grace_period_seconds});
  }
  auto& b = pass.blocking_pdbs;
  std::sort(b.begin(), b.end(), [](const auto& x, const auto& y) {
    return x.namespace_ != y.namespace_ ? x.namespace_ < y.namespace_ : x.name < y.name;
  });
  b.erase(std::unique(b.begin(), b.end(),
                      [](const auto& x, const auto& y) {
                        return x.namespace_ == y.namespace_ && x.name == y.name;
                      }),
          b.end());
  for (const auto* list : {&pass.refused, &pass.blocked, &pass.failed, &pass.waiting, &pass.stuck})
    pass.shown.insert(pass.shown.end(), list->begin(), list->end());
  // A DaemonSet's pod that holds GPUs is not evicted (its controller puts it back at
  // once); DCM will find the GPUs busy and retry until it is gone. Shown, not waited on.
  for (const auto& pod : pods)
    if (pod.daemon_set && pod.gpus > 0 && !pod.finished())
      pass.shown.push_back(
          hold(pod, "a DaemonSet's pod holds GPUs: DCM finds them busy until it is gone",
               pod_hold::daemon_set));
  return pass;
}

protocol::dry_run_preview preview_drain(const std::vector<pod_info>& pods,
                                        const std::vector<pdb_info>& pdbs,
                                        const protocol::drain_policy& drain,
                                        const drain_context& context) {
  protocol::dry_run_preview preview;
  std::set<std::pair<std::string, std::string>> blocking;
  for (const auto& pod : evictable_pods(pods)) {
    if (pod.deleting)
      continue; // going already
    const protocol::namespaced_name name{pod.ns, pod.name};
    const auto judged = judge_pod(pod, drain, context);
    if (judged.verdict == pod_verdict::refuse) {
      preview.pods_refused.push_back(hold(pod, judged.why, pod_hold::policy));
      continue;
    }
    (judged.verdict == pod_verdict::wait ? preview.pods_to_wait_for : preview.pods_to_evict)
        .push_back(name);
    if (judged.loses_empty_dir)
      preview.pods_losing_empty_dir_data.push_back(name);
    if (judged.unmanaged)
      preview.unmanaged_pods.push_back(name);
    bool held = false;
    for (const auto& pdb : pdbs)
      if (pdb.covers(pod) && pdb.disruptions_allowed <= 0) {
        blocking.insert({pdb.ns, pdb.name});
        held = true;
      }
    if (held)
      preview.pods_blocked_by_budget.push_back(name);
    const bool budgeted =
        std::any_of(pdbs.begin(), pdbs.end(), [&](const auto& pdb) { return pdb.covers(pod); });
    if (budgeted && context.plan_nodes != nullptr) {
      const auto room = room_for_replacement(pod, context);
      const bool all_ours =
          !room.candidates.empty() &&
          std::all_of(room.candidates.begin(), room.candidates.end(),
                      [&](const auto& n) { return context.plan_nodes->count(n) > 0; });
      // This node and every candidate must be in flight together for the wait: more
      // candidates than maxParallel leaves one open.
      const bool together = context.max_parallel <= 0 ||
                            room.candidates.size() < static_cast<std::size_t>(context.max_parallel);
      if (all_ours && together) {
        preview.warnings.push_back(
            "pod " + pod.ns + "/" + pod.name +
            ": a PodDisruptionBudget covers it, and its replacement could run only on nodes of "
            "this plan (" +
            comma_list(room.candidates) +
            "): drained at the same time, they wait on each other until a timeout");
      }
    }
  }
  for (const auto& [ns, name] : blocking)
    preview.blocking_pdbs.push_back({ns, name});
  return preview;
}

std::string drain_timeout_reason(const eviction_pass& pass, const std::vector<pdb_info>& pdbs,
                                 long long timeout_seconds) {
  std::string why = "the drain did not finish within " + std::to_string(timeout_seconds) + " s";
  std::vector<std::string> parts;
  // Only pods a budget refused blame it: one terminating under a budget is not held by it.
  std::set<std::string> names;
  for (const auto& b : pass.blocked)
    for (const auto& pod : pass.evictable)
      if (pod.ns == b.namespace_ && pod.name == b.name)
        for (const auto& pdb : pdbs_covering(pdbs, pod))
          names.insert(pdb.namespace_ + "/" + pdb.name);
  if (!names.empty()) {
    std::string list;
    for (const auto& n : names)
      list += " " + n;
    parts.push_back("blocked by PodDisruptionBudget" + list);
  }
  // Then each pod the policy refuses, whose eviction failed, or that is stuck, with why.
  for (const auto* pods : {&pass.refused, &pass.failed, &pass.stuck})
    for (const auto& p : *pods)
      parts.push_back(p.namespace_ + "/" + p.name + ": " + p.reason);
  if (parts.empty() && pass.left > 0)
    parts.push_back(std::to_string(pass.left) + " pod(s) still on the node");
  for (std::size_t i = 0; i < parts.size(); ++i)
    why += (i == 0 ? ": " : "; ") + parts[i];
  return why;
}

} // namespace gpu_partitioner::controller
