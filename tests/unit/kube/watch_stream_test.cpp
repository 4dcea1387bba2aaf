// Watch stream framing and decoding: a recorded stream of Node events decodes to the
// same events however the transport chunks it, and malformed lines are Decode errors
// that say what is wrong.
#include "kube/watch_stream.hpp"
#include "tests/unit/kube/problem.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace kube = gpu_partitioner::kube;
namespace bdata = boost::unit_test::data;

using gpu_partitioner::kube::testing::problem;
using kube::event_type;

namespace {

const char* const recorded_stream = "tests/unit/kube/testdata/node_watch_stream.jsonl";

// What a test keeps of one decoded event (the document is valid only during the call).
struct decoded {
  event_type type = event_type::added;
  std::string ns;
  std::string name;
  std::string resource_version;
  std::string team;
  int code = 0;
  std::string message;

  bool operator==(const decoded& o) const {
    return type == o.type && ns == o.ns && name == o.name &&
           resource_version == o.resource_version && team == o.team && code == o.code &&
           message == o.message;
  }
};

std::ostream& operator<<(std::ostream& os, const decoded& d) {
  return os << "{type " << static_cast<int>(d.type) << ", " << d.ns << "/" << d.name << "@"
            << d.resource_version << ", team \"" << d.team << "\", code " << d.code << ", \""
            << d.message << "\"}";
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  BOOST_TEST_REQUIRE(in.good(), "cannot open " << path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Feeds chunks through one splitter and decodes every line.
class stream_reader {
public:
  void feed(std::string_view chunk) {
    lines_.feed(chunk, [this](std::string& line) {
      kube::watch_event event;
      auto r = kube::decode_event(line, event);
      BOOST_TEST_REQUIRE(r.ok(), problem(r));
      decoded d;
      d.type = event.type;
      d.ns = event.key.namespace_;
      d.name = event.key.name;
      d.resource_version = event.resource_version;
      d.code = event.code;
      d.message = event.message;
      BOOST_TEST_REQUIRE(event.object != nullptr);
      if (auto md = event.object->FindMember("metadata");
          md != event.object->MemberEnd() && md->value.HasMember("labels"))
        d.team = md->value["labels"]["team"].GetString();
      events.push_back(d);
    });
  }
  std::size_t pending() const { return lines_.pending(); }

  std::vector<decoded> events;

private:
  kube::line_splitter lines_;
};

const std::vector<decoded> expected_events = {
    {event_type::added, "", "gpu-node-01", "1001", "équipe-α", 0, ""},
    {event_type::added, "", "gpu-node-02", "1002", "研究チーム", 0, ""},
    {event_type::modified, "", "gpu-node-01", "1005", "équipe-α", 0, ""},
    {event_type::bookmark, "", "", "1010", "", 0, ""},
    {event_type::deleted, "", "gpu-node-02", "1012", "研究チーム", 0, ""},
    {event_type::added, "", "gpu-node-03", "1013", "ü", 0, ""},
    {event_type::modified, "", "gpu-node-03", "1014", "ü", 0, ""},
    {event_type::error, "", "", "", "", 410, "too old resource version: 1001 (1014)"},
};

} // namespace

BOOST_AUTO_TEST_SUITE(watch_stream_framing)

BOOST_AUTO_TEST_CASE(recorded_stream_has_crlf_and_multibyte_utf8) {
  const auto text = read_all(recorded_stream);
  BOOST_TEST(text.find("\r\n") != std::string::npos);
  BOOST_TEST(text.find("\n\n") != std::string::npos);
  BOOST_TEST(text.find("équipe-α") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(recorded_stream_in_one_chunk_decodes_to_the_expected_events) {
  stream_reader reader;
  reader.feed(read_all(recorded_stream));
  BOOST_TEST(reader.events == expected_events, boost::test_tools::per_element());
  BOOST_TEST(reader.pending() == 0u);
}

BOOST_AUTO_TEST_CASE(recorded_stream_split_in_two_at_every_byte_decodes_the_same) {
  const auto text = read_all(recorded_stream);
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    BOOST_TEST_CONTEXT("cut at byte " << cut) {
      stream_reader reader;
      const std::string_view all(text);
      reader.feed(all.substr(0, cut));
      reader.feed(all.substr(cut));
      BOOST_TEST_REQUIRE(reader.events == expected_events, boost::test_tools::per_element());
      BOOST_TEST_REQUIRE(reader.pending() == 0u);
    }
  }
}

BOOST_AUTO_TEST_CASE(recorded_stream_fed_byte_by_byte_decodes_the_same) {
  const auto text = read_all(recorded_stream);
  stream_reader reader;
  for (char c : text)
    reader.feed(std::string_view(&c, 1));
  BOOST_TEST(reader.events == expected_events, boost::test_tools::per_element());
  BOOST_TEST(reader.pending() == 0u);
}

BOOST_AUTO_TEST_CASE(unterminated_last_event_waits_for_its_newline) {
  stream_reader reader;
  const std::string event =
      R"({"type":"ADDED","object":{"metadata":{"name":"n","resourceVersion":"5"}}})";
  reader.feed(event);
  BOOST_TEST(reader.events.empty());
  BOOST_TEST(reader.pending() == event.size());
  reader.feed("\n");
  BOOST_TEST(reader.events.size() == 1u);
  BOOST_TEST(reader.pending() == 0u);
}

BOOST_AUTO_TEST_CASE(several_events_in_one_chunk_with_blank_lines_between) {
  stream_reader reader;
  reader.feed("\n\r\n"
              R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}})"
              "\n\n"
              R"({"type":"DELETED","object":{"metadata":{"namespace":"ns","name":"b",)"
              R"("resourceVersion":"2"}}})"
              "\r\n");
  BOOST_TEST_REQUIRE(reader.events.size() == 2u);
  BOOST_TEST(reader.events[0].name == "a");
  BOOST_TEST((reader.events[1].type == event_type::deleted));
  BOOST_TEST(reader.events[1].ns == "ns");
  BOOST_TEST(reader.events[1].resource_version == "2");
}

