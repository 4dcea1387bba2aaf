#pragma once

#include "kube/error.hpp"
#include "kube/watch_protocol.hpp"

#include <rapidjson/document.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace gpu_partitioner::kube {

/// The longest watch event read: one line of the stream, one object. etcd refuses objects
/// over 1.5 MiB, and JSON spends at most six bytes on a stored one (a control byte as an
/// escape), so no object the server can hold comes near this.
inline constexpr std::size_t default_max_event_bytes = std::size_t{16} << 20;

/// Reassembles newline-delimited JSON from a chunked response: a chunk may end in the
/// middle of an event, or carry several. Lines are bounded: the partial line held between
/// chunks never exceeds `max_line` bytes.
class line_splitter {
public:
  explicit line_splitter(std::size_t max_line = default_max_event_bytes) : max_line_(max_line) {}

  /// Calls `on_line(std::string&)` for each complete, non-empty line in order. The line
  /// is mutable so the caller may parse it in place; it is valid only during the call.
  /// Returns false, with the partial line dropped, when a line is longer than `max_line`
  /// bytes (its newline not counted): the stream cannot be framed past it, so every later
  /// feed returns false too, until `reset`.
  template <class F>
  bool feed(std::string_view chunk, F&& on_line) {
    if (overflowed_)
      return false;
    std::size_t start = 0;
    while (start < chunk.size()) {
      const auto nl = chunk.find('\n', start);
      const auto piece = chunk.substr(start, nl == std::string_view::npos ? nl : nl - start);
      if (piece.size() > max_line_ - partial_.size()) {
        overflowed_ = true;
        std::string().swap(partial_);
        return false;
      }
      partial_.append(piece);
      if (nl == std::string_view::npos)
        return true;
      if (!partial_.empty() && partial_.back() == '\r')
        partial_.pop_back();
      if (!partial_.empty())
        on_line(partial_);
      partial_.clear();
      start = nl + 1;
    }
    return true;
  }

  /// Bytes of an event not yet terminated.
  std::size_t pending() const { return partial_.size(); }
  std::size_t max_line() const { return max_line_; }
  void reset() {
    partial_.clear();
    overflowed_ = false;
  }

private:
  std::size_t max_line_;
  std::string partial_;
  bool overflowed_ = false;
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
