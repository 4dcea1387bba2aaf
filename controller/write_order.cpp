#include "controller/write_order.hpp"

namespace gpu_partitioner::controller {

std::string phase_record(protocol::node_phase phase, const std::string& started_at) {
  return std::string(protocol::codec::to_string(phase)) + "@" + started_at;
}

std::string phase_record(const protocol::node_partitioning_status& status) {
  return phase_record(status.phase.value_or(protocol::node_phase::pending), status.started_at);
}

write_order order_writes(const node_step& out,
                         const std::optional<protocol::node_partitioning_status>& status,
                         const std::string& written, bool holds_run) {
  write_order order;
  const bool recorded = status && written == phase_record(*status);
  // A run's end is written before its token goes back: the next node's run is never on
  // record before this one's end, whichever status writer is the faster. So too for a run
  // the record shows in flight that a worker started since finds ended: an operator
  // restarted in between finds the run over while the record still counts it in flight.
  const bool ends_run = holds_run && !out.in_flight && !out.wants_token;
  order.release_after_status = ends_run && status && !recorded;
  // Unless the phase on record is one the machine finds enough (enough_on_record): then
  // the status follows with the others.
  const bool enough = out.enough_on_record && status &&
                      written == phase_record(*out.enough_on_record, status->started_at);
  const bool changes_node = out.patch || out.taint || !out.removals.empty() || out.dcm;
  order.status_first = changes_node && !enough && status && !recorded;
  return order;
}

bool status_may_wait(const protocol::node_partitioning_status& before,
                     const protocol::node_partitioning_status& next) {
  // Every field but the conditions and the drain's progress must be as before.
  auto rest = [](const protocol::node_partitioning_status& s) {
    auto copy = s;
    copy.conditions.clear();
    copy.drain = {};
    return copy;
  };
  return before.phase && before.phase == next.phase && rest(before) == rest(next);
}

governor_node governor_facts(const node_inputs& in, const node_step& out) {
  using protocol::node_phase;
  governor_node facts;
  facts.in_flight = out.in_flight;
  facts.soaking = out.soaking;
  facts.wants_token = out.wants_token;
  const bool was_failed = in.item.status.phase == node_phase::failed;
  const bool now_failed = out.status && out.status->phase == node_phase::failed;
  facts.failed = now_failed || (was_failed && !out.status);
  facts.unavailable = in.node && counts_down(*in.node);
  return facts;
}

} // namespace gpu_partitioner::controller
