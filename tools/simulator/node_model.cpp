#include "tools/simulator/node_model.hpp"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <set>
#include <sstream>

namespace gpu_partitioner::sim {

sim_clock::duration sim_timing::scaled(std::chrono::milliseconds d) const {
  return std::chrono::duration_cast<sim_clock::duration>(
      std::chrono::duration<double, std::milli>(static_cast<double>(d.count()) * scale));
}

namespace {
// splitmix64's finaliser: a well-mixed 64-bit value from any other.
unsigned long long mix64(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A factor in [1 - fraction, 1 + fraction] from 53 bits of `bits`.
double factor(unsigned long long bits, double fraction) {
  const double unit = static_cast<double>(bits >> 11) / static_cast<double>(1ULL << 53);
  return 1.0 + fraction * (2.0 * unit - 1.0);
}

std::chrono::milliseconds times(std::chrono::milliseconds d, double f) {
  return std::chrono::milliseconds(
      static_cast<long long>(static_cast<double>(d.count()) * f + 0.5));
}
} // namespace

node_jitter jitter_of(const std::string& node, double fraction, unsigned long long seed) {
  if (!(fraction > 0))
    return {};
  unsigned long long h = 0xcbf29ce484222325ULL ^ mix64(seed); // FNV-1a over the name
  for (unsigned char c : node)
    h = (h ^ c) * 0x100000001b3ULL;
  const auto first = mix64(h);
  return {factor(first, fraction), factor(mix64(first), fraction)};
}

sim_timing jittered(const sim_timing& timing, const node_jitter& jitter) {
  sim_timing t = timing;
  for (auto* d : {&t.compute_change, &t.memory_change, &t.kmm_memory_change, &t.no_change,
                  &t.refusal, &t.host_service})
    *d = times(*d, jitter.dcm);
  t.plugin_restart = times(t.plugin_restart, jitter.plugin);
  return t;
}

node_faults parse_faults(const std::string& text, std::vector<std::string>* unknown) {
  node_faults f;
  std::stringstream in(text);
  std::string word;
  const std::pair<const char*, bool node_faults::*> names[] = {
      {"dcm-failure", &node_faults::dcm_failure},
      {"dcm-stuck", &node_faults::dcm_stuck},
      {"wrong-count", &node_faults::wrong_count},
      {"slow-plugin", &node_faults::slow_plugin},
      {"dcm-missing", &node_faults::dcm_missing},
      {"kubelet-stopped", &node_faults::kubelet_stopped},
      {"state-lost", &node_faults::state_lost},
      {"gpu-held", &node_faults::gpu_held},
      {"plugin-crashloop", &node_faults::plugin_crashloop},
  };
  while (std::getline(in, word, ',')) {
    word.erase(
        std::remove_if(word.begin(), word.end(), [](unsigned char c) { return std::isspace(c); }),
        word.end());
    bool known = false;
    for (const auto& [name, member] : names)
      if (word == name)
        known = f.*member = true;
    if (!known && !word.empty() && unknown != nullptr)
      unknown->push_back(word);
  }
  return f;
}

const char* gpu_api_name(gpu_api api) {
  switch (api) {
  case gpu_api::dra:
    return "dra";
  case gpu_api::dra_dynamic:
    return "dra-dynamic";
  case gpu_api::device_plugin:
    break;
  }
  return "device-plugin";
}

std::optional<gpu_api> parse_gpu_api(const std::string& text) {
  for (auto api : {gpu_api::device_plugin, gpu_api::dra, gpu_api::dra_dynamic})
    if (text == gpu_api_name(api))
      return api;
  return std::nullopt;
}

gpu_api node_gpu_api(const std::map<std::string, std::string>& labels, gpu_api fallback,
                     bool* unknown) {
  auto it = labels.find(gpu_api_label);
  if (it == labels.end())
    return fallback;
  if (auto api = parse_gpu_api(it->second))
    return *api;
  if (unknown != nullptr)
    *unknown = true;
  return gpu_api::device_plugin;
}

std::optional<std::string> partition_style(const std::vector<std::string>& gpu_modes) {
  if (gpu_modes.empty())
    return std::nullopt;
  for (const auto& m : gpu_modes)
    if (m != gpu_modes.front())
      return std::nullopt;
  std::string style = gpu_modes.front();
  for (auto& c : style)
    c = c == '/' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return style;
}

std::optional<std::map<std::string, long long>>
plugin_resources(const std::vector<std::string>& gpu_modes, resource_strategy strategy,
                 bool wrong_count) {
  std::map<std::string, long long> out;
  long long total = 0;
  for (const auto& mode : gpu_modes) {
    const auto n = partitions_per_gpu(mode.substr(0, mode.find('/')));
    total += n;
    if (strategy == resource_strategy::mixed) {
      std::string name = mode;
      for (auto& c : name)
        c = c == '/' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out["amd.com/" + name] += n;
    }
  }
  if (strategy == resource_strategy::single) {
    // k8s-device-plugin: "Partitions of different styles across GPUs in a node is not
    // supported with single strategy", and the plugin exits.
    if (!partition_style(gpu_modes))
      return std::nullopt;
    out[gpu_resource] = total;
  }
  // Older kernels have 64 DRM render minors and another DRM device (the BMC's) takes one:
  // past 63 partitions, the last style's count is short.
  if (wrong_count && total > 63 && !out.empty())
    out.rbegin()->second -= total - 63;
  return out;
}

std::string mounted_dcm_config(const std::vector<std::pair<std::string, std::string>>& volumes,
                               const std::vector<std::pair<std::string, std::string>>& mounts) {
  const std::string dir = dcm_config_dir;
  for (const auto& [volume, path] : mounts) {
    if (path != dir && path != dir + "/")
      continue;
    for (const auto& [name, config_map] : volumes)
      if (name == volume)
        return config_map;
  }
  return {};
}

bool is_dcm_pod(const std::map<std::string, std::string>& labels) {
  auto has = [&](const char* key, const char* value) {
    auto it = labels.find(key);
    return it != labels.end() && it->second == value;
  };
  return has(dcm_pod_label, dcm_pod_label_value) ||
         has(dcm_standalone_pod_label, dcm_standalone_pod_label_value);
}

namespace {

// A JSON string of `text`, control characters blanked.
std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += std::string("\\") + c;
    else if (static_cast<unsigned char>(c) < 0x20)
      out += ' ';
    else
      out += c;
  }
  return out + "\"";
}

} // namespace

