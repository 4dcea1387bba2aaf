#pragma once

// The drain: which pods must go before the taint, and one bounded pass of evictions over
// them, with what blocks it. The phase around it (cordon, taint, timeout, conditions) is
// on_draining in node_machine.cpp.

#include "controller/node_machine.hpp"
#include "protocol/node_partitioning.hpp"

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace gpu_partitioner::controller {

/// A refused eviction is asked again after this long (as kubectl drain does), or at once
/// when its budget is seen to allow a disruption after the refusal.
inline constexpr std::chrono::seconds eviction_retry{5};

/// Pods a drain must evict, whatever they tolerate otherwise: not DaemonSet pods (their
/// controller puts them back at once), not mirror pods (the API cannot remove them), not
/// finished; of the rest, those that do not tolerate amd-dcm=up:NoExecute, and those that
/// hold GPUs (DCM finds the GPUs busy while they run).
std::vector<pod_info> evictable_pods(const std::vector<pod_info>& pods);

/// The budgets among `pdbs` that cover `pod`.
std::vector<protocol::namespaced_name> pdbs_covering(const std::vector<pdb_info>& pdbs,
                                                     const pod_info& pod);

struct eviction_pass {
  /// The pods the drain must see gone (evictable_pods of the node's).
  std::vector<pod_info> evictable;
  /// What to ask of the API server now: an eviction per pod not yet evicted, again for
  /// one still shown undeleted after eviction_retry, a delete where a budget approved an
  /// eviction whose pod was never deleted.
  std::vector<pod_removal> removals;
  /// Pods whose eviction a budget refused, and why; and the budgets.
  std::vector<protocol::blocking_pod> blocked;
  std::vector<protocol::namespaced_name> blocking_pdbs;
  /// `blocked` and the DaemonSet pods that hold GPUs (not evicted, shown).
  std::vector<protocol::blocking_pod> shown;
  /// Pods evicted by this run; pods on the node neither evicted nor being deleted; pods
  /// on the node not among the evicted (deleted by someone else included).
  int evicted = 0;
  int not_evicted = 0;
  int uncounted = 0;
};

/// One pass over the node's pods. `evictions`: what became of each earlier request, by
/// "namespace/name". `pdbs`: the budgets covering the node's pods.
eviction_pass plan_evictions(const std::vector<pod_info>& pods, const std::vector<pdb_info>& pdbs,
                             const std::map<std::string, eviction_memory>& evictions,
                             const protocol::drain_policy& drain,
                             protocol::wall_clock::time_point now);

/// Why a drain that timed out did not finish: the budgets that held it, else how many
/// pods were left.
std::string drain_timeout_reason(const std::vector<pod_info>& evictable,
                                 const std::vector<pdb_info>& pdbs, long long timeout_seconds);

} // namespace gpu_partitioner::controller
