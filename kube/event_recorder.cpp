#include "kube/event_recorder.hpp"

#include "protocol/timestamp.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <cstring>
#include <ctime>

namespace gpu_partitioner::kube {

event_recorder::event_recorder(client& api, std::string component, std::string instance,
                               std::chrono::seconds window, std::size_t remembered)
    : api_(api), component_(std::move(component)), instance_(std::move(instance)), window_(window),
      remembered_(remembered) {}

result<std::string> event_recorder::create(const event_spec& e, const std::string& ns,
                                           clock::time_point now) {
  // The name is the object's plus a unique suffix, as client-go names them.
  char suffix[24];
  std::snprintf(
      suffix, sizeof suffix, ".%llx",
      static_cast<unsigned long long>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count()));
  // An object named at the 253-character limit would give an invalid Event name: cut the
  // object's part (it stays a DNS subdomain: no trailing '-' or '.').
  std::string name = e.regarding.name.substr(0, 253 - std::strlen(suffix));
  while (!name.empty() && (name.back() == '-' || name.back() == '.'))
    name.pop_back();
  name += suffix;
  const std::string ts = protocol::format_time(now);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  auto kv = [&](const char* k, const std::string& v) {
    w.Key(k);
    w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
  };
  w.StartObject();
  kv("apiVersion", "v1");
  kv("kind", "Event");
  w.Key("metadata");
  w.StartObject();
  kv("name", name);
  kv("namespace", ns);
  w.EndObject();
  w.Key("involvedObject");
  w.StartObject();
  kv("apiVersion", e.regarding.api_version);
  kv("kind", e.regarding.kind);
  if (!e.regarding.ns.empty())
    kv("namespace", e.regarding.ns);
  kv("name", e.regarding.name);
  if (!e.regarding.uid.empty())
    kv("uid", e.regarding.uid);
  w.EndObject();
  kv("type", e.type);
  kv("reason", e.reason);
  kv("message", e.message);
  w.Key("source");
  w.StartObject();
  kv("component", component_);
  if (!e.host.empty())
    kv("host", e.host);
  w.EndObject();
  kv("reportingComponent", component_);
  kv("reportingInstance", instance_);
  kv("firstTimestamp", ts);
  kv("lastTimestamp", ts);
  w.Key("count");
  w.Int(1);
  w.EndObject();
  auto created = api_.create(resources::events(), ns, buffer.GetString());
  if (!created)
    return created.error();
  return name;
}

result<std::string> event_recorder::record(const event_spec& e) {
  const auto now = now_();
  // Events about cluster-scoped objects live in "default", as client-go puts them.
  const std::string ns = e.regarding.ns.empty() ? "default" : e.regarding.ns;
  key k;
  for (const std::string* field : {&e.regarding.kind, &e.regarding.ns, &e.regarding.name,
                                   &e.regarding.uid, &e.type, &e.reason, &e.message, &e.host})
    k += std::to_string(field->size()) + ":" + *field;
  auto it = cache_.find(k);
  if (it != cache_.end() && now - it->second.last < window_) {
    entry& hit = it->second;
    const long long count = hit.count + 1;
    std::string patch = "{\"count\":" + std::to_string(count) + ",\"lastTimestamp\":\"" +
                        protocol::format_time(now) + "\"}";
    auto patched = api_.patch(resources::events(), hit.ns, hit.name, patch_type::merge, patch);
    if (patched) {
      hit.count = count;
      hit.last = now;
      ages_.splice(ages_.end(), ages_, hit.age);
      return hit.name;
    }
    if (patched.error().kind != error_kind::not_found)
      return patched.error();
    // The Event expired (the server's TTL): start a new one.
  }
  auto name = create(e, ns, now);
  if (!name)
    return name;
  if (it != cache_.end()) {
    ages_.erase(it->second.age);
    cache_.erase(it);
  }
  entry fresh;
  fresh.ns = ns;
  fresh.name = name.value();
  fresh.count = 1;
  fresh.first = fresh.last = now;
  auto added = cache_.emplace(std::move(k), std::move(fresh)).first;
  added->second.age = ages_.insert(ages_.end(), &added->first);
  while (cache_.size() > remembered_) {
    auto oldest = cache_.find(*ages_.front());
    ages_.pop_front();
    cache_.erase(oldest);
  }
  return name;
}

} // namespace gpu_partitioner::kube
