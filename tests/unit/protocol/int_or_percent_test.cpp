// int_or_percent: what maxUnavailable accepts and how it turns into a node count.
#include "protocol/int_or_percent.hpp"
#include "protocol/json.hpp"
#include "tests/unit/protocol/yaml_json.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

namespace gp = gpu_partitioner::protocol;
namespace gpt = gpu_partitioner::protocol::testing;

namespace {

gp::int_or_percent parsed(const std::string& s) {
  auto r = gp::int_or_percent::parse(std::string_view(s));
  BOOST_TEST_REQUIRE(r.ok(), gpt::error_of(r));
  return r.value();
}

std::string refusal(const std::string& s) {
  auto r = gp::int_or_percent::parse(std::string_view(s));
  return r.ok() ? "accepted as " + r.value().to_string() : r.error().problem;
}

std::string refusal(std::int64_t n) {
  auto r = gp::int_or_percent::parse(n);
  return r.ok() ? "accepted as " + r.value().to_string() : r.error().problem;
}

// maxUnavailable of a plan decoded from JSON, or the decoder's message.
std::string plan_max_unavailable(const std::string& json_value) {
  auto r = gp::from_json<gp::partitioning_plan>(
      R"({"spec":{"rollout":{"maxUnavailable":)" + json_value +
      R"(},"partitionings":[{"name":"a","selector":{},"profileRef":{"name":"p"}}]}})");
  return r.ok() ? r.value().spec.rollout.max_unavailable.to_string() : r.error().message();
}

} // namespace

BOOST_AUTO_TEST_SUITE(int_or_percent)

BOOST_AUTO_TEST_CASE(hundred_percent_of_7_is_7) {
  BOOST_TEST(parsed("100%").resolve(7) == 7);
}

BOOST_AUTO_TEST_CASE(ten_percent_of_5_rounds_down_to_0_and_is_raised_to_the_minimum_of_1) {
  BOOST_TEST(parsed("10%").resolve(5) == 1);
}

BOOST_AUTO_TEST_CASE(fifty_percent_of_3_rounds_down_to_1) {
  BOOST_TEST(parsed("50%").resolve(3) == 1);
}

BOOST_AUTO_TEST_CASE(twenty_five_percent_of_8_is_2) {
  BOOST_TEST(parsed("25%").resolve(8) == 2);
}

BOOST_AUTO_TEST_CASE(a_percentage_of_no_nodes_is_still_1) {
  BOOST_TEST(parsed("50%").resolve(0) == 1);
  BOOST_TEST(parsed("50%").resolve(-3) == 1);
}

BOOST_AUTO_TEST_CASE(an_integer_resolves_to_itself_whatever_the_total) {
  const auto three = gp::int_or_percent::parse(std::int64_t{3}).value();
  BOOST_TEST(three.resolve(2) == 3);
  BOOST_TEST(three.resolve(100) == 3);
  BOOST_TEST(!three.is_percent());
}

BOOST_AUTO_TEST_CASE(large_totals_do_not_overflow) {
  BOOST_TEST(parsed("100%").resolve(2147483647) == 2147483647);
  BOOST_TEST(parsed("99%").resolve(2000000000) == 1980000000);
}

BOOST_AUTO_TEST_CASE(zero_percent_is_refused_by_the_pattern) {
  BOOST_TEST(refusal("0%") == R"("0%" is not a percentage from 1% to 100%)");
}

BOOST_AUTO_TEST_CASE(percentages_over_100_or_with_leading_zeros_are_refused) {
  BOOST_TEST(refusal("101%") == R"("101%" is not a percentage from 1% to 100%)");
  BOOST_TEST(refusal("1000%") == R"("1000%" is not a percentage from 1% to 100%)");
  BOOST_TEST(refusal("05%") == R"("05%" is not a percentage from 1% to 100%)");
}

BOOST_AUTO_TEST_CASE(strings_that_are_not_percentages_are_refused) {
  BOOST_TEST(refusal("12x") == R"("12x" is neither an integer nor a percentage)");
  BOOST_TEST(refusal("") == R"("" is neither an integer nor a percentage)");
  BOOST_TEST(refusal("-1") == R"("-1" is neither an integer nor a percentage)");
  BOOST_TEST(refusal("%") == R"("%" is neither an integer nor a percentage)");
  BOOST_TEST(refusal(" 10%") == R"(" 10%" is neither an integer nor a percentage)");
  BOOST_TEST(refusal("10% ") == R"("10% " is neither an integer nor a percentage)");
  BOOST_TEST(refusal("-10%") == R"("-10%" is neither an integer nor a percentage)");
  BOOST_TEST(refusal("1.5%") == R"("1.5%" is neither an integer nor a percentage)");
}

BOOST_AUTO_TEST_CASE(a_number_in_a_string_is_refused_not_guessed) {
  BOOST_TEST(refusal("5") == R"("5" is neither an integer nor a percentage)");
}

BOOST_AUTO_TEST_CASE(zero_and_negative_integers_are_refused) {
  BOOST_TEST(refusal(0) == "must be at least 1, got 0");
  BOOST_TEST(refusal(-1) == "must be at least 1, got -1");
  BOOST_TEST(refusal(-2147483649LL) == "must be at least 1, got -2147483649");
}

BOOST_AUTO_TEST_CASE(integers_beyond_32_bits_are_refused) {
  BOOST_TEST(refusal(2147483648LL) == "expected a 32-bit integer, got 2147483648");
}

BOOST_AUTO_TEST_CASE(json_integer_and_percentage_string_both_decode) {
  BOOST_TEST(plan_max_unavailable("3") == "3");
  BOOST_TEST(plan_max_unavailable(R"("100%")") == "100%");
}

BOOST_AUTO_TEST_CASE(json_values_of_other_types_are_refused_with_their_path) {
  BOOST_TEST(plan_max_unavailable("true") ==
             "spec.rollout.maxUnavailable: expected an integer or a percentage string, got "
             "boolean");
  BOOST_TEST(plan_max_unavailable("2.5") ==
             "spec.rollout.maxUnavailable: expected an integer or a percentage string, got "
             "number");
  BOOST_TEST(plan_max_unavailable("18446744073709551615") ==
             "spec.rollout.maxUnavailable: expected a 32-bit integer, got 18446744073709551615");
  BOOST_TEST(plan_max_unavailable(R"("0%")") ==
             R"(spec.rollout.maxUnavailable: "0%" is not a percentage from 1% to 100%)");
}

BOOST_AUTO_TEST_CASE(encodes_as_a_json_integer_or_a_percentage_string) {
  gp::partitioning_plan plan;
  plan.spec.rollout.max_unavailable = gp::int_or_percent::percent(25);
  BOOST_TEST(gp::to_json(plan.spec.rollout).find(R"("maxUnavailable":"25%")") != std::string::npos);
  plan.spec.rollout.max_unavailable = gp::int_or_percent::count(2);
  BOOST_TEST(gp::to_json(plan.spec.rollout).find(R"("maxUnavailable":2)") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
