#pragma once

// A fleet for the fault suite and the soak, on one e2e_cluster: N simulated MI300X nodes
// (half training, partitioned to CPX/NPS4 = 64 partitions, a memory-mode change; half
// inference, to QPX/NPS1 = 32, a compute-mode change), GPU workloads under
// PodDisruptionBudgets spread over them, and one plan over all of them. Plus the checks
// every fault scenario makes: the limits and the budgets, sampled throughout; the final
// state of every node; each node's changes happening once.

#include "tests/e2e/support/e2e.hpp"
#include "tests/faults/support/faults.hpp"

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gpu_partitioner::faults {

struct fleet_options {
  int nodes = 10;
  /// GPU pods in all; 0 means one per two nodes, a negative number none.
  int pods = 0;
  /// Replicas per Deployment; each has a PDB with minAvailable = replicas - 1.
  int replicas = 5;
  /// gpu-sim's --time-scale: 0.05 makes a memory-mode change 7 s, a compute change 0.5 s.
  std::string time_scale = "0.05";
  /// The plan's maxParallel and maxUnavailable (a count).
  int max_parallel = 2;
  int max_unavailable = 2;
  int drain_timeout = 600;
  /// Half of it is how long a node waits on DCM's state label alone when DCM's Event
  /// is lost (DCM does not retry Events): scenarios that take the API server down
  /// mid-rollout set it to what the time scale needs.
  int verification_timeout = 600;
  bool paused = false;
};

struct fleet {
  e2e::e2e_cluster& cluster;
  fleet_options options;
  std::vector<std::string> training;
  std::vector<std::string> inference;
  /// Deployment (and PDB) name -> minAvailable.
  std::map<std::string, int> budgets;
  std::string cpx_profile;
  std::string qpx_profile;
  std::string plan;

  /// Nodes, gpu-sim, workloads (Ready) and profiles; no plan and no operator yet.
  fleet(e2e::e2e_cluster& c, fleet_options o);

  /// The plan over every node of the fleet (training -> CPX/NPS4, inference -> QPX/NPS1).
  void create_plan(const std::string& suffix);
  /// The profile and partition count a node must end with.
  std::string target_profile(const std::string& node) const;
  long long target_gpus(const std::string& node) const;

  /// Items Succeeded (0 while the plan has none).
  int succeeded();
  /// Items per phase ("Pending" for no status yet).
  std::map<std::string, int> phases();
};

/// What the sampler checks in every sample: maxParallel and maxUnavailable among the
/// fleet's items and nodes, and every PDB's minAvailable among its healthy pods.
struct fleet_invariants {
  int max_parallel;
  int max_unavailable;
  std::map<std::string, int> budgets;
  std::shared_ptr<std::atomic<int>> peak_in_flight = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<std::atomic<int>> peak_unavailable = std::make_shared<std::atomic<int>>(0);
  /// The lowest (healthy - minAvailable) seen over all budgets and samples.
  std::shared_ptr<std::atomic<int>> lowest_headroom = std::make_shared<std::atomic<int>>(1 << 20);

  explicit fleet_invariants(const fleet& f);
  e2e::sampler::check_fn fn() const;
};

/// The sampler's findings as one failure message each (BOOST_TEST), and that it sampled.
void expect_no_violations(e2e::sampler& s, const std::string& what);

/// Every node of the fleet: Succeeded, its target profile, DCM success, ready, the
/// target partition count, neither cordoned nor tainted, none of our marks left.
/// Returns the number of nodes checked.
int expect_fleet_partitioned(fleet& f);

/// No node of the fleet cordoned or tainted unless its item is Failed.
void expect_none_stranded(fleet& f);

/// Each node was cordoned, tainted, relabelled, untainted and uncordoned exactly once,
/// as the test's own watch saw it.
void expect_each_change_once(const node_history& h, const std::vector<std::string>& nodes);

/// Every item went through Draining, Applying, WaitingOperator, Verifying and Succeeded
/// exactly once.
void expect_each_phase_once(fleet& f);

/// Per pod: the successful evictions the operator made (user agents starting with
/// "gpu-partitioner/" and naming a replica); fails for any pod evicted twice.
std::map<std::string, int> expect_each_eviction_once(const std::vector<audit_event>& events,
                                                     const std::string& ns);

/// The identity in the log line "... starting as <identity> against ...", "" if none.
std::string operator_identity(const std::string& log_text);

/// Occurrences of `part` in `text`.
std::size_t count_of(const std::string& text, const std::string& part);

/// The whole of a file, "" if unreadable.
std::string file_text(const std::string& path);

} // namespace gpu_partitioner::faults
