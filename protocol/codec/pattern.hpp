#pragma once

#include <string_view>

namespace gpu_partitioner::protocol::codec {

/// A string format from the CRD schema. `regex` is the exact `pattern` the CRD carries
/// (the API server checks it with RE2); `matches` is a hand-written matcher for the
/// same language, because std::regex recurses per character and could overflow the
/// stack on hostile input. A unit test checks the two agree.
struct pattern {
  std::string_view regex;
  /// What a matching value is, for error messages: `"Foo" is not <meaning>`.
  std::string_view meaning;
  bool (*matches)(std::string_view);
};

// -- the formats used by the API --

bool is_dns1123_label(std::string_view s);
bool is_dns1123_subdomain(std::string_view s);
bool is_label_value(std::string_view s);
bool is_label_key_or_pair(std::string_view s);
bool is_desired_hash(std::string_view s);
bool is_condition_type(std::string_view s);
bool is_condition_reason(std::string_view s);

// -- Kubernetes' length limits, which the CRDs' patterns do not state --

/// A label key or a resource name as Kubernetes validates it: an optional DNS subdomain
/// prefix of at most 253 characters and '/', then a name of at most 63.
bool is_label_key(std::string_view s);

/// "key" or "key=value" naming a node label, within Kubernetes' limits.
bool is_label_requirement(std::string_view s);

/// RFC 3339 date-time (the CRD's `format: date-time`), e.g. 2024-05-01T12:00:00Z.
bool is_rfc3339_date_time(std::string_view s);

inline constexpr pattern dns1123_label{
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
    "a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter "
    "or digit)",
    &is_dns1123_label};

inline constexpr pattern dns1123_subdomain{
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
    "a DNS-1123 subdomain (dot-separated DNS-1123 labels)", &is_dns1123_subdomain};

inline constexpr pattern label_value{
    "^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$",
    "a valid label value (at most 63 letters, digits, '-', '_' or '.', starting and ending "
    "with a letter or digit)",
    &is_label_value};

inline constexpr pattern label_key_or_pair{
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    "[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?(=([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?)?$",
    "a label key (like amd.com/gpu.ready) or key=value", &is_label_key_or_pair};

inline constexpr pattern desired_hash_format{
    "^sha256:[0-9a-f]{64}$", "sha256: followed by 64 lowercase hex digits", &is_desired_hash};

// The two formats of metav1.Condition, as Kubernetes' own CRDs spell them.
inline constexpr pattern condition_type{
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
    "a condition type (CamelCase or a qualified name like example.com/Ready)", &is_condition_type};

inline constexpr pattern condition_reason{
    "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
    "a condition reason (CamelCase: a letter, then letters, digits, '_', ',' or ':')",
    &is_condition_reason};

} // namespace gpu_partitioner::protocol::codec
