// controller/rollout_window.hpp: change windows. Clock and zone parsing; a window open from its
// open to its close (half-open) on the local days it opens; midnight wraps and 24:00; the union
// of windows, across zones too; the DST days of Europe/Berlin, America/New_York and
// Australia/Sydney; the remaining-time guard, with exact next_start and next_change; windows
// too short for the guard. Every expected instant is worked out by hand, in UTC.
#include "controller/rollout_window.hpp"

#include <boost/test/unit_test.hpp>

#include <date/tz.h>

#include <optional>
#include <string>
#include <vector>

namespace gc = gpu_partitioner::controller;
using namespace std::chrono_literals;

namespace {

using time_point = gc::window_clock::time_point;
using maybe_time = std::optional<time_point>;

constexpr int sun = 0;
constexpr int mon = 1;
constexpr int tue = 2;
constexpr int wed = 3;
constexpr int thu = 4;
constexpr int fri = 5;
constexpr int sat = 6;

/// A UTC instant.
time_point utc(int y, unsigned m, unsigned d, int h, int min, int s = 0) {
  return date::sys_days{date::year{y} / m / d} + std::chrono::hours{h} + std::chrono::minutes{min} +
         std::chrono::seconds{s};
}

/// Minutes after midnight.
constexpr int hm(int h, int m) {
  return h * 60 + m;
}

gc::window_spec win(std::vector<int> days, int start, int end, std::string zone = "") {
  gc::window_spec w;
  w.days = std::move(days);
  w.start_minute = start;
  w.end_minute = end;
  w.time_zone = std::move(zone);
  return w;
}

std::string show(const maybe_time& t) {
  if (!t)
    return "none";
  const auto whole = date::floor<std::chrono::seconds>(*t);
  if (whole == *t)
    return date::format("%F %T UTC", whole);
  return date::format("%F %T UTC", *t);
}

struct expect {
  const char* when;
  time_point now;
  bool open;
  bool may_start;
  maybe_time closes_at;
  maybe_time next_start;
  maybe_time next_change;
};

/// Evaluates `windows` at each row's instant against what the row expects.
void check(const std::vector<gc::window_spec>& windows, std::chrono::seconds guard,
           const std::vector<expect>& rows) {
  for (const expect& row : rows) {
    BOOST_TEST_CONTEXT(row.when) {
      const gc::window_state s = gc::evaluate_windows(windows, guard, row.now);
      BOOST_TEST(s.configured);
      BOOST_TEST(s.open == row.open);
      BOOST_TEST(s.may_start == row.may_start);
      BOOST_TEST(show(s.closes_at) == show(row.closes_at));
      BOOST_TEST(show(s.next_start) == show(row.next_start));
      BOOST_TEST(show(s.next_change) == show(row.next_change));
    }
  }
}

const std::nullopt_t none = std::nullopt;

} // namespace

BOOST_AUTO_TEST_SUITE(rollout_window)

BOOST_AUTO_TEST_CASE(clocks_are_two_digits_colon_two_digits) {
  struct row {
    const char* text;
    bool allow_24;
    std::optional<int> minutes;
  };
  const std::vector<row> rows{
      {"00:00", false, 0},
      {"07:05", false, 425},
      {"23:59", false, 1439},
      {"24:00", true, 1440},
      {"24:00", false, std::nullopt},
      {"24:01", true, std::nullopt},
      {"25:00", true, std::nullopt},
      {"23:60", false, std::nullopt},
      {" 1:00", false, std::nullopt},
      {"7:05", false, std::nullopt},
      {"07:5", false, std::nullopt},
      {"07:05 ", false, std::nullopt},
      {"07-05", false, std::nullopt},
      {"+7:05", false, std::nullopt},
      {"", false, std::nullopt},
      {"ab:cd", false, std::nullopt},
  };
  for (const row& r : rows) {
    BOOST_TEST_CONTEXT("\"" << r.text << "\" allow_24=" << r.allow_24) {
      const std::optional<int> got = gc::parse_clock(r.text, r.allow_24);
      BOOST_TEST(got.has_value() == r.minutes.has_value());
      if (got && r.minutes)
        BOOST_TEST(*got == *r.minutes);
    }
  }
}

BOOST_AUTO_TEST_CASE(known_zones_pass_and_others_are_named) {
  BOOST_TEST(gc::time_zone_problem("Europe/Berlin") == "");
  BOOST_TEST(gc::time_zone_problem("America/New_York") == "");
  BOOST_TEST(gc::time_zone_problem("Australia/Sydney") == "");
  BOOST_TEST(gc::time_zone_problem("UTC") == "");
  BOOST_TEST(gc::time_zone_problem("") == "");
  BOOST_TEST(gc::time_zone_problem("Mars/Base") == "unknown time zone \"Mars/Base\"");
  BOOST_TEST(gc::time_zone_problem("../../etc/passwd") != "");
  BOOST_TEST(gc::time_zone_problem("/etc/passwd") != "");
  BOOST_TEST(gc::time_zone_problem("europe/berlin") != "");
  // The host's zone is no IANA name.
  BOOST_TEST(gc::time_zone_problem("localtime") != "");
}

