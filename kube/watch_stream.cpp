#include "kube/watch_stream.hpp"

#include <rapidjson/error/en.h>

#include <cstring>

namespace gpu_partitioner::kube {

namespace {

const char* string_or(const rapidjson::Value& v, const char* key, const char* fallback) {
  auto it = v.FindMember(key);
  return it != v.MemberEnd() && it->value.IsString() ? it->value.GetString() : fallback;
}

bool event_type_of(const char* text, event_type& out) {
  struct entry {
    const char* name;
    event_type type;
  };
  static constexpr entry table[] = {
      {"ADDED", event_type::added},     {"MODIFIED", event_type::modified},
      {"DELETED", event_type::deleted}, {"BOOKMARK", event_type::bookmark},
      {"ERROR", event_type::error},
  };
  for (const auto& e : table)
    if (std::strcmp(text, e.name) == 0) {
      out = e.type;
      return true;
    }
  return false;
}

} // namespace

void read_identity(const rapidjson::Value& object, object_key& key, std::string& resource_version) {
  key = {};
  resource_version.clear();
  if (!object.IsObject())
    return;
  auto meta = object.FindMember("metadata");
  if (meta == object.MemberEnd() || !meta->value.IsObject())
    return;
  key.namespace_ = string_or(meta->value, "namespace", "");
  key.name = string_or(meta->value, "name", "");
  resource_version = string_or(meta->value, "resourceVersion", "");
}

result<done> decode_event(std::string& line, watch_event& out) {
  // A fresh pool for every event: a Document's allocator frees nothing until it is
  // cleared, so a watch open for minutes would keep every event it ever decoded (tens of
  // megabytes for a busy pod watch). Iterative: a line nested a hundred thousand levels
  // deep overflowed the stack of the recursive parser.
  out.object = nullptr;
  out.document.SetNull();
  out.document.GetAllocator().Clear();
  out.document.ParseInsitu<rapidjson::kParseIterativeFlag>(line.data());
  if (out.document.HasParseError())
    return make_error(error_kind::decode,
                      std::string("watch event is not JSON: ") +
                          rapidjson::GetParseError_En(out.document.GetParseError()) +
                          " at offset " + std::to_string(out.document.GetErrorOffset()));
  if (!out.document.IsObject())
    return make_error(error_kind::decode, "watch event is not a JSON object");
  const char* type = string_or(out.document, "type", nullptr);
  if (type == nullptr)
    return make_error(error_kind::decode, "watch event has no type");
  if (!event_type_of(type, out.type))
    return make_error(error_kind::decode, std::string("unknown watch event type \"") + type + "\"");
  auto object = out.document.FindMember("object");
  if (object == out.document.MemberEnd() || !object->value.IsObject())
    return make_error(error_kind::decode, std::string(type) + " event has no object");
  out.object = &object->value;
  out.code = 0;
  out.message.clear();
  if (out.type == event_type::error) {
    auto code = out.object->FindMember("code");
    out.code = code != out.object->MemberEnd() && code->value.IsInt() ? code->value.GetInt() : 0;
    out.message = string_or(*out.object, "message", "");
    out.key = {};
    out.resource_version.clear();
    return done{};
  }
  read_identity(*out.object, out.key, out.resource_version);
  return done{};
}

} // namespace gpu_partitioner::kube
