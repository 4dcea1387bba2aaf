#pragma once

// The drain: which pods must go before the taint, what the drain policy makes of each,
// and one bounded pass of evictions over them, with what holds it. The phase around it
// (cordon, taint, timeout, conditions) is on_draining in node_draining.cpp.

#include "controller/node_machine.hpp"
#include "protocol/node_partitioning.hpp"

#include "controller/shared_map.hpp"

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace gpu_partitioner::controller {

/// A refused eviction is asked again after this long (as kubectl drain does), or at once
/// when its budget is seen to allow a disruption after the refusal.
inline constexpr std::chrono::seconds eviction_retry{5};
/// An eviction that failed otherwise (a 500, a 403) is asked again after eviction_retry,
/// doubled with each further failure up to this.
inline constexpr std::chrono::seconds eviction_backoff_limit{300};
/// A pod still terminating this long after its deletion was due is reported stuck.
inline constexpr std::chrono::seconds stuck_after{10};

/// Pods a drain must see gone, whatever they tolerate otherwise: not DaemonSet pods (their
/// controller puts them back at once), not mirror pods (the API cannot remove them), not
/// finished; of the rest, those that do not tolerate amd-dcm=up:NoExecute, and those that
/// hold GPUs (DCM finds the GPUs busy while they run).
std::vector<pod_info> evictable_pods(const std::vector<pod_info>& pods);

/// The budgets among `pdbs` that cover `pod`.
std::vector<protocol::namespaced_name> pdbs_covering(const std::vector<pdb_info>& pdbs,
                                                     const pod_info& pod);

/// What the drain policy makes of a pod that must leave the node.
enum class pod_verdict {
  /// Evicted now.
  evict,
  /// Let finish (waitForCompletion) until its timeout, then evicted.
  wait,
  /// Not evicted: the policy refuses (`why` says which rule); the drain cannot finish.
  refuse,
};

struct pod_judgement {
  pod_verdict verdict = pod_verdict::evict;
  std::string why;
  /// Evicting it loses data: its emptyDir volumes; or the pod itself (no controller).
  bool loses_empty_dir = false;
  bool unmanaged = false;
};

/// When and where the drain runs.
struct drain_context {
  // NOLINTNEXTLINE(google-explicit-constructor): a bare time is a drain started then.
  drain_context(protocol::wall_clock::time_point at) : now(at), started(at) {}
  drain_context(protocol::wall_clock::time_point at, protocol::wall_clock::time_point start,
                bool ready)
      : now(at), started(start), node_ready(ready) {}
  protocol::wall_clock::time_point now;
  /// When the drain began: waitForCompletion counts from here.
  protocol::wall_clock::time_point started;
  /// A node that is not Ready cannot confirm deletions: long-deleted pods are not waited for.
  bool node_ready = true;
  /// The operator may delete pods. Without it an eviction a budget approved but whose
  /// request died is not finished by a delete: the API server forgets it within 2 minutes,
  /// and the eviction is asked again.
  bool may_delete = true;
  /// The node drained, every node, and (a dry run) the plan's: where an evicted pod's
  /// replacement may run. Without them, no deadlock is looked for.
  std::string node;
  const shared_map<node_info>* nodes = nullptr;
  const std::set<std::string>* plan_nodes = nullptr;
  /// The plan's maxParallel (a dry run's): its nodes drain at most this many at a time, so
  /// a budget whose pod could move to more of the plan's other nodes than that always finds
  /// one open. 0: not known, every such budget is warned of.
  std::int32_t max_parallel = 0;
  /// Per node, the devices of AMD's DRA driver no claim holds (free_gpu_devices): where a
  /// pod holding GPUs through claims may find room. Without it, such a pod finds none.
  const std::map<std::string, std::int64_t>* free_gpu_devices = nullptr;
};

/// Where a replacement of a pod (from the same template) could run, other than the node
/// drained: a superset of the scheduler's choice (its nodeSelector, the taints it
/// tolerates, a GPU resource if it holds GPUs: an amd.com/ one, or for a pod holding them
/// through claims as many free DRA devices; not affinity or other free capacity), so a
/// deadlock is never claimed where there is none. Nodes are read as a real cluster shows
/// them: the node-lifecycle controller's unschedulable taint is the cordon, and a node it
/// taints not-ready or unreachable is no room.
struct replacement_room {
  /// Ready nodes it could run on, were nothing cordoned.
  std::vector<std::string> candidates;
  /// Of those, the schedulable ones; and the ones this operator cordoned or tainted.
  std::vector<std::string> open;
  std::vector<std::string> held;
};

replacement_room room_for_replacement(const pod_info& pod, const drain_context& context);

/// A budget refuses `pod` and its replacement could run only on nodes this operator
/// holds cordoned: the drains wait on each other until their timeouts. "" if not.
std::string deadlock_of(const pod_info& pod, const drain_context& context);

/// The policy's verdict on one pod of evictable_pods, in this order: a pod the
/// podSelector does not select is refused; one waitForCompletion selects is waited for
/// until its timeout; then an unmanaged pod needs force, and an emptyDir pod
/// deleteEmptyDirData.
pod_judgement judge_pod(const pod_info& pod, const protocol::drain_policy& drain,
                        const drain_context& context);

/// The drain's deadline counts from its start: timeoutSeconds, after the wait for
/// completion if there is one.
std::int64_t drain_timeout_seconds(const protocol::drain_policy& drain);

/// A pod being deleted that the drain no longer waits for: on a node that is not Ready,
/// its deletion was due longer ago than skipWaitForDeleteTimeoutSeconds.
bool deletion_not_awaited(const pod_info& pod, const protocol::drain_policy& drain,
                          const drain_context& context);

struct eviction_pass {
  /// The pods the drain must see gone (evictable_pods of the node's).
  std::vector<pod_info> evictable;
  /// What to ask of the API server now: an eviction per pod not yet evicted, again for
  /// one still shown undeleted after eviction_retry, a delete where a budget approved an
  /// eviction whose pod was never deleted.
  std::vector<pod_removal> removals;
  /// Pods whose eviction a budget refused, or would refuse by its status (never asked:
  /// held until it allows one), and why; and the budgets.
  std::vector<protocol::blocking_pod> blocked;
  std::vector<protocol::namespaced_name> blocking_pdbs;
  /// Pods the policy refuses, pods let finish, pods whose eviction failed otherwise, and
  /// pods still terminating long after their deletion was due.
  std::vector<protocol::blocking_pod> refused;
  std::vector<protocol::blocking_pod> waiting;
  std::vector<protocol::blocking_pod> failed;
  std::vector<protocol::blocking_pod> stuck;
  /// Of `blocked`, those whose replacement only nodes this operator holds could run
  /// (deadlock_of).
  int deadlocked = 0;
  /// Everything above that holds a pod, and the DaemonSet pods that hold GPUs (not
  /// evicted, shown).
  std::vector<protocol::blocking_pod> shown;
  /// Evictions asked for the first time that lose data: emptyDir, or the pod for good.
  std::vector<std::string> losing_empty_dir;
  std::vector<std::string> losing_unmanaged;
  /// Being deleted, but not waited for (deletion_not_awaited): their uids.
  std::vector<std::string> not_awaited;
  /// Pods evicted by this run; pods on the node neither evicted nor being deleted; pods
  /// on the node not among the evicted (deleted by someone else included).
  int evicted = 0;
  int not_evicted = 0;
  int uncounted = 0;
  /// Pods the drain waits on: evictable and not given up on (not_awaited).
  int left = 0;
};

/// One pass over the node's pods. `evictions`: what became of each earlier request, by
/// "namespace/name". `pdbs`: the budgets covering the node's pods.
eviction_pass plan_evictions(const std::vector<pod_info>& pods, const std::vector<pdb_info>& pdbs,
                             const std::map<std::string, eviction_memory>& evictions,
                             const protocol::drain_policy& drain, const drain_context& context);

/// What a drain of the node would do if it began now, pod by pod (the dry run).
protocol::dry_run_preview preview_drain(const std::vector<pod_info>& pods,
                                        const std::vector<pdb_info>& pdbs,
                                        const protocol::drain_policy& drain,
                                        const drain_context& context);

/// Keeps the outcome of an eviction request; a failure counts on from the last one of the
/// same run. What other runs asked is forgotten.
void record_eviction(std::map<std::string, eviction_memory>& memory, const std::string& pod,
                     eviction_memory outcome);

/// How long after a failed eviction the next is asked.
std::chrono::seconds eviction_backoff(int failures);

/// Why a drain that timed out did not finish: the budgets that held it, the policy's
/// refusals, failed evictions and stuck pods, else how many pods were left.
std::string drain_timeout_reason(const eviction_pass& pass, const std::vector<pdb_info>& pdbs,
                                 long long timeout_seconds);

} // namespace gpu_partitioner::controller
