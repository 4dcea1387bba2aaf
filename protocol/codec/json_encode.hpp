#pragma once

// The one JSON encoder: writes T along its field table. Required fields are always
// written; other fields are left out when empty (an unset optional, an empty string,
// list or map), as Kubernetes' `omitempty` does. Numbers, booleans and nested objects
// are always written, so the output carries every default explicitly.

#include "protocol/codec/field.hpp"
#include "protocol/int_or_percent.hpp"

#include <rapidjson/document.h>

#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace gpu_partitioner::protocol::codec {

using json_allocator = rapidjson::Document::AllocatorType;

namespace detail {

inline rapidjson::GenericStringRef<char> literal(std::string_view s) {
  return rapidjson::StringRef(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

} // namespace detail

/// Whether a non-required field holding `v` is left out of the output.
template <class T>
bool is_empty_value(const T& v) {
  if constexpr (is_optional<T>::value)
    return !v.has_value();
  else if constexpr (std::is_same_v<T, std::string> || is_vector<T>::value ||
                     std::is_same_v<T, std::map<std::string, std::string>>)
    return v.empty();
  else
    return false;
}

/// Writes `v` into `out` (replacing its content); strings are copied into `a`.
template <class T>
void encode_value(const T& v, rapidjson::Value& out, json_allocator& a) {
  if constexpr (is_optional<T>::value) {
    if (v)
      encode_value(*v, out, a);
    else
      out.SetNull();
  } else if constexpr (std::is_same_v<T, std::string>) {
    out.SetString(v.data(), static_cast<rapidjson::SizeType>(v.size()), a);
  } else if constexpr (std::is_same_v<T, bool>) {
    out.SetBool(v);
  } else if constexpr (std::is_same_v<T, double>) {
    out.SetDouble(v);
  } else if constexpr (std::is_integral_v<T>) {
    out.SetInt64(v);
  } else if constexpr (is_named_enum_v<T>) {
    // The table's names are string literals: no copy needed.
    out.SetString(detail::literal(to_string(v)));
  } else if constexpr (is_int_or_percent<T>::value) {
    if (v.is_percent()) {
      const std::string s = v.to_string();
      out.SetString(s.data(), static_cast<rapidjson::SizeType>(s.size()), a);
    } else {
      out.SetInt(v.value());
    }
  } else if constexpr (is_vector<T>::value) {
    out.SetArray();
    out.Reserve(static_cast<rapidjson::SizeType>(v.size()), a);
    for (const auto& item : v) {
      rapidjson::Value element;
      encode_value(item, element, a);
      out.PushBack(element, a);
    }
  } else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) {
    out.SetObject();
    for (const auto& [key, value] : v) {
      rapidjson::Value k(key.data(), static_cast<rapidjson::SizeType>(key.size()), a);
      rapidjson::Value s(value.data(), static_cast<rapidjson::SizeType>(value.size()), a);
      out.AddMember(k, s, a);
    }
  } else {
    static_assert(is_described_v<T>, "no JSON encoding for this type");
    out.SetObject();
    for_each_field<T>([&](const auto& f) {
      const auto& member = v.*f.member;
      if (!f.is_required && is_empty_value(member))
        return;
      rapidjson::Value element;
      encode_value(member, element, a);
      out.AddMember(detail::literal(f.name), element, a); // names are literals too
    });
  }
}

} // namespace gpu_partitioner::protocol::codec