std::string dcm_event_object(const sim_event& event, const std::string& ns, const std::string& pod,
                             const std::string& node, std::chrono::system_clock::time_point at) {
  const std::time_t t = std::chrono::system_clock::to_time_t(at);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  const auto q = json_string;
  return R"({"apiVersion":"v1","kind":"Event","metadata":{"generateName":)" + q(event.reason) +
         R"(,"namespace":)" + q(ns) + R"(},"involvedObject":{"kind":"Pod","namespace":)" + q(ns) +
         R"(,"name":)" + q(pod) + R"(},"reason":)" + q(event.reason) + R"(,"message":)" +
         q(event.message) + R"(,"type":)" + q(event.type) + R"(,"count":1,"firstTimestamp":")" +
         stamp + R"(","lastTimestamp":")" + stamp +
         R"(","source":{"component":"amd-device-config-manager","host":)" + q(node) + "}}";
}

std::vector<bool> busy_gpu_map(const std::vector<std::string>& gpu_modes, int held_partitions,
                               bool host_holds_all) {
  std::vector<bool> busy(gpu_modes.size(), host_holds_all);
  for (std::size_t i = 0; i < gpu_modes.size() && held_partitions > 0; ++i) {
    busy[i] = true;
    held_partitions -=
        std::max(1, partitions_per_gpu(gpu_modes[i].substr(0, gpu_modes[i].find('/'))));
  }
  return busy;
}

