#include "actors/io_executor.hpp"

#include "actors/decode.hpp"
#include "actors/log.hpp"
#include "actors/messages.hpp"
#include "actors/operator_metrics.hpp"
#include "controller/dcm_payload.hpp"
#include "kube/client.hpp"
#include "kube/event_recorder.hpp"
#include "protocol/json.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>

namespace gpu_partitioner::actors {

namespace {

const kube::resource items_resource{"infrastructure.silogen.ai", "v1alpha1", "nodepartitionings",
                                    false};
const kube::resource plans_resource{"infrastructure.silogen.ai", "v1alpha1", "partitioningplans",
                                    false};

std::string quote(const std::string& s) {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
  return b.GetString();
}

std::string string_map_patch(const std::map<std::string, std::optional<std::string>>& m) {
  std::string out = "{";
  for (const auto& [k, v] : m)
    out += (out.size() > 1 ? "," : "") + quote(k) + ":" + (v ? quote(*v) : "null");
  return out + "}";
}

struct executor {
  io_config config;
  kube::http_client http;
  kube::client api;
  kube::patch_options manager;

  explicit executor(io_config c)
      : config(std::move(c)),
        http(config.connection, std::make_shared<kube::credentials>(config.connection)), api(http) {
    manager.field_manager = config.field_manager;
    http.set_observer(process_metrics().api_observer());
  }

  // The node patch: cordon state, labels and annotations in one merge patch.
  kube::result<rapidjson::Document> patch_node(const std::string& node,
                                               const controller::node_patch& p) {
    std::string metadata;
    if (!p.labels.empty())
      metadata += "\"labels\":" + string_map_patch(p.labels);
    if (!p.annotations.empty())
      metadata += std::string(metadata.empty() ? "" : ",") +
                  "\"annotations\":" + string_map_patch(p.annotations);
    std::string body = "{";
    if (!metadata.empty())
      body += "\"metadata\":{" + metadata + "}";
    if (p.unschedulable)
      body += std::string(metadata.empty() ? "" : ",") +
              "\"spec\":{\"unschedulable\":" + (*p.unschedulable ? "true" : "false") + "}";
    body += "}";
    return api.patch(kube::resources::nodes(), "", node, kube::patch_type::merge, body, manager);
  }

  std::string write_dcm(const controller::dcm_config_write& w) {
    for (int attempt = 0; attempt < 5; ++attempt) {
      auto current = api.get(kube::resources::config_maps(), w.ns, w.name);
      if (!current && current.error().kind != kube::error_kind::not_found)
        return "reading DCM's ConfigMap: " + current.error().describe();
      std::string config_json;
      std::string rv;
      if (current) {
        rv = kube::string_at(current.value()["metadata"], "resourceVersion");
        if (const auto* data = kube::find_path(current.value(), {"data", "config.json"});
            data && data->IsString())
          config_json = data->GetString();
      }
      // Every profile of the write, into one new config.json (no write if none changes).
      std::optional<std::string> updated = config_json;
      bool changed = false;
      for (const auto& [name, payload] : w.profiles) {
        if (!updated || controller::dcm_config_has(*updated, name, payload))
          continue;
        updated = controller::dcm_config_with(*updated, name, payload);
        changed = true;
      }
      if (updated && !changed && current)
        return {};
      if (!updated)
        return "DCM's ConfigMap " + w.ns + "/" + w.name +
               " does not hold a JSON object in config.json (nested at most " +
               std::to_string(controller::dcm_json_max_depth) + " levels)";
      // Every other key of the ConfigMap is kept: only data["config.json"] changes.
      std::string body;
      if (current) {
        auto& doc = current.value();
        auto& alloc = doc.GetAllocator();
        if (!doc.HasMember("data") || !doc["data"].IsObject())
          doc.AddMember("data", rapidjson::Value(rapidjson::kObjectType), alloc);
        rapidjson::Value text(updated->c_str(), static_cast<rapidjson::SizeType>(updated->size()),
                              alloc);
        if (doc["data"].HasMember("config.json"))
          doc["data"]["config.json"] = text;
        else
          doc["data"].AddMember("config.json", text, alloc);
        // When config.json changed, for the label's wait for kubelet's delivery to DCM.
        auto& meta = doc["metadata"];
        if (!meta.HasMember("annotations") || !meta["annotations"].IsObject())
          meta.AddMember("annotations", rapidjson::Value(rapidjson::kObjectType), alloc);
        const std::string now = protocol::format_time_micro(protocol::wall_clock::now());
        meta["annotations"].RemoveMember(controller::dcm_config_written_annotation);
        meta["annotations"].AddMember(
            rapidjson::Value(controller::dcm_config_written_annotation, alloc),
            rapidjson::Value(now.c_str(), static_cast<rapidjson::SizeType>(now.size()), alloc),
            alloc);
        body = kube::to_json(doc);
        auto put = api.update(kube::resources::config_maps(), w.ns, w.name, body);
        if (put)
          return {};
        if (put.error().kind != kube::error_kind::conflict)
          return "updating DCM's ConfigMap: " + put.error().describe();
      } else {
        body = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":" +
               quote(w.name) + ",\"namespace\":" + quote(w.ns) + ",\"annotations\":{" +
               quote(controller::dcm_config_written_annotation) + ":" +
               quote(protocol::format_time_micro(protocol::wall_clock::now())) +
               "}},\"data\":{\"config.json\":" + quote(*updated) + "}}";
        auto made = api.create(kube::resources::config_maps(), w.ns, body);
        if (made)
          return {};
        if (made.error().kind != kube::error_kind::already_exists)
          return "creating DCM's ConfigMap: " + made.error().describe();
      }
      (void)rv;
    }
    return "DCM's ConfigMap kept changing under us; will retry";
  }

