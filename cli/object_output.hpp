#pragma once

// -o json and -o yaml: the objects as the API server returned them, printed as kubectl
// prints them (keys in order, JSON indented by four spaces, YAML in block style), so no
// field is lost to a codec that does not know it. Pure.

#include <rapidjson/document.h>

#include <string>
#include <vector>

namespace gpu_partitioner::cli {

/// An object and the apiVersion and kind it is of: items of a list answer may come
/// without theirs, and kubectl prints every object with both.
struct api_object {
  const rapidjson::Value* value = nullptr;
  std::string api_version;
  std::string kind;
};

/// A copy of the object with apiVersion and kind set where it has none.
rapidjson::Document object_of(const api_object& object);

/// kubectl's List of several objects: apiVersion v1, kind List, items as object_of gives
/// them, metadata.resourceVersion "".
rapidjson::Document list_of(const std::vector<api_object>& objects);

/// JSON as kubectl -o json prints it: members sorted by key, four spaces a level, a
/// final newline.
std::string json_text(const rapidjson::Value& value);

/// YAML as kubectl -o yaml prints it: members sorted by key, two spaces a level, a list's
/// dashes at its key's indentation; a string is quoted whenever YAML would read it as
/// something else (a number, a boolean, null, a time) or it holds a character that plain
/// style cannot.
std::string yaml_text(const rapidjson::Value& value);

} // namespace gpu_partitioner::cli