namespace {

const dcm_file no_file{};

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

std::string encode_modes(const std::vector<std::string>& modes) {
  if (partition_style(modes))
    return modes.front();
  std::string out;
  for (const auto& m : modes)
    out += (out.empty() ? "" : ",") + m;
  return out;
}

std::vector<std::string> decode_modes(const std::string& text, int gpus) {
  std::vector<std::string> modes;
  std::stringstream in(text);
  std::string one;
  while (std::getline(in, one, ','))
    if (one.find('/') != std::string::npos)
      modes.push_back(one);
  if (modes.size() == 1)
    modes.assign(static_cast<std::size_t>(gpus), modes.front());
  if (modes.size() != static_cast<std::size_t>(gpus))
    modes.assign(static_cast<std::size_t>(gpus), "SPX/NPS1");
  return modes;
}

// DCM's PartitionStatus, as json.Marshal writes it (the struct has no json tags, so the
// keys are Go's field names): the per-GPU list is null when no GPU was worked on.
std::string partition_status(const std::string& profile, const std::string& final_status,
                             const std::string& reason, const std::vector<gpu_result>* gpus) {
  std::string out = "{\"SelectedProfile\":" + json_string(profile) +
                    ",\"FinalStatus\":" + json_string(final_status) +
                    ",\"Reason\":" + json_string(reason) + ",\"GPUStatus\":";
  if (gpus == nullptr)
    return out + "null}";
  out += "[";
  for (std::size_t i = 0; i < gpus->size(); ++i) {
    const auto& g = (*gpus)[i];
    out += std::string(i ? "," : "") + "{\"GpuID\":" + std::to_string(g.id) +
           ",\"PartitionType\":" + json_string(g.type) + ",\"Status\":" + json_string(g.status) +
           ",\"Message\":" + json_string(g.message) + "}";
  }
  return out + "]}";
}

struct context {
  node_memory& m;
  const observed_node& node;
  const observed_world& world;
  const node_faults& faults;
  sim_time now;
  const sim_timing& timing;
  const stack_options& stack;
  node_actions& out;

  /// The file DCM's pod on this node reads (an empty one when it mounts no ConfigMap).
  const dcm_file& file() const {
    auto it = world.files.find(node.dcm_config);
    return node.dcm_config.empty() || it == world.files.end() ? no_file : it->second;
  }

  void state(const char* value) {
    if (!faults.state_lost && label_or(node, state_label) != value)
      out.labels[state_label] = value;
  }

  std::vector<bool> busy_gpus() const {
    auto held = world.gpu_pods.find(node.name);
    return busy_gpu_map(m.gpu_modes, held == world.gpu_pods.end() ? 0 : held->second,
                        faults.gpu_held);
  }

