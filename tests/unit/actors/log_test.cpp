// The operator's log records: one line each, whatever the names and messages they quote.
#include "actors/log.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <ostream>
#include <string>

namespace actors = gpu_partitioner::actors;
namespace bdata = boost::unit_test::data;

namespace {

struct value_case {
  const char* name;
  std::string value;
  std::string written;
};

std::ostream& operator<<(std::ostream& os, const value_case& c) {
  return os << c.name;
}

const value_case value_cases[] = {
    {"one plain word", "gpu-node-01", "gpu-node-01"},
    {"empty", "", "\"\""},
    {"spaces", "drain blocked", "\"drain blocked\""},
    {"an equals sign", "a=b", "\"a=b\""},
    {"quotes", "say \"hi\"", "\"say \\\"hi\\\"\""},
    {"a backslash", "C:\\x", "\"C:\\\\x\""},
    {"a line feed", "first\nlevel=error msg=forged", "\"first\\nlevel=error msg=forged\""},
    {"a carriage return", "ok\rFAILED", "\"ok\\rFAILED\""},
    {"a tab", "a\tb", "\"a\\tb\""},
    {"a colour escape", "\x1b[31mred", "\"\\x1b[31mred\""},
    {"DEL", "x\x7f", "\"x\\x7f\""},
    {"a C1 control",
     "\xc2\x9b"
     "2J",
     "\"\\u009b2J\""},
    {"UTF-8", "équipe-α/研究", "équipe-α/研究"},
    {"UTF-8 with a space", "équipe α", "\"équipe α\""},
};

} // namespace

BOOST_AUTO_TEST_SUITE(log_records)

BOOST_DATA_TEST_CASE(values_are_quoted_and_escaped_as_needed, bdata::make(value_cases), row) {
  BOOST_TEST(actors::log_value(row.value) == row.written);
}

BOOST_AUTO_TEST_CASE(no_value_can_put_a_control_byte_in_a_record) {
  std::string every_byte;
  for (int b = 0; b < 256; ++b)
    every_byte += static_cast<char>(b);
  for (unsigned char c : actors::log_value(every_byte))
    BOOST_TEST_REQUIRE((c >= 0x20 && c != 0x7f), "byte " << static_cast<int>(c) << " left raw");
}

BOOST_AUTO_TEST_SUITE_END()
