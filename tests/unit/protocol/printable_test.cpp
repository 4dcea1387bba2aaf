// protocol::printable: what an API server or an object says reaches a terminal or a log
// line with every control byte escaped and any UTF-8 text as it was.
#include "protocol/printable.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <ostream>
#include <string>

namespace gp = gpu_partitioner::protocol;
namespace bdata = boost::unit_test::data;

namespace {

struct escape_case {
  const char* name;
  std::string text;
  std::string escaped;
};

std::ostream& operator<<(std::ostream& os, const escape_case& c) {
  return os << c.name;
}

const escape_case escape_cases[] = {
    {"plain ASCII", "gpu-node-01 is ready", "gpu-node-01 is ready"},
    {"empty", "", ""},
    {"line feed", "one\ntwo", "one\\ntwo"},
    {"carriage return", "done\rfake", "done\\rfake"},
    {"tab", "a\tb", "a\\tb"},
    {"escape sequence", "\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"},
    {"a title change", "\x1b]0;owned\x07", "\\x1b]0;owned\\x07"},
    {"NUL", std::string("a\0b", 3), "a\\x00b"},
    {"backspace", "abc\b\b", "abc\\x08\\x08"},
    {"DEL", "a\x7f", "a\\x7f"},
    {"quotes and backslashes pass", "say \"hi\" \\o/", "say \"hi\" \\o/"},
    {"two-byte UTF-8", "équipe-α", "équipe-α"},
    {"three-byte UTF-8", "研究チーム", "研究チーム"},
    {"four-byte UTF-8", "GPU \xf0\x9f\x9a\x80", "GPU \xf0\x9f\x9a\x80"},
    {"U+00A0, the first character after C1", "\xc2\xa0", "\xc2\xa0"},
    {"C1 CSI as UTF-8",
     "\xc2\x9b"
     "31m",
     "\\u009b31m"},
    {"C1 NEL as UTF-8",
     "a\xc2\x85"
     "b",
     "a\\u0085b"},
    {"a lone C1 byte",
     "\x9b"
     "31m",
     "\\x9b31m"},
    {"a truncated sequence", "\xe7\xa0", "\\xe7\\xa0"},
    {"an overlong slash", "\xc0\xaf", "\\xc0\\xaf"},
    {"a surrogate", "\xed\xa0\x80", "\\xed\\xa0\\x80"},
    {"above U+10FFFF", "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"},
    {"Latin-1, not UTF-8", "caf\xe9", "caf\\xe9"},
};

} // namespace

BOOST_AUTO_TEST_SUITE(printable)

BOOST_DATA_TEST_CASE(control_bytes_are_escaped_and_utf8_passes, bdata::make(escape_cases), row) {
  BOOST_TEST(gp::printable(row.text) == row.escaped);
}

BOOST_AUTO_TEST_CASE(nothing_escaped_is_a_control_byte) {
  std::string every_byte;
  for (int b = 0; b < 256; ++b)
    every_byte += static_cast<char>(b);
  const std::string out = gp::printable(every_byte);
  for (unsigned char c : out)
    BOOST_TEST_REQUIRE((c >= 0x20 && c != 0x7f), "byte " << static_cast<int>(c) << " left raw");
}

BOOST_AUTO_TEST_CASE(quoted_text_escapes_quotes_and_backslashes_too) {
  gp::printable_style quoted;
  quoted.quoted = true;
  BOOST_TEST(gp::printable("say \"hi\" \\o/\n", quoted) == "say \\\"hi\\\" \\\\o/\\n");
}

BOOST_AUTO_TEST_CASE(kept_newlines_pass_and_carriage_returns_still_do_not) {
  gp::printable_style lines;
  lines.keep_newlines = true;
  BOOST_TEST(gp::printable("row 1\r\nrow 2\n", lines) == "row 1\\r\nrow 2\n");
}

BOOST_AUTO_TEST_CASE(escaping_twice_changes_nothing_more_unless_quoted) {
  const std::string once = gp::printable("\x1b[2J\xc2\x9b\xff");
  BOOST_TEST(gp::printable(once) == once);
}

BOOST_AUTO_TEST_SUITE_END()
