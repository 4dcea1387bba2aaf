#pragma once

// The one JSON decoder: walks a rapidjson value along T's field table, checking types
// and the table's rules, and stops at the first problem with its JSON path. It never
// throws and never guesses: a wrong type, a missing required field or a value the CRD
// schema would refuse is an error, an absent optional field keeps the struct's
// default, and unknown fields are ignored (as the API server prunes them).

#include "protocol/codec/field.hpp"
#include "protocol/codec/quote.hpp"
#include "protocol/int_or_percent.hpp"
#include "protocol/result.hpp"

#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace gpu_partitioner::protocol::codec {

// -- path and error bookkeeping --

/// The decoder's state: where it is in the document, and the first error.
class decode_context {
public:
  const std::string& path() const { return path_; }
  const std::optional<decode_error>& error() const { return error_; }

  /// Records `problem` at the current path; returns false so callers can `return fail(..)`.
  bool fail(std::string problem) {
    error_ = decode_error{path_, std::move(problem)};
    return false;
  }

  /// Extends the path for the lifetime of the scope: `.name`, `[3]` or `[key]`.
  class scope {
  public:
    scope(decode_context& cx, std::string_view member) : cx_(cx), size_(cx.path_.size()) {
      if (!cx.path_.empty())
        cx.path_ += '.';
      cx.path_ += member;
    }
    scope(decode_context& cx, std::size_t index) : cx_(cx), size_(cx.path_.size()) {
      cx.path_ += '[' + std::to_string(index) + ']';
    }
    struct key_tag {};
    scope(decode_context& cx, std::string_view key, key_tag) : cx_(cx), size_(cx.path_.size()) {
      cx.path_ += '[';
      cx.path_ += key;
      cx.path_ += ']';
    }
    ~scope() { cx_.path_.resize(size_); }
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;

  private:
    decode_context& cx_;
    std::size_t size_;
  };

private:
  std::string path_;
  std::optional<decode_error> error_;
};

/// The JSON type of `v` as an error message names it.
inline const char* json_type_name(const rapidjson::Value& v) {
  switch (v.GetType()) {
  case rapidjson::kNullType:
    return "null";
  case rapidjson::kFalseType:
  case rapidjson::kTrueType:
    return "boolean";
  case rapidjson::kObjectType:
    return "object";
  case rapidjson::kArrayType:
    return "array";
  case rapidjson::kStringType:
    return "string";
  case rapidjson::kNumberType:
    return v.IsInt64() || v.IsUint64() ? "integer" : "number";
  }
  return "value";
}

inline bool type_mismatch(decode_context& cx, const char* expected, const rapidjson::Value& v) {
  return cx.fail(std::string("expected ") + expected + ", got " + json_type_name(v));
}

inline std::string_view view(const rapidjson::Value& v) {
  return {v.GetString(), v.GetStringLength()};
}

// Characters, not bytes, as OpenAPI's maxLength counts them (UTF-8 continuation bytes
// are not counted).
inline std::size_t character_count(std::string_view s) {
  std::size_t n = 0;
  for (char c : s)
    n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// Well-formed UTF-8: no stray continuation bytes, overlong forms, surrogates (U+D800 to
// U+DFFF) or code points past U+10FFFF. RapidJSON checks the raw bytes of a document
// (kParseValidateEncodingFlag) but decodes a \u escape of a lone surrogate ("\udc00")
// into three bytes that are not UTF-8, which no encoder of ours may write back out.
inline bool is_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 ? 2 : 0;
    if (n == 0 || b > 0xF4 || i + n > s.size())
      return false;
    std::uint32_t cp = b & (0x7F >> n);
    for (std::size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80)
        return false;
      cp = cp << 6 | (c & 0x3F);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
      return false;
    i += n;
  }
  return true;
}

// -- values --

template <class T>
bool decode_value(const rapidjson::Value& v, T& out, decode_context& cx);

inline bool decode_scalar(const rapidjson::Value& v, std::string& out, decode_context& cx) {
  if (!v.IsString())
    return type_mismatch(cx, "a string", v);
  if (!is_utf8(view(v)))
    return cx.fail("is not valid UTF-8 text");
  out.assign(v.GetString(), v.GetStringLength());
  return true;
}

inline bool decode_scalar(const rapidjson::Value& v, bool& out, decode_context& cx) {
  if (!v.IsBool())
    return type_mismatch(cx, "a boolean", v);
  out = v.GetBool();
  return true;
}

