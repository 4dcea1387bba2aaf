// controller/dcm_payload: DCM's config with a profile set, and the payload checks. The
// last cases are inputs the fuzzer (fuzz/dcm_payload_fuzz.cpp) found.
#include "controller/dcm_payload.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

namespace gc = gpu_partitioner::controller;

namespace {

const std::string cpx =
    R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":8}]})";

std::string nested(int levels) {
  return std::string(levels, '[') + std::string(levels, ']');
}

} // namespace

BOOST_AUTO_TEST_SUITE(dcm_payload)

BOOST_AUTO_TEST_CASE(a_profile_set_into_a_config_is_held_and_other_keys_are_kept) {
  const auto updated = gc::dcm_config_with(
      R"({"gpu-config-profiles":{"spx-nps1":{"profiles":[1]}},"other":[1,2]})", "cpx-nps4", cpx);
  BOOST_TEST_REQUIRE(updated.has_value());
  BOOST_TEST(gc::dcm_config_has(*updated, "cpx-nps4", cpx));
  BOOST_TEST(gc::dcm_config_has(*updated, "spx-nps1", R"({"profiles":[1]})"));
  BOOST_TEST(updated->find(R"("other")") != std::string::npos);
  BOOST_TEST(gc::dcm_config_with(*updated, "cpx-nps4", cpx).value() == *updated);
}

BOOST_AUTO_TEST_CASE(an_empty_config_starts_from_an_empty_object) {
  const auto updated = gc::dcm_config_with("", "cpx-nps4", cpx);
  BOOST_TEST_REQUIRE(updated.has_value());
  BOOST_TEST(gc::dcm_config_has(*updated, "cpx-nps4", cpx));
}

BOOST_AUTO_TEST_CASE(a_good_payload_has_no_problem) {
  BOOST_TEST(!gc::payload_problem(cpx).has_value());
}

BOOST_AUTO_TEST_CASE(payload_problems_are_said_in_words) {
  BOOST_TEST(gc::payload_problem("[1]").value() == "profile.json is not a JSON object");
  BOOST_TEST(gc::payload_problem(R"({"profiles":[]})").value() ==
             "profile.json has no \"profiles\" list");
  BOOST_TEST(gc::payload_problem("{").value() ==
             "profile.json is not valid JSON: Missing a name for object member. at offset 1");
}

// DCM from 1.5 gives one group without a count the remaining GPUs (AMD's default config).
BOOST_AUTO_TEST_CASE(one_group_may_omit_its_gpu_count_two_may_not) {
  BOOST_TEST(
      !gc::payload_problem(R"({"profiles":[{"computePartition":"CPX","memoryPartition":"NPS4"}]})")
           .has_value());
  BOOST_TEST(
      gc::payload_problem(R"({"profiles":[{"computePartition":"CPX","memoryPartition":"NPS1"},)"
                          R"({"computePartition":"SPX","memoryPartition":"NPS1"}]})")
          .value() == "profile.json: profiles[1] omits numGPUsAssigned too: only one group "
                      "may take the remaining GPUs");
}

BOOST_AUTO_TEST_CASE(the_style_is_the_labellers_value_for_a_node_of_one_style) {
  BOOST_TEST(gc::payload_style(cpx).value() == "cpx_nps4");
  // Two groups of one style are still one style.
  BOOST_TEST(gc::payload_style(
                 R"({"profiles":[{"computePartition":"CPX","memoryPartition":"NPS4",)"
                 R"("numGPUsAssigned":4},{"computePartition":"CPX","memoryPartition":"NPS4"}]})")
                 .value() == "cpx_nps4");
  // Mixed styles, or skipped GPUs in whatever mode they are: the labeller sets no label.
  BOOST_TEST(!gc::payload_style(
                  R"({"profiles":[{"computePartition":"CPX","memoryPartition":"NPS1",)"
                  R"("numGPUsAssigned":4},{"computePartition":"SPX","memoryPartition":"NPS1",)"
                  R"("numGPUsAssigned":4}]})")
                  .has_value());
  BOOST_TEST(
      !gc::payload_style(R"({"skippedGPUs":{"ids":[7]},"profiles":[{"computePartition":"CPX",)"
                         R"("memoryPartition":"NPS4","numGPUsAssigned":7}]})")
           .has_value());
  BOOST_TEST(!gc::payload_style("{").has_value());
}

BOOST_AUTO_TEST_CASE(nesting_up_to_the_limit_is_fine) {
  // The object is one level, each bracket pair one more.
  const std::string at_limit =
      R"({"profiles":[)" + std::string(R"({"computePartition":"CPX","memoryPartition":"NPS4",)") +
      R"("numGPUsAssigned":8}],"x":)" + nested(gc::dcm_json_max_depth - 1) + "}";
  const std::string past_limit = R"({"profiles":[1],"x":)" + nested(gc::dcm_json_max_depth) + "}";
  BOOST_TEST(!gc::payload_problem(at_limit).has_value());
  BOOST_TEST(gc::payload_problem(past_limit).value() ==
             "profile.json is nested deeper than 64 levels");
  BOOST_TEST(gc::dcm_config_with(at_limit, "p", cpx).has_value());
  BOOST_TEST(!gc::dcm_config_with(past_limit, "p", cpx).has_value());
}

