// gpu-sim: the AMD GPU stack for simulated nodes, on a real API server. It plays
// AMD's Device Config Manager (DCM), the device plugin or the DRA driver, the node labeller,
// and kubelet (its pods, and its node's Lease and Ready heartbeats), for every node matching
// --node-selector. The decisions are in node_model, dra_model, kubelet_model and
// heartbeat_model; this file only watches, ticks and writes.
#include "kube/client.hpp"
#include "kube/config.hpp"
#include "kube/list_watch.hpp"
#include "protocol/timestamp.hpp"
#include "tools/simulator/dra_model.hpp"
#include "tools/simulator/heartbeat_model.hpp"
#include "tools/simulator/kubelet_model.hpp"
#include "tools/simulator/node_model.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <functional>
#include <iostream>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>

using namespace gpu_partitioner;
using namespace gpu_partitioner::sim;

namespace {

std::atomic<bool> stopping{false};

void on_signal(int) {
  stopping = true;
}

struct options {
  std::string kubeconfig;
  std::string node_selector = "gpu.vendor=amd";
  /// DCM's namespace: its pods, and the ConfigMaps they may mount (each pod's own volume
  /// says which one its DCM reads).
  std::string dcm_namespace = "kube-amd-gpu";
  double time_scale = 1.0;
  /// kubelet's refresh of a ConfigMap volume, in seconds before --time-scale.
  double config_lag = 60;
  stack_options stack;
  /// The GPU API of nodes without the gpu-api label.
  gpu_api default_api = gpu_api::device_plugin;
  int tick_ms = 50;
  /// Parallel connections for writes, each with its own thread (a node's writes stay in
  /// order).
  int writers = 32;
  /// kubelet's heartbeats (node Leases, the Ready condition's): off for a control plane
  /// without the node-lifecycle controller (tools/bench), where gpu-sim marks a stopped
  /// kubelet's node Unknown itself.
  bool heartbeats = true;
  /// Each node's DCM and plugin delays vary by up to this fraction (--jitter), drawn from
  /// --jitter-seed and the node's name.
  double jitter = 0.0;
  unsigned long long jitter_seed = 1;
  /// Only kubelet for these nodes (registration, pods, heartbeats): servers without GPUs.
  bool kubelet_only = false;
  /// The User-Agent of its requests; the heartbeats' is this + "/heartbeats", so an audit
  /// log tells kubelet's keep-alive traffic from the rest.
  std::string user_agent = "gpu-sim";
};

/// Connections of their own for the Leases: a renewal never waits behind a node's writes.
constexpr int lease_writers = 2;

void log_line(const std::string& what) {
  char ts[32];
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
  std::printf("%s gpu-sim %s\n", ts, what.c_str());
  std::fflush(stdout);
}

// -- what the watches have seen, shared with the tick loop --
struct world_view {
  std::mutex mutex;
  std::map<std::string, observed_node> nodes;
  /// Nodes whose kubelet has reported (a Ready condition exists), and the status of that
  /// condition.
  std::set<std::string> registered;
  std::map<std::string, std::string> ready;
  /// Nodes deleted since the last tick: their GPU stack's memory goes, even when a node of
  /// the same name is back before the tick (a deleted and re-created machine starts over).
  std::set<std::string> deleted;
  std::map<pod_key, observed_pod> pods;
  std::map<pod_key, std::pair<std::string, int>> gpu_pods; // node, GPUs held
  /// Pods (by uid) whose containers the simulated kubelet has stopped: their GPUs are free
  /// from then on, before the watch shows them deleted (the host, which DCM asks, knows
  /// at once; the pods' watch may lag behind the nodes', as after an API server restart).
  std::set<std::string> stopped;
  observed_world world;
  /// Each ConfigMap of DCM's namespace as the watch saw it, oldest first: a volume of it
  /// holds the newest entry at least the config lag old (kubelet's refresh of the volume).
  struct config_version {
    sim_time seen{};
    std::string text; // "" with `missing`
    bool missing = true;
  };
  struct config_map_files {
    std::deque<config_version> history;
    /// What its volumes hold now (nullopt before the first delivery).
    std::optional<config_version> delivered;
  };
  std::map<std::string, config_map_files> config_maps;
  /// DCM's pods while they run: the node, and the ConfigMap mounted at /etc/config-manager.
  std::map<pod_key, std::pair<std::string, std::string>> dcm_pods;
  /// The DRA driver's pods (dra_driver_pod) per node, while they run and are not being
  /// deleted: the node's driver runs in one.
  std::map<pod_key, std::pair<std::string, std::string>> driver_pods{}; // pod -> node, uid
  /// Pods with spec.resourceClaims.
  std::set<pod_key> claim_pods;
  /// The DRA driver's ResourceSlices by spec.nodeName, and each slice's node by name.
  std::map<std::string, std::vector<observed_slice>> slices;
  std::map<std::string, std::string> slice_nodes;
  std::map<pod_key, observed_claim> claims;
  bool nodes_synced = false;
  bool pods_synced = false;
  bool config_synced = false;
  /// The DRA watches gate only the DRA work: without resource.k8s.io the rest goes on.
  bool slices_synced = false;
  bool claims_synced = false;
};

struct node_watch : kube::watch_handler {
  world_view& view;
  explicit node_watch(world_view& v) : view(v) {}
  void on_change(const kube::watch_delivery& d) override {
    std::lock_guard<std::mutex> lock(view.mutex);
    if (d.type == kube::event_type::deleted) {
      view.nodes.erase(d.key.name);
      view.registered.erase(d.key.name);
      view.ready.erase(d.key.name);
      view.deleted.insert(d.key.name);
      return;
    }
    observed_node n;
    n.name = d.key.name;
    n.uid = kube::string_at((*d.object)["metadata"], "uid");
    n.labels = kube::string_map(kube::find_path(*d.object, {"metadata", "labels"}));
    // Count every change of the profile label, as DCM's informer sees each one.
    if (auto prev = view.nodes.find(n.name); prev != view.nodes.end()) {
      n.profile_changes = prev->second.profile_changes;
      auto before = prev->second.labels.find(profile_label);
      auto after = n.labels.find(profile_label);
      const bool had = before != prev->second.labels.end();
      const bool has = after != n.labels.end();
      if (had != has || (had && has && before->second != after->second))
        ++n.profile_changes;
    }
    n.annotations = kube::string_map(kube::find_path(*d.object, {"metadata", "annotations"}));
    if (const auto* taints = kube::find_path(*d.object, {"spec", "taints"});
        taints != nullptr && taints->IsArray())
      for (const auto& t : taints->GetArray())
        n.dcm_taint = n.dcm_taint || (kube::string_at(t, "key") == "amd-dcm" &&
                                      kube::string_at(t, "effect") == "NoExecute");
    if (const auto* cap = kube::find_path(*d.object, {"status", "capacity"});
        cap != nullptr && cap->IsObject())
      for (const auto& r : cap->GetObject())
        if (std::string(r.name.GetString()).rfind("amd.com/", 0) == 0)
          n.gpu_capacity[r.name.GetString()] = kube::whole_number(&r.value);
    bool registered = false;
    if (const auto* conds = kube::find_path(*d.object, {"status", "conditions"});
        conds && conds->IsArray())
      for (const auto& c : conds->GetArray())
        if (kube::string_at(c, "type") == "Ready") {
          registered = true;
          view.ready[n.name] = kube::string_at(c, "status");
        }
    if (registered) {
      view.registered.insert(n.name);
    } else {
      view.registered.erase(n.name);
      view.ready.erase(n.name);
    }
    view.nodes[n.name] = std::move(n);
  }
  void on_synced() override {
    std::lock_guard<std::mutex> lock(view.mutex);
    view.nodes_synced = true;
  }
};

int gpus_requested(const rapidjson::Value& pod) {
  int n = 0;
  const auto* containers = kube::find_path(pod, {"spec", "containers"});
  if (containers == nullptr || !containers->IsArray())
    return 0;
  // Any amd.com/ resource: amd.com/gpu, or a style's under the mixed strategy.
  for (const auto& c : containers->GetArray()) {
    long long most = 0;
    for (const char* kind : {"requests", "limits"})
      if (const auto* list = kube::find_path(c, {"resources", kind}); list && list->IsObject())
        for (const auto& r : list->GetObject())
          if (std::string(r.name.GetString()).rfind("amd.com/", 0) == 0)
            most = std::max(most, kube::whole_number(&r.value));
    n += static_cast<int>(most);
  }
  return n;
}

// spec.resourceClaims, each resolved to its ResourceClaim: named, or for a template the
// claim that status.resourceClaimStatuses names.
std::vector<pod_claim> pod_claims(const rapidjson::Value& pod) {
  std::vector<pod_claim> out;
  const auto* wanted = kube::find_path(pod, {"spec", "resourceClaims"});
  if (wanted == nullptr || !wanted->IsArray())
    return out;
  const auto* made = kube::find_path(pod, {"status", "resourceClaimStatuses"});
  for (const auto& w : wanted->GetArray()) {
    pod_claim c;
    c.name = kube::string_at(w, "name");
    if (const auto* direct = kube::find_path(w, {"resourceClaimName"});
        direct && direct->IsString()) {
      c.claim = direct->GetString();
    } else if (made != nullptr && made->IsArray()) {
      for (const auto& m : made->GetArray())
        if (kube::string_at(m, "name") == c.name)
          c.claim = kube::string_at(m, "resourceClaimName");
    }
    out.push_back(std::move(c));
  }
  return out;
}

// The ConfigMap a DCM pod mounts at /etc/config-manager (its config.json), "" if none.
std::string dcm_config_of(const rapidjson::Value& pod) {
  std::vector<std::pair<std::string, std::string>> volumes;
  std::vector<std::pair<std::string, std::string>> mounts;
  if (const auto* vs = kube::find_path(pod, {"spec", "volumes"}); vs && vs->IsArray())
    for (const auto& v : vs->GetArray())
      if (const auto* cm = kube::find_path(v, {"configMap"}); cm && cm->IsObject())
        volumes.emplace_back(kube::string_at(v, "name"), kube::string_at(*cm, "name"));
  if (const auto* cs = kube::find_path(pod, {"spec", "containers"}); cs && cs->IsArray())
    for (const auto& c : cs->GetArray())
      if (const auto* ms = kube::find_path(c, {"volumeMounts"}); ms && ms->IsArray())
        for (const auto& m : ms->GetArray())
          mounts.emplace_back(kube::string_at(m, "name"), kube::string_at(m, "mountPath"));
  return mounted_dcm_config(volumes, mounts);
}

struct pod_watch : kube::watch_handler {
  world_view& view;
  std::string dcm_namespace;
  pod_watch(world_view& v, std::string ns) : view(v), dcm_namespace(std::move(ns)) {}
  void on_change(const kube::watch_delivery& d) override {
    std::lock_guard<std::mutex> lock(view.mutex);
    pod_key key{d.key.namespace_, d.key.name};
    view.dcm_pods.erase(key);
    view.driver_pods.erase(key);
    view.claim_pods.erase(key);
    if (d.type == kube::event_type::deleted) {
      if (auto gone = view.pods.find(key); gone != view.pods.end()) {
        view.stopped.erase(gone->second.uid);
        view.pods.erase(gone);
      }
      view.gpu_pods.erase(key);
      return;
    }
    const auto& o = *d.object;
    observed_pod p;
    p.ns = key.ns;
    p.name = key.name;
    p.uid = kube::string_at(o["metadata"], "uid");
    p.node = kube::find_path(o, {"spec", "nodeName"}) != nullptr
                 ? kube::string_at(o["spec"], "nodeName")
                 : std::string{};
    if (const auto* status = kube::find_path(o, {"status"}); status != nullptr) {
      p.phase = kube::string_at(*status, "phase");
      if (const auto* conds = kube::find_path(*status, {"conditions"}); conds && conds->IsArray())
        for (const auto& c : conds->GetArray())
          if (kube::string_at(c, "type") == "Ready")
            p.ready = kube::string_at(c, "status") == "True";
    }
    p.deleting = kube::find_path(o, {"metadata", "deletionTimestamp"}) != nullptr;
    p.crash_loop =
        kube::find_path(o, {"metadata", "annotations", crash_loop_annotation}) != nullptr;
    p.dcm = key.ns == dcm_namespace &&
            is_dcm_pod(kube::string_map(kube::find_path(o, {"metadata", "labels"})));
    if (p.dcm && p.phase == "Running" && !p.deleting)
      view.dcm_pods[key] = {p.node, dcm_config_of(o)};
    if (p.phase == "Running" && !p.deleting && dra_driver_pod(o))
      view.driver_pods[key] = {p.node, p.uid};
    if (const auto* g = kube::find_path(o, {"metadata", "deletionGracePeriodSeconds"});
        g && g->IsInt64())
      p.grace_seconds = g->GetInt64();
    if (const auto* ts = kube::find_path(o, {"spec", "tolerations"}); ts && ts->IsArray())
      for (const auto& t : ts->GetArray()) {
        const std::string key = kube::string_at(t, "key");
        const std::string effect = kube::string_at(t, "effect");
        const bool any_key = key.empty() && kube::string_at(t, "operator") == "Exists";
        if ((key == "amd-dcm" || any_key) && (effect.empty() || effect == "NoExecute"))
          p.tolerates_dcm_taint = true;
      }
    if (const auto* cs = kube::find_path(o, {"spec", "containers"}); cs && cs->IsArray())
      for (const auto& c : cs->GetArray())
        p.containers.emplace_back(kube::string_at(c, "name"), kube::string_at(c, "image"));
    // The device plugin, or the DRA driver's kubelet plugin, deployed in DCM's namespace.
    for (const auto& [name, image] : p.containers)
      p.device_plugin =
          p.device_plugin ||
          (key.ns == dcm_namespace &&
           (name == "device-plugin" || name == "gpu-kubeletplugin" || name == "plugin"));
    p.claims = pod_claims(o);
    if (!p.claims.empty())
      view.claim_pods.insert(key);
    const int gpus = gpus_requested(o);
    // A pod holds its GPUs from its start (the device plugin allocates them as the kubelet
    // starts its containers) until it is gone or finished. A pod bound to the node but
    // never started there (the kubelet refuses one that does not tolerate the node's
    // NoExecute taint) holds none: a scheduler with a stale cache binds such pods to a
    // drained node after an API server restart, and they must not make DCM refuse.
    if (gpus > 0 && p.phase == "Running" && !view.stopped.count(p.uid))
      view.gpu_pods[key] = {p.node, gpus};
    else
      view.gpu_pods.erase(key);
    view.pods[key] = std::move(p);
  }
  void on_synced() override {
    std::lock_guard<std::mutex> lock(view.mutex);
    view.pods_synced = true;
  }
};

struct config_watch : kube::watch_handler {
  world_view& view;
  explicit config_watch(world_view& v) : view(v) {}
  void on_change(const kube::watch_delivery& d) override {
    std::lock_guard<std::mutex> lock(view.mutex);
    world_view::config_version v;
    v.seen = sim_clock::now();
    if (d.type != kube::event_type::deleted)
      if (const auto* text = kube::find_path(*d.object, {"data", "config.json"});
          text != nullptr && text->IsString()) {
        v.text = text->GetString();
        v.missing = false;
      }
    // Before DCM's pod started, the file it mounts is whatever the ConfigMap holds then.
    if (!view.config_synced)
      v.seen = sim_time{};
    view.config_maps[d.key.name].history.push_back(std::move(v));
  }
  void on_synced() override {
    std::lock_guard<std::mutex> lock(view.mutex);
    view.config_synced = true;
  }
};

struct slice_watch : kube::watch_handler {
  world_view& view;
  explicit slice_watch(world_view& v) : view(v) {}
  void on_change(const kube::watch_delivery& d) override {
    std::lock_guard<std::mutex> lock(view.mutex);
    if (auto old = view.slice_nodes.find(d.key.name); old != view.slice_nodes.end()) {
      auto& list = view.slices[old->second];
      list.erase(std::remove_if(list.begin(), list.end(),
                                [&](const observed_slice& s) { return s.name == d.key.name; }),
                 list.end());
      if (list.empty())
        view.slices.erase(old->second);
      view.slice_nodes.erase(old);
    }
    if (d.type == kube::event_type::deleted || d.object == nullptr)
      return;
    auto slice = parse_slice(*d.object);
    if (!slice)
      return;
    view.slice_nodes[slice->name] = slice->node;
    view.slices[slice->node].push_back(std::move(*slice));
  }
  void on_synced() override {
    std::lock_guard<std::mutex> lock(view.mutex);
    view.slices_synced = true;
  }
};

struct claim_watch : kube::watch_handler {
  world_view& view;
  explicit claim_watch(world_view& v) : view(v) {}
  void on_change(const kube::watch_delivery& d) override {
    std::lock_guard<std::mutex> lock(view.mutex);
    const pod_key key{d.key.namespace_, d.key.name};
    if (d.type == kube::event_type::deleted || d.object == nullptr) {
      view.claims.erase(key);
      return;
    }
    observed_claim c;
    if (const auto* allocation = kube::find_path(*d.object, {"status", "allocation"})) {
      c.allocated = true;
      if (const auto* results = kube::find_path(*allocation, {"devices", "results"});
          results != nullptr && results->IsArray())
        for (const auto& r : results->GetArray())
          c.devices.push_back({kube::string_at(r, "driver"), kube::string_at(r, "pool"),
                               kube::string_at(r, "device")});
    }
    if (const auto* reserved = kube::find_path(*d.object, {"status", "reservedFor"});
        reserved != nullptr && reserved->IsArray())
      for (const auto& r : reserved->GetArray())
        if (kube::string_at(r, "resource") == "pods")
          c.reserved_for.push_back(kube::string_at(r, "uid"));
    view.claims[key] = std::move(c);
  }
  void on_synced() override {
    std::lock_guard<std::mutex> lock(view.mutex);
    view.claims_synced = true;
  }
};

template <class Handler>
std::thread start_watch(const kube::connection_config& config, kube::list_watch_options o,
                        Handler& handler) {
  return std::thread([config, o = std::move(o), &handler] {
    kube::http_client http(config, std::make_shared<kube::credentials>(config));
    kube::client api(http);
    kube::list_watch loop(api, o, handler);
    loop.run(stopping);
  });
}

std::string json_string(const std::string& s) {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
  return b.GetString();
}

std::string metadata_patch(const node_actions& a) {
  auto block = [](const std::map<std::string, std::optional<std::string>>& m) {
    std::string out = "{";
    for (const auto& [k, v] : m)
      out += (out.size() > 1 ? "," : "") + json_string(k) + ":" + (v ? json_string(*v) : "null");
    return out + "}";
  };
  std::string out = "{\"metadata\":{";
  if (!a.labels.empty())
    out += "\"labels\":" + block(a.labels);
  if (!a.annotations.empty())
    out += std::string(a.labels.empty() ? "" : ",") + "\"annotations\":" + block(a.annotations);
  return out + "}}";
}

std::string now_rfc3339() {
  return gpu_partitioner::protocol::format_time(std::chrono::system_clock::now());
}

std::string running_status(const observed_pod& p, int ip) {
  const std::string t = now_rfc3339();
  // A crash-looping container: waiting to be restarted again, never ready.
  const std::string state =
      p.crash_loop
          ? R"("ready":false,"started":false,"restartCount":5,"state":{"waiting":)"
            R"({"reason":"CrashLoopBackOff","message":"back-off restarting failed container"}})"
          : R"("ready":true,"started":true,"restartCount":0,"state":{"running":{"startedAt":")" +
                t + R"("}})";
  std::string containers;
  for (const auto& [name, image] : p.containers)
    containers += (containers.empty() ? "" : ",") + std::string(R"({"name":)") + json_string(name) +
                  R"(,"image":)" + json_string(image) + R"(,"imageID":"",)" + state + "}";
  auto cond = [&](const char* type, bool ok = true) {
    return std::string(R"({"type":")") + type + R"(","status":")" + (ok ? "True" : "False") +
           R"(","lastTransitionTime":")" + t + "\"}";
  };
  return R"({"status":{"phase":"Running","podIP":"10.244.)" + std::to_string((ip >> 8) & 255) +
         "." + std::to_string(ip & 255) + R"(","startTime":")" + t + R"(","conditions":[)" +
         cond("PodScheduled") + "," + cond("Initialized") + "," +
         cond("ContainersReady", !p.crash_loop) + "," + cond("Ready", !p.crash_loop) +
         R"(],"containerStatuses":[)" + containers + "]}}";
}