// The hand-worked instants below rest on these offsets and transitions; the zone database,
// read through date directly, agrees.
BOOST_AUTO_TEST_CASE(the_hand_worked_instants_agree_with_the_zone_database) {
  struct row {
    const char* zone;
    date::local_seconds local;
    date::choose choice;
    time_point expected;
  };
  using date::local_days;
  using std::chrono::hours;
  using std::chrono::minutes;
  const auto at = [](int y, unsigned m, unsigned d, int h, int min) {
    return local_days{date::year{y} / m / d} + hours{h} + minutes{min};
  };
  const auto e = date::choose::earliest;
  const auto l = date::choose::latest;
  const std::vector<row> rows{
      // Berlin: 02:00 CET on 29 March does not exist, the jump is at 01:00 UTC.
      {"Europe/Berlin", at(2026, 3, 29, 2, 30), e, utc(2026, 3, 29, 1, 0)},
      {"Europe/Berlin", at(2026, 3, 29, 4, 0), e, utc(2026, 3, 29, 2, 0)},
      // Berlin: 02:30 on 25 October happens at 00:30 UTC (CEST) and 01:30 UTC (CET).
      {"Europe/Berlin", at(2026, 10, 25, 2, 30), e, utc(2026, 10, 25, 0, 30)},
      {"Europe/Berlin", at(2026, 10, 25, 2, 30), l, utc(2026, 10, 25, 1, 30)},
      // New York: 02:00 EST on 8 March jumps to 03:00 EDT at 07:00 UTC.
      {"America/New_York", at(2026, 3, 8, 2, 15), e, utc(2026, 3, 8, 7, 0)},
      {"America/New_York", at(2026, 3, 8, 3, 30), e, utc(2026, 3, 8, 7, 30)},
      // New York: 01:30 on 1 November happens at 05:30 UTC (EDT) and 06:30 UTC (EST).
      {"America/New_York", at(2026, 11, 1, 1, 30), e, utc(2026, 11, 1, 5, 30)},
      {"America/New_York", at(2026, 11, 1, 1, 30), l, utc(2026, 11, 1, 6, 30)},
      // Sydney: 02:30 on 5 April happens at 15:30 UTC (AEDT) and 16:30 UTC (AEST) the day
      // before; 02:30 on 4 October does not exist, the jump is at 16:00 UTC on 3 October.
      {"Australia/Sydney", at(2026, 4, 5, 2, 30), e, utc(2026, 4, 4, 15, 30)},
      {"Australia/Sydney", at(2026, 4, 5, 2, 30), l, utc(2026, 4, 4, 16, 30)},
      {"Australia/Sydney", at(2026, 10, 4, 2, 30), e, utc(2026, 10, 3, 16, 0)},
      {"Asia/Tokyo", at(2026, 6, 10, 14, 0), e, utc(2026, 6, 10, 5, 0)},
  };
  for (const row& r : rows) {
    BOOST_TEST_CONTEXT(r.zone << " " << r.local) {
      const date::zoned_seconds zoned{r.zone, r.local, r.choice};
      BOOST_TEST(show(zoned.get_sys_time()) == show(r.expected));
    }
  }
}

BOOST_AUTO_TEST_CASE(no_windows_is_always_open) {
  const gc::window_state s = gc::evaluate_windows({}, 30min, utc(2026, 6, 10, 12, 0));
  BOOST_TEST(!s.configured);
  BOOST_TEST(s.open);
  BOOST_TEST(s.may_start);
  BOOST_TEST(show(s.closes_at) == "none");
  BOOST_TEST(show(s.next_start) == "none");
  BOOST_TEST(show(s.next_change) == "none");
  BOOST_TEST(s.too_short.empty());
}

BOOST_AUTO_TEST_CASE(a_window_is_open_from_its_open_up_to_not_including_its_close) {
  // Every day 22:00-23:00 UTC.
  check({win({}, hm(22, 0), hm(23, 0))}, 0s,
        {
            {"noon", utc(2026, 6, 10, 12, 0), false, false, none, utc(2026, 6, 10, 22, 0),
             utc(2026, 6, 10, 22, 0)},
            {"a second before the open", utc(2026, 6, 10, 21, 59, 59), false, false, none,
             utc(2026, 6, 10, 22, 0), utc(2026, 6, 10, 22, 0)},
            {"at the open", utc(2026, 6, 10, 22, 0), true, true, utc(2026, 6, 10, 23, 0),
             utc(2026, 6, 10, 22, 0), utc(2026, 6, 10, 23, 0)},
            {"a second before the close", utc(2026, 6, 10, 22, 59, 59), true, true,
             utc(2026, 6, 10, 23, 0), utc(2026, 6, 10, 22, 59, 59), utc(2026, 6, 10, 23, 0)},
            {"at the close", utc(2026, 6, 10, 23, 0), false, false, none, utc(2026, 6, 11, 22, 0),
             utc(2026, 6, 11, 22, 0)},
        });
}