  // One attempt of the run: its outcome is decided as it starts, and lands at m.due.
  void begin_attempt() {
    m.between_attempts = false;
    m.gpu_results.clear();
    auto refuse = [&](dcm_failure f, sim_clock::duration after) {
      m.outcome = attempt_outcome::refused;
      m.failure = std::move(f);
      m.due = now + after;
    };
    const dcm_file& f = file();
    if (node.dcm_config.empty())
      // No ConfigMap at /etc/config-manager: reading config.json fails.
      return refuse({"InvalidJSONInConfigMap",
                     "open /etc/config-manager/config.json: no such file or directory"},
                    timing.scaled(timing.refusal));
    if (!f.config) {
      if (!f.unreadable)
        m.status_profile = m.run_profile; // PartitionGPU ran: its own read failed
      return refuse(f.problem, timing.scaled(timing.refusal));
    }
    m.status_profile = m.run_profile;
    auto found = f.config->profiles.find(m.run_profile);
    if (found == f.config->profiles.end())
      return refuse(
          {"NonExistentProfile", "profile " + m.run_profile + " does not exist in the config map"},
          timing.scaled(timing.refusal));
    if (auto invalid =
            validate_profile(found->second, static_cast<int>(m.gpu_modes.size()), stack.version))
      return refuse(*invalid, timing.scaled(timing.refusal));
    // The host services are stopped (so that they let go of the GPUs) before the GPUs are
    // touched, and started again after, whatever comes of it.
    const auto services =
        timing.scaled(timing.host_service) * static_cast<int>(f.config->host_services.size());
    if (faults.dcm_failure)
      return refuse({"AMDSMIAPIFailure", "AMD-SMI API error : Failed to initialize AMD SMI!"},
                    services + timing.scaled(timing.refusal));
    ++out.pod_lists; // amdSMIHelper: kc.GetPods, a LIST of every pod in the cluster
    const auto wanted = apply_profile(found->second, m.gpu_modes, stack.version);
    // Newer DCM checks the modes the GPU takes before it sets any: a refused one is
    // InvalidProfileInfo, nothing changes, no retry.
    if (newer_dcm(stack.version))
      for (std::size_t i = 0; i < wanted.size(); ++i) {
        const auto slash = wanted[i].find('/');
        if (wanted[i] != m.gpu_modes[i] &&
            !mode_supported(wanted[i].substr(0, slash), wanted[i].substr(slash + 1)))
          return refuse({"InvalidProfileInfo", "Unsupported partition " + wanted[i] +
                                                   " given in profile for GPU " +
                                                   std::to_string(i)},
                        services + timing.scaled(timing.refusal));
      }
    // Per GPU, in order: the memory mode first, then the compute mode. A busy GPU takes
    // neither; a compute mode the kernel refuses (1.3) leaves the memory mode already set.
    const auto busy = busy_gpus();
    const std::set<int> skipped(found->second.skipped_gpus.begin(),
                                found->second.skipped_gpus.end());
    m.target_modes = m.gpu_modes;
    bool failed = false;
    bool memory_changes = false;
    bool compute_changes = false;
    std::string why;
    for (std::size_t i = 0; i < wanted.size(); ++i) {
      if (skipped.count(static_cast<int>(i)))
        continue;
      const auto slash = wanted[i].find('/');
      const std::string compute = wanted[i].substr(0, slash);
      const std::string memory = wanted[i].substr(slash + 1);
      std::string type = compute + "-" + memory;
      if (wanted[i] == m.gpu_modes[i]) {
        m.gpu_results.push_back({static_cast<int>(i), type, "Success", "Partition not required"});
        continue;
      }
      auto& now_mode = m.target_modes[i];
      if (busy[i]) {
        failed = true;
        why = "Device busy.";
      } else if (mode_supported(compute, memory)) {
        memory_changes = memory_changes || now_mode.substr(now_mode.find('/') + 1) != memory;
        compute_changes = compute_changes || now_mode.substr(0, now_mode.find('/')) != compute;
        now_mode = wanted[i];
      } else {
        // A refused combination never succeeds: with the compute mode to change, the memory
        // mode is set first and the compute set is refused; with the same compute mode, the
        // memory set is.
        const std::string current_compute = now_mode.substr(0, now_mode.find('/'));
        if (current_compute != compute && now_mode.substr(now_mode.find('/') + 1) != memory) {
          now_mode = current_compute + "/" + memory;
          memory_changes = true;
        }
        failed = true;
        why = "Invalid parameters.";
      }
      // DCM's failure flag is not reset per GPU: every GPU after a failure says so.
      if (failed)
        m.gpu_results.push_back(
            {static_cast<int>(i), type, "Failure", "Partition failed with reason: " + why});
      else
        m.gpu_results.push_back({static_cast<int>(i), type, "Success", "Successfully partitioned"});
    }
    m.outcome = failed ? attempt_outcome::failed : attempt_outcome::success;
    if (failed)
      m.failure = {"PartitionRetrying", "Partition failed with reason: " + why};
    // A KMM-managed driver cannot reload itself: DCM unloads it and waits (up to 5 min) for
    // KMM to load it again; newer DCM says so in a Normal Event as the memory change starts.
    const bool kmm = label_or(node, kmm_driver_label) == "true";
    m.due = now + services +
            timing.scaled(memory_changes && kmm ? timing.kmm_memory_change
                          : memory_changes      ? timing.memory_change
                          : compute_changes     ? timing.compute_change
                          : failed              ? timing.refusal
                                                : timing.no_change);
    m.kmm_event_at.reset();
    if (memory_changes && kmm && newer_dcm(stack.version))
      m.kmm_event_at = now + services;
  }