  std::string finalizer(const std::string& item, bool add) {
    // Optimistic: the resourceVersion read goes with the patch, so a list changed in
    // between is refused (409 Conflict) and read again, and nobody's finalizer is lost.
    for (int attempt = 0; attempt < 5; ++attempt) {
      auto current = api.get(items_resource, "", item);
      if (!current)
        return current.error().kind == kube::error_kind::not_found ? std::string{}
                                                                   : current.error().describe();
      std::vector<std::string> finalizers;
      if (const auto* f = kube::find_path(current.value(), {"metadata", "finalizers"});
          f && f->IsArray())
        for (const auto& v : f->GetArray())
          if (v.IsString())
            finalizers.push_back(v.GetString());
      auto it = std::find(finalizers.begin(), finalizers.end(), controller::item_finalizer);
      if (add == (it != finalizers.end()))
        return {};
      if (add)
        finalizers.push_back(controller::item_finalizer);
      else
        finalizers.erase(it);
      std::string list = "[";
      for (const auto& f : finalizers)
        list += (list.size() > 1 ? "," : "") + quote(f);
      list += "]";
      const std::string body =
          "{\"metadata\":{\"resourceVersion\":" +
          quote(kube::string_at(current.value()["metadata"], "resourceVersion")) +
          ",\"finalizers\":" + list + "}}";
      auto patched = api.patch(items_resource, "", item, kube::patch_type::merge, body, manager);
      if (patched || patched.error().kind == kube::error_kind::not_found)
        return {};
      if (patched.error().kind != kube::error_kind::conflict)
        return "finalizer: " + patched.error().describe();
    }
    return "finalizer: the item kept changing under us; will retry";
  }