BOOST_AUTO_TEST_CASE(sub_second_instants_are_kept) {
  const std::vector<gc::window_spec> windows{win({}, hm(22, 0), hm(23, 0))};
  const time_point before = utc(2026, 6, 10, 21, 59, 59) + 500ms;
  const gc::window_state closed = gc::evaluate_windows(windows, 0s, before);
  BOOST_TEST(!closed.open);
  BOOST_TEST(show(closed.next_change) == show(utc(2026, 6, 10, 22, 0)));
  const time_point inside = utc(2026, 6, 10, 22, 0) + 250ms;
  const gc::window_state open = gc::evaluate_windows(windows, 0s, inside);
  BOOST_TEST(open.may_start);
  BOOST_TEST(show(open.next_start) == show(inside));
}

BOOST_AUTO_TEST_CASE(working_hours_in_berlin_on_weekdays) {
  // Mon-Fri 09:00-17:00 Europe/Berlin; June is CEST (UTC+2): 07:00-15:00 UTC.
  check({win({mon, tue, wed, thu, fri}, hm(9, 0), hm(17, 0), "Europe/Berlin")}, 0s,
        {
            // Wed 08:59 CEST.
            {"Wednesday before nine", utc(2026, 6, 10, 6, 59), false, false, none,
             utc(2026, 6, 10, 7, 0), utc(2026, 6, 10, 7, 0)},
            // Wed 09:00 CEST.
            {"Wednesday at nine", utc(2026, 6, 10, 7, 0), true, true, utc(2026, 6, 10, 15, 0),
             utc(2026, 6, 10, 7, 0), utc(2026, 6, 10, 15, 0)},
            // Wed 17:00 CEST; Thu 09:00 CEST next.
            {"Wednesday at five", utc(2026, 6, 10, 15, 0), false, false, none,
             utc(2026, 6, 11, 7, 0), utc(2026, 6, 11, 7, 0)},
            // Fri 17:00 CEST; Mon 15 June 09:00 CEST next.
            {"Friday at five", utc(2026, 6, 12, 15, 0), false, false, none, utc(2026, 6, 15, 7, 0),
             utc(2026, 6, 15, 7, 0)},
            // Sat 10:00 CEST.
            {"Saturday morning", utc(2026, 6, 13, 8, 0), false, false, none, utc(2026, 6, 15, 7, 0),
             utc(2026, 6, 15, 7, 0)},
        });
}

BOOST_AUTO_TEST_CASE(a_window_crossing_midnight_belongs_to_the_day_it_opens) {
  // Fri 23:00-01:00 Europe/Berlin (CEST, UTC+2): Fri 21:00 UTC to Fri 23:00 UTC.
  check({win({fri}, hm(23, 0), hm(1, 0), "Europe/Berlin")}, 0s,
        {
            // Fri 12 June 23:00 CEST.
            {"Friday 23:00 opens", utc(2026, 6, 12, 21, 0), true, true, utc(2026, 6, 12, 23, 0),
             utc(2026, 6, 12, 21, 0), utc(2026, 6, 12, 23, 0)},
            // Sat 13 June 00:30 CEST (still Friday in UTC, but the local day matters).
            {"Saturday 00:30 is Friday's window", utc(2026, 6, 12, 22, 30), true, true,
             utc(2026, 6, 12, 23, 0), utc(2026, 6, 12, 22, 30), utc(2026, 6, 12, 23, 0)},
            // Sat 01:00 CEST; next Friday 19 June 23:00 CEST.
            {"Saturday 01:00 is closed", utc(2026, 6, 12, 23, 0), false, false, none,
             utc(2026, 6, 19, 21, 0), utc(2026, 6, 19, 21, 0)},
            // Fri 12 June 00:30 CEST: Thursday opens nothing.
            {"Friday 00:30 is closed", utc(2026, 6, 11, 22, 30), false, false, none,
             utc(2026, 6, 12, 21, 0), utc(2026, 6, 12, 21, 0)},
            // Sat 13 June 23:30 CEST: Saturday is not listed.
            {"Saturday 23:30 is closed", utc(2026, 6, 13, 21, 30), false, false, none,
             utc(2026, 6, 19, 21, 0), utc(2026, 6, 19, 21, 0)},
        });
  // With Saturday listed, Sat 23:30 CEST is open until Sun 01:00 CEST (Sat 23:00 UTC).
  check({win({fri, sat}, hm(23, 0), hm(1, 0), "Europe/Berlin")}, 0s,
        {
            {"Saturday 23:30 with Saturday listed", utc(2026, 6, 13, 21, 30), true, true,
             utc(2026, 6, 13, 23, 0), utc(2026, 6, 13, 21, 30), utc(2026, 6, 13, 23, 0)},
        });
}