// Found by the fuzzer: the recursive parser overflowed the stack on deep nesting, which
// a ConfigMap (1 MiB) can hold; the operator crashed on such a payload or DCM config.
BOOST_AUTO_TEST_CASE(a_megabyte_of_nesting_is_refused_not_a_stack_overflow) {
  const std::string deep = R"({"profiles":)" + std::string(1 << 20, '[');
  const std::string deep_valid = R"({"profiles":[1],"x":)" + nested(200000) + "}";
  BOOST_TEST(gc::payload_problem(deep).value().rfind("profile.json is not valid JSON", 0) == 0);
  BOOST_TEST(gc::payload_problem(deep_valid).value() ==
             "profile.json is nested deeper than 64 levels");
  BOOST_TEST(!gc::dcm_config_with(deep_valid, "p", cpx).has_value());
  BOOST_TEST(!gc::dcm_config_with("", "p", deep_valid).has_value());
  BOOST_TEST(!gc::dcm_config_has(deep_valid, "p", cpx));
  BOOST_TEST(!gc::dcm_config_has(R"({"gpu-config-profiles":{"p":)" + nested(200000) + "}}", "p",
                                 deep_valid));
}

// Found by the fuzzer: with a key twice in one object the config written never
// compared equal to the payload (rapidjson's == finds the first of the two), so a node
// was drained, then rewrote DCM's config every poll until its apply timeout.
BOOST_AUTO_TEST_CASE(a_payload_with_a_key_twice_is_refused_before_any_node_is_touched) {
  const std::string payload =
      R"({"profiles":[{"computePartition":"CPX","memoryPartition":"NPS4","memoryPartition":"NPS1"}]})";
  BOOST_TEST(gc::payload_problem(payload).value() ==
             "profile.json has the key \"memoryPartition\" twice in one object");
  BOOST_TEST(gc::payload_problem(R"({"profiles":[1],"profiles":[2]})").value() ==
             "profile.json has the key \"profiles\" twice in one object");
}

// Issue 38: in DCM's own config a name twice was read first-wins here and last-wins by
// DCM's Go decoder: the operator saw its profile where DCM would apply another, and wrote
// its own into the entry DCM ignores. Such a config is now neither read nor written.
BOOST_AUTO_TEST_CASE(a_dcm_config_with_a_key_twice_is_neither_read_nor_written) {
  const std::string twice =
      R"({"gpu-config-profiles":{"cpx-nps4":)" + cpx + R"(,"cpx-nps4":{"profiles":[]}}})";
  BOOST_TEST(!gc::dcm_config_has(twice, "cpx-nps4", cpx), "DCM reads the second");
  BOOST_TEST(!gc::dcm_config_with(twice, "cpx-nps4", cpx).has_value());
  BOOST_TEST(gc::dcm_config_problem(twice).value() ==
             "has the key \"cpx-nps4\" twice in one object");
  BOOST_TEST(
      gc::dcm_config_problem(R"({"gpu-config-profiles":{},"gpu-config-profiles":{}})").has_value());
  // What it says of other configs.
  BOOST_TEST(!gc::dcm_config_problem("").has_value());
  BOOST_TEST(!gc::dcm_config_problem(R"({"gpu-config-profiles":{"a":{}}})").has_value());
  BOOST_TEST(gc::dcm_config_problem("[1]").value() == "is not a JSON object");
  BOOST_TEST(gc::dcm_config_problem(R"({"gpu-config-profiles":[]})").value() ==
             "has gpu-config-profiles that is not an object");
  BOOST_TEST(gc::dcm_config_problem("{").value().rfind("is not valid JSON: ", 0) == 0u);
}

// Found by the fuzzer in DCM's config: numbers that are not 64-bit integers are doubles,
// which RapidJSON 1.1 does not read back to the value it wrote, so in a payload they
// would never compare equal either. DCM's profiles hold only whole numbers.
BOOST_AUTO_TEST_CASE(a_payload_with_a_fractional_or_huge_number_is_refused) {
  const std::string expected = "profile.json has a number that is not a whole number (DCM's "
                               "profiles count partitions and name GPUs by index)";
  BOOST_TEST(gc::payload_problem(R"({"profiles":[{"numGPUsAssigned":8.5}]})").value() == expected);
  BOOST_TEST(
      gc::payload_problem(R"({"profiles":[{"x":866666666666666466666666666666666}]})").value() ==
      expected);
  BOOST_TEST(!gc::payload_problem(R"({"profiles":[{"computePartition":"CPX","memoryPartition":)"
                                  R"("NPS4","numGPUsAssigned":8,"x":-9223372036854775808}]})")
                  .has_value());
}

// Found by the fuzzer: a number beyond a double's range was read as infinity, which the
// writer cannot write, so the config written back ended at that number. DCM's Go decoder
// refuses such a number in a field it reads; such a config is neither read nor written.
BOOST_AUTO_TEST_CASE(a_number_beyond_a_doubles_range_is_refused_not_written_back_cut) {
  const std::string huge = R"({"other":{"keep":[800000000000E000000000000306]}})";
  BOOST_TEST(gc::dcm_config_problem(huge).value() == "has a number too large for a 64-bit float");
  BOOST_TEST(!gc::dcm_config_with(huge, "cpx-nps4", cpx).has_value());
  BOOST_TEST(!gc::dcm_config_with("", "cpx-nps4", R"({"profiles":[{"x":-9000e305}]})").has_value());
  BOOST_TEST(gc::payload_problem(R"({"profiles":[{"x":8000e306}]})").value() ==
             "profile.json has a number too large for a 64-bit float");
  // The largest double is still read and written back.
  const auto kept = gc::dcm_config_with(R"({"other":[1.7976931348623157e308]})", "cpx-nps4", cpx);
  BOOST_REQUIRE(kept.has_value());
  BOOST_TEST(gc::dcm_config_with(*kept, "cpx-nps4", cpx).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
