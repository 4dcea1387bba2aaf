#pragma once

#include <string>
#include <utility>
#include <variant>

namespace gpu_partitioner::protocol {

/// Why a document was refused: the JSON path of the offending value and what is
/// wrong with it, in words a user can act on.
struct decode_error {
  /// e.g. `spec.partitionings[1].profileRef.name`; empty for the document itself.
  std::string path;
  std::string problem;

  /// `path: problem`, or just the problem when it concerns the whole document.
  std::string message() const { return path.empty() ? problem : path + ": " + problem; }
};

/// A value or the reason there is none. Decoding reports failures this way rather than
/// by exceptions, so a malformed object from the API server is a status condition, not
/// a crashed actor.
template <class T>
class result {
public:
  result(T value) : state_(std::move(value)) {}
  result(decode_error error) : state_(std::move(error)) {}

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  /// Precondition: ok().
  const T& value() const& { return std::get<T>(state_); }
  T& value() & { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }

  /// Precondition: !ok().
  const decode_error& error() const { return std::get<decode_error>(state_); }

private:
  std::variant<T, decode_error> state_;
};

} // namespace gpu_partitioner::protocol