inline bool decode_scalar(const rapidjson::Value& v, double& out, decode_context& cx) {
  if (!v.IsNumber())
    return type_mismatch(cx, "a number", v);
  out = v.GetDouble();
  return true;
}

template <std::int32_t Min>
bool decode_scalar(const rapidjson::Value& v, basic_int_or_percent<Min>& out, decode_context& cx) {
  std::optional<result<basic_int_or_percent<Min>>> parsed;
  if (v.IsInt64())
    parsed = basic_int_or_percent<Min>::parse(v.GetInt64());
  else if (v.IsString())
    parsed = basic_int_or_percent<Min>::parse(view(v));
  else if (v.IsUint64())
    return cx.fail("expected a 32-bit integer, got " + std::to_string(v.GetUint64()));
  else
    return type_mismatch(cx, "an integer or a percentage string", v);
  if (!parsed->ok())
    return cx.fail(parsed->error().problem);
  out = parsed->value();
  return true;
}

template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
bool decode_scalar(const rapidjson::Value& v, I& out, decode_context& cx) {
  static_assert(std::is_signed_v<I>, "the API has only signed integers");
  constexpr const char* width = sizeof(I) == 4 ? "a 32-bit integer" : "a 64-bit integer";
  if (v.IsUint64() && !v.IsInt64())
    return cx.fail(std::string("expected ") + width + ", got " + std::to_string(v.GetUint64()));
  if (!v.IsInt64())
    return type_mismatch(cx, "an integer", v);
  const std::int64_t n = v.GetInt64();
  if (n < std::numeric_limits<I>::min() || n > std::numeric_limits<I>::max())
    return cx.fail(std::string("expected ") + width + ", got " + std::to_string(n));
  out = static_cast<I>(n);
  return true;
}

template <class E, std::enable_if_t<is_named_enum_v<E>, int> = 0>
bool decode_scalar(const rapidjson::Value& v, E& out, decode_context& cx) {
  if (!v.IsString())
    return type_mismatch(cx, "a string", v);
  if (auto e = from_string<E>(view(v))) {
    out = *e;
    return true;
  }
  std::string choices;
  for (const auto& entry : enum_names(tag<E>{})) {
    choices += choices.empty() ? "" : ", ";
    choices += entry.name;
  }
  return cx.fail(quote(view(v)) + " is not one of " + choices);
}

template <class T>
bool decode_object(const rapidjson::Value& v, T& out, decode_context& cx);

template <class T>
bool decode_value(const rapidjson::Value& v, T& out, decode_context& cx) {
  if constexpr (is_optional<T>::value) {
    out.emplace();
    return decode_value(v, *out, cx);
  } else if constexpr (is_vector<T>::value) {
    if (!v.IsArray())
      return type_mismatch(cx, "an array", v);
    out.clear();
    out.resize(v.Size());
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
      decode_context::scope item(cx, i);
      if (!decode_value(v[i], out[i], cx))
        return false;
    }
    return true;
  } else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) {
    if (!v.IsObject())
      return type_mismatch(cx, "an object", v);
    out.clear();
    for (const auto& m : v.GetObject()) {
      decode_context::scope entry(cx, view(m.name), decode_context::scope::key_tag{});
      if (!is_utf8(view(m.name)))
        return cx.fail("the key is not valid UTF-8 text");
      if (!decode_scalar(m.value, out[std::string(view(m.name))], cx))
        return false;
    }
    return true;
  } else if constexpr (is_described_v<T>) {
    return decode_object(v, out, cx);
  } else {
    return decode_scalar(v, out, cx);
  }
}

// -- rules --

inline bool check_string_rules(const std::string& s, const rules& r, decode_context& cx) {
  if (r.min_length || r.max_length) {
    const std::size_t n = character_count(s);
    if (r.min_length && n < *r.min_length)
      return cx.fail(*r.min_length == 1 ? std::string("must not be empty")
                                        : "must be at least " + std::to_string(*r.min_length) +
                                              " characters long, got " + std::to_string(n));
    if (r.max_length && n > *r.max_length)
      return cx.fail("must be at most " + std::to_string(*r.max_length) + " characters long, got " +
                     std::to_string(n));
  }
  if (r.match && !r.match->matches(s))
    return cx.fail(quote(s) + " is not " + std::string(r.match->meaning));
  if (r.date_time && !is_rfc3339_date_time(s))
    return cx.fail(quote(s) + " is not an RFC 3339 date-time (like 2024-05-01T12:00:00Z)");
  return true;
}

