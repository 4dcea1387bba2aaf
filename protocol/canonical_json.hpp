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
///
/// Numbers other than 64-bit integers (none of the CRDs has one) are doubles, and
/// RapidJSON 1.1's parser does not round them correctly: canonical text holding one
/// need not be its own canonical form. Its full-precision mode is no cure: it reads
/// 184467440737095516158 as 16. Likewise a \u escape of a lone surrogate ("\udc00")
/// becomes bytes that are not UTF-8 (the CRD decoder refuses such strings, and the API
/// server never sends one). Both found by fuzz/canonical_json_fuzz.cpp.
result<std::string> canonical_json(const rapidjson::Value& value);

/// Parses `text` first; malformed text gives `invalid JSON at offset N: ...`.
result<std::string> canonical_json(std::string_view text);

inline constexpr int canonical_json_max_depth = 256;

} // namespace gpu_partitioner::protocol