// What a kubelet reports when it registers its node: an MI300X server, Ready.
std::string registration_status(const std::string& name, bool ready) {
  const std::string t = now_rfc3339();
  auto cond = [&](const char* type, const char* status, const char* reason) {
    return std::string(R"({"type":")") + type + R"(","status":")" + status +
           R"(","lastHeartbeatTime":")" + t + R"(","lastTransitionTime":")" + t +
           R"(","reason":")" + reason + R"("})";
  };
  return R"({"status":{"capacity":{"cpu":"192","memory":"2113637Mi","pods":"110","ephemeral-storage":"3750Gi"},)"
         R"("allocatable":{"cpu":"190","memory":"2100000Mi","pods":"110","ephemeral-storage":"3600Gi"},)"
         R"("conditions":[)" +
         cond("MemoryPressure", "False", "KubeletHasSufficientMemory") + "," +
         cond("DiskPressure", "False", "KubeletHasNoDiskPressure") + "," +
         cond("PIDPressure", "False", "KubeletHasSufficientPID") + "," +
         (ready ? cond("Ready", "True", "KubeletReady")
                : cond("Ready", "Unknown", "NodeStatusUnknown")) +
         R"(],"addresses":[{"type":"Hostname","address":)" + json_string(name) +
         R"(}],"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"6.8.0",)"
         R"("osImage":"gpu-sim","containerRuntimeVersion":"sim://1","kubeletVersion":"v1.35.4",)"
         R"("kubeProxyVersion":"","operatingSystem":"linux","architecture":"amd64"}}})";
}

