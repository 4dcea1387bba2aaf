#include "actors/watcher.hpp"

#include "actors/crd_resources.hpp"
#include "actors/decode.hpp"
#include "actors/log.hpp"
#include "actors/messages.hpp"
#include "actors/operator_metrics.hpp"
#include "kube/list_watch.hpp"
#include "protocol/json.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

namespace gpu_partitioner::actors {

namespace {

/// Lets a stream's deliveries through until it is retired: the watcher closes it and then
/// tells the sink the ConfigMap is gone, so nothing of a retired stream can follow that.
struct gate {
  std::mutex m;
  bool open = true;
};

// Decodes one kind of object into observations.
class forwarder : public kube::watch_handler {
public:
  /// `listed`: for one ConfigMap's stream, its namespace/name: the sink hears that it was
  /// listed (listed_atom) instead of the resource's sync. `payloads`: for profiles, where
  /// each profile's payload reference goes.
  forwarder(observation_sink sink, observation::kind what, std::string resource,
            std::shared_ptr<gate> g = nullptr, std::string listed = {}, watcher_actor payloads = {})
      : sink_(std::move(sink)), what_(what), resource_(std::move(resource)), gate_(std::move(g)),
        listed_(std::move(listed)), payloads_(std::move(payloads)) {
    // At 0 from the start, so that rate() and increase() see the first restart.
    for (const char* kind : {"relist", "reconnect"})
      process_metrics().watch_restarts.ensure({resource_, kind});
  }

  void on_change(const kube::watch_delivery& d) override {
    observation o;
    o.what = what_;
    o.key = d.key.namespace_.empty() ? d.key.name : d.key.namespace_ + "/" + d.key.name;
    o.deleted = d.type == kube::event_type::deleted;
    o.received = protocol::wall_clock::now();
    if (!o.deleted && d.object != nullptr)
      fill(o, *d.object);
    if (payloads_)
      caf::anon_send(payloads_, payload_atom_v, o.key,
                     o.profile ? o.profile->spec.operator_payload.namespace_ + "/" +
                                     o.profile->spec.operator_payload.name
                               : std::string{});
    send(observe_atom_v, std::move(o));
  }

  void on_synced() override {
    synced_once_ = true;
    if (listed_.empty())
      send(synced_atom_v, resource_);
    else
      send(listed_atom_v, listed_, true);
  }

  void on_absent(bool forbidden) override {
    synced_once_ = true;
    send(synced_atom_v, resource_, false, forbidden);
  }

  void on_restart(const std::string& note, bool relist) override {
    process_metrics().watch_restarts.add({resource_, relist ? "relist" : "reconnect"});
    // A relist is rare and worth a line (what is known is read again, and what changed
    // while away is reported); a reconnect after the server ends a watch is routine.
    if (!synced_once_)
      return; // the first list, not a restart
    log_at(relist ? log_level::info : log_level::debug,
           "watch of " + resource_ + ": " + note + (relist ? "; listing again" : "; reconnecting"));
  }

  void on_error(const kube::failure& error) override {
    // Other failures pass and show in the restart's note; this one lasts until someone
    // shrinks or deletes the object, each relist meanwhile counted in watch_restarts.
    if (error.kind == kube::error_kind::too_large)
      log_warning("watch of " + resource_ + ": " + error.message +
                  "; listing again after a back-off");
  }

private:
  template <class... Ts>
  void send(Ts&&... xs) {
    if (!gate_) {
      caf::anon_send(sink_, std::forward<Ts>(xs)...);
      return;
    }
    std::lock_guard<std::mutex> lock(gate_->m);
    if (gate_->open)
      caf::anon_send(sink_, std::forward<Ts>(xs)...);
  }

  template <class T>
  std::shared_ptr<const T> typed(const rapidjson::Value& v, observation& o) {
    auto decoded = protocol::from_json_value<T>(v);
    if (!decoded) {
      o.problem = decoded.error().message();
      if (const auto* g = kube::find_path(v, {"metadata", "generation"}); g && g->IsInt64())
        o.generation = g->GetInt64();
      return nullptr;
    }
    return std::make_shared<const T>(std::move(decoded).value());
  }

