// DCM's config as the simulator reads it: config.json and single profiles parse as Go's
// encoding/json fills DCM's structs (names match case-insensitively, unknown members are
// ignored, a wrong type anywhere is InvalidJSONInConfigMap for the whole file), profiles
// validate as DCM validates them (names and counts), modes are the kernel's, and the
// device plugin's resources follow the GPUs' modes under either naming strategy.
#include "tools/simulator/dcm_config.hpp"
#include "tools/simulator/node_model.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <fstream>
#include <map>
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

// Go reads a missing member as zero: the file parses, and the profile fails DCM's count
// check (1.3) or takes the remaining GPUs (1.5).
BOOST_AUTO_TEST_CASE(a_missing_count_is_zero_not_a_parse_error) {
  sim::dcm_failure error;
  auto config = sim::parse_dcm_config(
      R"({"gpu-config-profiles":{"p":{"profiles":[{"computePartition":"CPX","memoryPartition":"NPS4"}]}}})",
      error);
  BOOST_REQUIRE_MESSAGE(config.has_value(), error.message);
  const auto& p = config->profiles.at("p");
  BOOST_TEST(!p.groups.at(0).count_given);
  BOOST_TEST(sim::validate_profile(p, 8, sim::dcm_version::v1_3).has_value());
  BOOST_TEST(!sim::validate_profile(p, 8, sim::dcm_version::v1_5).has_value());
  BOOST_TEST(!sim::validate_profile(p, 8, sim::dcm_version::v1_4).has_value());
  BOOST_TEST(sim::apply_profile(p, std::vector<std::string>(8, "SPX/NPS1"),
                                sim::dcm_version::v1_5) == std::vector<std::string>(8, "CPX/NPS4"));
}

BOOST_AUTO_TEST_CASE(member_names_match_ignoring_case_and_unknown_members_are_ignored) {
  sim::dcm_failure error;
  auto config = sim::parse_dcm_config(
      R"({"GPU-Config-Profiles":{"p":{"SKIPPEDGPUS":{"IDS":[7]},"note":"x",)"
      R"("Profiles":[{"computepartition":"CPX","MemoryPartition":"NPS4","numgpusassigned":7,)"
      R"("extra":[1]}]}},"unknown":{"a":1},"gpuclientsystemdservices":{"Names":["a","b","c"]}})",
      error);
  BOOST_REQUIRE_MESSAGE(config.has_value(), error.message);
  const auto& p = config->profiles.at("p");
  BOOST_TEST(p.skipped_gpus == (std::vector<int>{7}));
  BOOST_TEST(p.groups.at(0).compute == "CPX");
  BOOST_TEST(p.groups.at(0).gpus == 7);
  BOOST_TEST(config->host_services.size() == 3u);
  BOOST_TEST(!sim::validate_profile(p, 8).has_value());
}

BOOST_AUTO_TEST_CASE(null_members_are_zero) {
  sim::dcm_failure error;
  auto config = sim::parse_dcm_config(
      R"({"gpu-config-profiles":{"p":{"skippedGPUs":null,"profiles":[{"computePartition":"SPX",)"
      R"("memoryPartition":"NPS1","numGPUsAssigned":8}]},"q":null},"gpuClientSystemdServices":null})",
      error);
  BOOST_REQUIRE_MESSAGE(config.has_value(), error.message);
  BOOST_TEST(config->profiles.at("p").skipped_gpus.empty());
  BOOST_TEST(config->profiles.at("q").groups.empty());
}

struct type_error_row {
  const char* name;
  const char* group; // one entry of a profile's "profiles" list
};

std::ostream& operator<<(std::ostream& os, const type_error_row& r) {
  return os << r.name;
}

const type_error_row type_error_rows[] = {
    {"a_string_count",
     R"({"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":"8"})"},
    {"a_negative_count",
     R"({"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":-1})"},
    {"a_fractional_count",
     R"({"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":8.5})"},
    {"a_numeric_mode", R"({"computePartition":8,"memoryPartition":"NPS4","numGPUsAssigned":8})"},
    {"a_group_that_is_a_string", R"("CPX")"},
};

// One wrong type in one profile fails the whole file, so every node's run fails, the
// good profiles' too.
BOOST_DATA_TEST_CASE(a_type_error_anywhere_fails_the_whole_file, bdata::make(type_error_rows),
                     row) {
  sim::dcm_failure error;
  const std::string text =
      R"({"gpu-config-profiles":{"good":{"profiles":[{"computePartition":"SPX",)"
      R"("memoryPartition":"NPS1","numGPUsAssigned":8}]},"bad":{"profiles":[)" +
      std::string(row.group) + "]}}}";
  BOOST_TEST(!sim::parse_dcm_config(text, error).has_value());
  BOOST_TEST(error.reason == "InvalidJSONInConfigMap");
  BOOST_TEST(error.message.find("bad") != std::string::npos, error.message);
}

