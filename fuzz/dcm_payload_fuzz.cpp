// DCM's config and a profile's payload (controller/dcm_payload): any text is judged
// without crashing; every object config can take an object profile unless the result
// would nest too deeply or either holds a key twice in one object or a number beyond a
// double's range; a config with a valid payload set holds it, and setting it again
// changes nothing (unless a number in it is not a 64-bit integer: see dcm_payload.hpp).
//
// Input: "NAME\n--\nCONFIG\n--\nPROFILE" (the separator cannot occur in JSON text).

#include "controller/dcm_payload.hpp"
#include "fuzz/check.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

namespace {

namespace gc = gpu_partitioner::controller;

bool is_object(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(text.c_str(), text.size());
  return !doc.HasParseError() && doc.IsObject();
}

// How deeply valid JSON text nests, without recursion. RapidJSON takes a NUL byte for
// the end of the text, and so does this.
int depth_of(const std::string& json) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : json) {
    if (c == '\0')
      break;
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

// Whether some double in a document (nested at most dcm_json_max_depth levels)
// satisfies `pred`.
template <class Pred>
bool any_double(const rapidjson::Value& v, const Pred& pred) {
  if (v.IsDouble())
    return pred(v.GetDouble());
  if (v.IsObject()) {
    for (const auto& m : v.GetObject())
      if (any_double(m.value, pred))
        return true;
  } else if (v.IsArray()) {
    for (const auto& item : v.GetArray())
      if (any_double(item, pred))
        return true;
  }
  return false;
}

bool has_double(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(text.c_str(), text.size());
  return !doc.HasParseError() && any_double(doc, [](double) { return true; });
}

// Whether a document holds a number beyond a double's range (read as infinity).
bool has_infinity(const std::string& text) {
  if (depth_of(text) > gc::dcm_json_max_depth)
    return false;
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(text.c_str(), text.size());
  return !doc.HasParseError() && any_double(doc, [](double d) { return std::isinf(d); });
}

bool has_non_object_profiles(const std::string& config) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(config.c_str(), config.size());
  if (doc.HasParseError() || !doc.IsObject())
    return false;
  auto it = doc.FindMember("gpu-config-profiles");
  return it != doc.MemberEnd() && !it->value.IsObject();
}

// Whether an object holds a key twice, at any level (a document nested at most
// dcm_json_max_depth levels).
bool duplicated(const rapidjson::Value& v) {
  if (v.IsObject()) {
    std::set<std::string> names;
    for (const auto& m : v.GetObject())
      if (!names.insert(std::string(m.name.GetString(), m.name.GetStringLength())).second ||
          duplicated(m.value))
        return true;
  } else if (v.IsArray()) {
    for (const auto& item : v.GetArray())
      if (duplicated(item))
        return true;
  }
  return false;
}

bool has_duplicate_key(const std::string& text) {
  if (depth_of(text) > gc::dcm_json_max_depth)
    return false;
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(text.c_str(), text.size());
  return !doc.HasParseError() && duplicated(doc);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::string separator = "\n--\n";
  const auto first = input.find(separator);
  if (first == std::string::npos)
    return 0;
  const auto second = input.find(separator, first + separator.size());
  if (second == std::string::npos)
    return 0;
  const std::string name = input.substr(0, first);
  const std::string config =
      input.substr(first + separator.size(), second - first - separator.size());
  const std::string profile = input.substr(second + separator.size());

  const auto problem = gc::payload_problem(profile);
  if (!problem)
    FUZZ_CHECK(is_object(profile), "a payload that is not an object is accepted");
  else
    FUZZ_CHECK(!problem->empty(), "a refused payload without a reason");

  (void)gc::dcm_config_has(config, name, profile);
  const auto updated = gc::dcm_config_with(config, name, profile);
  // The profile lands under gpu-config-profiles.NAME: two levels down.
  const bool can = (config.empty() || is_object(config)) && is_object(profile) &&
                   !has_non_object_profiles(config) && !has_duplicate_key(config) &&
                   !has_duplicate_key(profile) && !has_infinity(config) && !has_infinity(profile) &&
                   std::max(depth_of(config), 2 + depth_of(profile)) <= gc::dcm_json_max_depth;
  FUZZ_CHECK(updated.has_value() == can, std::string(can ? "refused" : "accepted") +
                                             ":\n  config: " + fuzz::shown(config) +
                                             "\n  profile: " + fuzz::shown(profile));
  if (!updated)
    return 0;
  // A payload with a problem never gets this far (the node's preflight refuses it).
  FUZZ_CHECK(problem || gc::dcm_config_has(*updated, name, profile),
             "the updated config does not hold the profile:\n  " + fuzz::shown(*updated));
  const auto again = gc::dcm_config_with(*updated, name, profile);
  FUZZ_CHECK(again.has_value(), "the updated config cannot take the profile again");
  FUZZ_CHECK(*again == *updated || has_double(*updated),
             "setting the profile twice changes the config:\n  " + fuzz::shown(*updated) + "\n  " +
                 fuzz::shown(*again));
  return 0;
}