/// The string member named `json_name` of a described object, for list-map keys.
template <class T>
const std::string* string_member(const T& obj, std::string_view json_name) {
  const std::string* found = nullptr;
  for_each_field<T>([&](const auto& f) {
    if constexpr (std::is_same_v<typename std::decay_t<decltype(f)>::member_type, std::string>)
      if (f.name == json_name)
        found = &(obj.*f.member);
  });
  return found;
}

template <class T>
bool check_list_rules(const std::vector<T>& items, const rules& r, decode_context& cx) {
  if (r.min_items && items.size() < *r.min_items)
    return cx.fail("must have at least " + std::to_string(*r.min_items) +
                   (*r.min_items == 1 ? " item" : " items") + ", got " +
                   std::to_string(items.size()));
  if (r.max_items && items.size() > *r.max_items)
    return cx.fail("must have at most " + std::to_string(*r.max_items) + " items, got " +
                   std::to_string(items.size()));
  if constexpr (is_described_v<T>) {
    if (r.map_key.empty())
      return true;
    // Quadratic, but these lists are short and the API server bounds them anyway.
    for (std::size_t i = 0; i < items.size(); ++i) {
      const std::string* key = string_member(items[i], r.map_key);
      for (std::size_t j = 0; key && j < i; ++j) {
        if (const std::string* earlier = string_member(items[j], r.map_key);
            earlier && *earlier == *key) {
          decode_context::scope item(cx, i);
          decode_context::scope member(cx, r.map_key);
          return cx.fail(quote(*key) + " is used twice (also at index " + std::to_string(j) +
                         "); " + std::string(r.map_key) + " must be unique");
        }
      }
    }
  }
  return true;
}

/// Applies the rules that fit the member's type (OpenAPI ignores the others too).
template <class T>
bool check_rules(const T& v, const rules& r, decode_context& cx) {
  if constexpr (is_optional<T>::value) {
    return !v || check_rules(*v, r, cx);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return check_string_rules(v, r, cx);
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (r.minimum && v < *r.minimum)
      return cx.fail("must be at least " + std::to_string(*r.minimum) + ", got " +
                     std::to_string(v));
    if (r.maximum && v > *r.maximum)
      return cx.fail("must be at most " + std::to_string(*r.maximum) + ", got " +
                     std::to_string(v));
    return true;
  } else if constexpr (is_vector<T>::value) {
    return check_list_rules(v, r, cx);
  } else {
    return true; // no rule applies to booleans, enums, maps and objects
  }
}

// -- objects --

template <class Owner, class T>
bool decode_field(const rapidjson::Value& obj, Owner& out, const field<Owner, T>& f,
                  decode_context& cx) {
  decode_context::scope member(cx, f.name);
  const rapidjson::Value key(
      rapidjson::StringRef(f.name.data(), static_cast<rapidjson::SizeType>(f.name.size())));
  const auto it = obj.FindMember(key);
  // The API server drops nulls of non-nullable fields before validating; so do we.
  if (it == obj.MemberEnd() || it->value.IsNull())
    return !f.is_required || cx.fail("required field is missing");
  T& target = out.*f.member;
  if (!decode_value(it->value, target, cx))
    return false;
  if constexpr (is_vector<T>::value) {
    if (f.rule.cut_when_read && f.rule.max_items && target.size() > *f.rule.max_items)
      target.resize(*f.rule.max_items);
  }
  if (!check_rules(target, f.rule, cx))
    return false;
  if constexpr (std::is_same_v<T, std::string>) {
    if (f.rule.fixed) {
      const T expected = Owner{}.*f.member;
      if (target != expected)
        return cx.fail("expected " + quote(expected) + ", got " + quote(target));
    }
  }
  return true;
}

template <class T>
bool decode_object(const rapidjson::Value& v, T& out, decode_context& cx) {
  if (!v.IsObject())
    return type_mismatch(cx, "an object", v);
  if (!all_fields<T>([&](const auto& f) { return decode_field(v, out, f, cx); }))
    return false;
  if constexpr (has_object_check<T>::value) {
    if (const auto problem = check_object(tag<T>{}, out)) {
      decode_context::scope member(cx, problem->field);
      return cx.fail(std::string(problem->problem));
    }
  }
  return true;
}

/// Decodes a whole value of type T (default-constructed first, so defaults apply).
template <class T>
result<T> decode(const rapidjson::Value& v) {
  T out{};
  decode_context cx;
  if (!decode_value(v, out, cx))
    return *cx.error();
  return out;
}

} // namespace gpu_partitioner::protocol::codec
