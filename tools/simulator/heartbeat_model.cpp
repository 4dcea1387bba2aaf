#include "tools/simulator/heartbeat_model.hpp"

#include <algorithm>
#include <cstdint>

namespace gpu_partitioner::sim {

namespace {

sim_clock::duration part_of(std::chrono::milliseconds interval, double phase) {
  return std::chrono::duration_cast<sim_clock::duration>(interval * phase);
}

} // namespace

double heartbeat_phase(const std::string& node) {
  // FNV-1a: the same node falls at the same phase in every gpu-sim.
  std::uint32_t h = 2166136261u;
  for (unsigned char c : node)
    h = (h ^ c) * 16777619u;
  return static_cast<double>(h % 10000u) / 10000.0;
}

heartbeat_actions step_heartbeat(heartbeat_memory& m, const heartbeat_view& node, sim_time now,
                                 double phase, const heartbeat_timing& t) {
  heartbeat_actions out;
  if (!node.kubelet_running || node.ready.empty()) {
    m.running = false;
    return out;
  }
  if (!m.running) {
    m.running = true;
    m.next_renewal = now + part_of(t.renew_every, phase);
    m.next_report = now + part_of(t.report_every, phase);
    m.ready_posted_once = false;
  }
  if (node.renewal_failed)
    m.next_renewal = std::min(m.next_renewal, now + t.retry_after);
  if (!node.renewal_waiting && now >= m.next_renewal) {
    out.renew_lease = true;
    m.next_renewal = now + t.renew_every;
  }
  if (node.status_waiting)
    return out;
  if (node.ready != "True") {
    if (!m.ready_posted_once || now >= m.ready_posted + t.update_every) {
      out.status = heartbeat_actions::status_post::ready;
      m.ready_posted = now;
      m.ready_posted_once = true;
      m.next_report = now + t.report_every;
    }
  } else if (now >= m.next_report) {
    out.status = heartbeat_actions::status_post::heartbeat;
    m.next_report = now + t.report_every;
  }
  return out;
}

} // namespace gpu_partitioner::sim
