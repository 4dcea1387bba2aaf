#include "protocol/int_or_percent.hpp"

#include "protocol/codec/quote.hpp"

#include <algorithm>
#include <limits>

namespace gpu_partitioner::protocol {

result<int_or_percent> int_or_percent::parse(std::int64_t n) {
  if (n < 1)
    return decode_error{{}, "must be at least 1, got " + std::to_string(n)};
  if (n > std::numeric_limits<std::int32_t>::max())
    return decode_error{{}, "expected a 32-bit integer, got " + std::to_string(n)};
  return count(static_cast<std::int32_t>(n));
}

result<int_or_percent> int_or_percent::parse(std::string_view s) {
  const auto quoted = codec::quote(s);
  // Digits followed by one '%'; anything else is not a percentage at all.
  const bool digits_and_sign =
      s.size() >= 2 && s.back() == '%' &&
      std::all_of(s.begin(), s.end() - 1, [](char c) { return c >= '0' && c <= '9'; });
  if (!digits_and_sign)
    return decode_error{{}, quoted + " is neither an integer nor a percentage"};
  const auto digits = s.substr(0, s.size() - 1);
  // At most three digits without a leading zero: 1..999, then the range check.
  if (digits.size() > 3 || digits.front() == '0')
    return decode_error{{}, quoted + " is not a percentage from 1% to 100%"};
  std::int32_t p = 0;
  for (char c : digits)
    p = p * 10 + (c - '0');
  if (p > 100)
    return decode_error{{}, quoted + " is not a percentage from 1% to 100%"};
  return percent(p);
}

std::int32_t int_or_percent::resolve(std::int32_t total) const {
  if (!is_percent_)
    return value_;
  const std::int64_t nodes = std::int64_t{std::max(total, 0)} * value_ / 100;
  return static_cast<std::int32_t>(std::max<std::int64_t>(nodes, 1));
}

std::string int_or_percent::to_string() const {
  return std::to_string(value_) + (is_percent_ ? "%" : "");
}

} // namespace gpu_partitioner::protocol
