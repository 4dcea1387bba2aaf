// DCM's config as the simulator reads it: config.json and single profiles parse as
// DCM's unmarshalling does (invalid JSON and non-object profiles are
// InvalidJSONInConfigMap), profiles validate as DCM validates them, and the device
// plugin's amd.com/gpu count follows the compute mode.
#include "tools/simulator/dcm_config.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace sim = gpu_partitioner::sim;
namespace bdata = boost::unit_test::data;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  BOOST_REQUIRE_MESSAGE(in.good(), "cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

sim::dcm_profile profile(std::vector<sim::gpu_group> groups, std::vector<int> skipped = {}) {
  sim::dcm_profile p;
  p.groups = std::move(groups);
  p.skipped_gpus = std::move(skipped);
  return p;
}

} // namespace

BOOST_AUTO_TEST_SUITE(parsing)

BOOST_AUTO_TEST_CASE(the_repos_dcm_config_parses_into_its_five_profiles) {
  sim::dcm_failure error;
  auto config = sim::parse_dcm_config(read_text("tools/simulator/dcm-config.json"), error);
  BOOST_REQUIRE_MESSAGE(config.has_value(), error.reason + ": " + error.message);
  BOOST_TEST(config->profiles.size() == 5u);
  for (const char* name : {"spx-nps1", "cpx-nps4", "cpx-nps1", "dpx-nps2", "qpx-nps1"})
    BOOST_TEST(config->profiles.count(name) == 1u, name);
  const auto& cpx = config->profiles.at("cpx-nps4");
  BOOST_TEST(cpx.skipped_gpus.empty());
  BOOST_REQUIRE(cpx.groups.size() == 1u);
  BOOST_TEST(cpx.groups[0].compute == "CPX");
  BOOST_TEST(cpx.groups[0].memory == "NPS4");
  BOOST_TEST(cpx.groups[0].gpus == 8);
  // Every shipped profile is valid for an 8-GPU MI300X node.
  for (const auto& [name, p] : config->profiles) {
    auto invalid = sim::validate_profile(p, 8);
    BOOST_TEST(!invalid.has_value(), name << ": " << (invalid ? invalid->message : ""));
  }
}

BOOST_AUTO_TEST_CASE(a_config_without_profiles_is_valid_and_empty) {
  sim::dcm_failure error;
  auto config = sim::parse_dcm_config(R"({"gpuClientSystemdServices":{"names":[]}})", error);
  BOOST_REQUIRE(config.has_value());
  BOOST_TEST(config->profiles.empty());
}

BOOST_AUTO_TEST_CASE(a_profile_with_skipped_gpus_keeps_their_ids) {
  sim::dcm_failure error;
  auto p = sim::parse_dcm_profile(
      R"({"skippedGPUs":{"ids":[6,7]},"profiles":[)"
      R"({"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":6}]})",
      error);
  BOOST_REQUIRE_MESSAGE(p.has_value(), error.message);
  BOOST_TEST(p->skipped_gpus == (std::vector<int>{6, 7}));
  BOOST_REQUIRE(p->groups.size() == 1u);
  BOOST_TEST(p->groups[0].gpus == 6);
}

BOOST_AUTO_TEST_CASE(invalid_json_is_InvalidJSONInConfigMap_with_the_offset) {
  sim::dcm_failure error;
  // The `]` at offset 30 is where a value was expected.
  const std::string text = R"({"gpu-config-profiles": {"x": ]})";
  auto config = sim::parse_dcm_config(text, error);
  BOOST_REQUIRE(!config.has_value());
  BOOST_TEST(error.reason == "InvalidJSONInConfigMap");
  BOOST_TEST(error.message.find("not valid JSON") != std::string::npos, error.message);
  BOOST_TEST(error.message.find("at offset 30") != std::string::npos, error.message);
}

BOOST_AUTO_TEST_CASE(a_config_that_is_not_an_object_is_InvalidJSONInConfigMap) {
  sim::dcm_failure error;
  BOOST_TEST(!sim::parse_dcm_config(R"(["cpx-nps4"])", error).has_value());
  BOOST_TEST(error.reason == "InvalidJSONInConfigMap");
}

BOOST_AUTO_TEST_CASE(gpu_config_profiles_that_is_not_an_object_is_InvalidJSONInConfigMap) {
  sim::dcm_failure error;
  BOOST_TEST(!sim::parse_dcm_config(R"({"gpu-config-profiles":[]})", error).has_value());
  BOOST_TEST(error.reason == "InvalidJSONInConfigMap");
}