  node_io_result perform(const node_io& io) {
    node_io_result r;
    if (io.reacting_to) {
      const char* kind = io.add_finalizer || io.clear_retry ? "item"
                         : io.patch && !io.patch->empty()   ? "node_patch"
                         : io.taint                         ? (*io.taint ? "taint" : "untaint")
                         : !io.removals.empty()             ? "eviction"
                         : io.dcm                           ? "dcm_config"
                                                            : "item";
      process_metrics().reaction_seconds.observe(
          {kind},
          std::chrono::duration<double>(protocol::wall_clock::now() - *io.reacting_to).count());
    }
    auto keep = [&](kube::result<rapidjson::Document>& d) {
      if (d)
        r.node = std::make_shared<const controller::node_info>(decode_node(d.value()));
    };
    if (io.add_finalizer)
      if (auto e = finalizer(io.item, true); !e.empty())
        r.error = e;
    if (io.clear_retry) {
      auto cleared = api.patch(items_resource, "", io.item, kube::patch_type::merge,
                               std::string("{\"metadata\":{\"annotations\":{") +
                                   quote(controller::retry_annotation) + ":null}}}",
                               manager);
      if (!cleared)
        r.error = "clearing the retry annotation: " + cleared.error().describe();
    }
    if (io.patch && !io.patch->empty()) {
      auto d = patch_node(io.node, *io.patch);
      if (!d)
        r.error = "patching node: " + d.error().describe();
      keep(d);
    }
    if (io.taint && *io.taint && io.confirm_drained && r.error.empty())
      r.error = pods_left_on_node(api, io.node);
    if (io.taint && r.error.empty()) {
      controller::node_info known;
      known.resource_version = io.known_version;
      known.taints = io.known_taints;
      auto d = set_dcm_taint(api, io.node, *io.taint, &known, manager);
      if (!d)
        r.error =
            std::string(*io.taint ? "tainting" : "untainting") + " node: " + d.error().describe();
      keep(d);
    }
    for (const auto& p : io.removals) {
      controller::eviction_memory m;
      m.at = protocol::wall_clock::now();
      kube::delete_options precondition;
      precondition.precondition_uid = p.uid;
      if (p.again)
        if (auto needless = removal_needless(api, p.ns, p.name, p.uid); !needless.empty()) {
          m.done = true;
          m.message = needless;
          r.evictions[p.ns + "/" + p.name] = m;
          continue;
        }
      if (p.evict) {
        auto e = api.evict(p.ns, p.name, precondition);
        if (!e) {
          m.message = e.error().describe();
          if (e.error().kind == kube::error_kind::conflict)
            m.done = true; // a pod of that name but another uid: ours is gone
        } else if (e->outcome == kube::eviction_outcome::blocked_by_pdb) {
          m.blocked = true;
          m.message = e->message;
        } else {
          m.done = true;
        }
      } else {
        auto d = api.remove(kube::resources::pods(), p.ns, p.name, precondition);
        m.done = d || d.error().kind == kube::error_kind::not_found ||
                 d.error().kind == kube::error_kind::conflict;
        if (!d)
          m.message = d.error().describe();
      }
      r.evictions[p.ns + "/" + p.name] = m;
    }
    if (io.dcm)
      if (auto e = write_dcm(*io.dcm); !e.empty())
        r.error = e;
    if (io.remove_finalizer)
      if (auto e = finalizer(io.item, false); !e.empty())
        r.error = e;
    if (io.read_node && !r.node) {
      auto d = api.get(kube::resources::nodes(), "", io.node);
      if (!d)
        r.error = "reading node: " + d.error().describe();
      keep(d);
    }
    return r;
  }

