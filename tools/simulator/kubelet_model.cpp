#include "tools/simulator/kubelet_model.hpp"

#include <algorithm>

namespace gpu_partitioner::sim {

bool claims_prepared(const observed_pod& pod, const std::map<pod_key, observed_claim>& claims,
                     const std::set<std::string>& drivers_up) {
  for (const auto& c : pod.claims) {
    if (!c.claim)
      return false;
    if (c.claim->empty())
      continue;
    auto found = claims.find({pod.ns, *c.claim});
    if (found == claims.end() || !found->second.allocated)
      return false;
    const auto& reserved = found->second.reserved_for;
    if (std::find(reserved.begin(), reserved.end(), pod.uid) == reserved.end())
      return false;
    for (const auto& d : found->second.devices)
      if (!drivers_up.count(d.driver))
        return false;
  }
  return true;
}

int claimed_devices(const observed_pod& pod, const std::map<pod_key, observed_claim>& claims,
                    const std::string& driver) {
  int n = 0;
  std::set<std::string> counted; // two entries may name one claim
  for (const auto& c : pod.claims) {
    if (!c.claim || c.claim->empty() || !counted.insert(*c.claim).second)
      continue;
    auto found = claims.find({pod.ns, *c.claim});
    if (found == claims.end() || !found->second.allocated)
      continue;
    for (const auto& d : found->second.devices)
      n += d.driver == driver && d.pool == pod.node;
  }
  return n;
}

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
    const bool pending_write =
        pod.write_waiting || (m.acted_at && now < *m.acted_at + kubelet.resend_after) ||
        (pod.write_answered && now < *pod.write_answered + kubelet.resend_after);
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
    if (!terminal && !refused && pod.claims_prepared && !settled_running(pod) && !pending_write &&
        now >= m.first_seen + timing.scaled(kubelet.startup)) {
      m.acted_at = now;
      out.start.push_back(pod);
    }
  }
  return out;
}

} // namespace gpu_partitioner::sim