BOOST_AUTO_TEST_CASE(an_end_of_24_00_is_the_end_of_the_day) {
  check({win({}, hm(20, 0), hm(24, 0))}, 0s,
        {
            {"23:59:59 UTC", utc(2026, 6, 10, 23, 59, 59), true, true, utc(2026, 6, 11, 0, 0),
             utc(2026, 6, 10, 23, 59, 59), utc(2026, 6, 11, 0, 0)},
            {"midnight UTC", utc(2026, 6, 11, 0, 0), false, false, none, utc(2026, 6, 11, 20, 0),
             utc(2026, 6, 11, 20, 0)},
        });
  // Mon 20:00-24:00 Europe/Berlin (CEST): Mon 18:00 UTC to Mon 22:00 UTC.
  check({win({mon}, hm(20, 0), hm(24, 0), "Europe/Berlin")}, 0s,
        {
            // Mon 8 June 23:59 CEST.
            {"Monday 23:59 CEST", utc(2026, 6, 8, 21, 59), true, true, utc(2026, 6, 8, 22, 0),
             utc(2026, 6, 8, 21, 59), utc(2026, 6, 8, 22, 0)},
            // Tue 00:00 CEST; Mon 15 June 20:00 CEST next.
            {"Tuesday 00:00 CEST", utc(2026, 6, 8, 22, 0), false, false, none,
             utc(2026, 6, 15, 18, 0), utc(2026, 6, 15, 18, 0)},
        });
}

BOOST_AUTO_TEST_CASE(a_start_equal_to_the_end_is_a_whole_day) {
  // Mon 06:00-06:00 UTC: Mon 06:00 to Tue 06:00.
  check({win({mon}, hm(6, 0), hm(6, 0))}, 0s,
        {
            {"Monday 06:00", utc(2026, 6, 8, 6, 0), true, true, utc(2026, 6, 9, 6, 0),
             utc(2026, 6, 8, 6, 0), utc(2026, 6, 9, 6, 0)},
            {"Tuesday 05:59", utc(2026, 6, 9, 5, 59), true, true, utc(2026, 6, 9, 6, 0),
             utc(2026, 6, 9, 5, 59), utc(2026, 6, 9, 6, 0)},
        });
}

BOOST_AUTO_TEST_CASE(windows_touching_across_midnight_are_one_interval) {
  // Mon 22:00-24:00 and Tue 00:00-06:00 UTC: one interval Mon 22:00 to Tue 06:00 (8 h). A
  // guard of 3 h: the union lets nodes start until Tue 03:00.
  const std::vector<gc::window_spec> windows{win({mon}, hm(22, 0), hm(24, 0)),
                                             win({tue}, hm(0, 0), hm(6, 0))};
  check(windows, 3h,
        {
            {"Monday 22:00", utc(2026, 6, 8, 22, 0), true, true, utc(2026, 6, 9, 6, 0),
             utc(2026, 6, 8, 22, 0), utc(2026, 6, 9, 3, 0)},
            {"Monday 23:59", utc(2026, 6, 8, 23, 59), true, true, utc(2026, 6, 9, 6, 0),
             utc(2026, 6, 8, 23, 59), utc(2026, 6, 9, 3, 0)},
            {"Tuesday 00:00", utc(2026, 6, 9, 0, 0), true, true, utc(2026, 6, 9, 6, 0),
             utc(2026, 6, 9, 0, 0), utc(2026, 6, 9, 3, 0)},
            {"Tuesday 03:00, 3 h left", utc(2026, 6, 9, 3, 0), true, false, utc(2026, 6, 9, 6, 0),
             utc(2026, 6, 15, 22, 0), utc(2026, 6, 9, 6, 0)},
            {"Tuesday 06:00", utc(2026, 6, 9, 6, 0), false, false, none, utc(2026, 6, 15, 22, 0),
             utc(2026, 6, 15, 22, 0)},
        });
  // Monday's window alone (2 h) is shorter than the guard, but it runs into Tuesday's: the
  // two are one opening of 8 h, and nodes start in both. Nothing to warn of.
  const gc::window_state s = gc::evaluate_windows(windows, 3h, utc(2026, 6, 8, 22, 0));
  BOOST_TEST(s.too_short.empty());
  // With a guard of 7 h only Monday's lets a node start (22:00-23:00): Tuesday's is named.
  BOOST_TEST(gc::evaluate_windows(windows, 7h, utc(2026, 6, 8, 22, 0)).too_short ==
             std::vector<std::size_t>{1});
}

BOOST_AUTO_TEST_CASE(windows_in_different_zones_overlap_into_one_interval) {
  // 09:00-12:00 Europe/Berlin (CEST): 07:00-10:00 UTC; 05:00-08:00 America/New_York (EDT):
  // 09:00-12:00 UTC. Union 07:00-12:00 UTC.
  check({win({}, hm(9, 0), hm(12, 0), "Europe/Berlin"),
         win({}, hm(5, 0), hm(8, 0), "America/New_York")},
        0s,
        {
            {"06:59 UTC", utc(2026, 6, 10, 6, 59), false, false, none, utc(2026, 6, 10, 7, 0),
             utc(2026, 6, 10, 7, 0)},
            {"07:00 UTC, Berlin opens", utc(2026, 6, 10, 7, 0), true, true, utc(2026, 6, 10, 12, 0),
             utc(2026, 6, 10, 7, 0), utc(2026, 6, 10, 12, 0)},
            {"09:30 UTC, both open", utc(2026, 6, 10, 9, 30), true, true, utc(2026, 6, 10, 12, 0),
             utc(2026, 6, 10, 9, 30), utc(2026, 6, 10, 12, 0)},
            {"11:59 UTC, New York only", utc(2026, 6, 10, 11, 59), true, true,
             utc(2026, 6, 10, 12, 0), utc(2026, 6, 10, 11, 59), utc(2026, 6, 10, 12, 0)},
            {"12:00 UTC", utc(2026, 6, 10, 12, 0), false, false, none, utc(2026, 6, 11, 7, 0),
             utc(2026, 6, 11, 7, 0)},
        });
}

