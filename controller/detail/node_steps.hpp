#pragma once

// What the phases of step_node (node_machine.cpp) share: the status editor every change
// goes through, and the predicates and writes more than one phase uses. One file per
// phase: node_pending.cpp, node_draining.cpp, node_dcm.cpp (Applying, WaitingOperator,
// Verifying), node_succeeded.cpp (Succeeded and its soak), node_restore.cpp (Failed,
// deletion, and the restore and failure steps the others end with). Internal to the
// controller library.

#include "controller/drain.hpp"
#include "controller/node_machine.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpu_partitioner::controller::detail {

using protocol::condition_status;
using protocol::node_phase;
namespace node_condition = protocol::node_condition;
using namespace std::chrono_literals;

// How often a waiting phase looks again.
inline constexpr std::chrono::milliseconds poll_interval = 1s;

// The phase as the API spells it ("WaitingOperator").
std::string_view phase_name(node_phase p);

// -- status helpers: every change goes through these, so history and conditions agree --

struct status_editor {
  protocol::node_partitioning_status status;
  const protocol::node_partitioning_status& original;
  protocol::wall_clock::time_point now;
  node_step& out;

  node_phase phase() const { return status.phase.value_or(node_phase::pending); }

  void enter(node_phase next, const std::string& reason, const std::string& message,
             bool warning = false) {
    status.phase = next;
    status.history.push_back({next, protocol::format_time(now), reason, message});
    while (status.history.size() > protocol::node_partitioning_status::history_limit)
      status.history.erase(status.history.begin());
    out.events.push_back({false, warning ? "Warning" : "Normal", reason,
                          std::string(phase_name(next)) + (message.empty() ? "" : ": " + message)});
  }

  void condition(const std::string& type, bool ok, const std::string& reason,
                 const std::string& message) {
    const auto wanted = ok ? condition_status::true_ : condition_status::false_;
    for (auto& c : status.conditions) {
      if (c.type != type)
        continue;
      if (c.status != wanted)
        c.last_transition_time = protocol::format_time(now);
      c.status = wanted;
      c.reason = reason;
      c.message = message;
      return;
    }
    status.conditions.push_back(
        {type, wanted, std::nullopt, protocol::format_time(now), reason, message});
  }

  void drop_condition(const std::string& type) {
    auto& c = status.conditions;
    c.erase(std::remove_if(c.begin(), c.end(), [&](const auto& x) { return x.type == type; }),
            c.end());
  }

  void error(const std::string& message) { status.last_error = message; }

  // When the current phase was entered (from history), or now if unknown.
  protocol::wall_clock::time_point entered() const {
    for (auto it = status.history.rbegin(); it != status.history.rend(); ++it)
      if (it->phase == phase())
        if (auto t = protocol::parse_time(it->time))
          return *t;
    return now;
  }

  void finish() {
    if (!(status == original))
      out.status = status;
  }
};

// -- what more than one phase reads --

// The node's annotation `key`, if it has one.
std::optional<std::string> annotation(const node_info& node, const char* key);

// The profiles DCM's config lacks (or holds otherwise), as one write of all the plan's:
// every write of the file runs DCM again on every labelled node, so as few as possible.
// `drained`: the node is drained and tainted (Applying). Before that, a payload that would
// change what DCM's config holds under the DCM name the node's own label carries waits:
// DCM reruns every labelled node when its file changes, this one in the middle of its
// drain, under the pods still on it.
std::optional<dcm_config_write> missing_profiles(const node_inputs& in, bool drained);

// Whether the GPUs may be in an unknown state: DCM was asked (a run got to
// WaitingOperator or beyond) and no run has been verified since. A run that failed in
// Applying failed before the label was set; a retry of a node that failed after DCM was
// asked does not make its GPUs known again until it succeeds.
bool gpus_unsettled(const protocol::node_partitioning_status& st);

// Whether the current run got past Pending, so it may have cordoned or tainted the node:
// a run that never started (a preflight failure, a plan gone before its turn) has nothing
// of its own to undo and leaves the node as it found it.
bool run_started(const protocol::node_partitioning_status& st);

