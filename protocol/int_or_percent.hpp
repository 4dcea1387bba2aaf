#pragma once

#include "protocol/result.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace gpu_partitioner::protocol {

/// A count of nodes given either as a positive integer or as a percentage "N%" with N
/// from 1 to 100 (the CRD's x-kubernetes-int-or-string with minimum 1 and pattern
/// ^(100|[1-9][0-9]?)%$). A value of this type is always valid.
class int_or_percent {
public:
  /// 1, the smallest valid value (and maxUnavailable's default).
  constexpr int_or_percent() = default;

  /// Precondition: n >= 1 (use parse() for untrusted input).
  static constexpr int_or_percent count(std::int32_t n) { return {n, false}; }
  /// Precondition: 1 <= p <= 100.
  static constexpr int_or_percent percent(std::int32_t p) { return {p, true}; }

  /// The CRD schema of this type (checked against manifests/crds by a unit test).
  static constexpr std::int64_t schema_minimum = 1;
  static constexpr std::string_view schema_pattern = "^(100|[1-9][0-9]?)%$";

  /// From a JSON integer: at least 1.
  static result<int_or_percent> parse(std::int64_t n);
  /// From a JSON string: exactly "N%", no spaces, no sign, no leading zero, N in 1..100.
  /// A string of digits alone ("5") is refused: the schema only allows percentages as
  /// strings, and guessing would hide a typo.
  static result<int_or_percent> parse(std::string_view s);

  bool is_percent() const { return is_percent_; }
  /// The integer, or the percentage without its sign.
  std::int32_t value() const { return value_; }

  /// The number of nodes out of `total`: an integer as is; a percentage of `total`
  /// rounded down, but at least 1, so that a small pool (10% of 5 nodes) still makes
  /// progress one node at a time rather than never. A negative total counts as 0.
  std::int32_t resolve(std::int32_t total) const;

  /// "25%" or "2", as written in a manifest.
  std::string to_string() const;

  friend bool operator==(const int_or_percent& a, const int_or_percent& b) {
    return a.value_ == b.value_ && a.is_percent_ == b.is_percent_;
  }
  friend bool operator!=(const int_or_percent& a, const int_or_percent& b) { return !(a == b); }

private:
  constexpr int_or_percent(std::int32_t value, bool is_percent)
      : value_(value), is_percent_(is_percent) {}

  std::int32_t value_ = 1;
  bool is_percent_ = false;
};

} // namespace gpu_partitioner::protocol