BOOST_AUTO_TEST_CASE(one_non_object_profile_makes_the_whole_config_invalid) {
  sim::dcm_failure error;
  auto config = sim::parse_dcm_config(
      R"({"gpu-config-profiles":{"good":{"profiles":[{"computePartition":"SPX",)"
      R"("memoryPartition":"NPS1","numGPUsAssigned":8}]},"bad":"cpx"}})",
      error);
  BOOST_REQUIRE(!config.has_value());
  BOOST_TEST(error.reason == "InvalidJSONInConfigMap");
  BOOST_TEST(error.message.find("bad") != std::string::npos, error.message);
}

BOOST_AUTO_TEST_CASE(a_profile_entry_without_its_fields_makes_the_config_invalid) {
  sim::dcm_failure error;
  auto config = sim::parse_dcm_config(
      R"({"gpu-config-profiles":{"p":{"profiles":[{"computePartition":"CPX"}]}}})", error);
  BOOST_REQUIRE(!config.has_value());
  BOOST_TEST(error.reason == "InvalidJSONInConfigMap");
  BOOST_TEST(error.message.find("numGPUsAssigned") != std::string::npos, error.message);
}

BOOST_AUTO_TEST_CASE(a_single_profile_that_is_not_an_object_is_InvalidProfileInfo) {
  sim::dcm_failure error;
  BOOST_TEST(!sim::parse_dcm_profile("[1,2]", error).has_value());
  BOOST_TEST(error.reason == "InvalidProfileInfo");
  BOOST_TEST(!sim::parse_dcm_profile(R"({"profiles":"CPX"})", error).has_value());
  BOOST_TEST(error.reason == "InvalidProfileInfo");
  BOOST_TEST(
      !sim::parse_dcm_profile(R"({"skippedGPUs":{"ids":["a"]},"profiles":[]})", error).has_value());
  BOOST_TEST(error.reason == "InvalidProfileInfo");
}

BOOST_AUTO_TEST_CASE(a_single_profile_that_is_not_json_is_InvalidJSONInConfigMap) {
  sim::dcm_failure error;
  BOOST_TEST(!sim::parse_dcm_profile("{\"profiles\": [", error).has_value());
  BOOST_TEST(error.reason == "InvalidJSONInConfigMap");
  BOOST_TEST(error.message.find("at offset") != std::string::npos, error.message);
}

BOOST_AUTO_TEST_SUITE_END()

// -- validation --

namespace {

struct validation_row {
  const char* name;
  sim::dcm_profile profile;
  int gpu_count;
  /// Empty: valid.
  const char* problem;
};

std::ostream& operator<<(std::ostream& os, const validation_row& r) {
  return os << r.name;
}

const validation_row validation_rows[] = {
    // -- refused --
    {"seven_assigned_of_eight", profile({{"CPX", "NPS4", 7}}), 8, "must equal the node's GPU"},
    {"nine_assigned_of_eight", profile({{"SPX", "NPS1", 9}}), 8, "must equal the node's GPU"},
    {"eight_assigned_plus_one_skipped", profile({{"SPX", "NPS1", 8}}, {7}), 8,
     "must equal the node's GPU"},
    {"eight_assigned_on_a_four_gpu_node", profile({{"SPX", "NPS1", 8}}), 4,
     "must equal the node's GPU"},
    {"unknown_compute", profile({{"OPX", "NPS1", 8}}), 8, "computePartition \"OPX\""},
    {"lowercase_compute", profile({{"cpx", "NPS4", 8}}), 8, "computePartition \"cpx\""},
    {"unknown_memory", profile({{"SPX", "NPS3", 8}}), 8, "memoryPartition \"NPS3\""},
    {"nps8_on_mi300x", profile({{"CPX", "NPS8", 8}}), 8, "memoryPartition \"NPS8\""},
    {"nps4_with_spx", profile({{"SPX", "NPS4", 8}}), 8, "NPS4 is not supported with SPX"},
    {"nps4_with_dpx", profile({{"DPX", "NPS4", 8}}), 8, "NPS4 is not supported with DPX"},
    {"nps4_with_qpx", profile({{"QPX", "NPS4", 8}}), 8, "NPS4 is not supported with QPX"},
    {"nps2_with_spx", profile({{"SPX", "NPS2", 8}}), 8, "NPS2 is not supported with SPX"},
    {"mixed_memory_modes", profile({{"CPX", "NPS4", 4}, {"CPX", "NPS1", 4}}), 8,
     "only one memory partition mode"},
    {"negative_count_summing_to_eight", profile({{"CPX", "NPS4", -1}, {"CPX", "NPS4", 9}}), 8,
     "must not be negative"},
    {"empty_profile", profile({}), 8, "assigns no GPUs"},
    {"empty_profile_with_all_skipped", profile({}, {0, 1, 2, 3, 4, 5, 6, 7}), 8, "assigns no GPUs"},
    // -- accepted --
    {"cpx_nps4", profile({{"CPX", "NPS4", 8}}), 8, ""},
    {"spx_nps1", profile({{"SPX", "NPS1", 8}}), 8, ""},
    {"dpx_nps2", profile({{"DPX", "NPS2", 8}}), 8, ""},
    {"qpx_nps1", profile({{"QPX", "NPS1", 8}}), 8, ""},
    {"cpx_nps1", profile({{"CPX", "NPS1", 8}}), 8, ""},
    {"qpx_nps2", profile({{"QPX", "NPS2", 8}}), 8, ""},
    {"skipped_gpus_make_up_the_count", profile({{"CPX", "NPS4", 6}}, {6, 7}), 8, ""},
    {"two_compute_modes_one_memory_mode", profile({{"CPX", "NPS1", 4}, {"SPX", "NPS1", 4}}), 8, ""},
    {"four_gpu_node", profile({{"CPX", "NPS4", 4}}), 4, ""},
};

} // namespace

