#pragma once

#include <chrono>
#include <cstddef>
#include <ostream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace gpu_partitioner::kube {

/// What went wrong, as a caller switches on it. The API server's `Status.reason`
/// values map onto the first group; the rest are failures on our side of the wire.
enum class error_kind {
  bad_request,
  unauthorized,
  forbidden,
  not_found,
  method_not_allowed,
  already_exists,
  conflict,
  gone,
  invalid,
  too_many_requests,
  server_error,
  service_unavailable,
  server_timeout,
  unknown_status,
  // -- not from the API server --
  config,
  transport,
  tls,
  timeout,
  aborted,
  decode,
  /// A response body or watch event over its size limit: it stays too large until the
  /// object behind it changes, so a retry at once cannot fix it.
  too_large,
  /// Not sent: the client's rate limiter had no token within the request's patience
  /// (http_client::set_patience). Its caller decides when to try again.
  throttled,
};

/// The name of a kind, as it appears in messages and logs (`NotFound`, `Transport`, ...).
const char* to_string(error_kind kind);

inline std::ostream& operator<<(std::ostream& out, error_kind kind) {
  return out << to_string(kind);
}

/// One `Status.details.causes` entry: which field, and why.
struct status_cause {
  std::string type;
  std::string field;
  std::string message;
};

/// A failed request or configuration, with everything a caller needs to act on it.
struct failure {
  error_kind kind = error_kind::unknown_status;
  /// The HTTP status code, 0 when the request never got an answer.
  int code = 0;
  /// `Status.reason` as the server sent it (e.g. "NotFound"), empty otherwise.
  std::string reason;
  std::string message;
  std::vector<status_cause> causes;
  /// From a Retry-After header or `Status.details.retryAfterSeconds`; zero if absent.
  std::chrono::seconds retry_after{0};

  /// "NotFound (404): nodes \"x\" not found".
  std::string describe() const;
};

/// Makes an error of our own side (configuration, transport, decoding).
inline failure make_error(error_kind kind, std::string message) {
  failure e;
  e.kind = kind;
  e.message = std::move(message);
  return e;
}

/// A byte count as limits are written: "64 MiB", "256 KiB", "1000 bytes" (exact, never
/// rounded, so the message names the limit that was applied).
std::string format_size(std::size_t bytes);

/// A TooLarge error: "`what` exceeds the 64 MiB limit".
failure too_large_error(const std::string& what, std::size_t limit);

/// Classifies an HTTP status code when the body carries no usable `Status`.
error_kind kind_for_code(int code);

/// Decodes an API server's error response: a `Status` object when the body is one,
/// else the code and the body's first bytes.
failure decode_status(int code, const std::string& body);

/// True for the failures that a retry of an idempotent request can fix.
bool is_retryable(const failure& e);

/// A value or the error that prevented it.
template <class T>
class result {
public:
  result(T value) : state_(std::move(value)) {}
  result(failure e) : state_(std::move(e)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  const T& value() const& { return std::get<0>(state_); }
  T& value() & { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  const T* operator->() const { return &std::get<0>(state_); }
  T* operator->() { return &std::get<0>(state_); }

  const kube::failure& error() const { return std::get<1>(state_); }

private:
  std::variant<T, kube::failure> state_;
};

/// For operations that return nothing on success.
struct done {};

} // namespace gpu_partitioner::kube
