#include "actors/watcher.hpp"

#include "actors/decode.hpp"
#include "actors/log.hpp"
#include "actors/messages.hpp"
#include "actors/operator_metrics.hpp"
#include "kube/list_watch.hpp"
#include "protocol/json.hpp"

#include <atomic>
#include <thread>

namespace gpu_partitioner::actors {

namespace {

const kube::resource plans{"infrastructure.silogen.ai", "v1alpha1", "partitioningplans", false};
const kube::resource profiles{"infrastructure.silogen.ai", "v1alpha1", "partitioningprofiles",
                              false};
const kube::resource items{"infrastructure.silogen.ai", "v1alpha1", "nodepartitionings", false};

// Decodes one kind of object into observations.
class forwarder : public kube::watch_handler {
public:
  forwarder(caf::actor sink, observation::kind what, std::string resource)
      : sink_(std::move(sink)), what_(what), resource_(std::move(resource)) {
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
    caf::anon_send(sink_, observe_atom_v, std::move(o));
  }

  void on_synced() override {
    synced_once_ = true;
    caf::anon_send(sink_, synced_atom_v, resource_);
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

private:
  template <class T>
  std::shared_ptr<const T> typed(const rapidjson::Value& v, observation& o) {
    auto decoded = protocol::from_json_value<T>(v);
    if (!decoded) {
      o.problem = decoded.error().message();
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
    case k::pdb:
      o.pdb = std::make_shared<const controller::pdb_info>(decode_pdb(v));
      break;
    case k::config_map:
      o.data = std::make_shared<const config_map_data>(decode_config_map_data(v));
      break;
    case k::dcm_event: {
      config_map_data e;
      if (const auto* about = kube::find_path(v, {"involvedObject"})) {
        e["kind"] = kube::string_at(*about, "kind");
        e["namespace"] = kube::string_at(*about, "namespace");
        e["name"] = kube::string_at(*about, "name");
      }
      e["type"] = kube::string_at(v, "type");
      e["reason"] = kube::string_at(v, "reason");
      e["message"] = kube::string_at(v, "message");
      e["time"] = kube::string_at(v, "lastTimestamp");
      // DCM writes its Events about its own pod, from the node it runs on.
      if (const auto* source = kube::find_path(v, {"source"}))
        e["host"] = kube::string_at(*source, "host");
      // The request it answers: SelectedProfile of DCM's PartitionStatus message.
      rapidjson::Document status;
      const std::string& message = e["message"];
      status.Parse(message.c_str(), message.size());
      if (!status.HasParseError() && status.IsObject())
        e["profile"] = kube::string_at(status, "SelectedProfile");
      o.data = std::make_shared<const config_map_data>(std::move(e));
      break;
    }
    case k::plan:
      o.plan = typed<protocol::partitioning_plan>(v, o);
      break;
    case k::profile:
      o.profile = typed<protocol::partitioning_profile>(v, o);
      break;
    case k::item:
      o.item = typed<protocol::node_partitioning>(v, o);
      break;
    }
  }

  caf::actor sink_;
  observation::kind what_;
  std::string resource_;
  bool synced_once_ = false; // touched by the watch's own thread only
};

struct stream {
  kube::list_watch_options options;
  observation::kind what;
};

struct watcher_state {
  std::shared_ptr<std::atomic<bool>> stop = std::make_shared<std::atomic<bool>>(false);
  std::vector<std::thread> threads;
  ~watcher_state() {
    stop->store(true);
    for (auto& t : threads)
      if (t.joinable())
        t.join();
  }
};

} // namespace

caf::behavior watcher(caf::event_based_actor* self, watcher_config config) {
  auto state = std::make_shared<watcher_state>();
  std::vector<stream> streams;
  auto add = [&](kube::resource r, observation::kind what, std::string field_selector = {}) {
    kube::list_watch_options o;
    o.what = std::move(r);
    o.field_selector = std::move(field_selector);
    streams.push_back({o, what});
  };
  using k = observation::kind;
  add(kube::resources::nodes(), k::node);
  add(kube::resources::pods(), k::pod, "spec.nodeName!=");
  add(kube::resources::pod_disruption_budgets(), k::pdb);
  add(kube::resources::config_maps(), k::config_map);
  add(plans, k::plan);
  add(profiles, k::profile);
  add(items, k::item);
  // DCM explains its failures in Events; the workers quote them.
  add(kube::resources::events(), k::dcm_event, "source=amd-device-config-manager");
  for (auto& s : streams) {
    state->threads.emplace_back(
        [conn = config.connection, sink = config.sink, s, stop = state->stop] {
          kube::http_client http(conn, std::make_shared<kube::credentials>(conn));
          http.set_observer(process_metrics().api_observer());
          kube::client api(http);
          forwarder handler(sink, s.what, s.options.what.plural);
          kube::list_watch loop(api, s.options, handler);
          loop.run(*stop);
        });
  }
  // The threads are joined when the actor's state goes with the behavior.
  self->attach_functor([state] { state->stop->store(true); });
  return {[state](tick_atom) {}};
}

} // namespace gpu_partitioner::actors