  // Newer DCM's mid-run Event of a KMM driver's memory change: progress, not an answer.
  void kmm_event() {
    m.kmm_event_at.reset();
    std::vector<gpu_result> so_far;
    for (std::size_t i = 0; i < m.gpu_results.size(); ++i) {
      auto g = m.gpu_results[i];
      const bool changes = m.target_modes[static_cast<std::size_t>(g.id)].substr(
                               m.target_modes[static_cast<std::size_t>(g.id)].find('/')) !=
                           m.gpu_modes[static_cast<std::size_t>(g.id)].substr(
                               m.gpu_modes[static_cast<std::size_t>(g.id)].find('/'));
      if (changes) {
        so_far.push_back({g.id, g.type, "Pending",
                          "trying to recover the memory partition by reloading KMM driver"});
        break;
      }
      so_far.push_back(g);
    }
    out.events.push_back(
        {"Normal", kmm_recovery_reason,
         partition_status(
             m.run_profile, "Failure",
             "Waiting up to 5 minutes for kmm drivers memory partition to match expected value...",
             &so_far)});
  }

  void start_run(const std::string& profile) {
    m.running = true;
    m.said_retrying = false;
    m.run_profile = profile;
    m.retry_until = now + timing.scaled(timing.retry_window);
    begin_attempt();
  }

  void finish_attempt() {
    switch (m.outcome) {
    case attempt_outcome::success: {
      const bool no_change = m.target_modes == m.gpu_modes;
      m.gpu_modes = m.target_modes;
      out.annotations[partition_annotation] = encode_modes(m.gpu_modes);
      state("success");
      // DCM passes an error with the no-op outcome, so it is a Warning.
      out.events.push_back(
          {no_change ? "Warning" : "Normal",
           no_change ? "RequestedPartitionConfigAlreadyExists" : "SuccessfullyPartitioned",
           partition_status(m.run_profile, "Success",
                            no_change ? "Existing GPU's partition configuration same as profile's "
                                        "partition config"
                                      : "All GPUs were successfully partitioned",
                            &m.gpu_results)});
      m.running = false;
      break;
    }
    case attempt_outcome::refused: {
      state("failure");
      // amd-smi's init failure passes a nil error: a Normal Event. A file RetryPartition
      // cannot read is reported with DCM's status of the last run that got further.
      const bool unread = m.failure.reason == "InvalidJSONInConfigMap" &&
                          (node.dcm_config.empty() || file().unreadable);
      out.events.push_back({m.failure.reason == "AMDSMIAPIFailure" ? "Normal" : "Warning",
                            m.failure.reason,
                            partition_status(unread ? m.status_profile : m.run_profile, "Failure",
                                             m.failure.message, nullptr)});
      m.running = false;
      break;
    }
    case attempt_outcome::failed:
      // What changed stays changed (a memory mode set before a refused compute mode, the
      // idle GPUs next to busy ones).
      if (m.target_modes != m.gpu_modes) {
        m.gpu_modes = m.target_modes;
        out.annotations[partition_annotation] = encode_modes(m.gpu_modes);
      }
      state("failure");
      if (now + timing.scaled(timing.retry_period) < m.retry_until) {
        if (!m.said_retrying)
          out.events.push_back({"Warning", "PartitionRetrying",
                                partition_status(m.run_profile, "Partition failed, retrying.",
                                                 "Partition retrying for profile: " + m.run_profile,
                                                 &m.gpu_results)});
        m.said_retrying = true;
        m.between_attempts = true;
        m.due = now + timing.scaled(timing.retry_period);
      } else {
        out.events.push_back(
            {"Warning", "PartitionFailure",
             partition_status(m.run_profile, "Failure", m.failure.message, &m.gpu_results)});
        m.running = false;
      }
      break;
    }
  }