BOOST_AUTO_TEST_CASE(windows_in_different_zones_touching_are_one_interval) {
  // 14:00-16:00 Asia/Tokyo (JST, UTC+9): 05:00-07:00 UTC; 09:00-12:00 Europe/Berlin (CEST):
  // 07:00-10:00 UTC. Union 05:00-10:00 UTC; with a 4 h guard nodes start until 06:00 UTC.
  const std::vector<gc::window_spec> windows{win({}, hm(14, 0), hm(16, 0), "Asia/Tokyo"),
                                             win({}, hm(9, 0), hm(12, 0), "Europe/Berlin")};
  check(windows, 4h,
        {
            {"05:00 UTC", utc(2026, 6, 10, 5, 0), true, true, utc(2026, 6, 10, 10, 0),
             utc(2026, 6, 10, 5, 0), utc(2026, 6, 10, 6, 0)},
            {"06:30 UTC", utc(2026, 6, 10, 6, 30), true, false, utc(2026, 6, 10, 10, 0),
             utc(2026, 6, 11, 5, 0), utc(2026, 6, 10, 10, 0)},
            {"07:00 UTC, where they touch", utc(2026, 6, 10, 7, 0), true, false,
             utc(2026, 6, 10, 10, 0), utc(2026, 6, 11, 5, 0), utc(2026, 6, 10, 10, 0)},
        });
  // Tokyo's window lets nodes start (05:00-06:00 UTC); Berlin's opens at 07:00, with 3 h
  // left of the two: no node starts in it.
  const gc::window_state s = gc::evaluate_windows(windows, 4h, utc(2026, 6, 10, 5, 0));
  BOOST_TEST(s.too_short == (std::vector<std::size_t>{1}));
}

BOOST_AUTO_TEST_CASE(berlin_spring_forward_opens_a_skipped_start_at_the_jump) {
  // 29 March 2026: 02:00 CET (01:00 UTC) jumps to 03:00 CEST. Sun 02:30-04:00 opens at the
  // jump, 01:00 UTC, and closes 04:00 CEST, 02:00 UTC: one hour. Guard 30 min.
  check({win({sun}, hm(2, 30), hm(4, 0), "Europe/Berlin")}, 30min,
        {
            // Sat 28 March 13:00 CET.
            {"the day before", utc(2026, 3, 28, 12, 0), false, false, none, utc(2026, 3, 29, 1, 0),
             utc(2026, 3, 29, 1, 0)},
            // Sun 01:59 CET.
            {"01:59 CET", utc(2026, 3, 29, 0, 59), false, false, none, utc(2026, 3, 29, 1, 0),
             utc(2026, 3, 29, 1, 0)},
            // Sun 03:00 CEST.
            {"the jump", utc(2026, 3, 29, 1, 0), true, true, utc(2026, 3, 29, 2, 0),
             utc(2026, 3, 29, 1, 0), utc(2026, 3, 29, 1, 30)},
            // Sun 03:30 CEST; next Sun 5 April 02:30 CEST.
            {"03:30 CEST, 30 min left", utc(2026, 3, 29, 1, 30), true, false,
             utc(2026, 3, 29, 2, 0), utc(2026, 4, 5, 0, 30), utc(2026, 3, 29, 2, 0)},
            // Sun 04:00 CEST.
            {"04:00 CEST", utc(2026, 3, 29, 2, 0), false, false, none, utc(2026, 4, 5, 0, 30),
             utc(2026, 4, 5, 0, 30)},
        });
  // Sun 02:05-02:55 lies wholly in the skipped hour: nothing that day. Next Sun 02:05 CEST.
  check({win({sun}, hm(2, 5), hm(2, 55), "Europe/Berlin")}, 0s,
        {
            // Sun 29 March 01:30 CET.
            {"the skipped window", utc(2026, 3, 29, 0, 30), false, false, none,
             utc(2026, 4, 5, 0, 5), utc(2026, 4, 5, 0, 5)},
            // Sun 03:00 CEST.
            {"at the jump", utc(2026, 3, 29, 1, 0), false, false, none, utc(2026, 4, 5, 0, 5),
             utc(2026, 4, 5, 0, 5)},
        });
}

