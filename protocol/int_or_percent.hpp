#pragma once

#include "protocol/result.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace gpu_partitioner::protocol {

/// A count of nodes given either as an integer of at least `Min` or as a percentage "N%"
/// with N from `Min` to 100 (the CRD's x-kubernetes-int-or-string with that minimum and
/// schema_pattern). A value of this type is always valid. Min is 1 (maxUnavailable, a
/// canary's size) or 0 (maxFailures).
template <std::int32_t Min>
class basic_int_or_percent {
  static_assert(Min == 0 || Min == 1, "a count of at least 0 or at least 1");

public:
  /// Min, the smallest valid value.
  constexpr basic_int_or_percent() = default;

  /// Precondition: n >= Min (use parse() for untrusted input).
  static constexpr basic_int_or_percent count(std::int32_t n) { return {n, false}; }
  /// Precondition: Min <= p <= 100.
  static constexpr basic_int_or_percent percent(std::int32_t p) { return {p, true}; }

  /// The CRD schema of this type (checked against manifests/crds by a unit test).
  static constexpr std::int64_t schema_minimum = Min;
  static constexpr std::string_view schema_pattern =
      Min == 0 ? "^(100|[1-9]?[0-9])%$" : "^(100|[1-9][0-9]?)%$";

  /// From a JSON integer: at least Min.
  static result<basic_int_or_percent> parse(std::int64_t n);
  /// From a JSON string: exactly "N%", no spaces, no sign, no leading zero, N in Min..100.
  /// A string of digits alone ("5") is refused: the schema only allows percentages as
  /// strings, and guessing would hide a typo.
  static result<basic_int_or_percent> parse(std::string_view s);

  bool is_percent() const { return is_percent_; }
  /// The integer, or the percentage without its sign.
  std::int32_t value() const { return value_; }

  /// The number of nodes out of `total`: an integer as is; a percentage of `total`
  /// rounded down. With Min 1 at least 1, so that a small pool (10% of 5 nodes) still
  /// makes progress one node at a time rather than never; with Min 0 a budget rounds down
  /// to what it allows (10% of 5 nodes allows no failure). A negative total counts as 0.
  std::int32_t resolve(std::int32_t total) const;

  /// "25%" or "2", as written in a manifest.
  std::string to_string() const;

  friend bool operator==(const basic_int_or_percent& a, const basic_int_or_percent& b) {
    return a.value_ == b.value_ && a.is_percent_ == b.is_percent_;
  }
  friend bool operator!=(const basic_int_or_percent& a, const basic_int_or_percent& b) {
    return !(a == b);
  }

private:
  constexpr basic_int_or_percent(std::int32_t value, bool is_percent)
      : value_(value), is_percent_(is_percent) {}

  std::int32_t value_ = Min;
  bool is_percent_ = false;
};

/// At least 1 node or 1%: maxUnavailable, a canary's size.
using int_or_percent = basic_int_or_percent<1>;
/// At least 0: maxFailures.
using count_or_percent = basic_int_or_percent<0>;

extern template class basic_int_or_percent<0>;
extern template class basic_int_or_percent<1>;

template <class T>
struct is_int_or_percent : std::false_type {};
template <std::int32_t Min>
struct is_int_or_percent<basic_int_or_percent<Min>> : std::true_type {};

} // namespace gpu_partitioner::protocol
