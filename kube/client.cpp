#include "kube/client.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdlib>
#include <iterator>
#include <limits>

namespace gpu_partitioner::kube {

std::string to_json(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string string_at(const rapidjson::Value* object, const char* member) {
  return object == nullptr ? std::string{} : string_at(*object, member);
}

std::string string_at(const rapidjson::Value& object, const char* member) {
  if (!object.IsObject())
    return {};
  auto it = object.FindMember(member);
  return it != object.MemberEnd() && it->value.IsString() ? it->value.GetString() : std::string{};
}

std::map<std::string, std::string> string_map(const rapidjson::Value* v) {
  return string_map(v, std::numeric_limits<std::size_t>::max());
}

std::map<std::string, std::string> string_map(const rapidjson::Value* v, std::size_t limit) {
  std::map<std::string, std::string> out;
  if (v == nullptr || !v->IsObject() || limit == 0)
    return out;
  for (const auto& m : v->GetObject()) {
    if (m.value.IsString())
      out[m.name.GetString()] = m.value.GetString();
    else if (m.value.IsInt64())
      out[m.name.GetString()] = std::to_string(m.value.GetInt64());
    else
      continue;
    if (out.size() > limit)
      out.erase(std::prev(out.end()));
  }
  return out;
}

long long whole_number(const rapidjson::Value* v) {
  if (v == nullptr)
    return 0;
  if (v->IsInt64())
    return v->GetInt64();
  if (v->IsString())
    return std::atoll(v->GetString());
  return 0;
}

const rapidjson::Value* find_path(const rapidjson::Value& root,
                                  std::initializer_list<const char*> path) {
  const rapidjson::Value* at = &root;
  for (const char* step : path) {
    if (!at->IsObject())
      return nullptr;
    auto it = at->FindMember(step);
    if (it == at->MemberEnd())
      return nullptr;
    at = &it->value;
  }
  return at;
}

namespace {

const char* content_type_of(patch_type type) {
  switch (type) {
  case patch_type::merge:
    return "application/merge-patch+json";
  case patch_type::json:
    return "application/json-patch+json";
  case patch_type::strategic:
    return "application/strategic-merge-patch+json";
  case patch_type::apply:
    return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

std::string delete_options_body(const delete_options& o) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("apiVersion");
  w.String("v1");
  w.Key("kind");
  w.String("DeleteOptions");
  if (!o.precondition_uid.empty() || !o.precondition_resource_version.empty()) {
    w.Key("preconditions");
    w.StartObject();
    if (!o.precondition_uid.empty()) {
      w.Key("uid");
      w.String(o.precondition_uid.c_str());
    }
    if (!o.precondition_resource_version.empty()) {
      w.Key("resourceVersion");
      w.String(o.precondition_resource_version.c_str());
    }
    w.EndObject();
  }
  if (!o.propagation_policy.empty()) {
    w.Key("propagationPolicy");
    w.String(o.propagation_policy.c_str());
  }
  if (o.grace_period_seconds) {
    w.Key("gracePeriodSeconds");
    w.Int64(*o.grace_period_seconds);
  }
  w.EndObject();
  return buffer.GetString();
}

} // namespace

result<rapidjson::Document> client::send(http_request req) {
  auto body = http_.call(req);
  if (!body)
    return body.error();
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(body.value().c_str(), body.value().size());
  if (doc.HasParseError())
    return make_error(error_kind::decode, std::string(to_string(req.method)) + " " + req.path +
                                              ": the answer is not JSON");
  // Every answer of the API (an object, a list, a Status) is an object; what callers read
  // of it is found by path from there. RapidJSON's member access on anything else is
  // undefined behaviour in a release build.
  if (!doc.IsObject())
    return make_error(error_kind::decode, std::string(to_string(req.method)) + " " + req.path +
                                              ": the answer is not a JSON object");
  return doc;
}

result<rapidjson::Document> client::get(const resource& r, const std::string& ns,
                                        const std::string& name, const std::string& subresource) {
  http_request req;
  req.path = r.object_path(ns, name, subresource);
  return send(std::move(req));
}

result<rapidjson::Document> client::list_page(const resource& r, const std::string& ns,
                                              const list_options& o) {
  http_request req;
  query q;
  q.add("labelSelector", o.label_selector)
      .add("fieldSelector", o.field_selector)
      .add("continue", o.continue_token)
      .add("resourceVersion", o.resource_version);
  if (o.limit > 0)
    q.add("limit", o.limit);
  req.path = r.collection_path(ns) + q.str();
  req.timeout = std::chrono::seconds(60);
  return send(std::move(req));
}

result<rapidjson::Document> client::list(const resource& r, const std::string& ns,
                                         list_options options) {
  auto first = list_page(r, ns, options);
  if (!first)
    return first;
  rapidjson::Document all = std::move(first.value());
  auto& alloc = all.GetAllocator();
  // A list whose items are not a list (only a server that lies sends one) has none.
  if (!all.HasMember("items"))
    all.AddMember("items", rapidjson::Value(rapidjson::kArrayType), alloc);
  else if (!all["items"].IsArray())
    all["items"].SetArray();
  for (;;) {
    const rapidjson::Value* cont = find_path(all, {"metadata", "continue"});
    if (cont == nullptr || !cont->IsString() || cont->GetStringLength() == 0)
      break;
    options.continue_token = cont->GetString();
    auto page = list_page(r, ns, options);
    if (!page)
      return page.error();
    if (auto* items = find_path(page.value(), {"items"}); items != nullptr && items->IsArray())
      for (auto& item : page.value()["items"].GetArray())
        all["items"].PushBack(rapidjson::Value(item, alloc), alloc);
    const rapidjson::Value* next = find_path(page.value(), {"metadata", "continue"});
    all["metadata"]["continue"].SetString(
        next != nullptr && next->IsString() ? next->GetString() : "", alloc);
  }
  return all;
}

result<rapidjson::Document> client::create(const resource& r, const std::string& ns,
                                           const std::string& body) {
  http_request req;
  req.method = verb::post;
  req.path = r.collection_path(ns);
  req.body = body;
  return send(std::move(req));
}

result<rapidjson::Document> client::update(const resource& r, const std::string& ns,
                                           const std::string& name, const std::string& body,
                                           const std::string& subresource) {
  http_request req;
  req.method = verb::put;
  req.path = r.object_path(ns, name, subresource);
  req.body = body;
  return send(std::move(req));
}

result<rapidjson::Document> client::patch(const resource& r, const std::string& ns,
                                          const std::string& name, patch_type type,
                                          const std::string& body, const patch_options& o) {
  http_request req;
  req.method = verb::patch;
  query q;
  q.add("fieldManager", o.field_manager);
  if (type == patch_type::apply && o.force)
    q.add("force", "true");
  req.path = r.object_path(ns, name, o.subresource) + q.str();
  req.body = body;
  req.content_type = content_type_of(type);
  // Applying or merging the same intent twice gives the same object; a JSON patch's
  // array operations need not.
  req.idempotent = type != patch_type::json;
  return send(std::move(req));
}

result<rapidjson::Document> client::apply(const resource& r, const std::string& ns,
                                          const std::string& name, const std::string& body,
                                          const std::string& field_manager, bool force) {
  patch_options o;
  o.field_manager = field_manager;
  o.force = force;
  return patch(r, ns, name, patch_type::apply, body, o);
}

result<done> client::remove(const resource& r, const std::string& ns, const std::string& name,
                            const delete_options& options) {
  http_request req;
  req.method = verb::del;
  req.path = r.object_path(ns, name);
  req.body = delete_options_body(options);
  auto body = http_.call(req);
  if (!body)
    return body.error();
  return done{};
}

result<bool> client::may(const std::string& action, const std::string& group,
                         const std::string& resource, const std::string& ns) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("apiVersion");
  w.String("authorization.k8s.io/v1");
  w.Key("kind");
  w.String("SelfSubjectAccessReview");
  w.Key("spec");
  w.StartObject();
  w.Key("resourceAttributes");
  w.StartObject();
  for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"verb", &action},
                                   {"group", &group},
                                   {"resource", &resource},
                                   {"namespace", &ns}}) {
    w.Key(key);
    w.String(value->c_str(), static_cast<rapidjson::SizeType>(value->size()));
  }
  w.EndObject();
  w.EndObject();
  w.EndObject();
  http_request req;
  req.method = verb::post;
  req.path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
  req.body = buffer.GetString();
  req.idempotent = true; // it changes nothing
  auto answer = send(std::move(req));
  if (!answer)
    return answer.error();
  const auto* allowed = find_path(answer.value(), {"status", "allowed"});
  return allowed != nullptr && allowed->IsBool() && allowed->GetBool();
}

