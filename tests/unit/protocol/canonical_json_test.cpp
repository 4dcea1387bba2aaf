// canonical_json: equal content, equal bytes.
#include "protocol/canonical_json.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

namespace gp = gpu_partitioner::protocol;

namespace {

std::string canonical(const std::string& text) {
  auto r = gp::canonical_json(std::string_view(text));
  return r.ok() ? r.value() : "error: " + r.error().message();
}

} // namespace

BOOST_AUTO_TEST_SUITE(canonical_json)

BOOST_AUTO_TEST_CASE(keys_are_sorted_at_every_level_and_whitespace_is_dropped) {
  BOOST_TEST(canonical(R"({ "b": {"z": 1, "a": [ {"y": 2, "x": 3} ]}, "a": null })") ==
             R"({"a":null,"b":{"a":[{"x":3,"y":2}],"z":1}})");
}

BOOST_AUTO_TEST_CASE(arrays_keep_their_order) {
  BOOST_TEST(canonical(R"([3, 1, 2])") == "[3,1,2]");
}

BOOST_AUTO_TEST_CASE(keys_sort_by_bytes_so_uppercase_comes_first) {
  BOOST_TEST(canonical(R"({"b":1,"B":2,"a":3,"_":4})") == R"({"B":2,"_":4,"a":3,"b":1})");
}

BOOST_AUTO_TEST_CASE(scalars_are_written_one_way) {
  BOOST_TEST(canonical(R"({"i":-7,"t":true,"f":false,"s":"x\"y\\z","u":"\u00e9"})") ==
             "{\"f\":false,\"i\":-7,\"s\":\"x\\\"y\\\\z\",\"t\":true,\"u\":\"\xc3\xa9\"}");
}

BOOST_AUTO_TEST_CASE(malformed_text_is_an_error_with_its_offset) {
  BOOST_TEST(canonical(R"({"a":1,})") ==
             "error: invalid JSON at offset 7: Missing a name for object member.");
}

BOOST_AUTO_TEST_CASE(absurd_nesting_is_an_error_not_a_stack_overflow) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  BOOST_TEST(canonical(deep) == "error: nested deeper than 256 levels");
}

BOOST_AUTO_TEST_SUITE_END()
