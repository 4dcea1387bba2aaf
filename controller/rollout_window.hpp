#pragma once

// Change windows of a rollout: a plan starts nodes only inside one of its windows.
//
// Rules:
// - A window's days are the local days it OPENS on: "Fri 23:00-01:00" is open on Saturday at
//   00:30 local, and not on Saturday at 23:30 unless Saturday is listed too.
// - end <= start crosses midnight (closes on the next local day); end 1440 ("24:00") is the
//   end of the day.
// - Local times resolve in the window's zone: a repeated local time (clocks go back) to its
//   first occurrence, starts and ends alike; a skipped one (clocks jump forward) to the
//   instant of the jump. An occurrence of zero or negative length is skipped.
// - Occurrences are half-open [open, close). Occurrences of all windows that overlap or touch
//   merge into one interval (whatever their zones); closes_at and the remaining-time guard
//   read the merged interval.
// - may_start holds on [open, close - min_remaining) of a merged interval: half-open like the
//   windows, so the instant it turns false is exact.
// - Lookahead: occurrences opening on local days today-2 .. today+8 of each window's zone
//   (today: the local date of `now` there). An interval reaching past it ends where it ends.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gpu_partitioner::controller {

using window_clock = std::chrono::system_clock;

/// One change window. Times are local to time_zone, minutes after local midnight.
struct window_spec {
  /// Days the window OPENS on, 0 = Sunday .. 6 = Saturday; empty = every day.
  std::vector<int> days;
  /// 0..1439.
  int start_minute = 0;
  /// 1..1440; end <= start: the window crosses midnight and closes on the next local day.
  int end_minute = 0;
  /// IANA name; empty means "UTC".
  std::string time_zone;
};

/// Local days before and after today whose occurrences are computed.
inline constexpr int window_days_before = 2;
inline constexpr int window_days_after = 8;

/// "HH:MM" (two digits each, 00..23, 00..59) as minutes after midnight; "24:00" only when
/// allow_24 (an end of day). nullopt when malformed.
std::optional<int> parse_clock(const std::string& text, bool allow_24);

/// Empty when `name` is a time zone the system knows (empty name = UTC, fine); else a one-line
/// problem such as `unknown time zone "Mars/Base"`. "localtime" (the host's zone) is refused.
/// Never throws.
std::string time_zone_problem(const std::string& name);

/// Where the rollout stands against its windows at `now`.
struct window_state {
  /// There are windows at all (none: always open, may_start true, the rest empty).
  bool configured = false;
  /// now lies inside the union of the windows.
  bool open = false;
  /// open, and more than min_remaining is left before the merged interval containing now
  /// closes (now < closes_at - min_remaining).
  bool may_start = false;
  /// When open: the end of the merged interval containing now.
  std::optional<window_clock::time_point> closes_at;
  /// The earliest instant >= now at which may_start holds (now when may_start); nullopt if
  /// none within the lookahead.
  std::optional<window_clock::time_point> next_start;
  /// The next instant > now at which open or may_start changes; nullopt if none within the
  /// lookahead (the caller looks again then).
  std::optional<window_clock::time_point> next_change;
  /// Windows (by index) in none of whose occurrences in the lookahead a node may start: each
  /// begins when its merged interval (joined with the windows it overlaps or touches) has
  /// min_remaining or less left (for a warning).
  std::vector<std::size_t> too_short;
};

/// Precondition: every spec passed time_zone_problem and parse_clock (the caller refuses bad
/// ones); a zone that cannot be found anyway gives its window no occurrences. Never throws.
window_state evaluate_windows(const std::vector<window_spec>& windows,
                              std::chrono::seconds min_remaining, window_clock::time_point now);

} // namespace gpu_partitioner::controller
