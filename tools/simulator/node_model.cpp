#include "tools/simulator/node_model.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace gpu_partitioner::sim {

sim_clock::duration sim_timing::scaled(std::chrono::milliseconds d) const {
  return std::chrono::duration_cast<sim_clock::duration>(
      std::chrono::duration<double, std::milli>(static_cast<double>(d.count()) * scale));
}

node_faults parse_faults(const std::string& text, std::vector<std::string>* unknown) {
  node_faults f;
  std::stringstream in(text);
  std::string word;
  while (std::getline(in, word, ',')) {
    word.erase(
        std::remove_if(word.begin(), word.end(), [](unsigned char c) { return std::isspace(c); }),
        word.end());
    if (word == "dcm-failure")
      f.dcm_failure = true;
    else if (word == "dcm-stuck")
      f.dcm_stuck = true;
    else if (word == "wrong-count")
      f.wrong_count = true;
    else if (word == "slow-plugin")
      f.slow_plugin = true;
    else if (!word.empty() && unknown != nullptr)
      unknown->push_back(word);
  }
  return f;
}

namespace {

std::string label_or(const observed_node& node, const char* key) {
  auto it = node.labels.find(key);
  return it == node.labels.end() ? std::string{} : it->second;
}

int gpu_count(const observed_node& node) {
  auto it = node.annotations.find(gpu_count_annotation);
  if (it != node.annotations.end()) {
    try {
      int n = std::stoi(it->second);
      if (n > 0 && n <= 64)
        return n;
    } catch (...) {
    }
  }
  return 8;
}

std::string lower(std::string s) {
  for (auto& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string json_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20)
        out += ' ';
      else
        out += c;
    }
  }
  return out;
}

// The per-GPU status DCM puts in its Event message, as JSON.
std::string per_gpu_message(const std::string& profile, const std::string& status, int gpus,
                            const std::string& compute, const std::string& memory,
                            const std::string& detail) {
  std::string out = "{\"profile\":\"" + json_escape(profile) + "\",\"status\":\"" + status + "\"";
  if (!detail.empty())
    out += ",\"reason\":\"" + json_escape(detail) + "\"";
  out += ",\"gpus\":{";
  for (int i = 0; i < gpus; ++i)
    out += (i ? "," : "") + std::string("\"") + std::to_string(i) + "\":\"" + compute + "/" +
           memory + "\"";
  return out + "}}";
}

// Decides the outcome of a run of `profile` now: a refusal, or the target mode.
void plan_run(node_memory& m, const observed_node& node, const observed_world& world,
              const node_faults& faults, sim_time now, const sim_timing& timing) {
  m.running = true;
  m.stuck = faults.dcm_stuck;
  m.outcome_failure.reset();
  m.retryable = false;
  m.no_change = false;
  if (m.stuck)
    return;
  const int gpus = gpu_count(node);
  auto refuse = [&](dcm_failure f, bool retryable) {
    m.outcome_failure = std::move(f);
    m.retryable = retryable;
    m.due = now + timing.scaled(timing.refusal);
  };
  if (!world.config)
    return refuse(world.config_problem, false);
  auto found = world.config->profiles.find(m.run_profile);
  if (found == world.config->profiles.end())
    return refuse({"NonExistentProfile",
                   "profile \"" + m.run_profile + "\" is not in DCM's gpu-config-profiles"},
                  false);
  if (auto invalid = validate_profile(found->second, gpus))
    return refuse(*invalid, false);
  if (auto busy = world.gpu_pods.find(node.name); busy != world.gpu_pods.end() && busy->second > 0)
    return refuse({"PartitionFailure", "GPU busy: " + std::to_string(busy->second) +
                                           " pod(s) still use amd.com/gpu on this node"},
                  true);
  if (faults.dcm_failure)
    return refuse({"AMDSMIAPIFailure", "amd-smi failed to set the partition mode (injected fault)"},
                  true);
  m.target_compute = compute_mode(found->second);
  m.target_memory = memory_mode(found->second);
  m.target_resources =
      gpu_resources(found->second) +
      static_cast<long long>(found->second.skipped_gpus.size()) * partitions_per_gpu(m.compute);
  m.no_change = m.target_compute == m.compute && m.target_memory == m.memory;
  const auto delay = m.no_change                   ? timing.no_change
                     : m.target_memory != m.memory ? timing.memory_change
                                                   : timing.compute_change;
  m.due = now + timing.scaled(delay);
}

// The device plugin's amd.com/gpu count for what the GPUs are in now.
long long plugin_count(const node_memory& m, int gpus, const node_faults& faults) {
  long long count =
      m.resources >= 0 ? m.resources : static_cast<long long>(gpus) * partitions_per_gpu(m.compute);
  // The real CPX bug: the BMC's video driver takes one of the 64 DRM render minors, so
  // a node with 64 partitions shows only 63. Fewer partitions are not affected.
  if (faults.wrong_count && count > 63)
    count = 63;
  return count;
}

} // namespace

