#pragma once

#include "kube/error.hpp"
#include "kube/watch_protocol.hpp"

#include <rapidjson/document.h>

#include <string>
#include <string_view>

namespace gpu_partitioner::kube {

/// Reassembles newline-delimited JSON from a chunked response: a chunk may end in the
/// middle of an event, or carry several.
class line_splitter {
public:
  /// Calls `on_line(std::string&)` for each complete, non-empty line in order. The line
  /// is mutable so the caller may parse it in place; it is valid only during the call.
  template <class F>
  void feed(std::string_view chunk, F&& on_line) {
    std::size_t start = 0;
    while (start < chunk.size()) {
      const auto nl = chunk.find('\n', start);
      if (nl == std::string_view::npos) {
        partial_.append(chunk.substr(start));
        return;
      }
      partial_.append(chunk.substr(start, nl - start));
      if (!partial_.empty() && partial_.back() == '\r')
        partial_.pop_back();
      if (!partial_.empty())
        on_line(partial_);
      partial_.clear();
      start = nl + 1;
    }
  }

  /// Bytes of an event not yet terminated.
  std::size_t pending() const { return partial_.size(); }
  void reset() { partial_.clear(); }

private:
  std::string partial_;
};

/// One decoded watch event. `object` points into `document`; for an ERROR event it is
/// the Status, with `code` and `message` taken from it.
struct watch_event {
  event_type type = event_type::added;
  rapidjson::Document document;
  const rapidjson::Value* object = nullptr;
  object_key key;
  std::string resource_version;
  int code = 0;
  std::string message;
};

/// Parses one line of a watch stream in place (the line is modified). A line that is
/// not a watch event is a Decode error naming the problem and offset.
result<done> decode_event(std::string& line, watch_event& out);

/// The namespace, name and resourceVersion of an object's metadata.
void read_identity(const rapidjson::Value& object, object_key& key, std::string& resource_version);

} // namespace gpu_partitioner::kube