  void fill(observation& o, const rapidjson::Value& v) {
    using k = observation::kind;
    switch (what_) {
    case k::node:
      o.node = std::make_shared<const controller::node_info>(decode_node(v));
      break;
    case k::pod:
      o.pod = std::make_shared<const controller::pod_info>(decode_pod(v));
      break;
    case k::pdb: {
      auto pdb = decode_pdb(v);
      pdb.seen = o.received;
      o.pdb = std::make_shared<const controller::pdb_info>(std::move(pdb));
      break;
    }
    case k::config_map:
      o.data = std::make_shared<const config_map_data>(decode_config_map_data(v));
      break;
    case k::dcm_event:
      o.event = std::make_shared<const controller::dcm_event>(decode_dcm_event(v));
      break;
    case k::plan:
      o.plan = typed<protocol::partitioning_plan>(v, o);
      break;
    case k::profile:
      o.profile = typed<protocol::partitioning_profile>(v, o);
      break;
    case k::item:
      o.item = typed<protocol::node_partitioning>(v, o);
      break;
    case k::resource_slice:
      o.slice = std::make_shared<const controller::resource_slice_info>(decode_resource_slice(v));
      break;
    case k::resource_claim:
      o.claim = std::make_shared<const controller::resource_claim_info>(decode_resource_claim(v));
      break;
    case k::device_taint_rule:
      o.taint_rule =
          std::make_shared<const controller::device_taint_rule_info>(decode_device_taint_rule(v));
      break;
    case k::daemon_set:
      if (const auto* meta = kube::find_path(v, {"metadata"}))
        o.uid = kube::string_at(*meta, "uid");
      break;
    }
  }

