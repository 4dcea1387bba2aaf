#pragma once

// Test helpers: manifests in YAML as the JSON the API server would store, and JSON
// merge patches for building malformed variants of a valid document.

#include "protocol/result.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace gpu_partitioner::protocol::testing {

/// The documents of a (multi-document) YAML file as compact JSON texts. Plain scalars
/// are typed by the YAML 1.2 core schema (null, booleans, integers, floats); quoted and
/// block scalars stay strings, as kubectl reads them.
std::vector<std::string> yaml_file_to_json(const std::string& path);

/// The single-document YAML file `path` as JSON.
std::string yaml_document_to_json(const std::string& path);

/// RFC 7386: `patch` merged into `document` (null removes a member). Both are JSON.
std::string merge_patch(std::string_view document, std::string_view patch);

/// Whether every member and item of `part` is in `whole` with the same value (arrays
/// must have equal lengths). Used to show a round trip dropped nothing.
bool json_contains(std::string_view whole, std::string_view part, std::string* difference);

/// The error message of `r`, or "" when it holds a value: Boost.Test evaluates a
/// check's message even when the check passes.
template <class T>
std::string error_of(const result<T>& r) {
  return r.ok() ? std::string() : r.error().message();
}

/// The names of the regular files in `dir` ending in `suffix`, sorted.
std::vector<std::string> files_in(const std::string& dir, std::string_view suffix);

} // namespace gpu_partitioner::protocol::testing
