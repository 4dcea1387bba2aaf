#include "protocol/int_or_percent.hpp"

#include "protocol/codec/quote.hpp"

#include <algorithm>
#include <limits>

namespace gpu_partitioner::protocol {

template <std::int32_t Min>
result<basic_int_or_percent<Min>> basic_int_or_percent<Min>::parse(std::int64_t n) {
  if (n < Min)
    return decode_error{{},
                        "must be at least " + std::to_string(Min) + ", got " + std::to_string(n)};
  if (n > std::numeric_limits<std::int32_t>::max())
    return decode_error{{}, "expected a 32-bit integer, got " + std::to_string(n)};
  return count(static_cast<std::int32_t>(n));
}

template <std::int32_t Min>
result<basic_int_or_percent<Min>> basic_int_or_percent<Min>::parse(std::string_view s) {
  const auto quoted = codec::quote(s);
  const std::string range =
      quoted + " is not a percentage from " + std::to_string(Min) + "% to 100%";
  // Digits followed by one '%'; anything else is not a percentage at all.
  const bool digits_and_sign =
      s.size() >= 2 && s.back() == '%' &&
      std::all_of(s.begin(), s.end() - 1, [](char c) { return c >= '0' && c <= '9'; });
  if (!digits_and_sign)
    return decode_error{{}, quoted + " is neither an integer nor a percentage"};
  const auto digits = s.substr(0, s.size() - 1);
  // At most three digits without a leading zero ("0%" itself aside): 0..999, then the
  // range check.
  if (digits.size() > 3 || (digits.front() == '0' && digits.size() > 1))
    return decode_error{{}, range};
  std::int32_t p = 0;
  for (char c : digits)
    p = p * 10 + (c - '0');
  if (p > 100 || p < Min)
    return decode_error{{}, range};
  return percent(p);
}

template <std::int32_t Min>
std::int32_t basic_int_or_percent<Min>::resolve(std::int32_t total) const {
  if (!is_percent_)
    return value_;
  const std::int64_t nodes = std::int64_t{std::max(total, 0)} * value_ / 100;
  return static_cast<std::int32_t>(std::max<std::int64_t>(nodes, Min));
}

template <std::int32_t Min>
std::string basic_int_or_percent<Min>::to_string() const {
  return std::to_string(value_) + (is_percent_ ? "%" : "");
}

template class basic_int_or_percent<0>;
template class basic_int_or_percent<1>;

} // namespace gpu_partitioner::protocol