node_actions step_node(node_memory& m, const observed_node& node, const observed_world& world,
                       sim_time now, const sim_timing& timing) {
  node_actions out;
  const node_faults faults = parse_faults(label_or(node, fault_label));
  const std::string profile = label_or(node, profile_label);
  const int gpus = gpu_count(node);

  if (!m.seen) {
    m.seen = true;
    if (auto it = node.annotations.find(partition_annotation); it != node.annotations.end()) {
      auto slash = it->second.find('/');
      if (slash != std::string::npos) {
        m.compute = it->second.substr(0, slash);
        m.memory = it->second.substr(slash + 1);
      }
    }
    // A profile label without a state is a request not yet answered (DCM restarted
    // mid-run, or never saw it): answer it. Otherwise it was handled before.
    m.last_profile = label_or(node, state_label).empty() ? std::string{} : profile;
    m.profile_changes_seen = node.profile_changes;
    m.plugin_up = !node.dcm_taint;
    if (!m.plugin_up && node.labels.count(ready_label))
      out.labels[ready_label] = std::nullopt;
    if (m.plugin_up && !node.gpu_capacity) {
      // A new node: the plugin starts and reports what the GPUs are in.
      out.gpu_resources = plugin_count(m, gpus, faults);
      out.labels[ready_label] = "true";
      out.labels[partition_label] = lower(m.compute + "_" + m.memory);
    }
    if (node.annotations.find(partition_annotation) == node.annotations.end())
      out.annotations[partition_annotation] = m.compute + "/" + m.memory;
  }

  // -- DCM --
  // A label removed and set again since the last step is a new request, even if the
  // value is the same as before.
  const bool relabelled = node.profile_changes != m.profile_changes_seen &&
                          m.profile_changes_seen + 1 < node.profile_changes;
  m.profile_changes_seen = node.profile_changes;
  if (!profile.empty() && (profile != m.last_profile || relabelled)) {
    m.last_profile = profile;
    m.run_profile = profile;
    m.retry_until = now + timing.scaled(timing.retry_window);
    plan_run(m, node, world, faults, now, timing);
  } else if (profile.empty() && !m.last_profile.empty()) {
    // DCM only logs a removal; a later set of the same value is a new request.
    m.last_profile.clear();
  }
  if (m.running && !m.stuck && now >= m.due) {
    if (m.outcome_failure) {
      out.labels[state_label] = "failure";
      out.events.push_back({"Warning", m.outcome_failure->reason,
                            per_gpu_message(m.run_profile, "failure", gpus, m.compute, m.memory,
                                            m.outcome_failure->message)});
      if (m.retryable && now + timing.scaled(timing.retry_period) < m.retry_until) {
        // DCM tries again every minute for half an hour; the next try re-checks.
        m.outcome_failure.reset();
        m.due = now + timing.scaled(timing.retry_period);
        m.stuck = false;
        m.running = true;
        m.retryable = false;
        m.target_compute.clear();
      } else {
        m.running = false;
      }
    } else if (m.target_compute.empty()) {
      // A retry is due: decide afresh (the GPU may be free now).
      plan_run(m, node, world, faults, now, timing);
    } else {
      m.compute = m.target_compute;
      m.memory = m.target_memory;
      m.resources = m.target_resources;
      m.running = false;
      out.labels[state_label] = "success";
      out.annotations[partition_annotation] = m.compute + "/" + m.memory;
      out.events.push_back(
          {"Normal",
           m.no_change ? "RequestedPartitionConfigAlreadyExists" : "SuccessfullyPartitioned",
           per_gpu_message(m.run_profile, "success", gpus, m.compute, m.memory, "")});
    }
  }

  // -- device plugin and node labeller: down while tainted, restart after --
  if (node.dcm_taint && (m.plugin_up || m.plugin_restarting)) {
    m.plugin_up = false;
    m.plugin_restarting = false;
    if (node.labels.count(ready_label))
      out.labels[ready_label] = std::nullopt;
  } else if (!node.dcm_taint && !m.plugin_up && !m.plugin_restarting) {
    m.plugin_restarting = true;
    auto delay = timing.scaled(timing.plugin_restart);
    if (faults.slow_plugin)
      delay *= timing.slow_plugin_factor;
    m.plugin_ready_at = now + delay;
  }
  if (m.plugin_restarting && now >= m.plugin_ready_at) {
    m.plugin_restarting = false;
    m.plugin_up = true;
    out.gpu_resources = plugin_count(m, gpus, faults);
    out.labels[ready_label] = "true";
    out.labels[partition_label] = lower(m.compute + "_" + m.memory);
  }
  return out;
}

std::optional<sim_time> next_due(const node_memory& m) {
  std::optional<sim_time> due;
  if (m.running && !m.stuck)
    due = m.due;
  if (m.plugin_restarting && (!due || m.plugin_ready_at < *due))
    due = m.plugin_ready_at;
  return due;
}

} // namespace gpu_partitioner::sim