result<eviction_result> client::evict(const std::string& ns, const std::string& pod,
                                      const delete_options& options) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("apiVersion");
  w.String("policy/v1");
  w.Key("kind");
  w.String("Eviction");
  w.Key("metadata");
  w.StartObject();
  w.Key("name");
  w.String(pod.c_str());
  w.Key("namespace");
  w.String(ns.c_str());
  w.EndObject();
  w.EndObject();
  std::string body = buffer.GetString();
  if (!options.precondition_uid.empty() || options.grace_period_seconds) {
    // deleteOptions rides inside the Eviction object.
    body.pop_back();
    body += ",\"deleteOptions\":" + delete_options_body(options) + "}";
  }
  http_request req;
  req.method = verb::post;
  req.path = resources::pods().object_path(ns, pod, "eviction");
  req.body = std::move(body);
  // A 429 here is a PodDisruptionBudget's answer, which the caller paces itself.
  req.max_attempts = 1;
  auto answer = http_.call(req);
  if (answer)
    return eviction_result{eviction_outcome::evicted, {}};
  const failure& e = answer.error();
  if (e.kind == error_kind::not_found)
    return eviction_result{eviction_outcome::gone, e.message};
  // A 429 is also how API priority and fairness sheds load; only a disruption budget's
  // refusal is a block (it names itself in the causes, or at least in the message).
  bool pdb = false;
  for (const auto& cause : e.causes)
    pdb = pdb || cause.type == "DisruptionBudget";
  pdb = pdb || e.message.find("disruption budget") != std::string::npos;
  if (e.kind == error_kind::too_many_requests && pdb)
    return eviction_result{eviction_outcome::blocked_by_pdb, e.message};
  return e;
}

} // namespace gpu_partitioner::kube
