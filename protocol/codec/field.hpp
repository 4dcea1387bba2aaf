#pragma once

// The field tables every codec in protocol/ is driven by.
//
// Each wire type T declares, next to its struct, one overload
//
//   constexpr auto describe(codec::tag<T>) {
//     return std::make_tuple(
//         codec::field("maxParallel", &rollout_policy::max_parallel).minimum(1),
//         ...);
//   }
//
// and each enum E one `enum_names(codec::tag<E>)` returning its string table. The JSON
// decoder, the encoder, equality and the schema walker all read these tables, so a
// field (its JSON name, whether it is required, its validation) is written down once.
// Defaults are the struct's member initializers: an absent optional field keeps them.

#include "protocol/codec/pattern.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace gpu_partitioner::protocol::codec {

/// The longest duration a spec may give, in seconds (365 days): see field::seconds.
inline constexpr std::int64_t max_seconds = 365LL * 24 * 3600;

/// Selects a table by overload resolution; ADL finds `describe` in T's namespace.
template <class T>
struct tag {};

/// The validation of one field, mirroring the CRD schema keyword by keyword. A rule
/// applies only to the JSON type it is defined for (minimum to integers, lengths and
/// patterns to strings, item counts to arrays), as in OpenAPI.
struct rules {
  std::optional<std::int64_t> minimum;
  std::optional<std::int64_t> maximum;
  std::optional<std::size_t> min_length; // characters, not bytes
  std::optional<std::size_t> max_length;
  const pattern* match = nullptr;
  bool date_time = false; // RFC 3339, the CRD's `format: date-time`
  std::optional<std::size_t> min_items;
  std::optional<std::size_t> max_items;
  /// With max_items, on a list the operator writes as a summary (its first items, with a
  /// count beside it): a longer stored list is read as its first max_items items instead
  /// of refused, since refusing a summary would make the whole object unusable.
  bool cut_when_read = false;
  /// For arrays of objects: the member whose value identifies an item
  /// (x-kubernetes-list-type: map), which must be unique within the array.
  std::string_view map_key;
  /// If present, the value must equal the member's initializer (apiVersion, kind).
  bool fixed = false;
};

/// One row of a table: JSON name, member, requiredness and validation.
template <class Owner, class T>
struct field {
  using owner_type = Owner;
  using member_type = T;

  std::string_view name;
  T Owner::*member;
  bool is_required = false;
  rules rule{};

  constexpr field(std::string_view json_name, T Owner::*m) : name(json_name), member(m) {}

  // -- builders, so a table row reads like the schema it mirrors --

  constexpr field required() const {
    return with([](field& f) { f.is_required = true; });
  }
  constexpr field minimum(std::int64_t v) const {
    return with([v](field& f) { f.rule.minimum = v; });
  }
  constexpr field maximum(std::int64_t v) const {
    return with([v](field& f) { f.rule.maximum = v; });
  }
  /// A duration in seconds: at most a year. Added to a time the operator keeps, anything
  /// near the integer's limit would overflow (a drain timeout wrapping negative times out
  /// every drain at once); no rollout step is meant to last longer.
  constexpr field seconds() const { return maximum(max_seconds); }
  constexpr field min_length(std::size_t v) const {
    return with([v](field& f) { f.rule.min_length = v; });
  }
  constexpr field max_length(std::size_t v) const {
    return with([v](field& f) { f.rule.max_length = v; });
  }
  constexpr field matching(const pattern& p) const {
    return with([&p](field& f) { f.rule.match = &p; });
  }
  constexpr field date_time() const {
    return with([](field& f) { f.rule.date_time = true; });
  }
  constexpr field min_items(std::size_t v) const {
    return with([v](field& f) { f.rule.min_items = v; });
  }
  constexpr field max_items(std::size_t v) const {
    return with([v](field& f) { f.rule.max_items = v; });
  }
  constexpr field cut_when_read() const {
    return with([](field& f) { f.rule.cut_when_read = true; });
  }
  constexpr field map_key(std::string_view key) const {
    return with([key](field& f) { f.rule.map_key = key; });
  }
  constexpr field fixed() const {
    return with([](field& f) { f.rule.fixed = true; });
  }

private:
  template <class Edit>
  constexpr field with(Edit edit) const {
    field copy = *this;
    edit(copy);
    return copy;
  }
};

/// One entry of an enum's string table.
template <class E>
struct enum_name {
  E value;
  std::string_view name;
};

// -- detection --

template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

template <class T, class = void>
struct is_described : std::false_type {};

template <class T>
struct is_described<T, std::void_t<decltype(describe(tag<T>{}))>> : std::true_type {};

template <class T>
inline constexpr bool is_described_v = is_described<T>::value;

template <class E, class = void>
struct is_named_enum : std::false_type {};

template <class E>
struct is_named_enum<E, std::void_t<decltype(enum_names(tag<E>{}))>> : std::is_enum<E> {};

template <class E>
inline constexpr bool is_named_enum_v = is_named_enum<E>::value;

/// Calls `visit(field)` for each row of T's table, in table order.
template <class T, class Visit>
constexpr void for_each_field(Visit&& visit) {
  std::apply([&](const auto&... f) { (visit(f), ...); }, describe(tag<T>{}));
}

/// Like for_each_field, but stops at the first row for which `visit` returns false.
template <class T, class Visit>
constexpr bool all_fields(Visit&& visit) {
  return std::apply([&](const auto&... f) { return (visit(f) && ...); }, describe(tag<T>{}));
}

/// The string of enum value `v`, or an empty view for a value outside the table.
template <class E>
constexpr std::string_view to_string(E v) {
  for (const auto& entry : enum_names(tag<E>{}))
    if (entry.value == v)
      return entry.name;
  return {};
}

/// The enum value named `s`, if any. Names are case-sensitive, as in Kubernetes.
template <class E>
constexpr std::optional<E> from_string(std::string_view s) {
  for (const auto& entry : enum_names(tag<E>{}))
    if (entry.name == s)
      return entry.value;
  return std::nullopt;
}

/// Object-level validation that one field's rules cannot express (for example "values
/// must be empty when operator is Exists"). A type opts in by declaring
/// `std::optional<object_problem> check_object(codec::tag<T>, const T&)`.
struct object_problem {
  std::string_view field; // JSON name of the member the problem is reported at
  std::string_view problem;
};

template <class T, class = void>
struct has_object_check : std::false_type {};

template <class T>
struct has_object_check<T, std::void_t<decltype(check_object(tag<T>{}, std::declval<const T&>()))>>
    : std::true_type {};

} // namespace gpu_partitioner::protocol::codec
