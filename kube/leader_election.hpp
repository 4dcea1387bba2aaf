#pragma once

#include "kube/client.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

namespace gpu_partitioner::kube {

/// A coordination.k8s.io/v1 Lease as leader election reads it.
struct lease_record {
  bool exists = false;
  std::string resource_version;
  std::string holder;
  long long lease_duration_seconds = 0;
  std::string acquire_time;
  std::string renew_time;
  long long transitions = 0;
};

struct election_config {
  std::string lease_namespace;
  std::string lease_name;
  /// Unique per process: "hostname_pid_random".
  std::string identity;
  std::chrono::seconds lease_duration{15};
  /// A leader that has not renewed for this long steps down (< lease_duration, so it
  /// stops acting before anyone else may start).
  std::chrono::seconds renew_deadline{10};
  std::chrono::milliseconds retry_period{2000};
  /// Hand the lease back on a clean stop. Off only to simulate a crashed leader.
  bool release_on_stop = true;
};

enum class election_action { wait, create, take_over, renew, step_down };

const char* to_string(election_action action);

inline std::ostream& operator<<(std::ostream& out, election_action action) {
  return out << to_string(action);
}

/// What this process knows, judged only by its own monotonic clock: the lease as last
/// seen and when it was first seen that way, never a comparison of timestamps written
/// by another machine's clock.
struct election_state {
  using clock = std::chrono::steady_clock;
  bool leading = false;
  bool observed = false;
  std::string observed_holder;
  std::string observed_renew_time;
  std::string observed_resource_version;
  clock::time_point observed_at{};
  clock::time_point last_renewed{};
};

/// Records a fresh read of the lease: the local time moves only when the lease changed.
void observe_lease(election_state& state, const lease_record& lease,
                   election_state::clock::time_point now);

/// The one decision of leader election.
election_action decide_election(const election_state& state, const lease_record& lease,
                                election_state::clock::time_point now,
                                const election_config& config);

/// Until when this process may act as the leader, by its own monotonic clock: the start of
/// its last successful renewal plus the renew deadline (when decide_election has it step
/// down); the clock's minimum when it does not lead.
election_state::clock::time_point lease_valid_until(const election_state& state,
                                                    const election_config& config);

/// Runs leader election against a Lease until `stop` is set; releases the lease on the
/// way out if it holds it, so a successor need not wait for expiry.
class leader_elector {
public:
  leader_elector(client& api, election_config config);

  /// Calls `on_started` when this process becomes leader and `on_stopped` when it stops
  /// leading (deadline missed, lease lost, or shutdown). Blocks until `stop`.
  void run(const std::atomic<bool>& stop, const std::function<void()>& on_started,
           const std::function<void()>& on_stopped);

  bool leading() const { return leading_.load(); }
  /// For writers (connection_config::may_write), callable from any thread, also after the
  /// elector is gone: true only until lease_valid_until. A leader frozen past its renew
  /// deadline is refused the moment it wakes, before its elector has looked at the Lease.
  std::function<bool()> write_gate() const;
  /// The lease has been read at least once: leadership is known either way.
  bool observed() const { return observed_.load(); }
  const election_config& config() const { return config_; }

private:
  result<lease_record> read();
  result<lease_record> write(const lease_record& base, bool take, bool release);

  client& api_;
  election_config config_;
  election_state state_;
  std::atomic<bool> leading_{false};
  std::atomic<bool> observed_{false};
  std::shared_ptr<std::atomic<election_state::clock::rep>> valid_until_;
};

/// A unique identity for this process: host name, pid and a random suffix.
std::string default_identity();

} // namespace gpu_partitioner::kube
