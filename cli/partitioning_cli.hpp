#pragma once

// kubectl-partitioning: the decisions and the text, pure (objects and the time in,
// text or requests out). The binary in kubectl_partitioning.cpp does the I/O.

#include "cli/arguments.hpp"
#include "protocol/node_partitioning.hpp"
#include "protocol/partitioning_plan.hpp"
#include "protocol/timestamp.hpp"

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace gpu_partitioner::cli {

/// "4s", "2m05s", "1h02m", "3d04h"; "-" for a negative or unknown duration.
std::string format_duration(std::chrono::seconds d);

/// The items of `plan` among `all` (by spec.planRef name and uid): those of the nodes still
/// to come in the plan's rollout order (status.order), the others after them by node name.
std::vector<protocol::node_partitioning>
items_of_plan(const protocol::partitioning_plan& plan,
              const std::vector<protocol::node_partitioning>& all);

/// `kubectl partitioning status PLAN`: the plan's phase and progress, its change window and
/// canary when it has them, its conditions that say something is wrong, and one row per
/// node with its phase, time in phase and what holds it (blocking pods and PDBs, lastError,
/// its soak). What the objects say is printed escaped (protocol::printable): their text
/// never reaches the terminal as control characters. `wide` (-o wide) adds each node's
/// NodePartitioning and when its run started and completed.
std::string render_status(const protocol::partitioning_plan& plan,
                          const std::vector<protocol::node_partitioning>& items,
                          protocol::wall_clock::time_point now, bool all_nodes, bool wide = false);

/// `kubectl partitioning list`: one row per plan, with its window and canary phase ("-"
/// for a plan without), escaped like render_status. `wide` adds the rollout limits and
/// whether the plan is paused or a dry run.
std::string render_plans(const std::vector<protocol::partitioning_plan>& plans,
                         protocol::wall_clock::time_point now, bool wide = false);

/// Whether `status --watch` is done: the plan is Completed, the one phase it does not
/// leave (Degraded and Paused plans go on once retried or resumed).
bool watch_is_over(const protocol::partitioning_plan& plan);

/// A line of the -v log in klog's form: `I1129 12:00:00.123456 4242 kubectl-partitioning]
/// MESSAGE` (UTC), the message escaped.
std::string log_line(protocol::wall_clock::time_point at, long pid, const std::string& message);

/// One request, as kubectl logs it at -v=6: `I1129 12:00:00.123456 4242
/// kubectl-partitioning] GET https://host/path 200 OK in 7 milliseconds`; a request that
/// got no answer shows no status.
std::string request_log_line(protocol::wall_clock::time_point at, long pid,
                             const std::string& method, const std::string& url, int code,
                             std::chrono::microseconds latency);

/// The body of the merge patch that pauses or resumes a plan.
std::string pause_patch(bool paused);

/// The item of `node` in `plan` among every NodePartitioning (`all`), under either of its
/// names (controller/item_name.hpp); nullopt if it has none.
std::optional<protocol::node_partitioning>
item_of_node(const protocol::partitioning_plan& plan,
             const std::vector<protocol::node_partitioning>& all, const std::string& node);

/// Whether a retry of this item makes sense; the reason when it does not.
std::optional<std::string> retry_refusal(const protocol::node_partitioning& item);

/// What a retry of this item does not change, for the user: DCM may still be retrying the
/// failed run (status.dcmMayChangeUntil ahead of `now`), and the node keeps the amd-dcm
/// taint until then whatever the new run does. Nothing otherwise.
std::optional<std::string> retry_note(const protocol::node_partitioning& item,
                                      protocol::wall_clock::time_point now);

/// The merge patch that asks the operator to retry a Failed item.
std::string retry_patch(protocol::wall_clock::time_point now);

/// Whether the plan's canary can be promoted now; the reason when it cannot. Only a canary
/// AwaitingPromotion, reported for the generation the plan has, is promoted.
std::optional<std::string> promote_refusal(const protocol::partitioning_plan& plan);

/// The merge patch that sets the promote-canary annotation to `promotion`
/// (controller::promotion_of the canary's key and generation).
std::string promote_patch(const std::string& promotion);

} // namespace gpu_partitioner::cli
