#include "controller/drain.hpp"

#include <algorithm>
#include <set>

namespace gpu_partitioner::controller {

namespace {

std::string key_of(const pod_info& p) {
  return p.ns + "/" + p.name;
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

eviction_pass plan_evictions(const std::vector<pod_info>& pods, const std::vector<pdb_info>& pdbs,
                             const std::map<std::string, eviction_memory>& evictions,
                             const protocol::drain_policy& drain,
                             protocol::wall_clock::time_point now) {
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
  for (const auto& pod : pass.evictable) {
    if (pod.deleting)
      continue;
    auto mem = evictions.find(key_of(pod));
    // Evicted already, and the pods' watch has not shown the deletion yet (it may lag
    // behind the other watches, say after the API server came back): asking again would
    // be a duplicate. Only a pod still shown undeleted after the retry interval is.
    if (mem != evictions.end() && mem->second.done && now - mem->second.at < eviction_retry)
      continue;
    if (mem != evictions.end() && mem->second.blocked) {
      auto covering = pdbs_covering(pdbs, pod);
      pass.blocking_pdbs.insert(pass.blocking_pdbs.end(), covering.begin(), covering.end());
      std::string reason = mem->second.message;
      if (!covering.empty())
        reason = "PodDisruptionBudget " + covering.front().namespace_ + "/" +
                 covering.front().name + " does not allow it now";
      pass.blocked.push_back({pod.ns, pod.name, reason});
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
      if (approved) {
        pass.removals.push_back({pod.ns, pod.name, pod.uid, false});
        continue;
      }
    }
    const bool again = mem != evictions.end() && mem->second.done;
    pass.removals.push_back({pod.ns, pod.name, pod.uid, evict, again});
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
  // A DaemonSet's pod that holds GPUs is not evicted (its controller puts it back at
  // once); DCM will find the GPUs busy and retry until it is gone. Shown, not waited on.
  pass.shown = pass.blocked;
  for (const auto& pod : pods)
    if (pod.daemon_set && pod.gpus > 0 && !pod.finished())
      pass.shown.push_back(
          {pod.ns, pod.name, "a DaemonSet's pod holds GPUs: DCM finds them busy until it is gone"});
  return pass;
}

std::string drain_timeout_reason(const std::vector<pod_info>& evictable,
                                 const std::vector<pdb_info>& pdbs, long long timeout_seconds) {
  std::string why = "the drain did not finish within " + std::to_string(timeout_seconds) + " s";
  std::set<std::string> names;
  for (const auto& pod : evictable)
    for (const auto& pdb : pdbs_covering(pdbs, pod))
      names.insert(pdb.namespace_ + "/" + pdb.name);
  if (!names.empty()) {
    why += ": blocked by PodDisruptionBudget";
    for (const auto& n : names)
      why += " " + n;
  } else if (!evictable.empty()) {
    why += ": " + std::to_string(evictable.size()) + " pod(s) still on the node";
  }
  return why;
}

} // namespace gpu_partitioner::controller