BOOST_AUTO_TEST_CASE(berlin_fall_back_takes_the_first_of_a_repeated_time) {
  // 25 October 2026: 03:00 CEST (01:00 UTC) falls back to 02:00 CET; 02:00-03:00 happens at
  // 00:00-01:00 UTC and again at 01:00-02:00 UTC.
  // Sun 02:30-04:00: opens at the first 02:30 (00:30 UTC), closes 04:00 CET (03:00 UTC).
  check({win({sun}, hm(2, 30), hm(4, 0), "Europe/Berlin")}, 0s,
        {
            // 02:29 CEST.
            {"first 02:29", utc(2026, 10, 25, 0, 29), false, false, none, utc(2026, 10, 25, 0, 30),
             utc(2026, 10, 25, 0, 30)},
            // 02:30 CEST.
            {"first 02:30", utc(2026, 10, 25, 0, 30), true, true, utc(2026, 10, 25, 3, 0),
             utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 3, 0)},
            // 02:15 CET, the second time round.
            {"second 02:15", utc(2026, 10, 25, 1, 15), true, true, utc(2026, 10, 25, 3, 0),
             utc(2026, 10, 25, 1, 15), utc(2026, 10, 25, 3, 0)},
            // 04:00 CET; next Sun 1 November 02:30 CET.
            {"04:00 CET", utc(2026, 10, 25, 3, 0), false, false, none, utc(2026, 11, 1, 1, 30),
             utc(2026, 11, 1, 1, 30)},
        });
  // Sun 01:00-02:30: opens 01:00 CEST (23:00 UTC the day before), closes at the first 02:30
  // (00:30 UTC); the second 02:00-02:30 is closed.
  check({win({sun}, hm(1, 0), hm(2, 30), "Europe/Berlin")}, 0s,
        {
            // Sun 01:00 CEST.
            {"01:00 CEST", utc(2026, 10, 24, 23, 0), true, true, utc(2026, 10, 25, 0, 30),
             utc(2026, 10, 24, 23, 0), utc(2026, 10, 25, 0, 30)},
            // 02:29 CEST.
            {"first 02:29", utc(2026, 10, 25, 0, 29), true, true, utc(2026, 10, 25, 0, 30),
             utc(2026, 10, 25, 0, 29), utc(2026, 10, 25, 0, 30)},
            // 02:30 CEST; next Sun 1 November 01:00 CET.
            {"first 02:30", utc(2026, 10, 25, 0, 30), false, false, none, utc(2026, 11, 1, 0, 0),
             utc(2026, 11, 1, 0, 0)},
            // 02:15 CET.
            {"second 02:15", utc(2026, 10, 25, 1, 15), false, false, none, utc(2026, 11, 1, 0, 0),
             utc(2026, 11, 1, 0, 0)},
        });
}

BOOST_AUTO_TEST_CASE(new_york_spring_forward) {
  // 8 March 2026: 02:00 EST (07:00 UTC) jumps to 03:00 EDT. Sun 01:30-03:30: 01:30 EST
  // (06:30 UTC) to 03:30 EDT (07:30 UTC), one hour. Guard 30 min.
  check({win({sun}, hm(1, 30), hm(3, 30), "America/New_York")}, 30min,
        {
            // 01:29 EST.
            {"01:29 EST", utc(2026, 3, 8, 6, 29), false, false, none, utc(2026, 3, 8, 6, 30),
             utc(2026, 3, 8, 6, 30)},
            // 01:30 EST.
            {"01:30 EST", utc(2026, 3, 8, 6, 30), true, true, utc(2026, 3, 8, 7, 30),
             utc(2026, 3, 8, 6, 30), utc(2026, 3, 8, 7, 0)},
            // 03:00 EDT; next Sun 15 March 01:30 EDT.
            {"03:00 EDT", utc(2026, 3, 8, 7, 0), true, false, utc(2026, 3, 8, 7, 30),
             utc(2026, 3, 15, 5, 30), utc(2026, 3, 8, 7, 30)},
            // 03:30 EDT.
            {"03:30 EDT", utc(2026, 3, 8, 7, 30), false, false, none, utc(2026, 3, 15, 5, 30),
             utc(2026, 3, 15, 5, 30)},
        });
  // Sun 02:15-04:00: opens at the jump (07:00 UTC), closes 04:00 EDT (08:00 UTC).
  check({win({sun}, hm(2, 15), hm(4, 0), "America/New_York")}, 0s,
        {
            // 01:59 EST.
            {"01:59 EST", utc(2026, 3, 8, 6, 59), false, false, none, utc(2026, 3, 8, 7, 0),
             utc(2026, 3, 8, 7, 0)},
            // 03:00 EDT.
            {"the jump", utc(2026, 3, 8, 7, 0), true, true, utc(2026, 3, 8, 8, 0),
             utc(2026, 3, 8, 7, 0), utc(2026, 3, 8, 8, 0)},
        });
}

