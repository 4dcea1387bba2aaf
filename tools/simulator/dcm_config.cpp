#include "tools/simulator/dcm_config.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

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

namespace {

bool read_profile(const rapidjson::Value& v, dcm_profile& out, std::string& problem) {
  if (!v.IsObject()) {
    problem = "a profile must be a JSON object";
    return false;
  }
  if (auto skipped = v.FindMember("skippedGPUs"); skipped != v.MemberEnd()) {
    if (!skipped->value.IsObject()) {
      problem = "skippedGPUs must be an object";
      return false;
    }
    if (auto ids = skipped->value.FindMember("ids"); ids != skipped->value.MemberEnd()) {
      if (!ids->value.IsArray()) {
        problem = "skippedGPUs.ids must be a list";
        return false;
      }
      for (const auto& id : ids->value.GetArray()) {
        if (!id.IsInt()) {
          problem = "skippedGPUs.ids must hold GPU indices";
          return false;
        }
        out.skipped_gpus.push_back(id.GetInt());
      }
    }
  }
  auto groups = v.FindMember("profiles");
  if (groups == v.MemberEnd() || !groups->value.IsArray()) {
    problem = "profiles must be a list";
    return false;
  }
  for (const auto& g : groups->value.GetArray()) {
    if (!g.IsObject()) {
      problem = "each entry of profiles must be an object";
      return false;
    }
    gpu_group group;
    auto str = [&](const char* key, std::string& into) {
      auto it = g.FindMember(key);
      if (it == g.MemberEnd() || !it->value.IsString())
        return false;
      into = it->value.GetString();
      return true;
    };
    auto count = g.FindMember("numGPUsAssigned");
    if (!str("computePartition", group.compute) || !str("memoryPartition", group.memory) ||
        count == g.MemberEnd() || !count->value.IsInt()) {
      problem = "each entry of profiles needs computePartition, memoryPartition and "
                "numGPUsAssigned";
      return false;
    }
    group.gpus = count->value.GetInt();
    out.groups.push_back(group);
  }
  return true;
}

} // namespace

std::optional<dcm_profile> parse_dcm_profile(const std::string& text, dcm_failure& error) {
  rapidjson::Document doc;
  doc.Parse(text.c_str(), text.size());
  if (doc.HasParseError()) {
    error = {"InvalidJSONInConfigMap", std::string("profile is not valid JSON: ") +
                                           rapidjson::GetParseError_En(doc.GetParseError()) +
                                           " at offset " + std::to_string(doc.GetErrorOffset())};
    return std::nullopt;
  }
  dcm_profile profile;
  std::string problem;
  if (!read_profile(doc, profile, problem)) {
    error = {"InvalidProfileInfo", problem};
    return std::nullopt;
  }
  return profile;
}

std::optional<dcm_config> parse_dcm_config(const std::string& text, dcm_failure& error) {
  rapidjson::Document doc;
  doc.Parse(text.c_str(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    error = {"InvalidJSONInConfigMap",
             doc.HasParseError() ? std::string("config.json is not valid JSON: ") +
                                       rapidjson::GetParseError_En(doc.GetParseError()) +
                                       " at offset " + std::to_string(doc.GetErrorOffset())
                                 : std::string("config.json is not a JSON object")};
    return std::nullopt;
  }
  dcm_config config;
  auto profiles = doc.FindMember("gpu-config-profiles");
  if (profiles == doc.MemberEnd())
    return config;
  if (!profiles->value.IsObject()) {
    error = {"InvalidJSONInConfigMap", "gpu-config-profiles must be an object"};
    return std::nullopt;
  }
  for (const auto& [name, value] : profiles->value.GetObject()) {
    dcm_profile p;
    std::string problem;
    if (!read_profile(value, p, problem)) {
      error = {"InvalidJSONInConfigMap",
               std::string("profile ") + name.GetString() + ": " + problem};
      return std::nullopt;
    }
    config.profiles.emplace(name.GetString(), std::move(p));
  }
  return config;
}

std::optional<dcm_failure> validate_profile(const dcm_profile& profile, int gpu_count) {
  if (profile.groups.empty())
    return dcm_failure{"InvalidProfileInfo", "the profile assigns no GPUs"};
  int assigned = 0;
  std::set<std::string> memory;
  for (const auto& g : profile.groups) {
    if (partitions_per_gpu(g.compute) == 0)
      return dcm_failure{"InvalidProfileInfo",
                         "computePartition \"" + g.compute + "\" is not one of SPX, DPX, QPX, CPX"};
    if (memory_partitions(g.memory) == 0)
      return dcm_failure{"InvalidProfileInfo",
                         "memoryPartition \"" + g.memory + "\" is not one of NPS1, NPS2, NPS4"};
    // MI300X: NPS4 is validated only with CPX; in general a GPU cannot have more memory
    // partitions than compute partitions.
    if ((g.memory == "NPS4" && g.compute != "CPX") ||
        memory_partitions(g.memory) > partitions_per_gpu(g.compute))
      return dcm_failure{"InvalidProfileInfo",
                         g.memory + " is not supported with " + g.compute + " (NPS4 needs CPX)"};
    if (g.gpus < 0)
      return dcm_failure{"InvalidProfileInfo", "numGPUsAssigned must not be negative"};
    assigned += g.gpus;
    memory.insert(g.memory);
  }
  if (memory.size() > 1)
    return dcm_failure{"InvalidProfileInfo", "a profile may use only one memory partition mode"};
  const int total = assigned + static_cast<int>(profile.skipped_gpus.size());
  if (total != gpu_count)
    return dcm_failure{"InvalidProfileInfo",
                       "numGPUsAssigned (" + std::to_string(assigned) + ") plus skipped GPUs (" +
                           std::to_string(profile.skipped_gpus.size()) +
                           ") must equal the node's GPU count (" + std::to_string(gpu_count) + ")"};
  return std::nullopt;
}

int gpu_resources(const dcm_profile& profile) {
  int n = 0;
  for (const auto& g : profile.groups)
    n += g.gpus * partitions_per_gpu(g.compute);
  return n;
}

std::string compute_mode(const dcm_profile& profile) {
  return profile.groups.empty() ? std::string("SPX") : profile.groups.front().compute;
}

std::string memory_mode(const dcm_profile& profile) {
  return profile.groups.empty() ? std::string("NPS1") : profile.groups.front().memory;
}

} // namespace gpu_partitioner::sim