BOOST_AUTO_TEST_CASE(a_single_profile_of_the_wrong_type_is_InvalidJSONInConfigMap) {
  sim::dcm_failure error;
  BOOST_TEST(!sim::parse_dcm_profile("[1,2]", error).has_value());
  BOOST_TEST(error.reason == "InvalidJSONInConfigMap");
  BOOST_TEST(!sim::parse_dcm_profile(R"({"profiles":"CPX"})", error).has_value());
  BOOST_TEST(
      !sim::parse_dcm_profile(R"({"skippedGPUs":{"ids":["a"]},"profiles":[]})", error).has_value());
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
    {"mixed_memory_modes", profile({{"CPX", "NPS4", 4}, {"CPX", "NPS1", 4}}), 8,
     "only one memory partition mode"},
    // DCM checks names and counts only: the kernel refuses NPS4 with SPX when applied.
    {"nps4_with_spx_passes_dcm", profile({{"SPX", "NPS4", 8}}), 8, ""},
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

// -- modes and what the device plugin reports --

BOOST_AUTO_TEST_SUITE(resources)

// MI300X's kernel (amd-dcm.md, "Mode validity"): SPX+NPS1; DPX+NPS1|NPS2; QPX+NPS1|NPS4;
// CPX+NPS1|NPS4 (CPX+NPS2 only for virtual functions); NPS8 never.
BOOST_AUTO_TEST_CASE(the_kernel_takes_these_modes_and_no_others) {
  const char* computes[] = {"SPX", "DPX", "QPX", "CPX"};
  const char* memories[] = {"NPS1", "NPS2", "NPS4", "NPS8"};
  const std::vector<std::string> taken = {"SPX/NPS1", "DPX/NPS1", "DPX/NPS2", "QPX/NPS1",
                                          "QPX/NPS4", "CPX/NPS1", "CPX/NPS4"};
  for (const char* c : computes)
    for (const char* m : memories) {
      const std::string mode = std::string(c) + "/" + m;
      const bool want = std::find(taken.begin(), taken.end(), mode) != taken.end();
      BOOST_TEST(sim::mode_supported(c, m) == want, mode);
    }
}

struct resource_row {
  const char* mode;
  long long single;
  const char* mixed_name;
};

std::ostream& operator<<(std::ostream& os, const resource_row& r) {
  return os << r.mode;
}

const resource_row resource_rows[] = {
    {"SPX/NPS1", 8, "amd.com/spx_nps1"},
    {"DPX/NPS2", 16, "amd.com/dpx_nps2"},
    {"QPX/NPS1", 32, "amd.com/qpx_nps1"},
    {"CPX/NPS4", 64, "amd.com/cpx_nps4"},
};

BOOST_DATA_TEST_CASE(eight_gpus_report_their_partitions_under_either_strategy,
                     bdata::make(resource_rows), row) {
  const std::vector<std::string> modes(8, row.mode);
  BOOST_TEST(sim::plugin_resources(modes, sim::resource_strategy::single, false).value() ==
             (std::map<std::string, long long>{{"amd.com/gpu", row.single}}));
  BOOST_TEST(sim::plugin_resources(modes, sim::resource_strategy::mixed, false).value() ==
             (std::map<std::string, long long>{{row.mixed_name, row.single}}));
}

BOOST_AUTO_TEST_CASE(gpus_of_two_styles_crash_the_single_plugin_and_split_under_mixed) {
  std::vector<std::string> modes(8, "CPX/NPS1");
  for (int i = 4; i < 8; ++i)
    modes[i] = "SPX/NPS1";
  BOOST_TEST(!sim::plugin_resources(modes, sim::resource_strategy::single, false).has_value());
  BOOST_TEST(!sim::partition_style(modes).has_value());
  BOOST_TEST(sim::plugin_resources(modes, sim::resource_strategy::mixed, false).value() ==
             (std::map<std::string, long long>{{"amd.com/cpx_nps1", 32}, {"amd.com/spx_nps1", 4}}));
}

BOOST_AUTO_TEST_CASE(the_wrong_count_fault_shows_63_partitions_past_63) {
  const std::vector<std::string> cpx(8, "CPX/NPS4");
  BOOST_TEST(sim::plugin_resources(cpx, sim::resource_strategy::single, true)->at("amd.com/gpu") ==
             63);
  BOOST_TEST(
      sim::plugin_resources(cpx, sim::resource_strategy::mixed, true)->at("amd.com/cpx_nps4") ==
      63);
  const std::vector<std::string> qpx(8, "QPX/NPS1");
  BOOST_TEST(sim::plugin_resources(qpx, sim::resource_strategy::single, true)->at("amd.com/gpu") ==
             32);
}

BOOST_AUTO_TEST_CASE(skipped_gpus_keep_their_mode_and_groups_take_gpus_in_order) {
  const std::vector<std::string> spx(8, "SPX/NPS1");
  auto modes = sim::apply_profile(profile({{"CPX", "NPS1", 2}, {"DPX", "NPS1", 4}}, {0, 1}), spx);
  BOOST_TEST(modes == (std::vector<std::string>{"SPX/NPS1", "SPX/NPS1", "CPX/NPS1", "CPX/NPS1",
                                                "DPX/NPS1", "DPX/NPS1", "DPX/NPS1", "DPX/NPS1"}));
}

BOOST_AUTO_TEST_CASE(unknown_modes_have_no_partitions) {
  BOOST_TEST(sim::partitions_per_gpu("OPX") == 0);
  BOOST_TEST(sim::memory_partitions("NPS3") == 0);
  BOOST_TEST(sim::memory_partitions("NPS1") == 1);
  BOOST_TEST(sim::memory_partitions("NPS2") == 2);
  BOOST_TEST(sim::memory_partitions("NPS4") == 4);
}

BOOST_AUTO_TEST_SUITE_END()