  void dcm() {
    const std::string profile = label_or(node, profile_label);
    if (node.dcm_pod.empty()) {
      // No DCM pod on the node: nothing answers, and a run in flight dies with it.
      m.dcm_pod.clear();
      m.running = m.between_attempts = false;
      m.waiting.reset();
      m.queued.reset();
      return;
    }
    bool trigger = false;
    if (m.dcm_pod != node.dcm_pod) {
      // DCM's start runs the label it finds, whatever the state label says.
      m.dcm_pod = node.dcm_pod;
      m.last_profile = profile;
      m.profile_changes_seen = node.profile_changes;
      m.config_generation_seen = file().generation;
      trigger = !profile.empty();
    } else {
      // A label removed and set again since the last step is a new request, even with
      // the same value; a removal alone is only logged.
      const bool relabelled = node.profile_changes > m.profile_changes_seen + 1;
      m.profile_changes_seen = node.profile_changes;
      if (!profile.empty() && (profile != m.last_profile || relabelled)) {
        m.last_profile = profile;
        trigger = true;
      } else if (profile.empty()) {
        m.last_profile.clear();
      }
      // Any change of the file runs the label again, on every node that has one.
      if (file().generation != m.config_generation_seen) {
        m.config_generation_seen = file().generation;
        trigger = trigger || !profile.empty();
      }
    }
    if (trigger)
      fire(profile);
    // A cancelled run ends at its next check: at once while it waits between attempts.
    if (m.running && m.between_attempts && m.waiting)
      next_run();
    if (m.running && !m.between_attempts && m.kmm_event_at && now >= *m.kmm_event_at &&
        !faults.dcm_stuck)
      kmm_event();
    if (!m.running || now < m.due || faults.dcm_stuck)
      return;
    if (m.between_attempts) {
      begin_attempt();
      return;
    }
    finish_attempt();
    // The attempt in flight completed (and wrote its state); a cancelled run ends here.
    if (m.waiting)
      next_run();
  }

  // A trigger (TriggerRetryLoop) carries the profile read as it fired. With no run, the
  // worker starts one at once; else it takes the trigger and cancels the run (which ends
  // after its attempt in flight), and a further one waits in its channel; more are dropped.
  void fire(const std::string& profile) {
    if (!m.running)
      start_run(profile);
    else if (!m.waiting)
      m.waiting = profile;
    else if (!m.queued)
      m.queued = profile;
  }

  // The cancelled run is over: the worker starts the one it holds, and at once takes the
  // channel's and cancels that new run, which ends before its first attempt (its file read
  // takes longer than the worker's cancel): the channel's profile runs.
  void next_run() {
    m.running = m.between_attempts = false;
    std::string profile = *m.waiting;
    if (m.queued)
      profile = *m.queued;
    m.waiting.reset();
    m.queued.reset();
    start_run(profile);
  }

  std::map<std::string, long long> zeros() const {
    std::map<std::string, long long> z;
    for (const auto& name : m.advertised)
      z[name] = 0;
    return z;
  }

