#include "tools/simulator/dcm_config.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <cctype>
#include <cstdint>
#include <set>

namespace gpu_partitioner::sim {

int partitions_per_gpu(const std::string& compute) {
  if (compute == "SPX")
    return 1;
  if (compute == "DPX")
    return 2;
  if (compute == "QPX")
    return 4;
  if (compute == "CPX")
    return 8;
  return 0;
}

int memory_partitions(const std::string& memory) {
  if (memory == "NPS1")
    return 1;
  if (memory == "NPS2")
    return 2;
  if (memory == "NPS4")
    return 4;
  return 0;
}

bool mode_supported(const std::string& compute, const std::string& memory) {
  if (memory == "NPS1")
    return partitions_per_gpu(compute) > 0;
  if (memory == "NPS2")
    return compute == "DPX";
  if (memory == "NPS4")
    return compute == "QPX" || compute == "CPX";
  return false;
}

namespace {

using rapidjson::Value;

// Go's encoding/json: the member whose name equals the field's tag, else one equal to it
// ignoring case. The last such member wins, as each one overwrites the field in turn.
const Value* member(const Value& object, const char* tag) {
  const Value* found = nullptr;
  const std::string want(tag);
  for (const auto& m : object.GetObject()) {
    const std::string name(m.name.GetString(), m.name.GetStringLength());
    bool same = name.size() == want.size();
    for (std::size_t i = 0; same && i < name.size(); ++i)
      same = std::tolower(static_cast<unsigned char>(name[i])) ==
             std::tolower(static_cast<unsigned char>(want[i]));
    if (same)
      found = &m.value;
  }
  return found;
}

// A member of Go type uint32: a JSON integer from 0 to 2^32-1 (a string, a negative or a
// fractional number is an UnmarshalTypeError), or null (zero).
bool read_uint32(const Value* v, int& into, bool& given, std::string& problem,
                 const std::string& where) {
  given = v != nullptr && !v->IsNull();
  if (!given)
    return true;
  if (!v->IsUint() || v->GetUint() > INT32_MAX) {
    problem = "json: cannot unmarshal " + where + " into Go value of type uint32";
    return false;
  }
  into = static_cast<int>(v->GetUint());
  return true;
}

bool read_string(const Value* v, std::string& into, std::string& problem,
                 const std::string& where) {
  if (v == nullptr || v->IsNull())
    return true;
  if (!v->IsString()) {
    problem = "json: cannot unmarshal " + where + " into Go value of type string";
    return false;
  }
  into.assign(v->GetString(), v->GetStringLength());
  return true;
}

bool read_profile(const Value& v, dcm_profile& out, std::string& problem,
                  const std::string& where) {
  if (v.IsNull())
    return true;
  if (!v.IsObject()) {
    problem = "json: cannot unmarshal " + where + " into Go value of type GPUConfigProfile";
    return false;
  }
  if (const Value* skipped = member(v, "skippedGPUs"); skipped && !skipped->IsNull()) {
    if (!skipped->IsObject()) {
      problem =
          "json: cannot unmarshal " + where + ".skippedGPUs into Go value of type SkippedGPUs";
      return false;
    }
    if (const Value* ids = member(*skipped, "ids"); ids && !ids->IsNull()) {
      if (!ids->IsArray()) {
        problem =
            "json: cannot unmarshal " + where + ".skippedGPUs.ids into Go value of type []uint32";
        return false;
      }
      for (const auto& id : ids->GetArray()) {
        int n = 0;
        bool given = false;
        if (!read_uint32(&id, n, given, problem, where + ".skippedGPUs.ids"))
          return false;
        out.skipped_gpus.push_back(n);
      }
    }
  }
  if (const Value* groups = member(v, "profiles"); groups && !groups->IsNull()) {
    if (!groups->IsArray()) {
      problem =
          "json: cannot unmarshal " + where + ".profiles into Go value of type []ProfileConfig";
      return false;
    }
    for (const auto& g : groups->GetArray()) {
      const std::string at = where + ".profiles";
      if (g.IsNull())
        continue;
      if (!g.IsObject()) {
        problem = "json: cannot unmarshal " + at + " into Go value of type ProfileConfig";
        return false;
      }
      gpu_group group;
      if (!read_string(member(g, "computePartition"), group.compute, problem,
                       at + ".computePartition") ||
          !read_string(member(g, "memoryPartition"), group.memory, problem,
                       at + ".memoryPartition") ||
          !read_uint32(member(g, "numGPUsAssigned"), group.gpus, group.count_given, problem,
                       at + ".numGPUsAssigned"))
        return false;
      out.groups.push_back(group);
    }
  }
  return true;
}

bool parse_document(const std::string& text, rapidjson::Document& doc, dcm_failure& error,
                    const char* what) {
  doc.Parse<rapidjson::kParseIterativeFlag>(text.c_str(), text.size());
  if (doc.HasParseError()) {
    error = {"InvalidJSONInConfigMap", std::string(what) + " is not valid JSON: " +
                                           rapidjson::GetParseError_En(doc.GetParseError()) +
                                           " at offset " + std::to_string(doc.GetErrorOffset())};
    return false;
  }
  return true;
}

} // namespace

std::optional<dcm_profile> parse_dcm_profile(const std::string& text, dcm_failure& error) {
  rapidjson::Document doc;
  if (!parse_document(text, doc, error, "profile"))
    return std::nullopt;
  dcm_profile profile;
  std::string problem;
  if (!read_profile(doc, profile, problem, "profile")) {
    error = {"InvalidJSONInConfigMap", problem};
    return std::nullopt;
  }
  return profile;
}

std::optional<dcm_config> parse_dcm_config(const std::string& text, dcm_failure& error,
                                           bool* not_json) {
  rapidjson::Document doc;
  const bool parsed = parse_document(text, doc, error, "config.json");
  if (not_json != nullptr)
    *not_json = !parsed;
  if (!parsed)
    return std::nullopt;
  dcm_config config;
  if (doc.IsNull())
    return config;
  if (!doc.IsObject()) {
    error = {"InvalidJSONInConfigMap",
             "json: cannot unmarshal config.json into Go value of type GPUConfigProfiles"};
    return std::nullopt;
  }
  if (const Value* profiles = member(doc, "gpu-config-profiles"); profiles && !profiles->IsNull()) {
    if (!profiles->IsObject()) {
      error = {"InvalidJSONInConfigMap", "json: cannot unmarshal gpu-config-profiles into Go "
                                         "value of type map[string]*GPUConfigProfile"};
      return std::nullopt;
    }
    for (const auto& [name, value] : profiles->GetObject()) {
      dcm_profile p;
      std::string problem;
      const std::string key(name.GetString(), name.GetStringLength());
      if (!read_profile(value, p, problem, "gpu-config-profiles." + key)) {
        error = {"InvalidJSONInConfigMap", problem};
        return std::nullopt;
      }
      config.profiles[key] = std::move(p);
    }
  }
  if (const Value* services = member(doc, "gpuClientSystemdServices");
      services && !services->IsNull()) {
    const Value* names = services->IsObject() ? member(*services, "names") : nullptr;
    if (!services->IsObject() || (names && !names->IsNull() && !names->IsArray())) {
      error = {"InvalidJSONInConfigMap", "json: cannot unmarshal gpuClientSystemdServices into "
                                         "Go value of type GPUServiceList"};
      return std::nullopt;
    }
    if (names && names->IsArray())
      for (const auto& n : names->GetArray()) {
        std::string s;
        std::string problem;
        if (!read_string(&n, s, problem, "gpuClientSystemdServices.names")) {
          error = {"InvalidJSONInConfigMap", problem};
          return std::nullopt;
        }
        config.host_services.push_back(s);
      }
  }
  return config;
}

std::optional<dcm_failure> validate_profile(const dcm_profile& profile, int gpu_count,
                                            dcm_version version) {
  if (profile.groups.empty())
    return dcm_failure{"InvalidProfileInfo", "the profile assigns no GPUs"};
  int assigned = 0;
  int open = 0; // groups without a count, which newer DCM gives the rest
  std::set<std::string> memory;
  for (const auto& g : profile.groups) {
    if (partitions_per_gpu(g.compute) == 0)
      return dcm_failure{"InvalidProfileInfo",
                         "computePartition \"" + g.compute + "\" is not one of SPX, DPX, QPX, CPX"};
    if (memory_partitions(g.memory) == 0)
      return dcm_failure{"InvalidProfileInfo",
                         "memoryPartition \"" + g.memory + "\" is not one of NPS1, NPS2, NPS4"};
    if (!g.count_given && newer_dcm(version))
      ++open;
    else
      assigned += g.gpus;
    memory.insert(g.memory);
  }
  if (memory.size() > 1)
    return dcm_failure{"InvalidProfileInfo", "a profile may use only one memory partition mode"};
  const int skipped = static_cast<int>(profile.skipped_gpus.size());
  if (open > 1)
    return dcm_failure{"InvalidProfileInfo", "only one group may omit numGPUsAssigned"};
  if (open == 1 ? assigned + skipped >= gpu_count : assigned + skipped != gpu_count)
    return dcm_failure{"InvalidProfileInfo", "numGPUsAssigned (" + std::to_string(assigned) +
                                                 ") plus skipped GPUs (" + std::to_string(skipped) +
                                                 ") must equal the node's GPU count (" +
                                                 std::to_string(gpu_count) + ")"};
  return std::nullopt;
}

std::vector<std::string> apply_profile(const dcm_profile& profile,
                                       const std::vector<std::string>& current,
                                       dcm_version version) {
  std::vector<std::string> out = current;
  const std::set<int> skipped(profile.skipped_gpus.begin(), profile.skipped_gpus.end());
  int assigned = 0;
  for (const auto& g : profile.groups)
    if (g.count_given || !newer_dcm(version))
      assigned += g.gpus;
  const int rest = static_cast<int>(current.size()) - static_cast<int>(skipped.size()) - assigned;
  std::size_t gpu = 0;
  for (const auto& g : profile.groups) {
    int n = g.count_given || !newer_dcm(version) ? g.gpus : rest;
    for (; n > 0 && gpu < out.size(); ++gpu) {
      if (skipped.count(static_cast<int>(gpu)))
        continue;
      out[gpu] = g.compute + "/" + g.memory;
      --n;
    }
  }
  return out;
}

} // namespace gpu_partitioner::sim
