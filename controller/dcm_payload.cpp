#include "controller/dcm_payload.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

namespace gpu_partitioner::controller {

namespace {

bool parse_object(const std::string& text, rapidjson::Document& doc) {
  doc.Parse(text.c_str(), text.size());
  return !doc.HasParseError() && doc.IsObject();
}

} // namespace

bool dcm_config_has(const std::string& config_json, const std::string& name,
                    const std::string& profile_json) {
  rapidjson::Document config, profile;
  if (!parse_object(config_json, config) || !parse_object(profile_json, profile))
    return false;
  auto profiles = config.FindMember("gpu-config-profiles");
  if (profiles == config.MemberEnd() || !profiles->value.IsObject())
    return false;
  auto it = profiles->value.FindMember(name.c_str());
  // rapidjson's == compares objects member by member regardless of order.
  return it != profiles->value.MemberEnd() && it->value == profile;
}

std::optional<std::string> dcm_config_with(const std::string& config_json, const std::string& name,
                                           const std::string& profile_json) {
  rapidjson::Document config, profile;
  if (!parse_object(config_json.empty() ? std::string("{}") : config_json, config) ||
      !parse_object(profile_json, profile))
    return std::nullopt;
  auto& alloc = config.GetAllocator();
  auto profiles = config.FindMember("gpu-config-profiles");
  if (profiles == config.MemberEnd()) {
    config.AddMember("gpu-config-profiles", rapidjson::Value(rapidjson::kObjectType), alloc);
    profiles = config.FindMember("gpu-config-profiles");
  } else if (!profiles->value.IsObject()) {
    return std::nullopt;
  }
  rapidjson::Value copy(profile, alloc);
  if (auto it = profiles->value.FindMember(name.c_str()); it != profiles->value.MemberEnd())
    it->value = copy;
  else
    profiles->value.AddMember(rapidjson::Value(name.c_str(), alloc), copy, alloc);
  rapidjson::StringBuffer buffer;
  // Indented, as people edit this ConfigMap by hand too.
  rapidjson::PrettyWriter<rapidjson::StringBuffer> writer(buffer);
  writer.SetIndent(' ', 2);
  config.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::optional<std::string> payload_problem(const std::string& profile_json) {
  rapidjson::Document doc;
  doc.Parse(profile_json.c_str(), profile_json.size());
  if (doc.HasParseError())
    return std::string("profile.json is not valid JSON: ") +
           rapidjson::GetParseError_En(doc.GetParseError()) + " at offset " +
           std::to_string(doc.GetErrorOffset());
  if (!doc.IsObject())
    return std::string("profile.json is not a JSON object");
  auto profiles = doc.FindMember("profiles");
  if (profiles == doc.MemberEnd() || !profiles->value.IsArray() || profiles->value.Empty())
    return std::string("profile.json has no \"profiles\" list");
  return std::nullopt;
}

} // namespace gpu_partitioner::controller
