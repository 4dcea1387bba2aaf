#include "protocol/timestamp.hpp"

#include <cstdio>
#include <ctime>

namespace gpu_partitioner::protocol {

std::string format_time(wall_clock::time_point t) {
  const std::time_t secs = wall_clock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string format_time_micro(wall_clock::time_point t) {
  const auto since = t.time_since_epoch();
  const auto secs = std::chrono::floor<std::chrono::seconds>(since);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(since - secs).count();
  std::string whole = format_time(wall_clock::time_point(secs));
  char frac[24]; // room for any long long: -c opt checks the bound
  std::snprintf(frac, sizeof frac, ".%06lld", static_cast<long long>(micros));
  whole.insert(whole.size() - 1, frac);
  return whole;
}

std::optional<wall_clock::time_point> parse_time(const std::string& text) {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  int consumed = 0;
  char separator = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%n", &year, &month, &day, &separator,
                  &hour, &minute, &second, &consumed) != 7 ||
      (separator != 'T' && separator != 't'))
    return std::nullopt;
  // timegm would roll 13/01 into January: refuse what is not a real day or time of day.
  static constexpr int days_in[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1 || day > days_in[month - 1] || hour > 23 || minute > 59 ||
      second > 60)
    return std::nullopt;
  std::size_t pos = static_cast<std::size_t>(consumed);
  if (pos < text.size() && text[pos] == '.') {
    const std::size_t digits = ++pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9')
      ++pos;
    if (pos == digits)
      return std::nullopt;
  }
  long offset = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int oh = 0, om = 0;
    if (std::sscanf(text.c_str() + pos + 1, "%2d:%2d", &oh, &om) != 2 || oh > 23 || om > 59)
      return std::nullopt;
    offset = (text[pos] == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != text.size())
    return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const std::time_t secs = ::timegm(&tm) - offset;
  // The wall clock counts nanoseconds in 64 bits (years 1678 to 2262): a time outside that
  // range cannot be represented, and converting it would overflow.
  using std::chrono::seconds;
  const auto lowest = std::chrono::duration_cast<seconds>(wall_clock::duration::min()).count();
  const auto highest = std::chrono::duration_cast<seconds>(wall_clock::duration::max()).count();
  if (secs <= lowest || secs >= highest)
    return std::nullopt;
  return wall_clock::from_time_t(secs);
}

} // namespace gpu_partitioner::protocol
