#include "actors/worker_report.hpp"

#include "actors/log.hpp"
#include "actors/operator_metrics.hpp"
#include "protocol/codec/field.hpp"
#include "protocol/timestamp.hpp"

namespace gpu_partitioner::actors {

void report_status(const std::string& plan, const std::string& node,
                   const std::optional<protocol::node_phase>& previous,
                   const protocol::node_partitioning_status& status) {
  auto& m = process_metrics();
  // The status keeps the last drain's figures after it ends (timed out, say); the gauge
  // counts only pods blocking a drain under way.
  const bool draining = status.phase == protocol::node_phase::draining;
  m.blocked_pods.set({plan, node}, draining ? status.drain.pods_blocked : 0);
  if (status.phase == previous)
    return;
  const auto& h = status.history;
  if (previous && h.size() >= 2)
    // Leaving a phase: how long it took, from the history's timestamps.
    if (auto from = protocol::parse_time(h[h.size() - 2].time))
      if (auto to = protocol::parse_time(h.back().time))
        m.phase_seconds.observe({std::string(protocol::codec::to_string(h[h.size() - 2].phase))},
                                std::chrono::duration<double>(*to - *from).count());
  if (status.phase)
    m.transitions.add({plan, std::string(protocol::codec::to_string(*status.phase))});
  log_info(h.empty() || !status.phase
               ? std::string("status updated")
               : "phase " + std::string(protocol::codec::to_string(*status.phase)) +
                     (h.back().message.empty() ? "" : ": " + h.back().message),
           plan, node);
}

event_io event_of(const controller::event_record& e, const controller::node_inputs& in) {
  event_io ev;
  if (e.on_node) {
    ev.api_version = "v1";
    ev.kind = "Node";
    ev.name = in.item.spec.node_name;
    ev.uid = in.node ? in.node->uid : std::string{};
  } else {
    ev.api_version = std::string(protocol::api_version);
    ev.kind = std::string(protocol::node_partitioning::kind_name);
    ev.name = in.item.metadata.name;
    ev.uid = in.item.metadata.uid;
  }
  ev.type = e.type;
  ev.reason = e.reason;
  ev.message = e.message;
  return ev;
}

node_io writes_of(const std::string& item, const controller::node_step& out,
                  const controller::node_inputs& in) {
  node_io io;
  io.item = item;
  io.node = in.item.spec.node_name;
  io.patch = out.patch;
  io.taint = out.taint;
  if (io.taint && in.node) {
    io.known_version = in.node->resource_version;
    io.known_taints = in.node->taints;
  }
  io.confirm_drained = out.confirm_drained;
  io.not_awaited = out.not_awaited;
  io.removals = out.removals;
  io.device_taint = out.device_taint;
  io.dcm = out.dcm;
  // A node coming back to service goes ahead of the nodes being taken out of it.
  if ((io.patch && io.patch->unschedulable == false) || io.taint == false)
    io.lane = kube::request_lane::restore;
  io.add_finalizer = out.add_finalizer;
  io.remove_finalizer = out.remove_finalizer;
  io.clear_retry = out.clear_retry;
  return io;
}

bool any_write(const node_io& io) {
  return io.patch || io.taint || !io.removals.empty() || io.device_taint || io.dcm ||
         io.add_finalizer || io.remove_finalizer || io.clear_retry;
}

} // namespace gpu_partitioner::actors