BOOST_AUTO_TEST_CASE(new_york_fall_back) {
  // 1 November 2026: 02:00 EDT (06:00 UTC) falls back to 01:00 EST; 01:00-02:00 happens at
  // 05:00-06:00 UTC and again at 06:00-07:00 UTC.
  // Sun 00:30-01:30: 00:30 EDT (04:30 UTC) to the first 01:30 (05:30 UTC).
  check({win({sun}, hm(0, 30), hm(1, 30), "America/New_York")}, 0s,
        {
            // 00:30 EDT.
            {"00:30 EDT", utc(2026, 11, 1, 4, 30), true, true, utc(2026, 11, 1, 5, 30),
             utc(2026, 11, 1, 4, 30), utc(2026, 11, 1, 5, 30)},
            // 01:30 EDT; next Sun 8 November 00:30 EST.
            {"first 01:30", utc(2026, 11, 1, 5, 30), false, false, none, utc(2026, 11, 8, 5, 30),
             utc(2026, 11, 8, 5, 30)},
            // 01:15 EST.
            {"second 01:15", utc(2026, 11, 1, 6, 15), false, false, none, utc(2026, 11, 8, 5, 30),
             utc(2026, 11, 8, 5, 30)},
        });
  // Sun 01:30-03:00: the first 01:30 (05:30 UTC) to 03:00 EST (08:00 UTC).
  check({win({sun}, hm(1, 30), hm(3, 0), "America/New_York")}, 0s,
        {
            // 01:29 EDT.
            {"first 01:29", utc(2026, 11, 1, 5, 29), false, false, none, utc(2026, 11, 1, 5, 30),
             utc(2026, 11, 1, 5, 30)},
            // 01:45 EST.
            {"second 01:45", utc(2026, 11, 1, 6, 45), true, true, utc(2026, 11, 1, 8, 0),
             utc(2026, 11, 1, 6, 45), utc(2026, 11, 1, 8, 0)},
        });
}

BOOST_AUTO_TEST_CASE(sydney_keeps_summer_time_in_january) {
  // Wed 22:00-02:00 Australia/Sydney. June is AEST (UTC+10): Wed 12:00-16:00 UTC. January
  // is AEDT (UTC+11): Wed 11:00-15:00 UTC.
  check({win({wed}, hm(22, 0), hm(2, 0), "Australia/Sydney")}, 0s,
        {
            // Wed 10 June 21:59 AEST.
            {"June, 21:59", utc(2026, 6, 10, 11, 59), false, false, none, utc(2026, 6, 10, 12, 0),
             utc(2026, 6, 10, 12, 0)},
            // Thu 11 June 01:00 AEST.
            {"June, Thursday 01:00", utc(2026, 6, 10, 15, 0), true, true, utc(2026, 6, 10, 16, 0),
             utc(2026, 6, 10, 15, 0), utc(2026, 6, 10, 16, 0)},
            // Thu 8 January 01:30 AEDT.
            {"January, Thursday 01:30", utc(2026, 1, 7, 14, 30), true, true, utc(2026, 1, 7, 15, 0),
             utc(2026, 1, 7, 14, 30), utc(2026, 1, 7, 15, 0)},
            // Thu 8 January 02:30 AEDT; next Wed 14 January 22:00 AEDT.
            {"January, Thursday 02:30", utc(2026, 1, 7, 15, 30), false, false, none,
             utc(2026, 1, 14, 11, 0), utc(2026, 1, 14, 11, 0)},
        });
  // Sun 02:30-03:30 on the DST days. 5 April: 03:00 AEDT (16:00 UTC on 4 April) falls back
  // to 02:00 AEST: the first 02:30 (15:30 UTC) to 03:30 AEST (17:30 UTC). 4 October: 02:00
  // AEST (16:00 UTC on 3 October) jumps to 03:00 AEDT: the jump to 03:30 AEDT (16:30 UTC).
  check({win({sun}, hm(2, 30), hm(3, 30), "Australia/Sydney")}, 0s,
        {
            // Sun 5 April, first 02:30 AEDT.
            {"April, first 02:30", utc(2026, 4, 4, 15, 30), true, true, utc(2026, 4, 4, 17, 30),
             utc(2026, 4, 4, 15, 30), utc(2026, 4, 4, 17, 30)},
            // Sun 4 October 03:00 AEDT.
            {"October, the jump", utc(2026, 10, 3, 16, 0), true, true, utc(2026, 10, 3, 16, 30),
             utc(2026, 10, 3, 16, 0), utc(2026, 10, 3, 16, 30)},
        });
}