  std::string perform(const item_io& io) {
    switch (io.what) {
    case item_io::op::create: {
      auto made = api.create(items_resource, "", protocol::to_json(io.item));
      if (!made && made.error().kind != kube::error_kind::already_exists)
        return "creating " + io.item.metadata.name + ": " + made.error().describe();
      return {};
    }
    case item_io::op::update_spec: {
      rapidjson::Document doc;
      doc.SetObject();
      rapidjson::Value spec;
      protocol::to_json_value(io.item.spec, spec, doc.GetAllocator());
      doc.AddMember("spec", spec, doc.GetAllocator());
      auto patched = api.patch(items_resource, "", io.item.metadata.name, kube::patch_type::merge,
                               kube::to_json(doc), manager);
      if (!patched)
        return "updating " + io.item.metadata.name + ": " + patched.error().describe();
      return {};
    }
    case item_io::op::remove: {
      kube::delete_options o;
      o.precondition_uid = io.item.metadata.uid;
      auto removed = api.remove(items_resource, "", io.item.metadata.name, o);
      if (!removed && removed.error().kind != kube::error_kind::not_found)
        return "deleting " + io.item.metadata.name + ": " + removed.error().describe();
      return {};
    }
    }
    return {};
  }
};

} // namespace

kube::result<rapidjson::Document> set_dcm_taint(kube::client& api, const std::string& node,
                                                bool add, const controller::node_info* known,
                                                const kube::patch_options& manager) {
  for (int attempt = 0;; ++attempt) {
    kube::result<rapidjson::Document> current = rapidjson::Document{};
    controller::node_info info;
    // The first try may use the version the step saw: the watch usually has the latest,
    // and a read less per taint shortens a wave's burst of untaints.
    const bool blind = attempt == 0 && known != nullptr && !known->resource_version.empty() &&
                       add != known->has_dcm_taint();
    if (blind) {
      info = *known;
    } else {
      current = api.get(kube::resources::nodes(), "", node);
      if (!current)
        return current;
      info = decode_node(current.value());
    }
    std::vector<controller::taint> taints;
    for (const auto& t : info.taints)
      if (!(t.key == controller::dcm_taint_key && t.effect == "NoExecute"))
        taints.push_back(t);
    if (add)
      taints.push_back({controller::dcm_taint_key, controller::dcm_taint_value, "NoExecute"});
    if (taints.size() == info.taints.size() && add == info.has_dcm_taint())
      return current;
    std::string list = "[";
    for (const auto& t : taints)
      list += (list.size() > 1 ? "," : "") + std::string("{\"key\":") + quote(t.key) +
              (t.value.empty() ? "" : ",\"value\":" + quote(t.value)) +
              ",\"effect\":" + quote(t.effect) + "}";
    list += "]";
    const std::string body = "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":" +
                             quote(info.resource_version) +
                             "},{\"op\":\"add\",\"path\":\"/spec/taints\",\"value\":" + list + "}]";
    auto patched =
        api.patch(kube::resources::nodes(), "", node, kube::patch_type::json, body, manager);
    // A failed test is answered 422 (Invalid) or 409: someone else wrote; re-read.
    if (patched || attempt >= 4 ||
        (patched.error().kind != kube::error_kind::invalid &&
         patched.error().kind != kube::error_kind::conflict))
      return patched;
  }
}

std::string removal_needless(kube::client& api, const std::string& ns, const std::string& name,
                             const std::string& uid) {
  auto current = api.get(kube::resources::pods(), ns, name);
  if (!current)
    return current.error().kind == kube::error_kind::not_found ? "gone" : "";
  const rapidjson::Value* meta = kube::find_path(current.value(), {"metadata"});
  if (meta == nullptr)
    return "";
  if (kube::string_at(*meta, "uid") != uid)
    return "gone (another pod has its name)";
  if (kube::find_path(*meta, {"deletionTimestamp"}) != nullptr)
    return "already being deleted";
  return "";
}

std::string pods_left_on_node(kube::client& api, const std::string& node) {
  kube::list_options on_node;
  on_node.field_selector = "spec.nodeName=" + node;
  auto pods = api.list(kube::resources::pods(), "", on_node);
  if (!pods)
    return "listing the pods on the node before the taint: " + pods.error().describe();
  std::vector<controller::pod_info> all;
  if (const auto* items = kube::find_path(pods.value(), {"items"}); items && items->IsArray())
    for (const auto& p : items->GetArray())
      all.push_back(decode_pod(p));
  const auto left = controller::evictable_pods(all);
  if (left.empty())
    return {};
  std::string names;
  for (std::size_t i = 0; i < left.size() && i < 5; ++i)
    names += (i ? ", " : "") + left[i].ns + "/" + left[i].name;
  if (left.size() > 5)
    names += ", ...";
  return std::to_string(left.size()) + " pod(s) on the node that the drain has not evicted (" +
         names + "): evicting them before the taint";
}

caf::behavior io_executor(caf::event_based_actor* self, io_config config) {
  auto x = std::make_shared<executor>(std::move(config));
  (void)self;
  return {
      [=](io_atom, const node_io& io) -> node_io_result { return x->perform(io); },
      [=](io_atom, const item_io& io) -> std::string {
        auto error = x->perform(io);
        if (!error.empty())
          log_warning(error);
        return error;
      },
  };
}

namespace {

// Asks executor `x` and passes its answer, or its failure, on to the original requester;
// then `x` is free for the next request.
template <class Answer, class Io, class Release>
void ask_executor(caf::event_based_actor* self, caf::typed_response_promise<Answer> rp,
                  const caf::actor& x, Io io, Release release) {
  self->request(x, caf::infinite, io_atom_v, std::move(io))
      .then(
          [=](Answer& answer) mutable {
            rp.deliver(std::move(answer));
            release(x);
          },
          [=](caf::error& e) mutable {
            rp.deliver(std::move(e));
            release(x);
          });
}

} // namespace

caf::behavior io_pool(caf::event_based_actor* self, std::vector<caf::actor> executors) {
  struct state {
    std::vector<caf::actor> idle;
    std::deque<std::function<void(const caf::actor&)>> waiting;
  };
  auto s = std::make_shared<state>();
  for (auto& x : executors) {
    self->link_to(x);
    s->idle.push_back(std::move(x));
  }
  // An executor that answered takes the oldest waiting request, or waits for the next.
  auto release = [s](const caf::actor& x) {
    if (s->waiting.empty()) {
      s->idle.push_back(x);
      return;
    }
    auto next = std::move(s->waiting.front());
    s->waiting.pop_front();
    next(x);
  };
  auto submit = [s](std::function<void(const caf::actor&)> job) {
    if (s->idle.empty()) {
      s->waiting.push_back(std::move(job));
      return;
    }
    // The executor freed last: its connection is the warmest.
    auto x = std::move(s->idle.back());
    s->idle.pop_back();
    job(x);
  };
  // Queues a request of any kind; `rp` answers its asker.
  auto enqueue = [=](auto io, auto rp) {
    submit([=](const caf::actor& x) mutable { ask_executor(self, rp, x, std::move(io), release); });
    return rp;
  };
  return {
      [=](io_atom, node_io& io) {
        return enqueue(std::move(io), self->make_response_promise<node_io_result>());
      },
      [=](io_atom, item_io& io) {
        return enqueue(std::move(io), self->make_response_promise<std::string>());
      },
  };
}

caf::behavior io_router(caf::event_based_actor* self, caf::actor writes, caf::actor evictions,
                        caf::actor items) {
  self->link_to(writes);
  self->link_to(evictions);
  self->link_to(items);
  return {
      [=](io_atom, node_io& io) {
        auto rp = self->make_response_promise();
        const bool only_removals = !io.patch && !io.taint && !io.dcm && !io.add_finalizer &&
                                   !io.remove_finalizer && !io.clear_retry && !io.read_node;
        if (io.removals.size() < 2 || !only_removals) {
          rp.delegate(io.removals.empty() ? writes : evictions, io_atom_v, std::move(io));
          return rp;
        }
        // A node's pods are evicted side by side, one request each, as kubectl drain does:
        // one after another, a node of three pods waited three times for the API server's
        // 500 ms retry of a conflicting budget update. The answers are merged into one.
        struct merged {
          node_io_result result;
          std::size_t left = 0;
        };
        auto m = std::make_shared<merged>();
        m->left = io.removals.size();
        auto one_done = [m, rp]() mutable {
          if (--m->left == 0)
            rp.deliver(std::move(m->result));
        };
        for (std::size_t i = 0; i < io.removals.size(); ++i) {
          node_io one;
          one.item = io.item;
          one.node = io.node;
          one.removals.push_back(io.removals[i]);
          if (i == 0)
            one.reacting_to = io.reacting_to; // one reaction, timed once
          self->request(evictions, caf::infinite, io_atom_v, std::move(one))
              .then(
                  [=](node_io_result& r) mutable {
                    for (auto& [pod, outcome] : r.evictions)
                      m->result.evictions[pod] = std::move(outcome);
                    if (!r.error.empty() && m->result.error.empty())
                      m->result.error = std::move(r.error);
                    one_done();
                  },
                  [=](caf::error& e) mutable {
                    if (m->result.error.empty())
                      m->result.error = "evicting: " + self->system().render(e);
                    one_done();
                  });
        }
        return rp;
      },
      [=](io_atom, item_io& io) { self->delegate(items, io_atom_v, std::move(io)); },
  };
}

namespace {

// Records (and aggregates) Events on a connection of its own, so that a burst of them
// (ten per node, fifty nodes at once) never holds up a status write. Each writer
// remembers the Events it wrote last, to count the repeats: the ones that recur (a drain
// blocked, retried every 5 s) stay remembered, as each repeat makes them the newest, while
// a rollout's own ten per node never repeat (4,096 each held 2 MB for nothing at the end
// of a 1,000-node rollout).
constexpr std::size_t remembered_events = 1024;
caf::behavior event_writer(caf::event_based_actor*, io_config config) {
  // The recorder writes through the executor's client: both live as long as the actor.
  struct state {
    explicit state(io_config c)
        : x(std::move(c)), events(x.api, "gpu-partitioner", x.config.identity,
                                  std::chrono::minutes(10), remembered_events) {}
    executor x;
    kube::event_recorder events;
  };
  auto s = std::make_shared<state>(std::move(config));
  return {
      [=](event_atom, const event_io& e) {
        kube::event_spec spec;
        spec.regarding = {e.api_version, e.kind, "", e.name, e.uid};
        spec.type = e.type;
        spec.reason = e.reason;
        spec.message = e.message;
        auto recorded = s->events.record(spec);
        if (!recorded)
          log_debug("event " + e.reason + " on " + e.name + ": " + recorded.error().describe());
      },
  };
}

// One of the status writers: the statuses of the objects routed to it, coalesced per
// object, written in the order the objects first changed, a few per message.
caf::behavior status_shard(caf::event_based_actor* self, io_config config) {
  struct state {
    explicit state(io_config c) : x(std::move(c)) {}
    executor x;
    // Latest status per object, flushed in the order objects first changed in the window.
    std::map<std::string, protocol::node_partitioning_status> items;
    std::deque<std::string> item_order;
    std::map<std::string, protocol::partitioning_plan_status> plans;
    bool flush_pending = false;
  };
  auto s = std::make_shared<state>(std::move(config));
  auto schedule = [=] {
    if (!s->flush_pending) {
      s->flush_pending = true;
      self->delayed_send(self, std::chrono::milliseconds(100), flush_atom_v);
    }
  };
  // The whole status, replaced in one JSON patch: fields that went away go away too.
  // "" when written (or the object is gone); else the error, and whether to try again.
  struct outcome {
    std::string error;
    bool retry = false;
  };
  auto write = [=](const kube::resource& r, const std::string& name,
                   const std::string& status) -> outcome {
    kube::patch_options o = s->x.manager;
    o.subresource = "status";
    auto done =
        s->x.api.patch(r, "", name, kube::patch_type::json,
                       "[{\"op\":\"add\",\"path\":\"/status\",\"value\":" + status + "}]", o);
    if (!done && done.error().kind != kube::error_kind::not_found) {
      const std::string error = "writing the status of " + name + ": " + done.error().describe();
      log_warning(error);
      return {error, kube::is_retryable(done.error())};
    }
    return {};
  };
  // Writes the statuses of up to `batch` objects (oldest change first) and the plans';
  // a write that failed for a passing reason (the API server away) is kept, not lost, and
  // true returned: it is written again a second later, unless a newer status replaces it.
  auto write_some = [=](std::size_t batch) {
    std::vector<std::pair<std::string, protocol::node_partitioning_status>> now;
    while (now.size() < batch && !s->item_order.empty()) {
      const std::string name = std::move(s->item_order.front());
      s->item_order.pop_front();
      auto it = s->items.find(name);
      now.emplace_back(name, std::move(it->second));
      s->items.erase(it);
    }
    auto plans = std::move(s->plans);
    s->plans.clear();
    bool again = false;
    for (const auto& [name, st] : now)
      if (write(items_resource, name, protocol::to_json(st)).retry) {
        if (s->items.emplace(name, st).second)
          s->item_order.push_back(name);
        again = true;
      }
    for (const auto& [name, st] : plans)
      if (write(plans_resource, name, protocol::to_json(st)).retry) {
        s->plans.emplace(name, st);
        again = true;
      }
    return again;
  };
  return {
      [=](status_atom, const std::string& item, const protocol::node_partitioning_status& st) {
        if (s->items.insert_or_assign(item, st).second)
          s->item_order.push_back(item);
        schedule();
      },
      [=](persist_atom, const std::string& item,
          const protocol::node_partitioning_status& st) -> std::string {
        if (s->items.erase(item) > 0)
          s->item_order.erase(std::find(s->item_order.begin(), s->item_order.end(), item));
        return write(items_resource, item, protocol::to_json(st)).error;
      },
      [=](plan_status_atom, const std::string& plan, const protocol::partitioning_plan_status& st) {
        s->plans[plan] = st;
        schedule();
      },
      [=](flush_atom) {
        s->flush_pending = false;
        // One object a message, oldest change first; the rest follow at once, after
        // whatever else waits. A worker's write-ahead persist, at high priority, then
        // waits for one write at most, not for a batch: with eight a message, persists
        // waited 1.8 s (p99) behind fifty nodes' statuses, and every node step with them.
        if (write_some(1)) {
          s->flush_pending = true;
          self->delayed_send(self, std::chrono::seconds(1), flush_atom_v);
        } else if (!s->item_order.empty()) {
          s->flush_pending = true;
          self->send(self, flush_atom_v);
        }
      },
      [=](flush_atom, stop_atom) {
        // The operator stops: everything pending is written now, once.
        write_some(s->items.size());
        return true;
      },
  };
}

} // namespace

caf::behavior status_writer(caf::event_based_actor* self, io_config config) {
  // Each object always goes to the same writer, so its statuses stay in order; objects
  // on different writers are written side by side, on connections of their own.
  constexpr std::size_t status_writers = 8;
  constexpr std::size_t event_writers = 2;
  std::vector<caf::actor> statuses;
  std::vector<caf::actor> events;
  for (std::size_t i = 0; i < status_writers; ++i)
    statuses.push_back(self->spawn<caf::detached + caf::linked>(status_shard, config));
  for (std::size_t i = 0; i < event_writers; ++i)
    events.push_back(self->spawn<caf::detached + caf::linked>(event_writer, config));
  auto pick = [](const std::vector<caf::actor>& writers, const std::string& key) {
    return writers[std::hash<std::string>{}(key) % writers.size()];
  };
  return {
      [=](status_atom a, const std::string& item, const protocol::node_partitioning_status& st) {
        // At the persists' priority: a worker's statuses reach its writer in the order it
        // sent them, so a write-ahead is never followed by an older status that it overtook.
        self->send<caf::message_priority::high>(pick(statuses, item), a, item, st);
      },
      [=](persist_atom a, const std::string& item, const protocol::node_partitioning_status& st) {
        // Asked on at high priority, ahead of the writer's queued flushes, and answered
        // here. (CAF 0.17's delegate<high> re-marks the request so that its answer never
        // reaches the asker: tests/integration:status_writer_test.)
        auto rp = self->make_response_promise<std::string>();
        self->request<caf::message_priority::high>(pick(statuses, item), caf::infinite, a, item, st)
            .then([=](const std::string& error) mutable { rp.deliver(error); },
                  [=](caf::error& e) mutable {
                    rp.deliver("the status writer failed: " + self->system().render(e));
                  });
        return rp;
      },
      [=](plan_status_atom a, const std::string& plan,
          const protocol::partitioning_plan_status& st) {
        self->send(pick(statuses, plan), a, plan, st);
      },
      [=](event_atom a, const event_io& e) {
        self->send(pick(events, e.kind + "/" + e.name), a, e);
      },
      [=](flush_atom a, stop_atom b) {
        // The operator stops: each writer writes what it holds; answered once all have.
        auto rp = self->make_response_promise<bool>();
        auto left = std::make_shared<std::size_t>(statuses.size());
        auto one_done = [=]() mutable {
          if (--*left == 0)
            rp.deliver(true);
        };
        for (const auto& shard : statuses)
          self->request(shard, caf::infinite, a, b)
              .then([=](bool) mutable { one_done(); }, [=](caf::error&) mutable { one_done(); });
        return rp;
      },
  };
}

} // namespace gpu_partitioner::actors
