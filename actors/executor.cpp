#include "actors/executor.hpp"

#include "actors/crd_resources.hpp"
#include "actors/decode.hpp"
#include "actors/operator_metrics.hpp"
#include "controller/dcm_payload.hpp"
#include "controller/drain.hpp"
#include "kube/optimistic.hpp"
#include "protocol/json.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>

namespace gpu_partitioner::actors {

std::string json_string(const std::string& s) {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
  return b.GetString();
}

namespace {

std::string string_map_patch(const std::map<std::string, std::optional<std::string>>& m) {
  std::string out = "{";
  for (const auto& [k, v] : m)
    out += (out.size() > 1 ? "," : "") + json_string(k) + ":" + (v ? json_string(*v) : "null");
  return out + "}";
}

} // namespace

executor::executor(io_config c)
    : config(std::move(c)), http(config.connection, kube::credentials_for(config.connection)),
      api(http) {
  manager.field_manager = config.field_manager;
  http.set_observer(process_metrics().api_observer());
}

// The node patch: cordon state, labels and annotations in one merge patch.

kube::result<rapidjson::Document> executor::patch_node(const std::string& node,
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

std::string executor::write_dcm(const controller::dcm_config_write& w) {
  return kube::retry_on_conflict(
      [&](int) -> std::optional<std::string> {
        auto current = api.get(kube::resources::config_maps(), w.ns, w.name);
        if (!current && current.error().kind != kube::error_kind::not_found)
          return "reading DCM's ConfigMap: " + current.error().describe();
        std::string config_json;
        if (current) {
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
          return std::string();
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
          // Without its metadata (a server that lies) there is no version to update.
          if (!doc.HasMember("metadata") || !doc["metadata"].IsObject())
            return "DCM's ConfigMap " + w.ns + "/" + w.name + " came back without metadata";
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
            return std::string();
          if (!kube::lost_race(put.error()))
            return "updating DCM's ConfigMap: " + put.error().describe();
        } else {
          body = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":" +
                 json_string(w.name) + ",\"namespace\":" + json_string(w.ns) +
                 ",\"annotations\":{" + json_string(controller::dcm_config_written_annotation) +
                 ":" + json_string(protocol::format_time_micro(protocol::wall_clock::now())) +
                 "}},\"data\":{\"config.json\":" + json_string(*updated) + "}}";
          auto made = api.create(kube::resources::config_maps(), w.ns, body);
          if (made)
            return std::string();
          if (made.error().kind != kube::error_kind::already_exists)
            return "creating DCM's ConfigMap: " + made.error().describe();
        }
        return std::nullopt; // lost a race (or a create raced one): read again
      },
      [] { return std::string("DCM's ConfigMap kept changing under us; will retry"); });
}

std::string executor::finalizer(const std::string& item, bool add) {
  // Optimistic: the resourceVersion read goes with the patch, so a list changed in
  // between is refused (409 Conflict) and read again, and nobody's finalizer is lost.
  return kube::retry_on_conflict(
      [&](int) -> std::optional<std::string> {
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
          return std::string();
        if (add)
          finalizers.push_back(controller::item_finalizer);
        else
          finalizers.erase(it);
        std::string list = "[";
        for (const auto& f : finalizers)
          list += (list.size() > 1 ? "," : "") + json_string(f);
        list += "]";
        const std::string body =
            "{\"metadata\":{\"resourceVersion\":" +
            json_string(kube::string_at(kube::find_path(current.value(), {"metadata"}),
                                        "resourceVersion")) +
            ",\"finalizers\":" + list + "}}";
        auto patched = api.patch(items_resource, "", item, kube::patch_type::merge, body, manager);
        if (patched || patched.error().kind == kube::error_kind::not_found)
          return std::string();
        if (!kube::lost_race(patched.error()))
          return "finalizer: " + patched.error().describe();
        return std::nullopt; // lost a race: read again
      },
      [] { return std::string("finalizer: the item kept changing under us; will retry"); });
}

node_io_result executor::perform(const node_io& io) {
  node_io_result r;
  http.set_lane(io.lane);
  if (io.reacting_to) {
    const char* kind = io.add_finalizer || io.clear_retry ? "item"
                       : io.patch && !io.patch->empty()   ? "node_patch"
                       : io.taint                         ? (*io.taint ? "taint" : "untaint")
                       : io.device_taint                  ? "device_taint"
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
                                 json_string(controller::retry_annotation) + ":null}}}",
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
    r.error = pods_left_on_node(api, io.node, io.not_awaited);
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
  // Before the evictions: the NoSchedule rule keeps the evicted pods' replacements off the
  // devices (the node itself stays schedulable).
  if (io.device_taint && r.error.empty())
    if (auto e = write_device_taint(*io.device_taint); !e.empty())
      r.error = e;
  for (const auto& p : io.removals) {
    controller::eviction_memory m;
    m.at = protocol::wall_clock::now();
    kube::delete_options precondition;
    precondition.precondition_uid = p.uid;
    precondition.grace_period_seconds = p.grace_seconds;
    if (p.again)
      if (auto needless = removal_needless(api, p.ns, p.name, p.uid); !needless.empty()) {
        m.done = true;
        m.message = needless;
        if (needless.rfind("gone", 0) == 0)
          m.gone_uid = p.uid;
        r.evictions[p.ns + "/" + p.name] = m;
        continue;
      }
    if (p.evict) {
      auto e = api.evict(p.ns, p.name, precondition);
      if (!e) {
        m.message = e.error().describe();
        if (e.error().kind == kube::error_kind::conflict)
          m.done = true; // a pod of that name but another uid: ours is gone
        else
          m.failed = true;
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
      m.failed = !m.done;
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

std::string executor::ensure_device_class(const std::string& name, const std::string& json) {
  const auto classes = kube::resources::device_classes();
  auto current = api.get(classes, "", name);
  if (!current) {
    if (current.error().kind != kube::error_kind::not_found)
      return "reading DeviceClass " + name + ": " + current.error().describe();
    auto made = api.create(classes, "", json);
    if (!made && made.error().kind != kube::error_kind::already_exists)
      return "creating DeviceClass " + name + ": " + made.error().describe();
    return {};
  }
  // A class of that name someone else made is theirs: never taken over.
  const auto* mark =
      kube::find_path(current.value(), {"metadata", "labels", controller::managed_by_label});
  if (mark == nullptr || !mark->IsString() ||
      mark->GetString() != std::string(controller::managed_by_value))
    return "DeviceClass " + name + " exists and was not made by gpu-partitioner (no " +
           controller::managed_by_label + "=" + controller::managed_by_value + "): left alone";
  // Ours: its spec and owner brought in line (a merge patch replaces the selector list).
  auto patched = api.patch(classes, "", name, kube::patch_type::merge, json, manager);
  if (!patched)
    return "updating DeviceClass " + name + ": " + patched.error().describe();
  return {};
}

std::string executor::write_device_taint(const controller::device_taint_write& w) {
  const auto rules = kube::resources::device_taint_rules();
  if (w.effect.empty()) {
    auto removed = api.remove(rules, "", w.name, {});
    if (!removed && removed.error().kind != kube::error_kind::not_found)
      return "deleting DeviceTaintRule " + w.name + ": " + removed.error().describe();
    return {};
  }
  const auto json = controller::device_taint_rule_json(w.name, w.node, w.pool, w.effect);
  auto made = api.create(rules, "", json);
  if (made)
    return {};
  if (made.error().kind != kube::error_kind::already_exists)
    return "creating DeviceTaintRule " + w.name + ": " + made.error().describe();
  auto current = api.get(rules, "", w.name);
  if (!current)
    return "reading DeviceTaintRule " + w.name + ": " + current.error().describe();
  const auto found = decode_device_taint_rule(current.value());
  if (!found.ours)
    return "DeviceTaintRule " + w.name + " exists and was not made by gpu-partitioner (no " +
           controller::managed_by_label + "=" + controller::managed_by_value + "): left alone";
  auto patched = api.patch(rules, "", w.name, kube::patch_type::merge, json, manager);
  if (!patched)
    return "updating DeviceTaintRule " + w.name + ": " + patched.error().describe();
  return {};
}

std::string executor::perform(const item_io& io) {
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
  case item_io::op::label: {
    rapidjson::Document doc;
    doc.SetObject();
    auto& a = doc.GetAllocator();
    rapidjson::Value labels(rapidjson::kObjectType);
    for (const auto& [key, value] : io.item.metadata.labels)
      labels.AddMember(rapidjson::Value(key.c_str(), a), rapidjson::Value(value.c_str(), a), a);
    rapidjson::Value metadata(rapidjson::kObjectType);
    metadata.AddMember("labels", labels, a);
    doc.AddMember("metadata", metadata, a);
    auto patched = api.patch(items_resource, "", io.item.metadata.name, kube::patch_type::merge,
                             kube::to_json(doc), manager);
    if (!patched && patched.error().kind != kube::error_kind::not_found)
      return "labelling " + io.item.metadata.name + ": " + patched.error().describe();
    return {};
  }
  case item_io::op::ensure_device_class:
    return ensure_device_class(io.device_class_name, io.device_class);
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

kube::result<rapidjson::Document> set_dcm_taint(kube::client& api, const std::string& node,
                                                bool add, const controller::node_info* known,
                                                const kube::patch_options& manager) {
  using outcome = kube::result<rapidjson::Document>;
  // The last write refused as a race, the answer when every attempt lost one.
  std::optional<outcome> last;
  return kube::retry_on_conflict(
      [&](int attempt) -> std::optional<outcome> {
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
          list += (list.size() > 1 ? "," : "") + std::string("{\"key\":") + json_string(t.key) +
                  (t.value.empty() ? "" : ",\"value\":" + json_string(t.value)) +
                  ",\"effect\":" + json_string(t.effect) + "}";
        list += "]";
        const std::string body =
            "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":" +
            json_string(info.resource_version) +
            "},{\"op\":\"add\",\"path\":\"/spec/taints\",\"value\":" + list + "}]";
        auto patched =
            api.patch(kube::resources::nodes(), "", node, kube::patch_type::json, body, manager);
        // A failed test is answered 422 (Invalid) or 409: someone else wrote; re-read.
        if (patched || !kube::lost_race(patched.error()))
          return patched;
        last = std::move(patched);
        return std::nullopt;
      },
      [&] { return std::move(*last); });
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

std::string pods_left_on_node(kube::client& api, const std::string& node,
                              const std::vector<std::string>& ignored) {
  kube::list_options on_node;
  on_node.field_selector = "spec.nodeName=" + node;
  auto pods = api.list(kube::resources::pods(), "", on_node);
  if (!pods)
    return "listing the pods on the node before the taint: " + pods.error().describe();
  std::vector<controller::pod_info> all;
  if (const auto* items = kube::find_path(pods.value(), {"items"}); items && items->IsArray())
    for (const auto& p : items->GetArray())
      all.push_back(decode_pod(p));
  auto left = controller::evictable_pods(all);
  left.erase(std::remove_if(left.begin(), left.end(),
                            [&](const auto& p) {
                              return std::find(ignored.begin(), ignored.end(), p.uid) !=
                                     ignored.end();
                            }),
             left.end());
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

} // namespace gpu_partitioner::actors
