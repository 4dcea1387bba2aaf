#include "controller/dcm_payload.hpp"

#include "protocol/codec/quote.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <set>
#include <string_view>

namespace gpu_partitioner::controller {

namespace {

// Iterative parsing: a ConfigMap can hold a megabyte of '[' (the recursive parser ran
// out of stack on it).
void parse(const std::string& text, rapidjson::Document& doc) {
  doc.Parse<rapidjson::kParseIterativeFlag>(text.c_str(), text.size());
}

// Whether `v` nests at most `depth` levels; recurses no deeper than that.
bool within_depth(const rapidjson::Value& v, int depth) {
  if (!v.IsObject() && !v.IsArray())
    return true;
  if (depth <= 0)
    return false;
  if (v.IsObject()) {
    for (const auto& m : v.GetObject())
      if (!within_depth(m.value, depth - 1))
        return false;
  } else {
    for (const auto& item : v.GetArray())
      if (!within_depth(item, depth - 1))
        return false;
  }
  return true;
}

// The first key found twice in one object, at any level.
std::optional<std::string> duplicate_key(const rapidjson::Value& v) {
  if (v.IsObject()) {
    std::set<std::string_view> names;
    for (const auto& m : v.GetObject()) {
      if (!names.insert({m.name.GetString(), m.name.GetStringLength()}).second)
        return std::string(m.name.GetString(), m.name.GetStringLength());
      if (auto inner = duplicate_key(m.value))
        return inner;
    }
  } else if (v.IsArray()) {
    for (const auto& item : v.GetArray())
      if (auto inner = duplicate_key(item))
        return inner;
  }
  return std::nullopt;
}

// Whether some double in `v` (at any level) satisfies `pred`.
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

// Whether a number that is not a 64-bit integer occurs (RapidJSON reads those as
// doubles, not always back to the value it wrote).
bool has_double(const rapidjson::Value& v) {
  return any_double(v, [](double) { return true; });
}

// A number beyond a double's range: RapidJSON 1.1 reads it as infinity, which its writer
// cannot write (the text would end there); DCM's Go decoder refuses it in a field it reads.
bool has_infinity(const rapidjson::Value& v) {
  return any_double(v, [](double d) { return std::isinf(d); });
}

// What keeps `text` from being one JSON object read here as DCM's Go decoder reads it, in
// words; the parsed document in `doc`. A key twice in one object is refused: the operator's
// reader takes the first, Go's the last.
std::optional<std::string> object_problem(const std::string& text, rapidjson::Document& doc) {
  parse(text, doc);
  if (doc.HasParseError())
    return std::string("is not valid JSON: ") + rapidjson::GetParseError_En(doc.GetParseError()) +
           " at offset " + std::to_string(doc.GetErrorOffset());
  if (!doc.IsObject())
    return std::string("is not a JSON object");
  if (!within_depth(doc, dcm_json_max_depth))
    return "is nested deeper than " + std::to_string(dcm_json_max_depth) + " levels";
  if (auto key = duplicate_key(doc))
    return "has the key \"" + *key + "\" twice in one object";
  if (has_infinity(doc))
    return std::string("has a number too large for a 64-bit float");
  return std::nullopt;
}

bool parse_object(const std::string& text, rapidjson::Document& doc) {
  return !object_problem(text, doc);
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

std::optional<std::string> dcm_config_problem(const std::string& config_json) {
  rapidjson::Document config;
  if (auto problem = object_problem(config_json.empty() ? std::string("{}") : config_json, config))
    return problem;
  if (auto profiles = config.FindMember("gpu-config-profiles");
      profiles != config.MemberEnd() && !profiles->value.IsObject())
    return std::string("has gpu-config-profiles that is not an object");
  return std::nullopt;
}

bool dcm_config_names(const std::string& config_json, const std::string& name) {
  rapidjson::Document config;
  if (!parse_object(config_json, config))
    return false;
  auto profiles = config.FindMember("gpu-config-profiles");
  return profiles != config.MemberEnd() && profiles->value.IsObject() &&
         profiles->value.HasMember(name.c_str());
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
  if (!config.Accept(writer))
    return std::nullopt; // not reached: what was read can be written
  return std::string(buffer.GetString(), buffer.GetSize());
}

namespace {

// Partitions per GPU of a compute mode or a memory mode; 0 if unknown.
int compute_partitions(const std::string& mode) {
  static const std::pair<const char*, int> modes[] = {
      {"SPX", 1}, {"DPX", 2}, {"QPX", 4}, {"CPX", 8}};
  for (const auto& [name, n] : modes)
    if (mode == name)
      return n;
  return 0;
}

int memory_partitions(const std::string& mode) {
  static const std::pair<const char*, int> modes[] = {
      {"NPS1", 1}, {"NPS2", 2}, {"NPS4", 4}, {"NPS8", 8}};
  for (const auto& [name, n] : modes)
    if (mode == name)
      return n;
  return 0;
}

std::string text_of(const rapidjson::Value& v) {
  if (v.IsString())
    return protocol::codec::quote(std::string_view(v.GetString(), v.GetStringLength()));
  return "a non-string";
}

} // namespace

std::optional<std::string> payload_problem(const std::string& profile_json) {
  rapidjson::Document doc;
  if (auto problem = object_problem(profile_json, doc))
    return "profile.json " + *problem;
  if (has_double(doc))
    return std::string("profile.json has a number that is not a whole number (DCM's profiles "
                       "count partitions and name GPUs by index)");
  // DCM's own checks that do not depend on the node (the GPU count does): a profile
  // that fails them would fail only after the node was drained.
  if (auto skipped = doc.FindMember("skippedGPUs"); skipped != doc.MemberEnd()) {
    if (!skipped->value.IsObject())
      return std::string("profile.json: skippedGPUs is not an object");
    if (auto ids = skipped->value.FindMember("ids"); ids != skipped->value.MemberEnd()) {
      if (!ids->value.IsArray())
        return std::string("profile.json: skippedGPUs.ids is not a list");
      for (const auto& id : ids->value.GetArray())
        if (!id.IsInt() || id.GetInt() < 0)
          return std::string("profile.json: skippedGPUs.ids holds something other than GPU "
                             "indices");
    }
  }
  auto profiles = doc.FindMember("profiles");
  if (profiles == doc.MemberEnd() || !profiles->value.IsArray() || profiles->value.Empty())
    return std::string("profile.json has no \"profiles\" list");
  std::string memory_mode;
  int omitted_counts = 0;
  for (rapidjson::SizeType i = 0; i < profiles->value.Size(); ++i) {
    const auto& g = profiles->value[i];
    const std::string at = "profile.json: profiles[" + std::to_string(i) + "]";
    if (!g.IsObject())
      return at + " is not an object";
    auto compute = g.FindMember("computePartition");
    auto memory = g.FindMember("memoryPartition");
    auto count = g.FindMember("numGPUsAssigned");
    if (compute == g.MemberEnd() || memory == g.MemberEnd())
      return at + " needs computePartition and memoryPartition";
    // DCM from 1.5 gives one group without numGPUsAssigned the GPUs the others leave
    // (AMD's own default-dcm-config relies on it); two such groups are ambiguous.
    if (count == g.MemberEnd() && ++omitted_counts > 1)
      return at + " omits numGPUsAssigned too: only one group may take the remaining GPUs";
    const std::string c = compute->value.IsString() ? compute->value.GetString() : "";
    const std::string m = memory->value.IsString() ? memory->value.GetString() : "";
    if (compute_partitions(c) == 0)
      return at + ".computePartition " + text_of(compute->value) +
             " is not one of SPX, DPX, QPX, CPX";
    if (memory_partitions(m) == 0)
      return at + ".memoryPartition " + text_of(memory->value) +
             " is not one of NPS1, NPS2, NPS4, NPS8";
    if (memory_partitions(m) > compute_partitions(c))
      return at + ": " + m + " is not possible with " + c +
             " (a GPU has no more memory partitions than compute partitions)";
    if (count != g.MemberEnd() && (!count->value.IsInt() || count->value.GetInt() < 0))
      return at + ".numGPUsAssigned is not a whole number of GPUs";
    if (!memory_mode.empty() && memory_mode != m)
      return at + ": a profile uses one memory partition mode, not " + memory_mode + " and " + m;
    memory_mode = m;
  }
  return std::nullopt;
}

std::optional<std::string> dcm_refusal(const std::string& profile_json,
                                       const std::string& device_id,
                                       const std::optional<dcm_version>& version) {
  if (payload_problem(profile_json))
    return std::nullopt;
  rapidjson::Document doc;
  parse(profile_json, doc);
  const auto& groups = doc["profiles"];
  // ROCm's MI300X partitioning documentation and the amdgpu driver's checks.
  static const std::pair<const char*, const char*> mi300x[] = {
      {"SPX", "NPS1"}, {"DPX", "NPS1"}, {"DPX", "NPS2"}, {"QPX", "NPS1"},
      {"QPX", "NPS4"}, {"CPX", "NPS1"}, {"CPX", "NPS4"}};
  for (rapidjson::SizeType i = 0; i < groups.Size(); ++i) {
    const std::string at = "profiles[" + std::to_string(i) + "]";
    const std::string c = groups[i]["computePartition"].GetString();
    const std::string m = groups[i]["memoryPartition"].GetString();
    if (device_id == "74a1" &&
        std::none_of(std::begin(mi300x), std::end(mi300x),
                     [&](const auto& mode) { return c == mode.first && m == mode.second; }))
      return at + ": " + c + " with " + m +
             " is a mode the kernel refuses on MI300X (device id 74a1, which takes SPX+NPS1, "
             "DPX+NPS1|NPS2, QPX+NPS1|NPS4, CPX+NPS1|NPS4): DCM 1.3 retries it for 30 "
             "minutes, having set the memory mode first; newer DCM refuses it";
    if (version && *version <= last_public_dcm && !groups[i].HasMember("numGPUsAssigned"))
      return at + " omits numGPUsAssigned, which DCM " + version->text() +
             " reads as 0 GPUs and refuses (InvalidProfileInfo); give every group its count";
  }
  return std::nullopt;
}

bool payload_mixes_styles(const std::string& profile_json) {
  if (payload_problem(profile_json))
    return false;
  rapidjson::Document doc;
  parse(profile_json, doc);
  std::set<std::string> styles;
  for (const auto& g : doc["profiles"].GetArray())
    styles.insert(std::string(g["computePartition"].GetString()) + "_" +
                  g["memoryPartition"].GetString());
  return styles.size() > 1;
}

std::optional<std::string> payload_style(const std::string& profile_json) {
  if (payload_problem(profile_json))
    return std::nullopt;
  rapidjson::Document doc;
  parse(profile_json, doc);
  if (auto skipped = doc.FindMember("skippedGPUs"); skipped != doc.MemberEnd())
    if (auto ids = skipped->value.FindMember("ids");
        ids != skipped->value.MemberEnd() && !ids->value.Empty())
      return std::nullopt; // skipped GPUs keep whatever mode they are in
  std::string style;
  for (const auto& g : doc["profiles"].GetArray()) {
    std::string one =
        std::string(g["computePartition"].GetString()) + "_" + g["memoryPartition"].GetString();
    for (auto& c : one)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!style.empty() && style != one)
      return std::nullopt;
    style = one;
  }
  return style;
}

} // namespace gpu_partitioner::controller
