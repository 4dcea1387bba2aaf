#include "protocol/codec/pattern.hpp"

#include <cstddef>

namespace gpu_partitioner::protocol::codec {

namespace {

bool is_lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool is_alnum(char c) {
  return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])? : the name part of label keys and values.
bool is_label_name(std::string_view s) {
  if (s.empty() || !is_alnum(s.front()) || !is_alnum(s.back()))
    return false;
  for (char c : s)
    if (!is_alnum(c) && c != '-' && c != '_' && c != '.')
      return false;
  return true;
}

// ([prefix]/)?name, the shape shared by label keys and condition types.
bool is_qualified_name(std::string_view s) {
  const auto slash = s.find('/');
  if (slash == std::string_view::npos)
    return is_label_name(s);
  return is_dns1123_subdomain(s.substr(0, slash)) && is_label_name(s.substr(slash + 1));
}

// Reads exactly `n` digits at `pos`, advancing it.
bool read_number(std::string_view s, std::size_t& pos, std::size_t n, int& out) {
  if (pos + n > s.size())
    return false;
  out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = s[pos + i];
    if (!is_digit(c))
      return false;
    out = out * 10 + (c - '0');
  }
  pos += n;
  return true;
}

bool read_char(std::string_view s, std::size_t& pos, char a, char b = '\0') {
  if (pos >= s.size() || (s[pos] != a && (b == '\0' || s[pos] != b)))
    return false;
  ++pos;
  return true;
}

int days_in_month(int year, int month) {
  static constexpr int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : days[month - 1];
}

} // namespace

bool is_dns1123_label(std::string_view s) {
  if (s.empty() || !is_lower_alnum(s.front()) || !is_lower_alnum(s.back()))
    return false;
  for (char c : s)
    if (!is_lower_alnum(c) && c != '-')
      return false;
  return true;
}

bool is_dns1123_subdomain(std::string_view s) {
  for (;;) {
    const auto dot = s.find('.');
    if (!is_dns1123_label(s.substr(0, dot)))
      return false;
    if (dot == std::string_view::npos)
      return true;
    s.remove_prefix(dot + 1);
  }
}

bool is_label_value(std::string_view s) {
  return s.size() <= 63 && is_label_name(s);
}

bool is_label_key_or_pair(std::string_view s) {
  const auto eq = s.find('=');
  if (eq == std::string_view::npos)
    return is_qualified_name(s);
  const auto value = s.substr(eq + 1);
  return is_qualified_name(s.substr(0, eq)) && (value.empty() || is_label_name(value));
}

bool is_label_key(std::string_view s) {
  const auto slash = s.find('/');
  if (slash == std::string_view::npos)
    return s.size() <= 63 && is_label_name(s);
  const auto prefix = s.substr(0, slash);
  const auto name = s.substr(slash + 1);
  return prefix.size() <= 253 && is_dns1123_subdomain(prefix) && name.size() <= 63 &&
         is_label_name(name);
}

bool is_label_requirement(std::string_view s) {
  const auto eq = s.find('=');
  if (eq == std::string_view::npos)
    return is_label_key(s);
  const auto value = s.substr(eq + 1);
  return is_label_key(s.substr(0, eq)) && (value.empty() || is_label_value(value));
}

bool is_desired_hash(std::string_view s) {
  constexpr std::string_view prefix = "sha256:";
  if (s.size() != prefix.size() + 64 || s.substr(0, prefix.size()) != prefix)
    return false;
  for (char c : s.substr(prefix.size()))
    if (!is_digit(c) && !(c >= 'a' && c <= 'f'))
      return false;
  return true;
}

bool is_condition_type(std::string_view s) {
  return is_qualified_name(s);
}

bool is_condition_reason(std::string_view s) {
  if (s.empty())
    return false;
  const auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (!letter(s.front()) || !(is_alnum(s.back()) || s.back() == '_'))
    return false;
  for (char c : s)
    if (!is_alnum(c) && c != '_' && c != ',' && c != ':')
      return false;
  return true;
}

bool is_rfc3339_date_time(std::string_view s) {
  std::size_t pos = 0;
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!read_number(s, pos, 4, year) || !read_char(s, pos, '-') || !read_number(s, pos, 2, month) ||
      !read_char(s, pos, '-') || !read_number(s, pos, 2, day) || !read_char(s, pos, 'T', 't') ||
      !read_number(s, pos, 2, hour) || !read_char(s, pos, ':') || !read_number(s, pos, 2, minute) ||
      !read_char(s, pos, ':') || !read_number(s, pos, 2, second))
    return false;
  if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) || hour > 23 ||
      minute > 59 || second > 60) // 60: a leap second
    return false;
  if (read_char(s, pos, '.')) {
    const std::size_t digits = pos;
    while (pos < s.size() && is_digit(s[pos]))
      ++pos;
    if (pos == digits)
      return false;
  }
  if (read_char(s, pos, 'Z', 'z'))
    return pos == s.size();
  int offset_hour = 0, offset_minute = 0;
  if (!read_char(s, pos, '+', '-') || !read_number(s, pos, 2, offset_hour) ||
      !read_char(s, pos, ':') || !read_number(s, pos, 2, offset_minute))
    return false;
  return pos == s.size() && offset_hour <= 23 && offset_minute <= 59;
}

} // namespace gpu_partitioner::protocol::codec
