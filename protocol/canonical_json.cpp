#include "protocol/canonical_json.hpp"

#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <string_view>
#include <vector>

namespace gpu_partitioner::protocol {

namespace {

using writer_type = rapidjson::Writer<rapidjson::StringBuffer>;

std::string_view name_of(const rapidjson::Value::ConstMemberIterator& m) {
  return {m->name.GetString(), m->name.GetStringLength()};
}

bool write(const rapidjson::Value& v, writer_type& w, int depth) {
  if (depth > canonical_json_max_depth)
    return false;
  if (v.IsObject()) {
    std::vector<rapidjson::Value::ConstMemberIterator> members;
    members.reserve(v.MemberCount());
    for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m)
      members.push_back(m);
    // Stable: duplicate keys (which our encoder never writes) keep their order.
    std::stable_sort(members.begin(), members.end(),
                     [](const auto& a, const auto& b) { return name_of(a) < name_of(b); });
    w.StartObject();
    for (const auto& m : members) {
      w.Key(m->name.GetString(), m->name.GetStringLength());
      if (!write(m->value, w, depth + 1))
        return false;
    }
    return w.EndObject();
  }
  if (v.IsArray()) {
    w.StartArray();
    for (const auto& item : v.GetArray())
      if (!write(item, w, depth + 1))
        return false;
    return w.EndArray();
  }
  return v.Accept(w); // a scalar: the writer's own formatting
}

} // namespace

result<std::string> canonical_json(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  writer_type writer(buffer);
  if (!write(value, writer, 0))
    return decode_error{
        {}, "nested deeper than " + std::to_string(canonical_json_max_depth) + " levels"};
  return std::string(buffer.GetString(), buffer.GetSize());
}

result<std::string> canonical_json(std::string_view text) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(text.data(),
                                                                                    text.size());
  if (doc.HasParseError())
    return decode_error{{},
                        "invalid JSON at offset " + std::to_string(doc.GetErrorOffset()) + ": " +
                            rapidjson::GetParseError_En(doc.GetParseError())};
  return canonical_json(static_cast<const rapidjson::Value&>(doc));
}

} // namespace gpu_partitioner::protocol
