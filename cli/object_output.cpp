#include "cli/object_output.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <string_view>

namespace gpu_partitioner::cli {

namespace {

/// A scalar as JSON text (strings escaped as JSON escapes them).
std::string scalar_json(const rapidjson::Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  v.Accept(w);
  return buffer.GetString();
}

std::vector<const rapidjson::Value::Member*> sorted_members(const rapidjson::Value& object) {
  std::vector<const rapidjson::Value::Member*> out;
  for (const auto& m : object.GetObject())
    out.push_back(&m);
  std::sort(out.begin(), out.end(), [](const auto* a, const auto* b) {
    return std::string_view(a->name.GetString(), a->name.GetStringLength()) <
           std::string_view(b->name.GetString(), b->name.GetStringLength());
  });
  return out;
}

void write_json(const rapidjson::Value& v, int depth, std::string& out) {
  const std::string pad(static_cast<std::size_t>(depth + 1) * 4, ' ');
  if (v.IsObject() && v.MemberCount() > 0) {
    out += "{\n";
    const auto members = sorted_members(v);
    for (std::size_t i = 0; i < members.size(); ++i) {
      out += pad + scalar_json(members[i]->name) + ": ";
      write_json(members[i]->value, depth + 1, out);
      out += i + 1 < members.size() ? ",\n" : "\n";
    }
    out += std::string(static_cast<std::size_t>(depth) * 4, ' ') + "}";
  } else if (v.IsArray() && !v.Empty()) {
    out += "[\n";
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
      out += pad;
      write_json(v[i], depth + 1, out);
      out += i + 1 < v.Size() ? ",\n" : "\n";
    }
    out += std::string(static_cast<std::size_t>(depth) * 4, ' ') + "]";
  } else if (v.IsObject()) {
    out += "{}";
  } else if (v.IsArray()) {
    out += "[]";
  } else {
    out += scalar_json(v);
  }
}

/// Words YAML 1.1 (which kubectl's reader follows) resolves to a boolean or null.
bool reserved_word(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* w : {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"})
    if (s == w)
      return true;
  return false;
}

/// Whether `s` reads back as this same string in plain style. Conservative: a string
/// starting with a digit, sign or dot (numbers, times, .inf) is quoted, and so is any with
/// a character other than letters, digits and a few punctuation marks.
bool plain_safe(std::string_view s) {
  if (s.empty() || reserved_word(std::string(s)))
    return false;
  const unsigned char first = static_cast<unsigned char>(s.front());
  if (!std::isalpha(first) && first != '/' && first != '_')
    return false;
  if (s.back() == ' ' || s.back() == ':')
    return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (std::isalnum(c) ||
        std::string_view("._/-@=+,()").find(static_cast<char>(c)) != std::string_view::npos)
      continue;
    if (c == ' ' && (i + 1 >= s.size() || s[i + 1] != '#'))
      continue;
    if (c == ':' && i + 1 < s.size() && s[i + 1] != ' ')
      continue;
    return false;
  }
  return true;
}

std::string yaml_scalar(const rapidjson::Value& v) {
  if (v.IsString()) {
    std::string_view s(v.GetString(), v.GetStringLength());
    // Double-quoted YAML takes JSON's escapes.
    return plain_safe(s) ? std::string(s) : scalar_json(v);
  }
  if (v.IsObject())
    return "{}";
  if (v.IsArray())
    return "[]";
  return scalar_json(v);
}

bool is_block(const rapidjson::Value& v) {
  return (v.IsObject() && v.MemberCount() > 0) || (v.IsArray() && !v.Empty());
}

void write_yaml(const rapidjson::Value& v, std::size_t indent, std::string& out);

/// A list element: its first line after "- ", the rest two columns in.
void write_yaml_item(const rapidjson::Value& v, std::size_t indent, std::string& out) {
  if (!is_block(v)) {
    out += std::string(indent, ' ') + "- " + yaml_scalar(v) + "\n";
    return;
  }
  std::string inner;
  write_yaml(v, indent + 2, inner);
  out += std::string(indent, ' ') + "- " + inner.substr(indent + 2);
}

void write_yaml(const rapidjson::Value& v, std::size_t indent, std::string& out) {
  const std::string pad(indent, ' ');
  if (v.IsObject()) {
    for (const auto* m : sorted_members(v)) {
      const std::string key = yaml_scalar(m->name);
      if (m->value.IsObject() && m->value.MemberCount() > 0) {
        out += pad + key + ":\n";
        write_yaml(m->value, indent + 2, out);
      } else if (m->value.IsArray() && !m->value.Empty()) {
        out += pad + key + ":\n";
        write_yaml(m->value, indent, out);
      } else {
        out += pad + key + ": " + yaml_scalar(m->value) + "\n";
      }
    }
  } else if (v.IsArray()) {
    for (const auto& item : v.GetArray())
      write_yaml_item(item, indent, out);
  } else {
    out += pad + yaml_scalar(v) + "\n";
  }
}

} // namespace

rapidjson::Document object_of(const api_object& object) {
  rapidjson::Document doc;
  doc.CopyFrom(*object.value, doc.GetAllocator());
  if (!doc.IsObject())
    return doc;
  auto& a = doc.GetAllocator();
  if (!doc.HasMember("apiVersion") && !object.api_version.empty())
    doc.AddMember("apiVersion", rapidjson::Value(object.api_version.c_str(), a), a);
  if (!doc.HasMember("kind") && !object.kind.empty())
    doc.AddMember("kind", rapidjson::Value(object.kind.c_str(), a), a);
  return doc;
}

rapidjson::Document list_of(const std::vector<api_object>& objects) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  rapidjson::Value items(rapidjson::kArrayType);
  for (const auto& o : objects) {
    rapidjson::Document one = object_of(o);
    items.PushBack(rapidjson::Value(one, a), a);
  }
  rapidjson::Value metadata(rapidjson::kObjectType);
  metadata.AddMember("resourceVersion", "", a);
  doc.AddMember("apiVersion", "v1", a);
  doc.AddMember("items", items, a);
  doc.AddMember("kind", "List", a);
  doc.AddMember("metadata", metadata, a);
  return doc;
}

std::string json_text(const rapidjson::Value& value) {
  std::string out;
  write_json(value, 0, out);
  return out + "\n";
}

std::string yaml_text(const rapidjson::Value& value) {
  std::string out;
  write_yaml(value, 0, out);
  return out;
}

} // namespace gpu_partitioner::cli