BOOST_AUTO_TEST_CASE(reset_drops_a_partial_event) {
  kube::line_splitter lines;
  std::vector<std::string> seen;
  lines.feed(R"({"type":"ADDED","obj)", [&](std::string& l) { seen.push_back(l); });
  lines.reset();
  BOOST_TEST(lines.pending() == 0u);
  lines.feed("{\"x\":1}\n", [&](std::string& l) { seen.push_back(l); });
  BOOST_TEST(seen == std::vector<std::string>{"{\"x\":1}"}, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(watch_stream_line_limit)

namespace {

constexpr std::size_t cap = 1000;

// Feeds `text` in chunks of `chunk` bytes; the lines seen, whether every feed framed, and
// the most the splitter ever held between chunks.
struct limited_reader {
  kube::line_splitter lines{cap};
  std::vector<std::string> seen;
  bool framed = true;
  std::size_t most_pending = 0;

  void feed(const std::string& text, std::size_t chunk) {
    for (std::size_t at = 0; at < text.size(); at += chunk) {
      framed = lines.feed(std::string_view(text).substr(at, chunk), [&](std::string& l) {
        seen.push_back(l);
      }) && framed;
      most_pending = std::max(most_pending, lines.pending());
    }
  }
};

} // namespace

BOOST_DATA_TEST_CASE(a_line_of_exactly_the_limit_passes, bdata::make({1, 7, 999, 1000, 4096}),
                     chunk) {
  limited_reader r;
  const std::string line(cap, 'x');
  r.feed(line + "\n" + "after\n", chunk);
  BOOST_TEST(r.framed);
  BOOST_TEST(r.seen == (std::vector<std::string>{line, "after"}), boost::test_tools::per_element());
}

BOOST_DATA_TEST_CASE(a_line_one_byte_over_the_limit_stops_the_stream,
                     bdata::make({1, 7, 999, 1000, 4096}), chunk) {
  limited_reader r;
  r.feed("before\n" + std::string(cap + 1, 'x') + "\n" + "after\n", chunk);
  BOOST_TEST(!r.framed);
  // What came before is delivered; nothing after the long line is.
  BOOST_TEST(r.seen == std::vector<std::string>{"before"}, boost::test_tools::per_element());
  BOOST_TEST(r.lines.pending() == 0u);
}

BOOST_AUTO_TEST_CASE(the_newline_does_not_count_against_the_limit) {
  limited_reader r;
  r.feed(std::string(cap, 'x') + "\n", 64);
  BOOST_TEST(r.framed);
  BOOST_TEST(r.seen.size() == 1u);
}

BOOST_AUTO_TEST_CASE(an_endless_line_is_never_held_beyond_the_limit) {
  limited_reader r;
  // Ten times the limit without a newline, in chunks of 300: refused once the held part
  // and the next chunk would pass the limit, before appending.
  r.feed(std::string(10 * cap, 'x'), 300);
  BOOST_TEST(!r.framed);
  BOOST_TEST(r.most_pending <= cap);
  BOOST_TEST(r.lines.pending() == 0u);
}

BOOST_AUTO_TEST_CASE(after_an_overlong_line_the_splitter_refuses_everything_until_reset) {
  kube::line_splitter lines(10);
  std::vector<std::string> seen;
  auto keep = [&](std::string& l) { seen.push_back(l); };
  BOOST_TEST(!lines.feed("0123456789ab\n", keep));
  BOOST_TEST(!lines.feed("short\n", keep));
  BOOST_TEST(seen.empty());
  lines.reset();
  BOOST_TEST(lines.feed("short\n", keep));
  BOOST_TEST(seen == std::vector<std::string>{"short"}, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_default_limit_is_16_mib) {
  BOOST_TEST(kube::line_splitter().max_line() == std::size_t{16} << 20);
  BOOST_TEST(kube::default_max_event_bytes == std::size_t{16} << 20);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(watch_stream_decoding)

namespace {

struct malformed_line {
  const char* line;
  const char* message;
};

std::ostream& operator<<(std::ostream& os, const malformed_line& m) {
  return os << m.line;
}

const malformed_line malformed_lines[] = {
    {R"({"type":"ADDED","object":{"metadata":{"name":"x"}})",
     "watch event is not JSON: Missing a comma or '}' after an object member. at offset 50"},
    {R"({"type" "ADDED"})",
     "watch event is not JSON: Missing a colon after a name of object member. "
     "at offset 8"},
    {"not json", "watch event is not JSON: Invalid value. at offset 1"},
    {R"(["ADDED", {}])", "watch event is not a JSON object"},
    {R"({"object":{"metadata":{"name":"x"}}})", "watch event has no type"},
    {R"({"type":7,"object":{}})", "watch event has no type"},
    {R"({"type":"CHANGED","object":{}})", "unknown watch event type \"CHANGED\""},
    {R"({"type":"added","object":{}})", "unknown watch event type \"added\""},
    {R"({"type":"ADDED"})", "ADDED event has no object"},
    {R"({"type":"MODIFIED","object":"gpu-node-01"})", "MODIFIED event has no object"},
    {R"({"type":"ERROR","object":null})", "ERROR event has no object"},
};

} // namespace

BOOST_DATA_TEST_CASE(malformed_line_is_a_decode_error_naming_the_problem,
                     bdata::make(malformed_lines), row) {
  std::string line = row.line;
  kube::watch_event event;
  auto r = kube::decode_event(line, event);
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST((r.error().kind == kube::error_kind::decode));
  BOOST_TEST(r.error().message == row.message);
}

BOOST_AUTO_TEST_CASE(error_event_takes_code_and_message_from_its_status) {
  std::string line = R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1",)"
                     R"("status":"Failure","message":"internal error","reason":"InternalError",)"
                     R"("code":500}})";
  kube::watch_event event;
  BOOST_TEST_REQUIRE(kube::decode_event(line, event).ok());
  BOOST_TEST((event.type == event_type::error));
  BOOST_TEST(event.code == 500);
  BOOST_TEST(event.message == "internal error");
  BOOST_TEST(event.key.name == "");
}

BOOST_AUTO_TEST_CASE(event_reusing_a_watch_event_clears_the_previous_error_fields) {
  kube::watch_event event;
  std::string error = R"({"type":"ERROR","object":{"kind":"Status","code":410,"message":"gone"}})";
  BOOST_TEST_REQUIRE(kube::decode_event(error, event).ok());
  std::string added =
      R"({"type":"ADDED","object":{"metadata":{"name":"n","resourceVersion":"9"}}})";
  BOOST_TEST_REQUIRE(kube::decode_event(added, event).ok());
  BOOST_TEST(event.code == 0);
  BOOST_TEST(event.message == "");
  BOOST_TEST(event.key.name == "n");
  BOOST_TEST(event.resource_version == "9");
}

// Found by fuzz/watch_stream_fuzz.cpp: the recursive parser overflowed the stack on a
// line nested 100,000 levels deep.
BOOST_AUTO_TEST_CASE(deeply_nested_line_is_decoded_without_exhausting_the_stack) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  std::string line = R"({"type":"ADDED","object":{"metadata":{"name":"n"},"spec":)" + deep + "}}";
  kube::watch_event event;
  BOOST_TEST_REQUIRE(kube::decode_event(line, event).ok());
  BOOST_TEST(event.key.name == "n");
  std::string unterminated = R"({"type":"ADDED","object":)" + std::string(1 << 20, '[');
  BOOST_TEST(!kube::decode_event(unterminated, event).ok());
}

BOOST_AUTO_TEST_CASE(a_long_watch_does_not_keep_the_memory_of_earlier_events) {
  kube::watch_event event;
  std::string labels;
  for (int k = 0; k < 50; ++k)
    labels += (k ? "," : "") + std::string("\"label-") + std::to_string(k) + "\":\"v\"";
  for (int i = 0; i < 2000; ++i) {
    std::string line = R"({"type":"MODIFIED","object":{"metadata":{"name":"pod-)" +
                       std::to_string(i) + R"(","resourceVersion":")" + std::to_string(i) +
                       R"(","labels":{)" + labels + "}}}}";
    BOOST_TEST_REQUIRE(kube::decode_event(line, event).ok());
    BOOST_TEST_REQUIRE(event.key.name == "pod-" + std::to_string(i));
  }
  // 2000 events of 50 labels each: kept, their values would take megabytes.
  BOOST_TEST(event.document.GetAllocator().Capacity() < 256u * 1024u);
}

BOOST_AUTO_TEST_CASE(object_without_metadata_has_an_empty_identity) {
  std::string line = R"({"type":"ADDED","object":{"kind":"Node"}})";
  kube::watch_event event;
  BOOST_TEST_REQUIRE(kube::decode_event(line, event).ok());
  BOOST_TEST(event.key.name == "");
  BOOST_TEST(event.resource_version == "");
}

BOOST_AUTO_TEST_SUITE_END()