  void plugin_down() {
    m.plugin_up = m.plugin_restarting = false;
    m.plugin_down_since = now;
    m.capacity_dropped = false;
    // kubelet marks a stopped plugin's devices unhealthy at once: allocatable 0.
    if (!m.advertised.empty())
      out.allocatable = zeros();
    // A site's readiness label goes with its GPU stack; AMD's labeller's labels stay.
    if (!stack.ready_key.empty() && node.labels.count(stack.ready_key))
      out.labels[stack.ready_key] = std::nullopt;
  }

  bool dra() const { return m.api != gpu_api::device_plugin; }

  // A DRA node has no device plugin: the amd.com/ resources one left go to 0, once.
  void retire_device_plugin() {
    bool left = false;
    for (const auto& [name, n] : node.gpu_capacity) {
      m.advertised.insert(name);
      left = left || n != 0;
    }
    // After a switch plugin_down has zeroed allocatable: capacity goes with it.
    if (left || out.allocatable)
      out.allocatable = out.capacity = zeros();
    m.advertised.clear();
  }

  // The node changed its GPU API: the running plugin stops, the other one starts as after
  // the taint.
  void switch_api() {
    if (node.api == m.api)
      return;
    if (m.plugin_up || m.plugin_restarting)
      plugin_down();
    m.api = node.api;
    if (dra())
      retire_device_plugin();
  }

  // On a DRA node whose driver pod has been seen, the kubelet plugin lives in that pod: it
  // is down while no such pod runs (deleted, or being deleted: its DaemonSet makes a new
  // one), and a pod other than the one it ran in is a new driver, which starts again and
  // reads the GPUs as it starts. The first pod seen is the one the running plugin is in
  // (the DaemonSet came after the node published): it does not restart it. Returns
  // whether the pod keeps the plugin down.
  bool follow_driver_pod() {
    if (!dra())
      return false;
    if (!node.driver_pod.empty() && node.driver_pod != m.driver_pod) {
      if (!m.driver_pod.empty() && (m.plugin_up || m.plugin_restarting))
        plugin_down();
      m.driver_pod = node.driver_pod;
    }
    return !m.driver_pod.empty() && node.driver_pod.empty();
  }

  void plugin() {
    switch_api();
    const bool no_pod = follow_driver_pod();
    if (node.dcm_taint || no_pod) {
      if (m.plugin_up || m.plugin_restarting)
        plugin_down();
    } else if (!m.plugin_up && !m.plugin_restarting && !faults.plugin_crashloop) {
      m.plugin_restarting = true;
      auto delay = timing.scaled(timing.plugin_restart);
      if (faults.slow_plugin)
        delay *= timing.slow_plugin_factor;
      m.plugin_ready_at = now + delay;
    }
    if (m.plugin_restarting && now >= m.plugin_ready_at) {
      m.plugin_restarting = false;
      if (dra()) {
        // The DRA driver registers with kubelet; its devices are dra_model's to publish.
        m.plugin_up = true;
        labeller();
        return;
      }
      auto resources = plugin_resources(m.gpu_modes, stack.strategy, faults.wrong_count);
      if (!resources) {
        // It exits, and kubelet starts it again: a crash loop, the resource gone.
        if (m.plugin_down_since == sim_time{})
          plugin_down();
        return;
      }
      m.plugin_up = true;
      auto all = zeros();
      for (const auto& [name, n] : *resources) {
        all[name] = n;
        m.advertised.insert(name);
      }
      out.allocatable = out.capacity = all;
      labeller();
    }
    if (!m.plugin_up && !m.capacity_dropped && m.plugin_down_since != sim_time{} &&
        now - m.plugin_down_since >= timing.scaled(timing.capacity_follows)) {
      m.capacity_dropped = true;
      if (!m.advertised.empty())
        out.capacity = zeros();
    }
  }

