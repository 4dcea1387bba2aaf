#include "tests/unit/protocol/yaml_json.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <dirent.h>
#include <regex>
#include <stdexcept>
#include <sys/stat.h>

namespace gpu_partitioner::protocol::testing {

namespace {

using allocator = rapidjson::Document::AllocatorType;

// YAML 1.2 core schema resolution of a plain scalar.
void plain_scalar(const std::string& s, rapidjson::Value& out, allocator& a) {
  static const std::regex null_re("^(~|null|Null|NULL|)$");
  static const std::regex true_re("^(true|True|TRUE)$");
  static const std::regex false_re("^(false|False|FALSE)$");
  static const std::regex int_re("^[-+]?[0-9]+$");
  static const std::regex float_re("^[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?$");
  if (std::regex_match(s, null_re))
    out.SetNull();
  else if (std::regex_match(s, true_re))
    out.SetBool(true);
  else if (std::regex_match(s, false_re))
    out.SetBool(false);
  else if (std::regex_match(s, int_re))
    out.SetInt64(std::stoll(s));
  else if (std::regex_match(s, float_re))
    out.SetDouble(std::stod(s));
  else
    out.SetString(s.data(), static_cast<rapidjson::SizeType>(s.size()), a);
}

void convert(const YAML::Node& node, rapidjson::Value& out, allocator& a) {
  switch (node.Type()) {
  case YAML::NodeType::Undefined:
  case YAML::NodeType::Null:
    out.SetNull();
    return;
  case YAML::NodeType::Scalar:
    // yaml-cpp tags plain scalars "?" and quoted or block scalars "!".
    if (node.Tag() == "?")
      plain_scalar(node.Scalar(), out, a);
    else
      out.SetString(node.Scalar().data(), static_cast<rapidjson::SizeType>(node.Scalar().size()),
                    a);
    return;
  case YAML::NodeType::Sequence:
    out.SetArray();
    for (const auto& item : node) {
      rapidjson::Value v;
      convert(item, v, a);
      out.PushBack(v, a);
    }
    return;
  case YAML::NodeType::Map:
    out.SetObject();
    for (const auto& entry : node) {
      const std::string key = entry.first.Scalar();
      rapidjson::Value k(key.data(), static_cast<rapidjson::SizeType>(key.size()), a);
      rapidjson::Value v;
      convert(entry.second, v, a);
      out.AddMember(k, v, a);
    }
    return;
  }
}

std::string write(const rapidjson::Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v.Accept(writer);
  return {buffer.GetString(), buffer.GetSize()};
}

rapidjson::Document parse(std::string_view text) {
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  if (doc.HasParseError())
    throw std::invalid_argument("test helper given invalid JSON: " + std::string(text));
  return doc;
}

void merge(rapidjson::Value& target, const rapidjson::Value& patch, allocator& a) {
  if (!patch.IsObject()) {
    target.CopyFrom(patch, a);
    return;
  }
  if (!target.IsObject())
    target.SetObject();
  for (const auto& m : patch.GetObject()) {
    auto it = target.FindMember(m.name);
    if (m.value.IsNull()) {
      if (it != target.MemberEnd())
        target.EraseMember(it);
    } else if (it != target.MemberEnd()) {
      merge(it->value, m.value, a);
    } else {
      rapidjson::Value k(m.name, a);
      rapidjson::Value v;
      merge(v, m.value, a);
      target.AddMember(k, v, a);
    }
  }
}

bool contains(const rapidjson::Value& whole, const rapidjson::Value& part, const std::string& path,
              std::string* difference) {
  const auto differ = [&](const std::string& why) {
    if (difference)
      *difference = path + ": " + why;
    return false;
  };
  if (part.IsObject()) {
    if (!whole.IsObject())
      return differ("not an object");
    for (const auto& m : part.GetObject()) {
      const std::string name(m.name.GetString(), m.name.GetStringLength());
      auto it = whole.FindMember(m.name);
      if (it == whole.MemberEnd())
        return differ("member " + name + " is missing");
      if (!contains(it->value, m.value, path + "." + name, difference))
        return false;
    }
    return true;
  }
  if (part.IsArray()) {
    if (!whole.IsArray() || whole.Size() != part.Size())
      return differ("arrays differ in length");
    for (rapidjson::SizeType i = 0; i < part.Size(); ++i)
      if (!contains(whole[i], part[i], path + "[" + std::to_string(i) + "]", difference))
        return false;
    return true;
  }
  return whole == part || differ(write(whole) + " != " + write(part));
}

} // namespace

std::vector<std::string> yaml_file_to_json(const std::string& path) {
  std::vector<std::string> out;
  for (const auto& node : YAML::LoadAllFromFile(path)) {
    rapidjson::Document doc;
    convert(node, doc, doc.GetAllocator());
    out.push_back(write(doc));
  }
  return out;
}

std::string yaml_document_to_json(const std::string& path) {
  auto docs = yaml_file_to_json(path);
  if (docs.size() != 1)
    throw std::invalid_argument(path + ": expected one YAML document, got " +
                                std::to_string(docs.size()));
  return docs.front();
}

std::string merge_patch(std::string_view document, std::string_view patch) {
  rapidjson::Document doc = parse(document);
  const rapidjson::Document p = parse(patch);
  merge(doc, p, doc.GetAllocator());
  return write(doc);
}

bool json_contains(std::string_view whole, std::string_view part, std::string* difference) {
  const rapidjson::Document w = parse(whole);
  const rapidjson::Document p = parse(part);
  return contains(w, p, "", difference);
}

std::vector<std::string> files_in(const std::string& dir, std::string_view suffix) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr)
    throw std::invalid_argument("cannot open " + dir);
  while (const dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix.data(), suffix.size()) == 0)
      names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace gpu_partitioner::protocol::testing