BOOST_AUTO_TEST_CASE(the_guard_stops_starts_before_the_close_and_says_when) {
  // Every day 22:00-23:00 UTC, guard 30 min: nodes start in 22:00-22:30.
  check({win({}, hm(22, 0), hm(23, 0))}, 30min,
        {
            {"21:00", utc(2026, 6, 10, 21, 0), false, false, none, utc(2026, 6, 10, 22, 0),
             utc(2026, 6, 10, 22, 0)},
            {"22:00", utc(2026, 6, 10, 22, 0), true, true, utc(2026, 6, 10, 23, 0),
             utc(2026, 6, 10, 22, 0), utc(2026, 6, 10, 22, 30)},
            {"22:10", utc(2026, 6, 10, 22, 10), true, true, utc(2026, 6, 10, 23, 0),
             utc(2026, 6, 10, 22, 10), utc(2026, 6, 10, 22, 30)},
            {"22:29:59", utc(2026, 6, 10, 22, 29, 59), true, true, utc(2026, 6, 10, 23, 0),
             utc(2026, 6, 10, 22, 29, 59), utc(2026, 6, 10, 22, 30)},
            {"22:30, 30 min left", utc(2026, 6, 10, 22, 30), true, false, utc(2026, 6, 10, 23, 0),
             utc(2026, 6, 11, 22, 0), utc(2026, 6, 10, 23, 0)},
            {"22:40", utc(2026, 6, 10, 22, 40), true, false, utc(2026, 6, 10, 23, 0),
             utc(2026, 6, 11, 22, 0), utc(2026, 6, 10, 23, 0)},
            {"23:00", utc(2026, 6, 10, 23, 0), false, false, none, utc(2026, 6, 11, 22, 0),
             utc(2026, 6, 11, 22, 0)},
        });
  const gc::window_state s =
      gc::evaluate_windows({win({}, hm(22, 0), hm(23, 0))}, 30min, utc(2026, 6, 10, 22, 0));
  BOOST_TEST(s.too_short.empty());
}

BOOST_AUTO_TEST_CASE(a_window_no_longer_than_the_guard_never_lets_a_node_start) {
  // Every day 22:00-22:20 UTC, guard 30 min.
  const std::vector<gc::window_spec> short_one{win({}, hm(22, 0), hm(22, 20))};
  check(short_one, 30min,
        {
            {"21:00", utc(2026, 6, 10, 21, 0), false, false, none, none, utc(2026, 6, 10, 22, 0)},
            {"22:05", utc(2026, 6, 10, 22, 5), true, false, utc(2026, 6, 10, 22, 20), none,
             utc(2026, 6, 10, 22, 20)},
        });
  BOOST_TEST(gc::evaluate_windows(short_one, 30min, utc(2026, 6, 10, 22, 5)).too_short ==
             std::vector<std::size_t>{0});
  // Exactly as long as the guard: no instant has more than 30 min left.
  const std::vector<gc::window_spec> exact{win({}, hm(22, 0), hm(22, 30))};
  const gc::window_state at_open = gc::evaluate_windows(exact, 30min, utc(2026, 6, 10, 22, 0));
  BOOST_TEST(at_open.open);
  BOOST_TEST(!at_open.may_start);
  BOOST_TEST(at_open.too_short == std::vector<std::size_t>{0});
  // Beside a long enough window: only the short one is named; starts wait for the other.
  const std::vector<gc::window_spec> both{win({}, hm(22, 0), hm(22, 20)),
                                          win({}, hm(1, 0), hm(3, 0))};
  check(both, 30min,
        {
            {"22:05", utc(2026, 6, 10, 22, 5), true, false, utc(2026, 6, 10, 22, 20),
             utc(2026, 6, 11, 1, 0), utc(2026, 6, 10, 22, 20)},
        });
  BOOST_TEST(gc::evaluate_windows(both, 30min, utc(2026, 6, 10, 22, 5)).too_short ==
             std::vector<std::size_t>{0});
}

BOOST_AUTO_TEST_CASE(a_weekly_window_is_found_next_week) {
  // Mon 09:00-10:00 Europe/Berlin (CEST): Mon 07:00-08:00 UTC.
  check({win({mon}, hm(9, 0), hm(10, 0), "Europe/Berlin")}, 0s,
        {
            // Mon 8 June 10:00 CEST, at the close; Mon 15 June 09:00 CEST next.
            {"Monday at the close", utc(2026, 6, 8, 8, 0), false, false, none,
             utc(2026, 6, 15, 7, 0), utc(2026, 6, 15, 7, 0)},
            // Tue 9 June 14:00 CEST.
            {"Tuesday", utc(2026, 6, 9, 12, 0), false, false, none, utc(2026, 6, 15, 7, 0),
             utc(2026, 6, 15, 7, 0)},
            // Mon 15 June 01:00 CEST, still Sunday in UTC.
            {"Monday 01:00 CEST", utc(2026, 6, 14, 23, 0), false, false, none,
             utc(2026, 6, 15, 7, 0), utc(2026, 6, 15, 7, 0)},
        });
}

BOOST_AUTO_TEST_CASE(a_zone_unknown_after_all_opens_nothing) {
  const gc::window_state s = gc::evaluate_windows({win({}, hm(0, 0), hm(24, 0), "Mars/Base")}, 0s,
                                                  utc(2026, 6, 10, 12, 0));
  BOOST_TEST(s.configured);
  BOOST_TEST(!s.open);
  BOOST_TEST(!s.may_start);
  BOOST_TEST(show(s.next_start) == "none");
  BOOST_TEST(show(s.next_change) == "none");
  BOOST_TEST(s.too_short == std::vector<std::size_t>{0});
}

BOOST_AUTO_TEST_SUITE_END()