  void labeller() {
    if (!m.labelled_once) {
      m.labelled_once = true;
      // What AMD's node labeller (and NFD) put on an MI300X node.
      const std::pair<const char*, const char*> fixed[] = {
          {"amd.com/gpu.device-id", "74a1"},
          {"amd.com/gpu.family", "AI"},
          {"amd.com/gpu.product-name", "AMD_Instinct_MI300X_OAM"},
          {"amd.com/gpu.vram", "192G"},
          {"amd.com/gpu.cu-count", "304"},
          {"amd.com/gpu.simd-count", "1216"},
          {"amd.com/gpu.driver-version", "6.10.5"},
          {"feature.node.kubernetes.io/amd-gpu", "true"},
      };
      for (const auto& [k, v] : fixed)
        if (label_or(node, k) != v)
          out.labels[k] = v;
      if (stack.partition_labels)
        for (const char* k : {"amd.com/gpu.compute-partitioning-supported",
                              "amd.com/gpu.memory-partitioning-supported"})
          if (label_or(node, k) != "true")
            out.labels[k] = "true";
    }
    if (!stack.partition_labels) {
      // The GPU operator runs the labeller without its partition labels.
    } else if (auto style = partition_style(m.gpu_modes)) {
      if (label_or(node, partition_label) != *style)
        out.labels[partition_label] = *style;
    } else if (node.labels.count(partition_label)) {
      out.labels[partition_label] = std::nullopt;
    }
    if (!stack.ready_key.empty() && label_or(node, stack.ready_key.c_str()) != stack.ready_value)
      out.labels[stack.ready_key] = stack.ready_value;
  }
};

} // namespace

node_actions step_node(node_memory& m, const observed_node& node, const observed_world& world,
                       sim_time now, const sim_timing& timing, const stack_options& stack) {
  node_actions out;
  const node_faults faults = parse_faults(label_or(node, fault_label));
  context cx{m, node, world, faults, now, timing, stack, out};
  if (!m.seen) {
    m.seen = true;
    const int gpus = gpu_count(node);
    auto it = node.annotations.find(partition_annotation);
    m.gpu_modes = decode_modes(it == node.annotations.end() ? "" : it->second, gpus);
    if (it == node.annotations.end())
      out.annotations[partition_annotation] = encode_modes(m.gpu_modes);
    for (const auto& [name, n] : node.gpu_capacity)
      m.advertised.insert(name);
    m.api = node.api;
    if (cx.dra())
      cx.retire_device_plugin();
    // The simulator's start is not DCM's: DCM's pod was running already. A label it never
    // answered (the simulator stopped mid-run) is answered now.
    m.dcm_pod = node.dcm_pod;
    m.last_profile = label_or(node, profile_label);
    m.profile_changes_seen = node.profile_changes;
    m.config_generation_seen = cx.file().generation;
    if (!m.last_profile.empty() && label_or(node, state_label).empty() && !m.dcm_pod.empty())
      cx.start_run(m.last_profile);
    // The plugin starts with the node (or the simulator): it reports at once.
    if (node.dcm_taint) {
      cx.plugin_down();
    } else {
      m.plugin_restarting = true;
      m.plugin_ready_at = now;
    }
  }
  cx.dcm();
  cx.plugin();
  if (!out.events.empty()) {
    // A label value cannot start with '-': a clock behind is written n<seconds>.
    std::string skew = label_or(node, clock_skew_label);
    const bool behind = !skew.empty() && skew[0] == 'n';
    try {
      std::size_t used = 0;
      const long long s = std::stoll(behind ? skew.substr(1) : skew, &used);
      if (used == skew.size() - (behind ? 1 : 0))
        out.clock_skew = std::chrono::seconds(behind ? -s : s);
    } catch (...) {
    }
  }
  return out;
}

std::optional<sim_time> next_due(const node_memory& m) {
  std::optional<sim_time> due;
  if (m.running)
    due =
        m.kmm_event_at && !m.between_attempts && *m.kmm_event_at < m.due ? *m.kmm_event_at : m.due;
  if (m.plugin_restarting && (!due || m.plugin_ready_at < *due))
    due = m.plugin_ready_at;
  return due;
}

} // namespace gpu_partitioner::sim
