#include "tools/simulator/kubelet_model.hpp"

#include <algorithm>

namespace gpu_partitioner::sim {

pod_actions step_pods(std::map<pod_key, pod_memory>& memory,
                      const std::map<pod_key, observed_pod>& pods, sim_time now,
                      const sim_timing& timing, const kubelet_timing& kubelet) {
  pod_actions out;
  for (auto it = memory.begin(); it != memory.end();)
    it = pods.count(it->first) ? std::next(it) : memory.erase(it);
  for (const auto& [key, pod] : pods) {
    auto [entry, fresh] = memory.try_emplace(key);
    pod_memory& m = entry->second;
    if (fresh)
      m.first_seen = now;
    const bool pending_write = m.acted_at && now < *m.acted_at + kubelet.resend_after;
    if (pod.deleting) {
      if (!m.deleting_seen) {
        m.deleting_seen = true;
        m.deleting_since = now;
      }
      const auto grace = std::min<std::chrono::milliseconds>(
          std::chrono::seconds(std::max(0LL, pod.grace_seconds)), kubelet.max_termination);
      if (now >= m.deleting_since + timing.scaled(grace) && !pending_write) {
        m.acted_at = now;
        out.remove.push_back(pod);
      }
      continue;
    }
    const bool terminal = pod.phase == "Succeeded" || pod.phase == "Failed";
    const bool refused = pod.node_dcm_tainted && !pod.tolerates_dcm_taint;
    if (!terminal && !refused && !settled_running(pod) && !pending_write &&
        now >= m.first_seen + timing.scaled(kubelet.startup)) {
      m.acted_at = now;
      out.start.push_back(pod);
    }
  }
  return out;
}

} // namespace gpu_partitioner::sim