// kubelet's unchanged status, reported again: a strategic merge of the conditions (keyed by
// type) that moves only their lastHeartbeatTime.
std::string heartbeat_status() {
  const std::string t = now_rfc3339();
  std::string conds;
  for (const char* type : {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"})
    conds += (conds.empty() ? "" : ",") + std::string(R"({"type":")") + type +
             R"(","lastHeartbeatTime":")" + t + "\"}";
  return R"({"status":{"conditions":[)" + conds + "]}}";
}

// The node's Lease as kubelet renews it (pkg/kubelet/nodelease): held by the node, owned by
// the Node (so the garbage collector removes it with the node).
std::string lease_spec(const std::string& node, std::chrono::seconds duration) {
  return R"({"holderIdentity":)" + json_string(node) + R"(,"leaseDurationSeconds":)" +
         std::to_string(duration.count()) + R"(,"renewTime":")" +
         gpu_partitioner::protocol::format_time_micro(std::chrono::system_clock::now()) + "\"}";
}

std::string lease_object(const std::string& node, const std::string& uid,
                         std::chrono::seconds duration) {
  return R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":)" +
         json_string(node) + R"(,"namespace":")" + node_lease_namespace +
         R"(","ownerReferences":[{"apiVersion":"v1","kind":"Node","name":)" + json_string(node) +
         R"(,"uid":)" + json_string(uid) + R"(}]},"spec":)" + lease_spec(node, duration) + "}";
}

// Renews the node's Lease, creating it if it is not there (a new node, or one the garbage
// collector removed with an older node of the same name). Nothing but the answer: "" when
// the renewal landed, else why not.
std::string renew_lease(kube::client& api, const std::string& node, const std::string& uid,
                        std::chrono::seconds duration) {
  const auto leases = kube::resources::leases();
  auto patched = api.patch(leases, node_lease_namespace, node, kube::patch_type::merge,
                           R"({"spec":)" + lease_spec(node, duration) + "}");
  if (patched)
    return {};
  if (patched.error().kind != kube::error_kind::not_found)
    return patched.error().describe();
  auto made = api.create(leases, node_lease_namespace, lease_object(node, uid, duration));
  // Made meanwhile by someone else (an earlier gpu-sim's write landing late): the retry
  // patches it.
  return made ? std::string{} : made.error().describe();
}

std::string label_or(const observed_node& node, const char* key) {
  auto it = node.labels.find(key);
  return it == node.labels.end() ? std::string{} : it->second;
}

// DCM reads its ConfigMap as a mounted file, which kubelet refreshes on its periodic sync:
// a volume holds the newest version of its ConfigMap that is at least `lag` old. A change
// of the file is a new generation, which runs again every labelled node whose DCM mounts it.
void deliver_config(world_view& view, sim_time now, sim_clock::duration lag) {
  for (auto& [name, cm] : view.config_maps) {
    std::optional<world_view::config_version> due;
    while (!cm.history.empty() && cm.history.front().seen + lag <= now) {
      due = std::move(cm.history.front());
      cm.history.pop_front();
    }
    if (!due ||
        (cm.delivered && cm.delivered->text == due->text && cm.delivered->missing == due->missing))
      continue;
    const bool first = !cm.delivered;
    cm.delivered = due;
    dcm_file& file = view.world.files[name];
    if (!first)
      ++file.generation;
    if (due->missing) {
      file.config.reset();
      file.unreadable = false;
      file.problem = {"ConfigMapNotPresent", "DCM's ConfigMap does not exist"};
      continue;
    }
    dcm_failure problem;
    file.config = parse_dcm_config(due->text, problem, &file.unreadable);
    if (!file.config)
      file.problem = problem;
  }
}

int run(const options& opt) {
  auto config = kube::default_config(opt.kubeconfig);
  if (!config) {
    std::fprintf(stderr, "gpu-sim: %s\n", config.error().message.c_str());
    return 2;
  }
  // The operator's default agent otherwise (kube/config.hpp): name gpu-sim's own.
  config->user_agent = opt.user_agent;
  auto heartbeat_config = config.value();
  heartbeat_config.user_agent = opt.user_agent + "/heartbeats";
  sim_timing timing;
  timing.scale = opt.time_scale;

  world_view view;
  node_watch nodes(view);
  pod_watch pods(view, opt.dcm_namespace);
  config_watch dcm(view);
  slice_watch slices(view);
  claim_watch claims(view);
  kube::list_watch_options node_opts;
  node_opts.what = kube::resources::nodes();
  node_opts.label_selector = opt.node_selector;
  kube::list_watch_options pod_opts;
  pod_opts.what = kube::resources::pods();
  pod_opts.field_selector = "spec.nodeName!=";
  kube::list_watch_options cm_opts;
  cm_opts.what = kube::resources::config_maps();
  cm_opts.ns = opt.dcm_namespace;
  kube::list_watch_options slice_opts;
  slice_opts.what = kube::resources::resource_slices();
  slice_opts.field_selector = std::string("spec.driver=") + dra_driver;
  kube::list_watch_options claim_opts;
  claim_opts.what = kube::resources::resource_claims();
  std::vector<std::thread> watches;
  watches.push_back(start_watch(config.value(), node_opts, nodes));
  watches.push_back(start_watch(config.value(), pod_opts, pods));
  watches.push_back(start_watch(config.value(), cm_opts, dcm));
  watches.push_back(start_watch(config.value(), slice_opts, slices));
  watches.push_back(start_watch(config.value(), claim_opts, claims));

  // One lane per connection, each with a thread of its own that writes its queue in
  // order: a node's writes always take the same lane, as do a pod's, so they stay in
  // order, while a thousand nodes' writes do not queue behind each other. The tick only
  // queues its writes and goes on, as each node's DCM, plugin and kubelet would: a slow
  // write holds up its lane, not every node's next step. (The models never ask twice for
  // a write in flight: a node's actions are changes of its own state, and a pod's are
  // asked again only once answered and kubelet_timing::resend_after later.)
  struct lane {
    kube::http_client http;
    kube::client api;
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<std::function<void(lane&)>> jobs; // under `mutex`
    /// Node writes that did not land (the API server was away), kept by the lane's own
    /// thread: retried while the lane is idle and folded under the node's next write, so
    /// that a newer value of the same key, written meanwhile, is never overwritten by an
    /// older one. DCM, the device plugin and kubelet keep reporting until they can.
    std::map<std::string, node_actions> failed;
    std::string dcm_namespace;
    std::thread worker;
    lane(const kube::connection_config& c, std::string ns)
        : http(c, std::make_shared<kube::credentials>(c)), api(http), dcm_namespace(std::move(ns)) {
    }
    void queue(std::vector<std::function<void(lane&)>>& batch) {
      if (batch.empty())
        return;
      {
        std::lock_guard<std::mutex> lock(mutex);
        for (auto& job : batch)
          jobs.push_back(std::move(job));
      }
      batch.clear();
      wake.notify_one();
    }
    void run(std::chrono::milliseconds retry_every) {
      for (;;) {
        std::function<void(lane&)> job;
        {
          std::unique_lock<std::mutex> lock(mutex);
          wake.wait_for(lock, failed.empty() ? std::chrono::milliseconds(500) : retry_every,
                        [&] { return stopping || !jobs.empty(); });
          if (stopping)
            return;
          if (!jobs.empty()) {
            job = std::move(jobs.front());
            jobs.pop_front();
          }
        }
        if (job) {
          job(*this);
          continue;
        }
        auto again = std::move(failed);
        failed.clear();
        for (auto& [name, a] : again)
          write_node(name, std::move(a), std::string{});
      }
    }
    /// The DRA driver's (and kubelet's) writes of a node's ResourceSlices, in order. One that
    /// fails is asked for again by step_dra once resend_after has passed.
    void write_slices(const std::string& node, const std::string& node_uid,
                      const std::vector<slice_write>& writes) {
      const auto slices = kube::resources::resource_slices();
      // The API server lists every invalid field: the first few say what is wrong.
      auto why = [](const kube::failure& e) {
        auto text = e.describe();
        return text.size() > 400 ? text.substr(0, 400) + "..." : text;
      };
      auto says = [](const slice_write& w) {
        return "pool generation " + std::to_string(w.generation) + ", " +
               (w.content.shared_counters.empty()
                    ? std::to_string(w.content.devices.size()) + " devices"
                    : std::to_string(w.content.shared_counters.size()) + " counter sets");
      };
      for (const auto& w : writes) {
        switch (w.what) {
        case slice_write::kind::create: {
          auto r = api.create(slices, "", slice_object_json(w, node, node_uid));
          log_line("node " + node + ": ResourceSlice " +
                   (r ? kube::string_at(r.value()["metadata"], "name") + " created, " + says(w)
                      : "create failed: " + why(r.error())));
          break;
        }
        case slice_write::kind::update: {
          auto r = api.patch(slices, "", w.name, kube::patch_type::merge, slice_patch_json(w));
          log_line("node " + node + ": ResourceSlice " + w.name +
                   (r ? " updated, " + says(w) : " update failed: " + why(r.error())));
          break;
        }
        case slice_write::kind::remove: {
          kube::delete_options o;
          o.precondition_uid = w.uid;
          o.precondition_resource_version = w.resource_version;
          auto r = api.remove(slices, "", w.name, o);
          const bool wipe = w.uid.empty();
          if (r || r.error().kind == kube::error_kind::not_found)
            log_line("node " + node + ": ResourceSlice " + w.name +
                     (wipe ? " wiped (kubelet: the driver is gone)" : " deleted"));
          else
            log_line("node " + node + ": ResourceSlice " + w.name +
                     " delete failed: " + why(r.error()));
          break;
        }
        }
      }
    }
    /// Writes a node's labels and annotations, its GPU resources and its Events, with what
    /// failed before for it underneath (this write's values win).
    void write_node(const std::string& name, node_actions a, const std::string& dcm_pod) {
      if (auto old = failed.find(name); old != failed.end()) {
        for (auto& [k, v] : old->second.labels)
          a.labels.emplace(k, v);
        for (auto& [k, v] : old->second.annotations)
          a.annotations.emplace(k, v);
        if (!a.allocatable)
          a.allocatable = old->second.allocatable;
        if (!a.capacity)
          a.capacity = old->second.capacity;
        failed.erase(old);
      }
      auto lost = [](const kube::failure& e) { return e.kind != kube::error_kind::not_found; };
      if (!a.labels.empty() || !a.annotations.empty()) {
        auto r = api.patch(kube::resources::nodes(), "", name, kube::patch_type::merge,
                           metadata_patch(a));
        if (r) {
          for (const auto& [k, v] : a.labels)
            log_line("node " + name + ": label " + k + (v ? "=" + *v : " removed"));
        } else {
          log_line("node " + name + ": label patch failed (retrying): " + r.error().describe());
          if (lost(r.error())) {
            failed[name].labels = a.labels;
            failed[name].annotations = a.annotations;
          }
        }
      }
      if (a.allocatable || a.capacity) {
        auto block = [](const std::map<std::string, long long>& m) {
          std::string out = "{";
          for (const auto& [k, v] : m)
            out +=
                (out.size() > 1 ? "," : "") + json_string(k) + ":" + json_string(std::to_string(v));
          return out + "}";
        };
        std::string body = "{\"status\":{";
        std::string shown;
        if (a.capacity)
          body += "\"capacity\":" + block(*a.capacity);
        if (a.allocatable) {
          body += std::string(a.capacity ? "," : "") + "\"allocatable\":" + block(*a.allocatable);
          for (const auto& [k, v] : *a.allocatable)
            shown += " " + k + "=" + std::to_string(v);
        }
        body += "}}";
        kube::patch_options status;
        status.subresource = "status";
        auto r =
            api.patch(kube::resources::nodes(), "", name, kube::patch_type::merge, body, status);
        if (r) {
          log_line("node " + name + ": allocatable" + (shown.empty() ? " unchanged" : shown));
        } else {
          log_line("node " + name + ": status patch failed (retrying): " + r.error().describe());
          if (lost(r.error())) {
            failed[name].allocatable = a.allocatable;
            failed[name].capacity = a.capacity;
          }
        }
      }
      for (const auto& e : a.events) {
        log_line("node " + name + ": " + e.reason + " " + e.message);
        // DCM's Events are about its own pod, from the node it runs on, one object each,
        // stamped by the node's clock.
        auto r = api.create(kube::resources::events(), dcm_namespace,
                            dcm_event_object(e, dcm_namespace, dcm_pod, name,
                                             std::chrono::system_clock::now() + a.clock_skew));
        if (!r)
          log_line("node " + name + ": Event " + e.reason + " failed: " + r.error().describe());
      }
    }
  };
  // The writers' lanes, then (with heartbeats) kubelet's heartbeat lanes.
  const std::size_t writers = static_cast<std::size_t>(std::max(1, opt.writers));
  std::vector<std::unique_ptr<lane>> lanes;
  for (std::size_t i = 0; i < writers + (opt.heartbeats ? lease_writers : 0); ++i)
    lanes.push_back(
        std::make_unique<lane>(i < writers ? config.value() : heartbeat_config, opt.dcm_namespace));
  for (auto& l : lanes)
    l->worker = std::thread(
        [l = l.get(), every = std::chrono::milliseconds(opt.tick_ms)] { l->run(every); });
  // What one tick gives each lane, queued at the tick's end in one go. A node's writes
  // take the lane of its name; a pod's, the lane of its own key: each pod has a worker
  // of its own in kubelet, so a node's three pods past their grace are deleted side by
  // side, not one after another behind the same lane.
  std::vector<std::vector<std::function<void(lane&)>>> batches(lanes.size());
  auto lane_of = [&](const std::string& key) -> std::vector<std::function<void(lane&)>>& {
    return batches[std::hash<std::string>{}(key) % writers];
  };
  // A node's Lease renewals and status reports, as kubelet's own loops: never behind the
  // node's other writes.
  auto heartbeat_lane_of =
      [&](const std::string& node) -> std::vector<std::function<void(lane&)>>& {
    return batches[writers + std::hash<std::string>{}(node) % lease_writers];
  };
  std::map<std::string, node_memory> memory;
  std::map<std::string, dra_memory> dra_memories;
  // With --jitter, each node's own delays (logged once per node).
  std::map<std::string, sim_timing> node_timings;
  auto timing_of = [&](const std::string& name) -> const sim_timing& {
    if (!(opt.jitter > 0) || opt.kubelet_only)
      return timing;
    auto it = node_timings.find(name);
    if (it == node_timings.end()) {
      const auto j = jitter_of(name, opt.jitter, opt.jitter_seed);
      it = node_timings.emplace(name, jittered(timing, j)).first;
      char line[160];
      std::snprintf(line, sizeof line, ": jitter: DCM's delays x%.4f, the plugin's restart x%.4f",
                    j.dcm, j.plugin);
      log_line("node " + name + line);
    }
    return it->second;
  };
  std::set<std::string> unknown_api_told; // nodes whose unknown gpu-api value was logged
  const std::vector<observed_slice> no_slices;
  std::map<pod_key, pod_memory> pod_memory_map;
  // Each pod's writes: nullopt while one is queued or awaits its answer, else when the
  // last was answered (observed_pod::write_waiting). Lanes write it, under its mutex.
  std::mutex pod_writes_mutex;
  std::map<pod_key, std::optional<sim_time>> pod_writes;
  auto pod_write_answered = [&](const pod_key& key) {
    std::lock_guard<std::mutex> lock(pod_writes_mutex);
    pod_writes[key] = sim_clock::now();
  };
  std::map<std::string, sim_time> registering;
  std::set<std::string> stopped_kubelets;
  const heartbeat_timing heartbeat;
  std::map<std::string, heartbeat_memory> heartbeat_memories;
  // Each node's heartbeat writes in flight, and a renewal's failure not yet told to its step
  // (heartbeat_view). The heartbeat lanes write it, under its mutex.
  struct heartbeat_flight {
    bool renewal = false;
    bool status = false;
    bool renewal_failed = false;
    /// Renewals fail since this one was logged: the next success is logged too.
    bool failing = false;
  };
  std::mutex heartbeat_mutex;
  std::map<std::string, heartbeat_flight> heartbeat_flights;
  auto heartbeat_answered = [&](const std::string& node, bool renewal, const std::string& error) {
    std::lock_guard<std::mutex> lock(heartbeat_mutex);
    auto& f = heartbeat_flights[node];
    if (!renewal) {
      f.status = false;
      return;
    }
    f.renewal = false;
    f.renewal_failed = !error.empty();
    if (!error.empty() && !f.failing)
      log_line("node " + node + ": Lease renewal failed (retrying): " + error);
    else if (error.empty() && f.failing)
      log_line("node " + node + ": Lease renewed again");
    f.failing = !error.empty();
  };
  std::map<std::string, std::string> dcm_pod_names; // node -> its DCM pod, once seen
  int next_ip = 1;
  log_line("started: nodes " + opt.node_selector +
           (opt.kubelet_only ? " (kubelet only, no GPUs)" : "") + ", DCM in " + opt.dcm_namespace +
           " (each DCM pod reads the ConfigMap it mounts at /etc/config-manager; lag " +
           std::to_string(opt.config_lag) + " s), DCM " +
           (opt.stack.version == dcm_version::v1_5   ? "1.5"
            : opt.stack.version == dcm_version::v1_4 ? "1.4"
                                                     : "1.3") +
           ", " + (opt.stack.strategy == resource_strategy::mixed ? "mixed" : "single") +
           " strategy, GPU API " + gpu_api_name(opt.default_api) + ", time scale " +
           std::to_string(opt.time_scale) + (opt.heartbeats ? "" : ", no heartbeats") +
           (opt.jitter > 0 ? ", jitter " + std::to_string(opt.jitter) + " seed " +
                                 std::to_string(opt.jitter_seed)
                           : std::string()) +
           ", user agent " + opt.user_agent);

  // DCM's cost at scale: each attempt LISTs every pod of the cluster (v1.3 GetPods), on each
  // labelled node. Counted and logged every minute; gpu-sim does not make them.
  long long dcm_pod_lists = 0;
  long long dcm_pod_lists_logged = 0;
  auto cost_logged_at = sim_clock::now();
  while (!stopping) {
    std::this_thread::sleep_for(std::chrono::milliseconds(opt.tick_ms));
    if (sim_clock::now() - cost_logged_at >= std::chrono::minutes(1)) {
      cost_logged_at = sim_clock::now();
      log_line("DCM cluster-wide pod LISTs: " + std::to_string(dcm_pod_lists) + " (+" +
               std::to_string(dcm_pod_lists - dcm_pod_lists_logged) + " in the last minute)");
      dcm_pod_lists_logged = dcm_pod_lists;
    }
    std::vector<std::pair<std::string, node_actions>> node_work;
    std::vector<std::tuple<std::string, std::string, std::vector<slice_write>>> slice_work;
    std::vector<std::string> to_register;
    std::vector<std::tuple<std::string, std::string, heartbeat_actions>> heartbeat_work;
    pod_actions pod_work;
    {
      std::lock_guard<std::mutex> lock(view.mutex);
      if (!view.nodes_synced || !view.pods_synced || !view.config_synced)
        continue;
      const auto now = sim_clock::now();
      deliver_config(
          view, now,
          timing.scaled(std::chrono::milliseconds(static_cast<long long>(opt.config_lag * 1000))));
      // A tick at thousands of nodes copies no node's strings: these point into the view.
      std::unordered_map<std::string_view, std::pair<std::string_view, std::string_view>>
          dcm_pod_of; // node -> pod, its ConfigMap
      for (const auto& [key, running] : view.dcm_pods)
        dcm_pod_of[running.first] = {key.name, running.second};
      std::unordered_map<std::string_view, std::string_view> driver_pod_of; // node -> uid
      for (const auto& [key, running] : view.driver_pods)
        driver_pod_of[running.first] = running.second;
      view.world.gpu_pods.clear();
      for (const auto& [key, held] : view.gpu_pods)
        view.world.gpu_pods[held.first] += held.second;
      // A running pod whose claims hold gpu.amd.com devices of its node holds those GPUs
      // until kubelet stops it (NodeUnprepareResources).
      for (const auto& key : view.claim_pods) {
        auto pod = view.pods.find(key);
        if (pod == view.pods.end() || view.gpu_pods.count(key) || pod->second.phase != "Running" ||
            view.stopped.count(pod->second.uid))
          continue;
        view.world.gpu_pods[pod->second.node] +=
            claimed_devices(pod->second, view.claims, dra_driver);
      }
      for (const auto& name : view.deleted) {
        memory.erase(name);
        dra_memories.erase(name);
      }
      view.deleted.clear();
      for (auto it = memory.begin(); it != memory.end();)
        it = view.nodes.count(it->first) ? std::next(it) : memory.erase(it);
      for (auto it = dra_memories.begin(); it != dra_memories.end();)
        it = view.nodes.count(it->first) ? std::next(it) : dra_memories.erase(it);
      for (auto& [name, node] : view.nodes) {
        if (!view.registered.count(name)) {
          // Play kubelet registering: the GPU stack starts only on a registered node. A node
          // whose kubelet is stopped when first seen registers as it shows long after its
          // kubelet stopped: Ready Unknown (the node-lifecycle controller's mark), no Lease.
          if (!registering.count(name) || now - registering[name] > std::chrono::seconds(3)) {
            registering[name] = now;
            if (parse_faults(label_or(node, fault_label)).kubelet_stopped)
              stopped_kubelets.insert(name);
            else
              stopped_kubelets.erase(name);
            to_register.push_back(name);
          }
          continue;
        }
        registering.erase(name);
        // The fields the tick adds are set in place, every tick, not on a copy.
        observed_node& seen = node;
        auto dcm_pod = dcm_pod_of.find(name);
        seen.dcm_pod = dcm_pod == dcm_pod_of.end() ? std::string_view() : dcm_pod->second.first;
        seen.dcm_config = dcm_pod == dcm_pod_of.end() ? std::string_view() : dcm_pod->second.second;
        auto driver_pod = driver_pod_of.find(name);
        seen.driver_pod =
            driver_pod == driver_pod_of.end() ? std::string_view() : driver_pod->second;
        bool unknown_api = false;
        seen.api = node_gpu_api(seen.labels, opt.default_api, &unknown_api);
        if (!unknown_api)
          unknown_api_told.erase(name);
        else if (unknown_api_told.insert(name).second)
          log_line("node " + name + ": unknown " + gpu_api_label + " \"" +
                   label_or(seen, gpu_api_label) +
                   "\" (not device-plugin, dra or dra-dynamic): the device plugin it is");
        auto& state = memory[name];
        const sim_timing& own = timing_of(name);
        auto a = opt.kubelet_only ? node_actions{}
                                  : step_node(state, seen, view.world, now, own, opt.stack);
        dcm_pod_lists += a.pod_lists;
        if (view.slices_synced && !opt.kubelet_only) {
          auto found = view.slices.find(name);
          auto writes = step_dra(dra_memories[name], state, seen,
                                 found == view.slices.end() ? no_slices : found->second, now, own);
          if (!writes.empty())
            slice_work.emplace_back(name, seen.uid, std::move(writes));
        }
        const auto faults = parse_faults(label_or(node, fault_label));
        if (faults.kubelet_stopped != stopped_kubelets.count(name)) {
          if (faults.kubelet_stopped)
            stopped_kubelets.insert(name);
          else
            stopped_kubelets.erase(name);
          // With heartbeats, a stopped kubelet's renewals and reports stop, and the
          // node-lifecycle controller marks the node Unknown after its grace period; a
          // started one reports Ready at once (step_heartbeat). Without, gpu-sim writes
          // Ready Unknown itself, as that controller would.
          if (opt.heartbeats)
            log_line("node " + name +
                     (faults.kubelet_stopped ? ": kubelet stopped: no more Lease renewals or status"
                                             : ": kubelet started"));
          else
            to_register.push_back(name);
        }
        if (!a.empty())
          node_work.emplace_back(name, std::move(a));
        if (!seen.dcm_pod.empty())
          dcm_pod_names[name] = seen.dcm_pod;
      }
      if (opt.heartbeats) {
        std::lock_guard<std::mutex> lock(heartbeat_mutex);
        for (auto it = heartbeat_memories.begin(); it != heartbeat_memories.end();)
          it = view.nodes.count(it->first) ? std::next(it) : heartbeat_memories.erase(it);
        for (auto it = heartbeat_flights.begin(); it != heartbeat_flights.end();)
          it = view.nodes.count(it->first) || it->second.renewal || it->second.status
                   ? std::next(it)
                   : heartbeat_flights.erase(it);
        for (const auto& [name, node] : view.nodes) {
          heartbeat_view hv;
          hv.kubelet_running = !stopped_kubelets.count(name);
          if (auto ready = view.ready.find(name); ready != view.ready.end())
            hv.ready = ready->second;
          auto& flight = heartbeat_flights[name];
          hv.renewal_waiting = flight.renewal;
          hv.status_waiting = flight.status;
          hv.renewal_failed = flight.renewal_failed;
          flight.renewal_failed = false;
          const auto h =
              step_heartbeat(heartbeat_memories[name], hv, now, heartbeat_phase(name), heartbeat);
          if (!h.renew_lease && h.status == heartbeat_actions::status_post::none)
            continue;
          flight.renewal = flight.renewal || h.renew_lease;
          flight.status = flight.status || h.status != heartbeat_actions::status_post::none;
          heartbeat_work.emplace_back(name, node.uid, h);
        }
      }
      // Only pods the kubelet may act on: being deleted, or not yet running. (A copy of
      // every pod on every tick cost gpu-sim more CPU than the rest of its work.)
      std::map<pod_key, observed_pod> ours;
      for (const auto& [key, pod] : view.pods) {
        const bool settled = !pod.deleting && (settled_running(pod) || pod.phase == "Succeeded" ||
                                               pod.phase == "Failed");
        if (settled)
          continue;
        if (auto node = view.nodes.find(pod.node); node != view.nodes.end()) {
          // A stopped kubelet acts on nothing; a node with the dcm-missing fault never
          // starts DCM's pod.
          const auto faults = parse_faults(label_or(node->second, fault_label));
          if (faults.kubelet_stopped || (faults.dcm_missing && pod.dcm))
            continue;
          auto& p = ours.emplace(key, pod).first->second;
          p.node_dcm_tainted = node->second.dcm_taint;
          if (!p.claims.empty()) {
            // kubelet prepares the claims through the node's DRA driver, if it is registered.
            std::set<std::string> drivers_up;
            if (auto dra = dra_memories.find(pod.node); dra != dra_memories.end() && dra->second.up)
              drivers_up.insert(dra_driver);
            p.claims_prepared = view.claims_synced && claims_prepared(p, view.claims, drivers_up);
          }
          p.crash_loop = p.crash_loop || (faults.plugin_crashloop && p.device_plugin);
        }
      }
      {
        std::lock_guard<std::mutex> lock(pod_writes_mutex);
        for (auto it = pod_writes.begin(); it != pod_writes.end();) {
          auto pod = ours.find(it->first);
          if (pod != ours.end()) {
            pod->second.write_waiting = !it->second;
            pod->second.write_answered = it->second;
          } else if (it->second) { // answered, and nothing more to do for the pod
            it = pod_writes.erase(it);
            continue;
          }
          ++it;
        }
      }
      pod_work = step_pods(pod_memory_map, ours, now, timing);
      {
        std::lock_guard<std::mutex> lock(pod_writes_mutex);
        for (const auto* list : {&pod_work.start, &pod_work.remove})
          for (const auto& p : *list)
            pod_writes[{p.ns, p.name}] = std::nullopt;
      }
      for (const auto& p : pod_work.remove) {
        view.stopped.insert(p.uid);
        view.gpu_pods.erase({p.ns, p.name});
      }
    }
    for (const auto& name : to_register)
      lane_of(name).push_back([name, ready = !stopped_kubelets.count(name)](lane& l) {
        kube::patch_options status;
        status.subresource = "status";
        auto r = l.api.patch(kube::resources::nodes(), "", name, kube::patch_type::merge,
                             registration_status(name, ready), status);
        log_line("node " + name +
                 (r ? (ready ? ": registered, Ready" : ": kubelet stopped, NotReady")
                    : ": registration failed: " + r.error().describe()));
      });
    for (const auto& [node_name, uid, h] : heartbeat_work) {
      if (h.renew_lease)
        heartbeat_lane_of(node_name).push_back([name = node_name, uid = uid, &heartbeat,
                                                &heartbeat_answered](lane& l) {
          heartbeat_answered(name, true, renew_lease(l.api, name, uid, heartbeat.lease_duration));
        });
      if (h.status == heartbeat_actions::status_post::none)
        continue;
      const bool ready = h.status == heartbeat_actions::status_post::ready;
      heartbeat_lane_of(node_name).push_back([name = node_name, ready,
                                              &heartbeat_answered](lane& l) {
        kube::patch_options status;
        status.subresource = "status";
        auto r = ready ? l.api.patch(kube::resources::nodes(), "", name, kube::patch_type::merge,
                                     registration_status(name, true), status)
                       : l.api.patch(kube::resources::nodes(), "", name,
                                     kube::patch_type::strategic, heartbeat_status(), status);
        if (!r)
          log_line("node " + name + ": status post failed: " + r.error().describe());
        else if (ready)
          log_line("node " + name + ": kubelet posts Ready");
        heartbeat_answered(name, false, {});
      });
    }
    for (auto& [node_name, uid, writes] : slice_work)
      lane_of(node_name).push_back([name = node_name, uid = uid, w = std::move(writes)](lane& l) {
        l.write_slices(name, uid, w);
      });
    for (auto& [node_name, work] : node_work)
      lane_of(node_name).push_back(
          [name = node_name, a = std::move(work), pod = dcm_pod_names[node_name]](lane& l) mutable {
            l.write_node(name, std::move(a), pod);
          });
    for (const auto& p : pod_work.start)
      lane_of(p.ns + "/" + p.name).push_back([p, ip = next_ip++, &pod_write_answered](lane& l) {
        kube::patch_options status;
        status.subresource = "status";
        auto r = l.api.patch(kube::resources::pods(), p.ns, p.name, kube::patch_type::merge,
                             running_status(p, ip), status);
        pod_write_answered({p.ns, p.name});
        if (!r && r.error().kind != kube::error_kind::not_found)
          log_line("pod " + p.ns + "/" + p.name + ": start failed: " + r.error().describe());
      });
    for (const auto& p : pod_work.remove)
      lane_of(p.ns + "/" + p.name).push_back([p, &pod_write_answered](lane& l) {
        kube::delete_options now;
        now.grace_period_seconds = 0;
        now.precondition_uid = p.uid;
        auto r = l.api.remove(kube::resources::pods(), p.ns, p.name, now);
        pod_write_answered({p.ns, p.name});
        if (!r && r.error().kind != kube::error_kind::not_found &&
            r.error().kind != kube::error_kind::conflict)
          log_line("pod " + p.ns + "/" + p.name + ": delete failed: " + r.error().describe());
      });
    for (std::size_t i = 0; i < lanes.size(); ++i)
      lanes[i]->queue(batches[i]);
  }
  for (auto& l : lanes) {
    l->wake.notify_all();
    l->worker.join();
  }
  for (auto& t : watches)
    t.join();
  log_line("stopped");
  return 0;
}

constexpr const char* usage = R"(Usage: gpu-sim [flags]

Simulates AMD's GPU stack on a real API server for nodes without GPUs, as AMD's
software behaves (tools/simulator/README.md): DCM (partition runs driven by the
dcm.amd.com/gpu-config-profile label, while DCM's pod runs on the node), the device
plugin (amd.com/ resources) or the DRA driver gpu.amd.com (ResourceSlices; kubelet
wipes them 30 s after it went), both down while amd-dcm=up:NoExecute (the driver
also follows its pod, once one was seen: down without it, restarted by a new one),
the node labeller (AMD's labels), and kubelet for pods on those nodes (a pod with
ResourceClaims starts once they are allocated and reserved for it and the driver
is up), with kubelet's heartbeats (a Lease per node in kube-node-lease renewed every
10 s, the Ready condition): a node whose kubelet stops goes Unknown through the
node-lifecycle controller. A node's label
sim.gpu-partitioner.io/gpu-api=device-plugin|dra|dra-dynamic chooses its GPU API. Faults per node: label
sim.gpu-partitioner.io/fault=dcm-failure,dcm-stuck,wrong-count,slow-plugin,dcm-missing,
kubelet-stopped,state-lost,gpu-held,plugin-crashloop. Node labels
sim.gpu-partitioner.io/kmm-driver=true (a KMM-managed driver: 5 min memory changes)
and sim.gpu-partitioner.io/clock-skew-seconds=N|nN (the node's clock N s ahead or
behind, for DCM's Events).
Every minute gpu-sim logs how many cluster-wide pod LISTs DCM would have made.

Flags:
  --kubeconfig PATH         else $KUBECONFIG, in-cluster, ~/.kube/config
  --node-selector SEL       nodes to simulate (default gpu.vendor=amd)
  --dcm-namespace NS        DCM's namespace (default kube-amd-gpu): DCM's pods are those
                            in NS labelled app.kubernetes.io/name=device-config-manager
                            (GPU operator) or app=amdgpu-device-config-manager
                            (standalone); each reads config.json from the ConfigMap
                            volume its pod mounts at /etc/config-manager
  --dcm-config NS/NAME      deprecated: sets only the namespace (the name is read from
                            each DCM pod's volume)
  --dcm-config-lag SECONDS  kubelet's refresh of DCM's mounted config (default 60)
  --dcm-version 1.3|1.4|1.5 the DCM played (default 1.3, the last public source);
                            1.4 and 1.5 are "newer DCM": one group without
                            numGPUsAssigned takes the remaining GPUs, a mode the GPU
                            does not take is InvalidProfileInfo, not retried
  --resource-strategy single|mixed
                            the device plugin's naming: amd.com/gpu, or
                            amd.com/<compute>_<memory> per style (default single)
  --gpu-api device-plugin|dra
                            the GPU API of nodes without the gpu-api label: AMD's
                            device plugin, or AMD's DRA driver publishing the
                            partitions DCM made (dra-dynamic: every partition it
                            could carve, as shared counters) (default device-plugin)
  --ready-label KEY=VALUE   a site's own readiness label, set while the plugin is up
                            (default none: AMD's components set none)
  --labeller-partition-labels
                            the node labeller also sets its opt-in partition labels
                            (amd.com/gpu.compute-memory-partition, only when every GPU
                            has one style, and amd.com/gpu.*-partitioning-supported);
                            the GPU operator runs it without them (default off)
  --time-scale F            multiply every simulated delay by F (default 1)
  --writers N               parallel connections for writes, each with a thread of its
                            own (default 32; a node's writes keep their order, as do a
                            pod's, and a tick does not wait for the writes it asked for)
  --no-heartbeats           no Leases and no status reports: for a control plane
                            without the node-lifecycle controller (tools/bench, where
                            they would cost a write per node every 10 s); a stopped
                            kubelet's node is then marked Ready Unknown by gpu-sim
  --jitter FRACTION         each node's DCM delays (host services, mode changes) and
                            device plugin restart vary by up to +-FRACTION, a factor per
                            node drawn from --jitter-seed and its name (logged once per
                            node), so nodes do not move in lockstep (default 0)
  --jitter-seed N           the seed of --jitter (default 1)
  --kubelet-only            play only kubelet for the nodes (registration, pods,
                            heartbeats): servers without GPUs, no DCM, plugin or labeller
  --user-agent NAME         the User-Agent of gpu-sim's requests (default gpu-sim); the
                            heartbeats' is NAME/heartbeats
  --help
)";

} // namespace

int main(int argc, char** argv) {
  options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gpu-sim: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::cout << usage;
      return 0;
    } else if (a == "--kubeconfig") {
      opt.kubeconfig = value();
    } else if (a == "--node-selector") {
      opt.node_selector = value();
    } else if (a == "--dcm-namespace") {
      opt.dcm_namespace = value();
      if (opt.dcm_namespace.empty()) {
        std::fprintf(stderr, "gpu-sim: --dcm-namespace needs a namespace\n");
        return 2;
      }
    } else if (a == "--dcm-config") {
      std::string v = value();
      auto slash = v.find('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == v.size()) {
        std::fprintf(stderr, "gpu-sim: --dcm-config: \"%s\" is not NAMESPACE/NAME\n", v.c_str());
        return 2;
      }
      opt.dcm_namespace = v.substr(0, slash);
      log_line("--dcm-config is deprecated: it sets only DCM's namespace (" + opt.dcm_namespace +
               "); each DCM pod's ConfigMap is read from its volume, not \"" + v.substr(slash + 1) +
               "\"");
    } else if (a == "--dcm-config-lag") {
      std::string v = value();
      char* end = nullptr;
      opt.config_lag = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(opt.config_lag >= 0)) {
        std::fprintf(stderr, "gpu-sim: --dcm-config-lag: \"%s\" is not a number of seconds\n",
                     v.c_str());
        return 2;
      }
    } else if (a == "--dcm-version") {
      std::string v = value();
      if (v != "1.3" && v != "1.4" && v != "1.5") {
        std::fprintf(stderr, "gpu-sim: --dcm-version: \"%s\" is not 1.3, 1.4 or 1.5\n", v.c_str());
        return 2;
      }
      opt.stack.version = v == "1.5"   ? dcm_version::v1_5
                          : v == "1.4" ? dcm_version::v1_4
                                       : dcm_version::v1_3;
    } else if (a == "--resource-strategy") {
      std::string v = value();
      if (v != "single" && v != "mixed") {
        std::fprintf(stderr, "gpu-sim: --resource-strategy: \"%s\" is not single or mixed\n",
                     v.c_str());
        return 2;
      }
      opt.stack.strategy = v == "mixed" ? resource_strategy::mixed : resource_strategy::single;
    } else if (a == "--gpu-api") {
      std::string v = value();
      auto api = parse_gpu_api(v);
      if (!api) {
        std::fprintf(stderr,
                     "gpu-sim: --gpu-api: \"%s\" is not device-plugin, dra or dra-dynamic\n",
                     v.c_str());
        return 2;
      }
      opt.default_api = *api;
    } else if (a == "--ready-label") {
      std::string v = value();
      const auto eq = v.find('=');
      if (eq == 0 || eq == std::string::npos) {
        std::fprintf(stderr, "gpu-sim: --ready-label: \"%s\" is not KEY=VALUE\n", v.c_str());
        return 2;
      }
      opt.stack.ready_key = v.substr(0, eq);
      opt.stack.ready_value = v.substr(eq + 1);
    } else if (a == "--writers") {
      std::string v = value();
      char* end = nullptr;
      opt.writers = static_cast<int>(std::strtol(v.c_str(), &end, 10));
      if (end == v.c_str() || *end != '\0' || opt.writers < 1 || opt.writers > 64) {
        std::fprintf(stderr, "gpu-sim: --writers: \"%s\" is not a number from 1 to 64\n",
                     v.c_str());
        return 2;
      }
    } else if (a == "--labeller-partition-labels") {
      opt.stack.partition_labels = true;
    } else if (a == "--no-heartbeats") {
      opt.heartbeats = false;
    } else if (a == "--kubelet-only") {
      opt.kubelet_only = true;
    } else if (a == "--user-agent") {
      opt.user_agent = value();
      if (opt.user_agent.empty()) {
        std::fprintf(stderr, "gpu-sim: --user-agent needs a name\n");
        return 2;
      }
    } else if (a == "--jitter") {
      std::string v = value();
      char* end = nullptr;
      opt.jitter = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(opt.jitter >= 0 && opt.jitter < 1)) {
        std::fprintf(stderr, "gpu-sim: --jitter: \"%s\" is not a fraction from 0 to below 1\n",
                     v.c_str());
        return 2;
      }
    } else if (a == "--jitter-seed") {
      std::string v = value();
      char* end = nullptr;
      opt.jitter_seed = std::strtoull(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0') {
        std::fprintf(stderr, "gpu-sim: --jitter-seed: \"%s\" is not a whole number\n", v.c_str());
        return 2;
      }
    } else if (a == "--time-scale") {
      std::string v = value();
      char* end = nullptr;
      opt.time_scale = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(opt.time_scale > 0)) {
        std::fprintf(stderr, "gpu-sim: --time-scale: \"%s\" is not a positive number\n", v.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr, "gpu-sim: unknown flag %s (see --help)\n", a.c_str());
      return 2;
    }
  }
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  return run(opt);
}
