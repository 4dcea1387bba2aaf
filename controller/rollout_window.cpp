#include "controller/rollout_window.hpp"

#include <date/tz.h>

#include <algorithm>
#include <exception>

namespace gpu_partitioner::controller {

namespace {

using std::chrono::minutes;

/// The zone of a window; nullptr when the system does not know it. "localtime" is the
/// host's zone, not an IANA name: refused.
const date::time_zone* find_zone(const std::string& name) {
  if (name == "localtime")
    return nullptr;
  try {
    return date::locate_zone(name.empty() ? std::string("UTC") : name);
  } catch (const std::exception&) {
    return nullptr;
  }
}

bool two_digits(const std::string& text, std::size_t at, int& value) {
  const char hi = text[at];
  const char lo = text[at + 1];
  if (hi < '0' || hi > '9' || lo < '0' || lo > '9')
    return false;
  value = (hi - '0') * 10 + (lo - '0');
  return true;
}

/// One occurrence of one window, resolved to UTC.
struct occurrence {
  window_clock::time_point open;
  window_clock::time_point close;
};

/// The occurrences of `spec` opening on the lookahead's local days; none when its zone is
/// unknown.
std::vector<occurrence> occurrences_of(const window_spec& spec, window_clock::time_point now) {
  std::vector<occurrence> out;
  const date::time_zone* zone = find_zone(spec.time_zone);
  if (zone == nullptr)
    return out;
  const date::local_days today = date::floor<date::days>(zone->to_local(now));
  const bool crosses_midnight = spec.end_minute <= spec.start_minute;
  for (int offset = -window_days_before; offset <= window_days_after; ++offset) {
    const date::local_days day = today + date::days{offset};
    const int weekday = static_cast<int>(date::weekday{day}.c_encoding());
    if (!spec.days.empty() &&
        std::find(spec.days.begin(), spec.days.end(), weekday) == spec.days.end())
      continue;
    const date::local_days close_day = crosses_midnight ? day + date::days{1} : day;
    // choose::earliest: a repeated local time is its first occurrence; a skipped one
    // resolves to the instant of the jump whatever the choice.
    const auto open = zone->to_sys(day + minutes{spec.start_minute}, date::choose::earliest);
    const auto close = zone->to_sys(close_day + minutes{spec.end_minute}, date::choose::earliest);
    if (close <= open)
      continue;
    out.push_back({open, close});
  }
  return out;
}

} // namespace

std::optional<int> parse_clock(const std::string& text, bool allow_24) {
  if (text.size() != 5 || text[2] != ':')
    return std::nullopt;
  int hours = 0;
  int mins = 0;
  if (!two_digits(text, 0, hours) || !two_digits(text, 3, mins))
    return std::nullopt;
  if (hours == 24 && mins == 0 && allow_24)
    return 24 * 60;
  if (hours > 23 || mins > 59)
    return std::nullopt;
  return hours * 60 + mins;
}

std::string time_zone_problem(const std::string& name) {
  try {
    if (find_zone(name) != nullptr)
      return {};
    return "unknown time zone \"" + name + "\"";
  } catch (...) {
    return "unknown time zone";
  }
}

window_state evaluate_windows(const std::vector<window_spec>& windows,
                              std::chrono::seconds min_remaining, window_clock::time_point now) {
  window_state state;
  if (windows.empty()) {
    state.open = true;
    state.may_start = true;
    return state;
  }
  state.configured = true;
  // A negative guard is no guard.
  min_remaining = std::max(min_remaining, std::chrono::seconds{0});

  // A merged interval lets a node start when it is longer than the guard.
  const auto long_enough = [&](const occurrence& o) { return o.close - o.open > min_remaining; };

  std::vector<std::vector<occurrence>> of_window;
  std::vector<occurrence> all;
  for (const auto& window : windows) {
    of_window.push_back(occurrences_of(window, now));
    all.insert(all.end(), of_window.back().begin(), of_window.back().end());
  }

  // The union: overlapping or touching occurrences become one interval. Consecutive merged
  // intervals are then separated by a gap.
  std::sort(all.begin(), all.end(),
            [](const occurrence& a, const occurrence& b) { return a.open < b.open; });
  std::vector<occurrence> merged;
  for (const occurrence& o : all) {
    if (!merged.empty() && o.open <= merged.back().close)
      merged.back().close = std::max(merged.back().close, o.close);
    else
      merged.push_back(o);
  }

  // A window lets a node start if one of its occurrences begins before its merged interval
  // has no more than min_remaining left: windows that join count as one opening, so one too
  // short alone may start nodes where it runs into the next.
  const auto lets_start = [&](const occurrence& o) {
    const auto in = std::upper_bound(
        merged.begin(), merged.end(), o.open,
        [](window_clock::time_point at, const occurrence& m) { return at < m.open; });
    return in != merged.begin() && o.open < std::prev(in)->close - min_remaining;
  };
  for (std::size_t i = 0; i < windows.size(); ++i)
    if (std::none_of(of_window[i].begin(), of_window[i].end(), lets_start))
      state.too_short.push_back(i);

  // Each interval changes the state at its open, at close - min_remaining (may_start ends)
  // when it is long enough, and at its close; between them nothing changes.
  const auto consider_change = [&](window_clock::time_point at) {
    if (at > now && (!state.next_change || at < *state.next_change))
      state.next_change = at;
  };
  for (const occurrence& interval : merged) {
    if (interval.open <= now && now < interval.close) {
      state.open = true;
      state.closes_at = interval.close;
      state.may_start = interval.close - now > min_remaining;
      if (state.may_start)
        state.next_start = now;
    } else if (interval.open > now && long_enough(interval) && !state.next_start) {
      state.next_start = interval.open;
    }
    consider_change(interval.open);
    if (long_enough(interval))
      consider_change(interval.close - min_remaining);
    consider_change(interval.close);
  }
  return state;
}

} // namespace gpu_partitioner::controller
