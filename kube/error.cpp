#include "kube/error.hpp"

#include <rapidjson/document.h>

#include <cstring>

namespace gpu_partitioner::kube {

const char* to_string(error_kind kind) {
  switch (kind) {
  case error_kind::bad_request:
    return "BadRequest";
  case error_kind::unauthorized:
    return "Unauthorized";
  case error_kind::forbidden:
    return "Forbidden";
  case error_kind::not_found:
    return "NotFound";
  case error_kind::method_not_allowed:
    return "MethodNotAllowed";
  case error_kind::already_exists:
    return "AlreadyExists";
  case error_kind::conflict:
    return "Conflict";
  case error_kind::gone:
    return "Gone";
  case error_kind::invalid:
    return "Invalid";
  case error_kind::too_many_requests:
    return "TooManyRequests";
  case error_kind::server_error:
    return "InternalError";
  case error_kind::service_unavailable:
    return "ServiceUnavailable";
  case error_kind::server_timeout:
    return "Timeout";
  case error_kind::unknown_status:
    return "Unknown";
  case error_kind::config:
    return "Config";
  case error_kind::transport:
    return "Transport";
  case error_kind::tls:
    return "TLS";
  case error_kind::timeout:
    return "ClientTimeout";
  case error_kind::aborted:
    return "Aborted";
  case error_kind::decode:
    return "Decode";
  case error_kind::too_large:
    return "TooLarge";
  case error_kind::throttled:
    return "Throttled";
  }
  return "Unknown";
}

std::string failure::describe() const {
  std::string out = to_string(kind);
  if (code != 0)
    out += " (" + std::to_string(code) + ")";
  if (!message.empty())
    out += ": " + message;
  return out;
}

std::string format_size(std::size_t bytes) {
  constexpr std::size_t kib = 1024;
  constexpr std::size_t mib = kib * kib;
  if (bytes >= mib && bytes % mib == 0)
    return std::to_string(bytes / mib) + " MiB";
  if (bytes >= kib && bytes % kib == 0)
    return std::to_string(bytes / kib) + " KiB";
  return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
}

failure too_large_error(const std::string& what, std::size_t limit) {
  return make_error(error_kind::too_large, what + " exceeds the " + format_size(limit) + " limit");
}

error_kind kind_for_code(int code) {
  switch (code) {
  case 400:
    return error_kind::bad_request;
  case 401:
    return error_kind::unauthorized;
  case 403:
    return error_kind::forbidden;
  case 404:
    return error_kind::not_found;
  case 405:
    return error_kind::method_not_allowed;
  case 409:
    return error_kind::conflict;
  case 410:
    return error_kind::gone;
  case 422:
    return error_kind::invalid;
  case 429:
    return error_kind::too_many_requests;
  case 500:
    return error_kind::server_error;
  case 503:
    return error_kind::service_unavailable;
  case 504:
    return error_kind::server_timeout;
  default:
    return code >= 500 ? error_kind::server_error : error_kind::unknown_status;
  }
}

namespace {

// Status.reason values (k8s.io/apimachinery/pkg/apis/meta/v1 StatusReason).
error_kind kind_for_reason(const std::string& reason, int code) {
  struct entry {
    const char* reason;
    error_kind kind;
  };
  static constexpr entry table[] = {
      {"BadRequest", error_kind::bad_request},
      {"Unauthorized", error_kind::unauthorized},
      {"Forbidden", error_kind::forbidden},
      {"NotFound", error_kind::not_found},
      {"MethodNotAllowed", error_kind::method_not_allowed},
      {"AlreadyExists", error_kind::already_exists},
      {"Conflict", error_kind::conflict},
      {"Gone", error_kind::gone},
      {"Expired", error_kind::gone},
      {"Invalid", error_kind::invalid},
      {"TooManyRequests", error_kind::too_many_requests},
      {"InternalError", error_kind::server_error},
      {"ServiceUnavailable", error_kind::service_unavailable},
      {"Timeout", error_kind::server_timeout},
      {"ServerTimeout", error_kind::server_timeout},
  };
  for (const auto& e : table)
    if (reason == e.reason)
      return e.kind;
  return kind_for_code(code);
}

std::string string_member(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject())
    return {};
  auto it = v.FindMember(name);
  return it != v.MemberEnd() && it->value.IsString() ? it->value.GetString() : std::string{};
}

} // namespace

failure decode_status(int code, const std::string& body) {
  failure e;
  e.code = code;
  e.kind = kind_for_code(code);
  rapidjson::Document doc;
  // Iterative: whatever answers (a proxy, say) must not exhaust the stack with nesting.
  doc.Parse<rapidjson::kParseIterativeFlag>(body.c_str(), body.size());
  if (doc.HasParseError() || !doc.IsObject() || string_member(doc, "kind") != "Status") {
    constexpr std::size_t limit = 512;
    e.message = body.size() > limit ? body.substr(0, limit) + "..." : body;
    if (e.message.empty())
      e.message = "HTTP " + std::to_string(code);
    return e;
  }
  e.reason = string_member(doc, "reason");
  e.message = string_member(doc, "message");
  if (auto c = doc.FindMember("code");
      c != doc.MemberEnd() && c->value.IsInt() && c->value.GetInt())
    e.code = c->value.GetInt();
  e.kind = kind_for_reason(e.reason, e.code);
  if (auto d = doc.FindMember("details"); d != doc.MemberEnd() && d->value.IsObject()) {
    if (auto r = d->value.FindMember("retryAfterSeconds");
        r != d->value.MemberEnd() && r->value.IsInt() && r->value.GetInt() > 0)
      e.retry_after = std::chrono::seconds(r->value.GetInt());
    if (auto cs = d->value.FindMember("causes"); cs != d->value.MemberEnd() && cs->value.IsArray())
      for (const auto& c : cs->value.GetArray())
        e.causes.push_back(
            {string_member(c, "reason"), string_member(c, "field"), string_member(c, "message")});
  }
  return e;
}

bool is_retryable(const failure& e) {
  switch (e.kind) {
  case error_kind::too_many_requests:
  case error_kind::server_error:
  case error_kind::service_unavailable:
  case error_kind::server_timeout:
  case error_kind::transport:
  case error_kind::timeout:
    return true;
  default:
    return false;
  }
}

} // namespace gpu_partitioner::kube
