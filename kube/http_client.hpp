#pragma once

#include "kube/config.hpp"
#include "kube/credentials.hpp"
#include "kube/error.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace gpu_partitioner::kube {

enum class verb { get, post, put, patch, del };

/// "GET", "POST", ... as on the wire.
const char* to_string(verb v);

struct http_request {
  verb method = verb::get;
  /// Absolute path with the query string: "/api/v1/nodes?limit=500".
  std::string path;
  std::string body;
  std::string content_type = "application/json";
  /// Whole-request deadline; zero means none (watch streams use an idle timeout instead).
  std::chrono::milliseconds timeout{30000};
  /// Whether a retry after a lost answer is safe. Unset: GET, PUT and DELETE are;
  /// POST and PATCH are not unless the caller says so.
  std::optional<bool> idempotent;
  /// Attempts in all, including the first; zero takes the client's policy.
  int max_attempts = 0;
  /// The resource named in metrics ("nodes", "pods/eviction"); derived from the path if empty.
  std::string resource;
};

struct http_response {
  int code = 0;
  std::string body;
  std::chrono::seconds retry_after{0};
};

/// One finished attempt, for metrics and logs.
struct request_record {
  verb method = verb::get;
  std::string resource;
  /// HTTP status; 0 when there was no answer.
  int code = 0;
  std::chrono::microseconds latency{0};
  /// A streamed response (a watch): its latency is its lifetime.
  bool stream = false;
  /// The request's path with its query, for a request log (kubectl -v=6).
  std::string path;
};
using request_observer = std::function<void(const request_record&)>;

/// How failed idempotent requests are retried: exponential backoff with full jitter,
/// at least what the server asked for in Retry-After.
struct retry_policy {
  int max_attempts = 5;
  std::chrono::milliseconds base{200};
  std::chrono::milliseconds cap{10000};
};

/// The largest response body read whole (by `perform` and `call`), counted after gzip is
/// undone, so a small compressed answer cannot inflate past it. etcd refuses objects over
/// 1.5 MiB, and lists are paged: a page of 500 (list_watch's, halved after a page too
/// large) reaches this only at 128 KiB an object on average. A larger body is refused rather
/// than held, with its parsed copy, in memory.
inline constexpr std::size_t default_max_body = std::size_t{64} << 20;

/// How much of an error answer is read: it is one Status object, whose message says all
/// there is to say well within this.
inline constexpr std::size_t max_error_body = std::size_t{1} << 20;

/// The longest wait a server's Retry-After or `retryAfterSeconds` can impose on one retry.
inline constexpr std::chrono::seconds max_retry_after{60};

/// The delay before attempt `attempt` (1 = the first retry): uniform in
/// [cap/2, cap] where cap = min(policy.cap, base * 2^(attempt-1)), and never less than
/// `retry_after`, itself bounded by `max_retry_after` (60 s): half-jitter keeps a floor so a
/// server asking for patience gets it, and a server asking for years does not stall the
/// caller's thread for them.
std::chrono::milliseconds backoff_delay(const retry_policy& policy, int attempt,
                                        std::chrono::seconds retry_after, std::mt19937_64& rng);

/// The resource part of an API path for metrics: "/api/v1/namespaces/x/pods/y/eviction"
/// gives "pods/eviction"; "/apis/g/v1/nodes/n/status" gives "nodes/status".
std::string resource_of(std::string_view path);

/// Where requests go and what they carry besides credentials, from a configuration: the
/// URL base (with `tls-server-name` as its host, so curl sends it as SNI and verifies the
/// certificate against it, while `connect_to` keeps the real address), and the fixed
/// headers (impersonation; Host when the URL's host was replaced).
struct request_target {
  std::string url_base;
  /// curl's CONNECT_TO entry, "NAME:PORT:HOST:PORT"; empty without tls-server-name.
  std::string connect_to;
  std::vector<std::string> headers;
};
request_target target_of(const connection_config& config);

/// Percent-encodes an impersonation extra's key for its header name, as the API server
/// decodes it: everything but letters, digits and "-!#$&'*+.^_`|~" is escaped.
std::string header_key_escape(const std::string& key);

/// An HTTP/1.1 connection to one API server: one curl easy handle, reused across
/// requests (keep-alive). Not thread-safe: use one per thread. With a limiter in its
/// configuration, each attempt (a retry too, and a watch as it opens) first waits for a
/// token on the calling thread, in its lane.
class http_client {
public:
  http_client(connection_config config, std::shared_ptr<credentials> creds,
              retry_policy policy = {});
  ~http_client();
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  /// One attempt. Any HTTP status is a response; no answer at all is an error.
  result<http_response> perform(const http_request& req);

  /// Sends with retries (idempotent requests, and any request the server refused with
  /// 429 before acting on it), and returns the body of a 2xx answer or the decoded error.
  result<std::string> call(const http_request& req);

  /// Streams a long response (a watch) to `on_data` as it arrives; `on_data` returns
  /// false to stop. Stops within about a second once `abort` is set, and with a
  /// Timeout error when nothing at all arrives for `idle_timeout`. Returns the final
  /// HTTP status; an error status's body is decoded into the error instead.
  result<int> stream(const http_request& req, const std::function<bool(std::string_view)>& on_data,
                     const std::atomic<bool>& abort, std::chrono::seconds idle_timeout);

  void set_observer(request_observer observer) { observer_ = std::move(observer); }

  /// The rate limiter's lane of the requests from here on (connection_config::lane).
  void set_lane(request_lane lane) { config_.lane = lane; }

  /// How long a request from here on waits for the rate limiter's token at most (none:
  /// as long as it takes). A request that runs out of patience is not sent: it fails as
  /// Throttled, which `call` does not retry, and its caller tries again when it suits it.
  void set_patience(std::optional<std::chrono::milliseconds> patience) { patience_ = patience; }

  /// The largest 2xx body `perform` and `call` read; a larger one is a TooLarge error naming
  /// the request and the limit, which `call` does not retry. Streams are bounded per event
  /// by their reader instead.
  void set_max_body(std::size_t bytes) { max_body_ = bytes; }

  /// Every request that is not a stream gets this deadline instead of its own (zero: none),
  /// as kubectl's --request-timeout sets one for all of a command's requests.
  void set_request_timeout(std::chrono::milliseconds timeout) { request_timeout_ = timeout; }

  /// For tests: replace sleeping between retries.
  void set_sleeper(std::function<void(std::chrono::milliseconds)> sleeper) {
    sleeper_ = std::move(sleeper);
  }

  const connection_config& config() const { return config_; }

private:
  struct transfer;
  result<http_response> run(const http_request& req, transfer& t);
  bool prepare(const http_request& req, std::string& problem);
  void observe(const http_request& req, int code, std::chrono::steady_clock::time_point start,
               bool stream);

  connection_config config_;
  std::shared_ptr<credentials> creds_;
  retry_policy policy_;
  void* curl_ = nullptr;
  void* connect_to_ = nullptr; // curl_slist*
  request_target target_;
  std::uint64_t loaded_generation_ = 0;
  std::string bearer_header_;
  request_observer observer_;
  std::function<void(std::chrono::milliseconds)> sleeper_;
  std::optional<std::chrono::milliseconds> patience_;
  std::size_t max_body_ = default_max_body;
  std::optional<std::chrono::milliseconds> request_timeout_;
  std::mt19937_64 rng_;
};

} // namespace gpu_partitioner::kube
