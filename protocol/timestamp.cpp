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

std::optional<wall_clock::time_point> parse_time(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, n = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &n) != 6)
    return std::nullopt;
  std::size_t pos = static_cast<std::size_t>(n);
  if (pos < text.size() && text[pos] == '.')
    while (++pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    }
  long offset = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos + 6 == text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int oh = 0, om = 0;
    if (std::sscanf(text.c_str() + pos + 1, "%2d:%2d", &oh, &om) != 2)
      return std::nullopt;
    offset = (text[pos] == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
    pos += 6;
  }
  if (pos != text.size() || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
    return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return wall_clock::from_time_t(::timegm(&tm) - offset);
}

} // namespace gpu_partitioner::protocol
