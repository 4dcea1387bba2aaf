// protocol::parse_time and format_time: RFC 3339 as the API server writes and reads it,
// for status times, Events, Leases and exec credentials' expiry.
#include "protocol/timestamp.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <ctime>
#include <optional>
#include <ostream>

namespace gp = gpu_partitioner::protocol;
namespace bdata = boost::unit_test::data;
using namespace std::chrono_literals;

namespace {

struct timestamp_case {
  const char* text;
  std::optional<std::time_t> seconds; // since the epoch; nullopt: refused
};

std::ostream& operator<<(std::ostream& os, const timestamp_case& c) {
  return os << "\"" << c.text << "\"";
}

const timestamp_case timestamp_cases[] = {
    {"1970-01-01T00:00:00Z", 0},
    {"2026-11-29T15:20:00Z", 1795965600},
    {"2026-11-29t15:20:00z", 1795965600},
    {"2026-11-29T15:20:00.123456789Z", 1795965600},
    {"2026-11-29T15:20:00.5Z", 1795965600},
    {"2026-11-29T17:20:00+02:00", 1795965600},
    {"2026-11-29T10:50:00-04:30", 1795965600},
    {"2026-11-29T15:20:00.25+00:00", 1795965600},
    {"2024-02-29T00:00:00Z", 1709164800},
    {"2026-11-29T15:20:00", std::nullopt},
    {"2026-11-29 15:20:00Z", std::nullopt},
    {"2026-11-29T15:20Z", std::nullopt},
    {"2026-11-29", std::nullopt},
    {"2026-11-29T15:20:00.Z", std::nullopt},
    {"2026-02-30T00:00:00Z", std::nullopt},
    {"2026-11-29T15:20:00+24:00", std::nullopt},
    {"2026-11-29T15:20:00+02:0", std::nullopt},
    {"2026-11-29T15:20:00+0200", std::nullopt},
    {"2026-11-29T15:20:00+02", std::nullopt},
    {"2026-11-29T15:20:00+02:00x", std::nullopt},
    {"tomorrow", std::nullopt},
    {"", std::nullopt},
    {"2026-13-01T00:00:00Z", std::nullopt},
    {"2026-11-31T00:00:00Z", std::nullopt},
    {"2026-11-29T24:00:00Z", std::nullopt},
    {"2026-11-29T15:20:00.Z", std::nullopt},
    {"2026-02-30T00:00:00Z", std::nullopt},
    {"2026-11-29T15:20:00+24:00", std::nullopt},
    {"2026-11-29T15:20:00+02:0", std::nullopt},
    // Outside what a 64-bit count of nanoseconds holds: refused, not overflowed.
    {"1013-01-15T08:00:00Z", std::nullopt},
    {"-999-01-15T08:00:00Z", std::nullopt},
    {"9999-12-31T23:59:59Z", std::nullopt},
    {"1900-01-01T00:00:00Z", -2208988800},
    {"2200-01-01T00:00:00Z", 7258118400},
};

} // namespace

BOOST_DATA_TEST_CASE(parses_rfc3339_or_refuses_it, bdata::make(timestamp_cases), row) {
  auto t = gp::parse_time(row.text);
  BOOST_TEST(t.has_value() == row.seconds.has_value());
  if (t && row.seconds)
    BOOST_TEST(gp::wall_clock::to_time_t(*t) == *row.seconds);
}

BOOST_AUTO_TEST_CASE(formats_seconds_and_microseconds_in_utc) {
  const auto t = gp::wall_clock::from_time_t(1795965600) + 123456789ns;
  BOOST_TEST(gp::format_time(t) == "2026-11-29T15:20:00Z");
  BOOST_TEST(gp::format_time_micro(t) == "2026-11-29T15:20:00.123456Z");
  BOOST_TEST(gp::format_time_micro(gp::wall_clock::from_time_t(0)) ==
             "1970-01-01T00:00:00.000000Z");
  // What it writes, it reads back (to the second).
  BOOST_TEST(gp::wall_clock::to_time_t(*gp::parse_time(gp::format_time(t))) == 1795965600);
  BOOST_TEST(gp::wall_clock::to_time_t(*gp::parse_time(gp::format_time_micro(t))) == 1795965600);
}