// The run cordons the node's GPUs, not the node (drainPolicy.cordon Devices): the name of
// its DeviceTaintRule, else "".
std::string device_rule(const protocol::node_partitioning_status& st);

// At most a century: the clock counts nanoseconds, so a longer timeout (int64's maximum
// in seconds, say) would overflow and expire at once.
long long timeout_of(std::int64_t seconds);

// The current phase was entered at least `seconds` (timeout_of) ago.
bool past(const status_editor& s, std::int64_t seconds);

// Where and when a drain of the node runs (and what it reads of the other nodes).
drain_context drain_context_of(const node_inputs& in, protocol::wall_clock::time_point started);

// What keeps drainPolicy.cordon Devices from cordoning only the node's GPUs ("" if nothing:
// the node publishes them through AMD's DRA driver, in one pool, and the API server serves
// DeviceTaintRules). Not asked: "".
std::string device_cordon_problem(const node_inputs& in);

// The run will cordon the node's GPUs only.
bool cordons_devices(const node_inputs& in);

// The pods a drain of the node's GPUs removes: those holding them. (The rest stay.)
std::vector<pod_info> gpu_pods(const std::vector<pod_info>& pods);

// Why a node that passed preflight cannot go on: what preflight finds now.
std::string why_profile_unavailable(const node_inputs& in);

// The mark a run writes beside the profile label: the label is this run's when the node's
// annotation holds it.
std::string run_mark(const node_inputs& in, const status_editor& s);

// The node carries this run's mark: written with the profile label, or with its removal
// for a relabel, once the drain is over.
bool marked_by_this_run(const node_inputs& in, const status_editor& s);

// The node carries this run's profile label and mark.
bool labelled_by_this_run(const node_inputs& in, const status_editor& s);

// -- phases --

// One step of the node in each phase: status changes through `s`, writes into `out`.
void on_pending(const node_inputs& in, status_editor& s, node_step& out);

void on_draining(const node_inputs& in, status_editor& s, node_step& out);

void on_applying(const node_inputs& in, status_editor& s, node_step& out);

void on_waiting_operator(const node_inputs& in, status_editor& s, node_step& out);

void on_verifying(const node_inputs& in, status_editor& s, node_step& out);

void on_succeeded(const node_inputs& in, status_editor& s, node_step& out);

// Puts the node back as we found it: no taint, and schedulable unless an admin had
// cordoned it. The taint goes first, in a step of its own: until it is gone, our
// annotation stays as the mark that the node is ours to restore. Returns true if
// anything is left to do.
bool restore_node(const node_inputs& in, status_editor& s, node_step& out, bool keep_cordon);

// Fails the run before DCM was asked: the node is returned to service (the cordon kept
// only if an earlier run left its GPUs unsettled).
void fail_and_roll_back(const node_inputs& in, status_editor& s, node_step& out,
                        const std::string& reason, const std::string& message);

// Whether DCM has said since the run's start that it is done with the run's profile:
// success (its Event, or the state label), PartitionFailure (its retries are over), or a
// failure it does not retry.
bool dcm_done(const node_inputs& in, const protocol::node_partitioning_status& st);

// Until when DCM may still change the node's GPUs for a run that failed after it was
// asked (status.dcmMayChangeUntil), while that is ahead and DCM has not said it is done.
std::optional<protocol::wall_clock::time_point>
dcm_hold(const node_inputs& in, const protocol::node_partitioning_status& st);

// Fails the run after DCM was asked: the node stays cordoned (or its GPUs tainted). The
// NoExecute taint comes off so the device plugin and labeller report what they see, unless
// DCM may still retry (`dcm_may_retry`: it did not answer, or answered with a failure it
// retries): then it stays until DCM's retries are over (dcm_hold), so that no pod runs on
// GPUs DCM may still change.
void fail_keeping_cordon(const node_inputs& in, status_editor& s, node_step& out,
                         const std::string& reason, const std::string& message,
                         bool dcm_may_retry = false);

// Failed, and a NodePartitioning being deleted.
void on_failed(const node_inputs& in, status_editor& s, node_step& out);

void on_deleting(const node_inputs& in, status_editor& s, node_step& out);

} // namespace gpu_partitioner::controller::detail
