#pragma once

// JSON text <-> the plain structs of protocol/. The structs are what actors pass in
// messages; rapidjson types stay inside kube/ and this codec.

#include "protocol/codec/json_decode.hpp"
#include "protocol/codec/json_encode.hpp"
#include "protocol/node_partitioning.hpp"
#include "protocol/partitioning_plan.hpp"
#include "protocol/partitioning_profile.hpp"
#include "protocol/result.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>

namespace gpu_partitioner::protocol {

/// Parses `text` (one JSON value, valid UTF-8) and decodes it as T with the CRD's
/// validation and defaults. Malformed text gives `invalid JSON at offset N: ...`.
template <class T>
result<T> from_json(std::string_view text) {
  rapidjson::Document doc;
  // Iterative parsing: deeply nested input must not exhaust the stack.
  doc.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(text.data(),
                                                                                    text.size());
  if (doc.HasParseError())
    return decode_error{{},
                        "invalid JSON at offset " + std::to_string(doc.GetErrorOffset()) + ": " +
                            rapidjson::GetParseError_En(doc.GetParseError())};
  return codec::decode<T>(doc);
}

/// Decodes an already parsed value (an item of a List, the object of a watch event).
template <class T>
result<T> from_json_value(const rapidjson::Value& value) {
  return codec::decode<T>(value);
}

/// Writes `value` into `out`, allocating from `a` (to embed it in a larger document).
template <class T>
void to_json_value(const T& value, rapidjson::Value& out, codec::json_allocator& a) {
  codec::encode_value(value, out, a);
}

/// Compact JSON text the API server accepts: empty optional fields are left out.
template <class T>
std::string to_json(const T& value) {
  rapidjson::Document doc;
  codec::encode_value(value, doc, doc.GetAllocator());
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc.Accept(writer);
  return {buffer.GetString(), buffer.GetSize()};
}

/// Prints the JSON form, so test failures show the objects.
template <class T, class = std::enable_if_t<codec::is_described_v<T>>>
std::ostream& operator<<(std::ostream& os, const T& value) {
  return os << to_json(value);
}

// Compiled once in json.cpp rather than in every file that decodes a kind.
extern template result<partitioning_profile> from_json(std::string_view);
extern template result<partitioning_plan> from_json(std::string_view);
extern template result<node_partitioning> from_json(std::string_view);
extern template result<partitioning_profile> from_json_value(const rapidjson::Value&);
extern template result<partitioning_plan> from_json_value(const rapidjson::Value&);
extern template result<node_partitioning> from_json_value(const rapidjson::Value&);
extern template std::string to_json(const partitioning_profile&);
extern template std::string to_json(const partitioning_plan&);
extern template std::string to_json(const node_partitioning&);
extern template std::string to_json(const partitioning_plan_status&);
extern template std::string to_json(const node_partitioning_status&);

} // namespace gpu_partitioner::protocol