  observation_sink sink_;
  observation::kind what_;
  std::string resource_;
  std::shared_ptr<gate> gate_;
  std::string listed_;
  watcher_actor payloads_;
  bool synced_once_ = false; // touched by the watch's own thread only
};

struct stream {
  kube::list_watch_options options;
  observation::kind what;
};

/// The watch of one ConfigMap (a profile's payload).
struct config_map_stream {
  std::shared_ptr<std::atomic<bool>> stop = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<gate> open = std::make_shared<gate>();
};

struct watcher_state {
  std::shared_ptr<std::atomic<bool>> stop = std::make_shared<std::atomic<bool>>(false);
  std::vector<std::thread> threads;
  /// Payload ConfigMaps by namespace/name, and what each profile references.
  std::map<std::string, config_map_stream> config_maps;
  std::map<std::string, std::string> payload_of;
  ~watcher_state() {
    stop->store(true);
    for (auto& [key, cm] : config_maps)
      cm.stop->store(true);
    for (auto& t : threads)
      if (t.joinable())
        t.join();
  }
};

/// Runs one list+watch loop on a thread (and connection) of its own until `stop` is set
/// (the watcher's end sets every stream's).
std::thread run_stream(const watcher_config& config, stream s, std::shared_ptr<gate> g,
                       std::string listed, watcher_actor payloads,
                       std::shared_ptr<std::atomic<bool>> stop) {
  return std::thread([conn = config.connection, sink = config.sink, s = std::move(s),
                      g = std::move(g), listed = std::move(listed), payloads = std::move(payloads),
                      stop = std::move(stop)] {
    kube::http_client http(conn, kube::credentials_for(conn));
    http.set_observer(process_metrics().api_observer());
    kube::client api(http);
    forwarder handler(sink, s.what, s.options.what.plural, g, listed, payloads);
    kube::list_watch loop(api, s.options, handler);
    loop.run(*stop);
  });
}

} // namespace

watcher_actor::behavior_type watcher(watcher_actor::pointer self, watcher_config config) {
  auto state = std::make_shared<watcher_state>();
  std::vector<stream> streams;
  auto add = [&](kube::resource r, observation::kind what, std::string field_selector = {},
                 std::string ns = {}, bool may_be_absent = false) {
    kube::list_watch_options o;
    o.what = std::move(r);
    o.ns = std::move(ns);
    o.field_selector = std::move(field_selector);
    o.may_be_absent = may_be_absent;
    streams.push_back({o, what});
  };
  using k = observation::kind;
  add(kube::resources::nodes(), k::node);
  add(kube::resources::pods(), k::pod, "spec.nodeName!=");
  add(kube::resources::pod_disruption_budgets(), k::pdb);
  // Every ConfigMap in DCM's namespace (the GPU operator's: each node's DCM pod names the
  // one it reads), elsewhere only by name, the profiles' payloads as profiles name them. A
  // watch of every ConfigMap would hold every tenant's data.
  add(kube::resources::config_maps(), k::config_map, {}, config.dcm_namespace);
  add(plans_resource, k::plan);
  add(profiles_resource, k::profile);
  add(items_resource, k::item);
  // DCM explains its failures in Events; the workers quote them. Only DCM's namespace:
  // an Event with DCM's source anywhere else is someone imitating it, and need not even
  // reach the operator's memory.
  add(kube::resources::events(), k::dcm_event, "source=amd-device-config-manager",
      config.dcm_namespace);
  // Dynamic Resource Allocation (resource.k8s.io/v1): nodes that publish their GPUs as
  // devices, and the claims pods hold them by. A cluster without the API has neither.
  add(kube::resources::resource_slices(), k::resource_slice, {}, {}, true);
  add(kube::resources::resource_claims(), k::resource_claim, {}, {}, true);
  // The DeviceTaintRules of drainPolicy.cordon Devices (ours only). An API server without
  // them (before 1.33, or the alpha API off) has nodes cordoned instead.
  add(kube::resources::device_taint_rules(), k::device_taint_rule, {}, {}, true);
  streams.back().options.label_selector =
      std::string(controller::managed_by_label) + "=" + controller::managed_by_value;
  // DaemonSets, for their UIDs only: a pod is a DaemonSet's (left on a drained node) only
  // if the DaemonSet its controller reference names is there. Without the right to list
  // them (RBAC of an older chart), the reference is trusted as kubectl drain's kind check.
  add(kube::resources::daemon_sets(), k::daemon_set, {}, {}, true);
  if (streams.size() != watched_resources)
    throw std::logic_error("the watcher lists " + std::to_string(streams.size()) +
                           " resources; messages.hpp says " + std::to_string(watched_resources));
  const auto me = caf::actor_cast<watcher_actor>(self);
  for (auto& s : streams)
    state->threads.push_back(run_stream(config, s, nullptr, {},
                                        s.what == k::profile ? me : watcher_actor{}, state->stop));
  const std::string dcm_prefix = config.dcm_namespace + "/";
  // The threads are joined when the actor's state goes with the behavior.
  self->attach_functor([state] {
    state->stop->store(true);
    for (auto& [key, cm] : state->config_maps)
      cm.stop->store(true);
  });
  return {
      // A profile's payload reference ("" once the profile is gone or does not decode):
      // the set of payload ConfigMaps watched follows the profiles.
      [=](payload_atom, const std::string& profile, const std::string& ref) {
        if (ref.empty())
          state->payload_of.erase(profile);
        else
          state->payload_of[profile] = ref;
        std::set<std::string> wanted;
        for (const auto& [p, r] : state->payload_of)
          if (r.compare(0, dcm_prefix.size(), dcm_prefix) != 0 &&
              r.find('/') != std::string::npos &&
              (config.payload_namespaces.empty() ||
               config.payload_namespaces.count(r.substr(0, r.find('/')))))
            wanted.insert(r);
        for (auto it = state->config_maps.begin(); it != state->config_maps.end();) {
          if (wanted.count(it->first)) {
            ++it;
            continue;
          }
          it->second.stop->store(true);
          {
            std::lock_guard<std::mutex> lock(it->second.open->m);
            it->second.open->open = false;
            observation gone;
            gone.what = k::config_map;
            gone.key = it->first;
            gone.deleted = true;
            gone.received = protocol::wall_clock::now();
            caf::anon_send(config.sink, observe_atom_v, std::move(gone));
            caf::anon_send(config.sink, listed_atom_v, it->first, false);
          }
          it = state->config_maps.erase(it);
        }
        for (const auto& key : wanted) {
          if (state->config_maps.count(key))
            continue;
          auto& cm = state->config_maps[key];
          const auto slash = key.find('/');
          kube::list_watch_options o;
          o.what = kube::resources::config_maps();
          o.ns = key.substr(0, slash);
          o.field_selector = "metadata.name=" + key.substr(slash + 1);
          state->threads.push_back(
              run_stream(config, {o, k::config_map}, cm.open, key, {}, cm.stop));
        }
      },
  };
}

} // namespace gpu_partitioner::actors
