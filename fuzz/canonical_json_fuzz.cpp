// canonical_json (what desiredHash hashes): any text is canonicalised or refused with
// a message; canonical text has its keys sorted at every level and, when every number
// is a 64-bit integer (as in everything the CRD encoder writes), is a fixed point and
// holds the same JSON value as the input. Exempt, as canonical_json.hpp says (the fuzzer
// found both): doubles, which RapidJSON 1.1 does not parse correctly rounded, and lone
// surrogate escapes, which it decodes into bytes that are not UTF-8.

#include "fuzz/check.hpp"
#include "protocol/canonical_json.hpp"
#include "protocol/codec/json_decode.hpp"

#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace {

namespace gp = gpu_partitioner::protocol;

std::string_view name_of(const rapidjson::Value::ConstMemberIterator& m) {
  return {m->name.GetString(), m->name.GetStringLength()};
}

// Keys sorted by bytes in every object; the depth is bounded by canonical_json already.
bool sorted(const rapidjson::Value& v) {
  if (v.IsObject()) {
    std::string_view last;
    bool first = true;
    for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m) {
      if (!first && name_of(m) < last)
        return false;
      first = false;
      last = name_of(m);
      if (!sorted(m->value))
        return false;
    }
  } else if (v.IsArray()) {
    for (const auto& item : v.GetArray())
      if (!sorted(item))
        return false;
  }
  return true;
}

bool has_double(const rapidjson::Value& v) {
  if (v.IsDouble())
    return true;
  if (v.IsObject()) {
    for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m)
      if (has_double(m->value))
        return true;
  } else if (v.IsArray()) {
    for (const auto& item : v.GetArray())
      if (has_double(item))
        return true;
  }
  return false;
}

bool has_duplicate_keys(const rapidjson::Value& v) {
  if (v.IsObject()) {
    std::set<std::string_view> names;
    for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m)
      if (!names.insert(name_of(m)).second || has_duplicate_keys(m->value))
        return true;
  } else if (v.IsArray()) {
    for (const auto& item : v.GetArray())
      if (has_duplicate_keys(item))
        return true;
  }
  return false;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto canonical = gp::canonical_json(text);
  if (!canonical.ok()) {
    FUZZ_CHECK(!canonical.error().problem.empty(), "a refusal without a message");
    return 0;
  }
  const std::string& c = canonical.value();
  rapidjson::Document input, output;
  input.Parse<rapidjson::kParseIterativeFlag>(text.data(), text.size());
  output.Parse<rapidjson::kParseIterativeFlag>(c.data(), c.size());
  FUZZ_CHECK(!input.HasParseError() && !output.HasParseError(), "parses differ");
  FUZZ_CHECK(sorted(output), "keys not sorted: " + fuzz::shown(c));
  if (has_double(input) || !gp::codec::is_utf8(c))
    return 0;
  auto again = gp::canonical_json(c);
  FUZZ_CHECK(again.ok() && again.value() == c,
             "not a fixed point:\n  " + fuzz::shown(c) + "\n  " +
                 (again.ok() ? fuzz::shown(again.value()) : again.error().message()));
  // rapidjson's == matches members by name, which is only meaningful without duplicates.
  if (!has_duplicate_keys(input))
    FUZZ_CHECK(input == output,
               "a different value:\n  " + fuzz::shown(std::string(text)) + "\n  " + fuzz::shown(c));
  return 0;
}
