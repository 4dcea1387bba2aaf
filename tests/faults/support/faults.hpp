#pragma once

// Support for the fault suite and the soak (tests/faults): what the end-to-end support
// (tests/e2e/support) does not have (the API server's audit log is there): every state a
// test's nodes went through, as a watch of its own sees them; the operator's /metrics and resident
// memory; the cluster's relay for restarting and freezing control-plane components; sizes from the
// environment.

#include "tests/e2e/support/e2e.hpp"
#include "tests/support/loopback.hpp"

#include "kube/list_watch.hpp"

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

/// Writes "prefix: what" on stderr at once; `what` is a stream expression (a << b << c).
#define FAULTS_PROGRESS(prefix, what)                                                              \
  do {                                                                                             \
    std::ostringstream progress_note_;                                                             \
    progress_note_ << what;                                                                        \
    std::cerr << prefix << ": " << progress_note_.str() << std::endl;                              \
  } while (false)

namespace gpu_partitioner::faults {

// -- settings --

/// The number in the environment variable `name`, else `fallback`.
long long env_number(const char* name, long long fallback);

// -- the cluster --

/// Runs `tools/cluster request <words>` through $GPU_PARTITIONER_CLUSTER_CTL (the
/// cluster's relay, so restarted components outlive the test); true on success.
bool cluster_request(const std::string& words);

/// The pid of a control-plane component, from the cluster's run/ directory; -1 if unknown.
pid_t component_pid(const std::string& component);

// -- the audit log (tests/e2e/support) --

using e2e::audit_event;
using e2e::audit_log;
using e2e::parse_micro_time;

// -- what the nodes went through --

/// The parts of a Node the operator changes.
struct node_state {
  bool exists = true;
  bool cordoned = false;
  bool tainted = false; // amd-dcm=up:NoExecute
  std::string profile;  // dcm.amd.com/gpu-config-profile
  bool operator==(const node_state& o) const {
    return exists == o.exists && cordoned == o.cordoned && tainted == o.tainted &&
           profile == o.profile;
  }
};

/// Counts of the changes in one node's states.
struct node_changes {
  int cordons = 0;
  int uncordons = 0;
  int taints = 0;
  int untaints = 0;
  int relabels = 0; // the profile label set to a new non-empty value
};
node_changes count_changes(const std::vector<node_state>& states);

/// Watches the Nodes that match `label_selector` on its own connection and keeps every
/// distinct state each went through (a relist after a broken watch may merge changes made
/// while it was away, never invent one).
class node_history : public kube::watch_handler {
public:
  explicit node_history(const std::string& label_selector);
  ~node_history() override;
  node_history(const node_history&) = delete;
  node_history& operator=(const node_history&) = delete;

  std::map<std::string, std::vector<node_state>> states() const;
  int restarts() const { return restarts_; }

  void on_change(const kube::watch_delivery& change) override;
  void on_restart(const std::string& note, bool relist) override;

private:
  std::string selector_;
  mutable std::mutex mutex_;
  std::map<std::string, std::vector<node_state>> states_;
  std::atomic<int> restarts_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// -- the operator process --

using test_support::bound_port;
using test_support::fresh_path;
/// GET http://127.0.0.1:<port><path>; the body, "" on any failure.
std::string http_get(int port, const std::string& path);
/// Sum of the samples of `name` whose labels include every pair in `labels`.
double metric_sum(const std::string& exposition, const std::string& name,
                  const std::map<std::string, std::string>& labels = {});
/// Resident memory of a process in KiB (VmRSS), -1 if it is gone.
long long rss_kib(pid_t pid);

/// Seconds as a string with one decimal.
std::string seconds_text(double s);

} // namespace gpu_partitioner::faults
