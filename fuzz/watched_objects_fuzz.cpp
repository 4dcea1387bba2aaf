// The Watcher's decoders of built-in objects (actors/decode.hpp): Nodes, Pods, PDBs,
// ConfigMaps, DCM's Events, ResourceSlices, ResourceClaims and DeviceTaintRules, each
// read from JSON any node, tenant or server may have written.
//
// Input: one byte picks the decoder (its value modulo 8; the seeds use '0' to '7'), the
// rest is the object, parsed as the watch stream parses it. Checks: no decoder crashes or
// recurses with the input's depth; the name decoded is metadata.name where that is a
// string; an Event's profile is the SelectedProfile of its message where the message is a
// JSON object with that string and a GPUStatus that is null or a list (a GPU answer; AMD AI
// NIC Events of the same pod have none), and nothing otherwise.

#include "actors/decode.hpp"
#include "fuzz/check.hpp"

#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

namespace ga = gpu_partitioner::actors;

// metadata.name when it is a string; nullptr otherwise.
const char* name_of(const rapidjson::Value& v) {
  if (!v.HasMember("metadata") || !v["metadata"].IsObject())
    return nullptr;
  const auto& meta = v["metadata"];
  if (!meta.HasMember("name") || !meta["name"].IsString())
    return nullptr;
  return meta["name"].GetString();
}

// What DCM's Event answers, read independently: SelectedProfile of a JSON object message
// with a GPUStatus.
std::string selected_profile(const rapidjson::Value& event) {
  if (!event.HasMember("message") || !event["message"].IsString())
    return {};
  const auto& message = event["message"];
  rapidjson::Document status;
  status.Parse<rapidjson::kParseIterativeFlag>(message.GetString(), message.GetStringLength());
  if (status.HasParseError() || !status.IsObject() || !status.HasMember("SelectedProfile") ||
      !status["SelectedProfile"].IsString() || !status.HasMember("GPUStatus") ||
      !(status["GPUStatus"].IsNull() || status["GPUStatus"].IsArray()))
    return {};
  return std::string(status["SelectedProfile"].GetString(),
                     status["SelectedProfile"].GetStringLength());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1)
    return 0;
  const int which = data[0] % 8;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(text.c_str(), text.size());
  if (doc.HasParseError() || !doc.IsObject())
    return 0;
  const char* name = name_of(doc);
  auto same_name = [&](const std::string& decoded) {
    FUZZ_CHECK(name == nullptr || decoded == name,
               "decoded name " + fuzz::shown(decoded) + " is not metadata.name");
  };
  switch (which) {
  case 0:
    same_name(ga::decode_node(doc).name);
    break;
  case 1:
    same_name(ga::decode_pod(doc).name);
    break;
  case 2:
    same_name(ga::decode_pdb(doc).name);
    break;
  case 3:
    (void)ga::decode_config_map_data(doc);
    break;
  case 4: {
    const auto e = ga::decode_dcm_event(doc);
    const auto want = selected_profile(doc);
    FUZZ_CHECK(e.info.profile == want, "profile " + fuzz::shown(e.info.profile) +
                                           ", the message says " + fuzz::shown(want));
    break;
  }
  case 5:
    same_name(ga::decode_resource_slice(doc).name);
    break;
  case 6:
    same_name(ga::decode_resource_claim(doc).name);
    break;
  case 7:
    same_name(ga::decode_device_taint_rule(doc).name);
    break;
  }
  return 0;
}
