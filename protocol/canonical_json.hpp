#pragma once

#include "protocol/result.hpp"

#include <rapidjson/document.h>

#include <string>
#include <string_view>

namespace gpu_partitioner::protocol {

/// The canonical text of a JSON value, so equal content gives equal bytes (and equal
/// hashes): object keys sorted by their UTF-8 bytes at every level, no whitespace,
/// strings escaped as RapidJSON's writer does, integers as integers. Fails only for
/// values nested deeper than canonical_json_max_depth.
result<std::string> canonical_json(const rapidjson::Value& value);

/// Parses `text` first; malformed text gives `invalid JSON at offset N: ...`.
result<std::string> canonical_json(std::string_view text);

inline constexpr int canonical_json_max_depth = 256;

} // namespace gpu_partitioner::protocol