BOOST_AUTO_TEST_SUITE(validation)

BOOST_DATA_TEST_CASE(profiles_validate_as_dcm_validates_them, bdata::make(validation_rows), row) {
  auto failure = sim::validate_profile(row.profile, row.gpu_count);
  const std::string problem = row.problem;
  if (problem.empty()) {
    BOOST_TEST(!failure.has_value(), (failure ? failure->message : std::string()));
  } else {
    BOOST_REQUIRE(failure.has_value());
    BOOST_TEST(failure->reason == "InvalidProfileInfo");
    BOOST_TEST(failure->message.find(problem) != std::string::npos, failure->message);
  }
}

BOOST_AUTO_TEST_SUITE_END()

// -- what the device plugin reports --

namespace {

struct resource_row {
  const char* compute;
  const char* memory;
  int partitions;
  int resources_for_8;
};

std::ostream& operator<<(std::ostream& os, const resource_row& r) {
  return os << r.compute << "/" << r.memory;
}

const resource_row resource_rows[] = {
    {"SPX", "NPS1", 1, 8},  {"DPX", "NPS2", 2, 16}, {"QPX", "NPS1", 4, 32},
    {"CPX", "NPS4", 8, 64}, {"CPX", "NPS1", 8, 64},
};

} // namespace

BOOST_AUTO_TEST_SUITE(resources)

BOOST_DATA_TEST_CASE(eight_gpus_report_gpus_times_partitions, bdata::make(resource_rows), row) {
  const auto p = profile({{row.compute, row.memory, 8}});
  BOOST_TEST(sim::partitions_per_gpu(row.compute) == row.partitions);
  BOOST_TEST(sim::gpu_resources(p) == row.resources_for_8);
  BOOST_TEST(sim::compute_mode(p) == row.compute);
  BOOST_TEST(sim::memory_mode(p) == row.memory);
}

BOOST_AUTO_TEST_CASE(skipped_gpus_and_mixed_groups_count_only_assigned_partitions) {
  BOOST_TEST(sim::gpu_resources(profile({{"CPX", "NPS4", 6}}, {6, 7})) == 48);
  BOOST_TEST(sim::gpu_resources(profile({{"CPX", "NPS1", 4}, {"SPX", "NPS1", 4}})) == 36);
}

BOOST_AUTO_TEST_CASE(unknown_modes_have_no_partitions) {
  BOOST_TEST(sim::partitions_per_gpu("OPX") == 0);
  BOOST_TEST(sim::memory_partitions("NPS3") == 0);
  BOOST_TEST(sim::memory_partitions("NPS1") == 1);
  BOOST_TEST(sim::memory_partitions("NPS2") == 2);
  BOOST_TEST(sim::memory_partitions("NPS4") == 4);
}

BOOST_AUTO_TEST_SUITE_END()
