#include "kube/http_client.hpp"

#include "kube/rate_limiter.hpp"
#include "protocol/version.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace gpu_partitioner::kube {

const char* to_string(verb v) {
  switch (v) {
  case verb::get:
    return "GET";
  case verb::post:
    return "POST";
  case verb::put:
    return "PUT";
  case verb::patch:
    return "PATCH";
  case verb::del:
    return "DELETE";
  }
  return "GET";
}

std::chrono::milliseconds backoff_delay(const retry_policy& policy, int attempt,
                                        std::chrono::seconds retry_after, std::mt19937_64& rng) {
  const int shift = std::min(std::max(attempt - 1, 0), 20);
  const long long cap = std::min<long long>(policy.cap.count(), policy.base.count() << shift);
  std::uniform_int_distribution<long long> pick(cap / 2, std::max(cap, 1LL));
  auto delay = std::chrono::milliseconds(pick(rng));
  return std::max<std::chrono::milliseconds>(delay, std::min(retry_after, max_retry_after));
}

std::string resource_of(std::string_view path) {
  path = path.substr(0, path.find('?'));
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    auto start = path.find_first_not_of('/');
    if (start == std::string_view::npos)
      break;
    path.remove_prefix(start);
    auto end = path.find('/');
    parts.push_back(path.substr(0, end));
    path.remove_prefix(end == std::string_view::npos ? path.size() : end);
  }
  // /api/v1/... or /apis/group/version/...
  std::size_t i = 0;
  if (!parts.empty() && parts[0] == "api")
    i = 2;
  else if (!parts.empty() && parts[0] == "apis")
    i = 3;
  else
    return parts.empty() ? std::string{"/"} : std::string(parts[0]);
  if (parts.size() == i + 3 && parts[i] == "namespaces" &&
      (parts[i + 2] == "status" || parts[i + 2] == "finalize"))
    // A Namespace's own subresources, not a namespaced collection called "status".
    return "namespaces/" + std::string(parts[i + 2]);
  if (i + 1 < parts.size() && parts[i] == "namespaces" && i + 2 < parts.size())
    i += 2;
  if (i >= parts.size())
    return "";
  std::string out(parts[i]);
  if (i + 2 < parts.size())
    out += "/" + std::string(parts[i + 2]);
  return out;
}

std::string header_key_escape(const std::string& key) {
  static const char* const hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : key) {
    if (std::isalnum(c) != 0 || std::strchr("-!#$&'*+.^_`|~", c) != nullptr) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

request_target target_of(const connection_config& config) {
  request_target t;
  t.url_base = config.server;
  const auto& who = config.impersonate;
  if (!who.user.empty()) {
    t.headers.push_back("Impersonate-User: " + who.user);
    for (const auto& group : who.groups)
      t.headers.push_back("Impersonate-Group: " + group);
    if (!who.uid.empty())
      t.headers.push_back("Impersonate-Uid: " + who.uid);
    for (const auto& [key, values] : who.extra)
      for (const auto& value : values)
        t.headers.push_back("Impersonate-Extra-" + header_key_escape(key) + ": " + value);
  }
  if (config.tls_server_name.empty())
    return t;
  // scheme://authority[/prefix]; the authority is host[:port], an IPv6 host in brackets.
  const std::size_t at = config.server.find("://");
  if (at == std::string::npos)
    return t;
  const std::string scheme = config.server.substr(0, at + 3);
  const std::size_t path_at = config.server.find('/', at + 3);
  const std::string authority = config.server.substr(
      at + 3, path_at == std::string::npos ? std::string::npos : path_at - at - 3);
  const std::string prefix = path_at == std::string::npos ? "" : config.server.substr(path_at);
  const std::size_t colon = authority.rfind(':');
  const bool has_port =
      colon != std::string::npos && authority.find(']', colon) == std::string::npos;
  const std::string host = has_port ? authority.substr(0, colon) : authority;
  const std::string port =
      has_port ? authority.substr(colon + 1) : (scheme == "http://" ? "80" : "443");
  t.url_base = scheme + config.tls_server_name + ":" + port + prefix;
  t.connect_to = config.tls_server_name + ":" + port + ":" + host + ":" + port;
  t.headers.push_back("Host: " + authority);
  return t;
}

namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

error_kind kind_for_curl(CURLcode code) {
  switch (code) {
  case CURLE_OPERATION_TIMEDOUT:
    return error_kind::timeout;
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
  case CURLE_SSL_INVALIDCERTSTATUS:
  case CURLE_SSL_CRL_BADFILE:
  case CURLE_SSL_ENGINE_INITFAILED:
  case CURLE_SSL_ENGINE_NOTFOUND:
  case CURLE_SSL_ENGINE_SETFAILED:
  case CURLE_SSL_SHUTDOWN_FAILED:
    return error_kind::tls;
  case CURLE_ABORTED_BY_CALLBACK:
    return error_kind::aborted;
  default:
    return error_kind::transport;
  }
}

bool default_idempotent(verb v) {
  return v == verb::get || v == verb::put || v == verb::del;
}

} // namespace

struct http_client::transfer {
  http_response response;
  const std::function<bool(std::string_view)>* on_data = nullptr;
  const std::atomic<bool>* abort = nullptr;
  bool stopped_by_caller = false;
  bool idle_expired = false;
  std::chrono::seconds idle_timeout{0};
  std::chrono::steady_clock::time_point last_data = std::chrono::steady_clock::now();
  CURL* curl = nullptr;
  std::string error_body;
  std::size_t max_body = default_max_body;
  /// The 2xx body outgrew `max_body`: the transfer was stopped.
  bool too_large = false;
  /// The error answer outgrew `max_error_body`: its start is kept, the rest not read.
  bool error_cut = false;

  static size_t on_write(char* data, size_t size, size_t n, void* self) {
    auto* t = static_cast<transfer*>(self);
    const size_t bytes = size * n;
    t->last_data = std::chrono::steady_clock::now();
    long code = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
    if (code < 200 || code >= 300) {
      // An error answer is one Status object, not events, even to a stream.
      std::string& body = t->on_data == nullptr ? t->response.body : t->error_body;
      if (body.size() + bytes > max_error_body) {
        body.append(data, max_error_body - body.size());
        t->error_cut = true;
        return 0;
      }
      body.append(data, bytes);
      return bytes;
    }
    if (t->on_data == nullptr) {
      // Checked before appending, so the body never holds more than the limit.
      if (t->response.body.size() + bytes > t->max_body) {
        t->too_large = true;
        return 0;
      }
      t->response.body.append(data, bytes);
      return bytes;
    }
    if (!(*t->on_data)(std::string_view(data, bytes))) {
      t->stopped_by_caller = true;
      return 0;
    }
    return bytes;
  }

  static size_t on_header(char* data, size_t size, size_t n, void* self) {
    auto* t = static_cast<transfer*>(self);
    const size_t bytes = size * n;
    std::string_view line(data, bytes);
    if (line.rfind("HTTP/", 0) == 0) {
      t->response.retry_after = std::chrono::seconds(0);
    } else if (line.size() > 12 && strncasecmp(line.data(), "retry-after:", 12) == 0) {
      long seconds = std::strtol(std::string(line.substr(12)).c_str(), nullptr, 10);
      if (seconds > 0)
        t->response.retry_after = std::chrono::seconds(std::min(seconds, 600L));
    }
    return bytes;
  }

  static int on_progress(void* self, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* t = static_cast<transfer*>(self);
    if (t->abort != nullptr && t->abort->load(std::memory_order_relaxed))
      return 1;
    if (t->idle_timeout.count() > 0 &&
        std::chrono::steady_clock::now() - t->last_data > t->idle_timeout) {
      t->idle_expired = true;
      return 1;
    }
    return 0;
  }
};

http_client::http_client(connection_config config, std::shared_ptr<credentials> creds,
                         retry_policy policy)
    : config_(std::move(config)), creds_(std::move(creds)), policy_(policy),
      rng_(std::random_device{}()) {
  global_init();
  CURL* c = curl_easy_init();
  curl_ = c;
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  const std::string agent = config_.user_agent.empty()
                                ? std::string("gpu-partitioner/") + gpu_partitioner::version
                                : config_.user_agent;
  curl_easy_setopt(c, CURLOPT_USERAGENT, agent.c_str());
  target_ = target_of(config_);
  if (!target_.connect_to.empty()) {
    curl_slist* entry = curl_slist_append(nullptr, target_.connect_to.c_str());
    connect_to_ = entry;
    curl_easy_setopt(c, CURLOPT_CONNECT_TO, entry);
  }
  if (!config_.proxy_url.empty())
    curl_easy_setopt(c, CURLOPT_PROXY, config_.proxy_url.c_str());
  if (config_.insecure_skip_tls_verify) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (!config_.ca_pem.empty()) {
    curl_blob ca{config_.ca_pem.data(), config_.ca_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &ca);
    // The blob replaces only the CA file: libcurl would still load its built-in CA
    // directory (Debian's /etc/ssl/certs) beside it, and any public certificate for the
    // server's name would pass. The kubeconfig's CA is the only one trusted.
    curl_easy_setopt(c, CURLOPT_CAPATH, nullptr);
    curl_easy_setopt(c, CURLOPT_CAINFO, nullptr);
  }
}

http_client::~http_client() {
  if (curl_ != nullptr)
    curl_easy_cleanup(static_cast<CURL*>(curl_));
  curl_slist_free_all(static_cast<curl_slist*>(connect_to_));
}

bool http_client::prepare(const http_request& req, std::string& problem) {
  CURL* c = static_cast<CURL*>(curl_);
  if (creds_) {
    auto material = creds_->current();
    if (!material) {
      problem = material.error().message;
      return false;
    }
    const bool secret = !material->token.empty() || !material->client_cert_pem.empty();
    if (secret && is_plain_http(config_.server)) {
      problem = config_.origin + ": refusing to send credentials to " + config_.server +
                ", which is plain http://";
      return false;
    }
    // The token becomes a header line: a control character could end it and add another.
    if (std::any_of(material->token.begin(), material->token.end(),
                    [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; })) {
      problem = config_.origin + ": the token holds control characters; refusing to send it";
      return false;
    }
    if (material->generation != loaded_generation_) {
      loaded_generation_ = material->generation;
      bearer_header_ =
          material->token.empty() ? std::string{} : "Authorization: Bearer " + material->token;
      if (!material->client_cert_pem.empty()) {
        curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
        curl_blob cert{const_cast<char*>(material->client_cert_pem.data()),
                       material->client_cert_pem.size(), CURL_BLOB_COPY};
        curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
        curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
        curl_blob key{const_cast<char*>(material->client_key_pem.data()),
                      material->client_key_pem.size(), CURL_BLOB_COPY};
        curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
      }
    }
  }
  const std::string url = target_.url_base + req.path;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  switch (req.method) {
  case verb::get:
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, nullptr);
    break;
  default:
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, req.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST,
                     req.method == verb::post ? nullptr : to_string(req.method));
    break;
  }
  const bool streamed = req.timeout.count() == 0;
  const auto timeout = request_timeout_ && !streamed ? *request_timeout_ : req.timeout;
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  return true;
}

void http_client::observe(const http_request& req, int code,
                          std::chrono::steady_clock::time_point start, bool stream) {
  if (!observer_)
    return;
  request_record r;
  r.method = req.method;
  r.resource = req.resource.empty() ? resource_of(req.path) : req.resource;
  r.code = code;
  r.stream = stream;
  r.path = req.path;
  r.latency = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start);
  observer_(r);
}

namespace {

// The leader's write gate, asked again by libcurl once connected, as the request is about
// to go out: a replica frozen (SIGSTOP, a VM paused) between call()'s check and here must
// not send the write when it wakes after its lease ran out.
struct gate_check {
  const std::function<bool()>* gate = nullptr;
  bool refused = false;
  static int on_prereq(void* data, char*, char*, int, int) {
    auto* self = static_cast<gate_check*>(data);
    if ((*self->gate)())
      return CURL_PREREQFUNC_OK;
    self->refused = true;
    return CURL_PREREQFUNC_ABORT;
  }
};

} // namespace

result<http_response> http_client::run(const http_request& req, transfer& t) {
  CURL* c = static_cast<CURL*>(curl_);
  // Every attempt, and a watch as it opens, takes a token; its latency excludes the wait.
  if (config_.limiter) {
    if (!patience_)
      config_.limiter->wait(config_.lane);
    else if (!config_.limiter->wait_for(config_.lane, *patience_))
      return make_error(error_kind::throttled,
                        std::string(to_string(req.method)) + " " + req.path +
                            ": not sent: no token from the client's rate limiter within " +
                            std::to_string(patience_->count()) + " ms");
  }
  const auto start = std::chrono::steady_clock::now();
  std::string problem;
  if (!prepare(req, problem))
    return make_error(error_kind::config, problem);

  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json");
  headers = curl_slist_append(headers, ("Content-Type: " + req.content_type).c_str());
  headers = curl_slist_append(headers, "Expect:");
  for (const auto& h : target_.headers)
    headers = curl_slist_append(headers, h.c_str());
  if (!bearer_header_.empty())
    headers = curl_slist_append(headers, bearer_header_.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);

  char errbuf[CURL_ERROR_SIZE] = {0};
  t.curl = c;
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &transfer::on_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &transfer::on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  const bool watch_progress = t.abort != nullptr || t.idle_timeout.count() > 0;
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, watch_progress ? 0L : 1L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, &transfer::on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);

  gate_check gate;
  if (req.method != verb::get && config_.may_write) {
    gate.gate = &config_.may_write;
    curl_easy_setopt(c, CURLOPT_PREREQFUNCTION, &gate_check::on_prereq);
    curl_easy_setopt(c, CURLOPT_PREREQDATA, &gate);
  }

  CURLcode rc = curl_easy_perform(c);
  curl_easy_setopt(c, CURLOPT_PREREQFUNCTION, nullptr);
  curl_easy_setopt(c, CURLOPT_PREREQDATA, nullptr);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, nullptr);
  curl_slist_free_all(headers);
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  t.response.code = static_cast<int>(code);
  // A body refused as too large was an answer all the same: its code is recorded.
  const bool answered = rc == CURLE_OK || t.stopped_by_caller || t.error_cut || t.too_large;
  observe(req, answered ? t.response.code : 0, start, t.on_data != nullptr);

  if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && (t.stopped_by_caller || t.error_cut)))
    return t.response;
  if (t.too_large)
    return too_large_error(std::string("response body from ") + to_string(req.method) + " " +
                               req.path.substr(0, req.path.find('?')),
                           t.max_body);
  if (gate.refused)
    return make_error(
        error_kind::aborted,
        std::string(to_string(req.method)) + " " + req.path +
            ": refused as it was sent: this replica no longer holds the leader lease");
  if (t.idle_expired)
    return make_error(error_kind::timeout, "no data from " + config_.server + " for " +
                                               std::to_string(t.idle_timeout.count()) + " s");
  const error_kind kind = kind_for_curl(rc);
  std::string detail = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
  std::string message =
      std::string(to_string(req.method)) + " " + config_.server + req.path + ": " + detail;
  if (kind == error_kind::tls)
    message += " (the CA of " + config_.origin + " does not verify this server?)";
  return make_error(kind, message);
}

result<http_response> http_client::perform(const http_request& req) {
  transfer t;
  t.max_body = max_body_;
  return run(req, t);
}

result<std::string> http_client::call(const http_request& req) {
  const int attempts = req.max_attempts > 0 ? req.max_attempts : policy_.max_attempts;
  const bool idempotent = req.idempotent.value_or(default_idempotent(req.method));
  bool reauthenticated = false;
  for (int attempt = 1;; ++attempt) {
    if (req.method != verb::get && config_.may_write && !config_.may_write())
      return make_error(error_kind::aborted,
                        std::string(to_string(req.method)) + " " + req.path +
                            ": refused: this replica does not hold the leader lease");
    auto r = perform(req);
    failure e;
    if (r) {
      if (r->code >= 200 && r->code < 300)
        return std::move(r->body);
      e = decode_status(r->code, r->body);
      if (r->retry_after > e.retry_after)
        e.retry_after = r->retry_after;
      if (e.kind == error_kind::unauthorized && creds_ && !reauthenticated) {
        // A rotated token or an expired exec credential: fetch fresh ones once.
        reauthenticated = true;
        creds_->invalidate(loaded_generation_);
        --attempt;
        continue;
      }
    } else {
      e = r.error();
    }
    // A 429 was refused before it was acted on, so even a POST may go again; anything
    // else is retried only when repeating it cannot do harm.
    const bool may_retry =
        is_retryable(e) && (idempotent || e.kind == error_kind::too_many_requests);
    if (!may_retry || attempt >= attempts)
      return e;
    auto delay = backoff_delay(policy_, attempt, e.retry_after, rng_);
    if (sleeper_)
      sleeper_(delay);
    else
      std::this_thread::sleep_for(delay);
  }
}

result<int> http_client::stream(const http_request& req,
                                const std::function<bool(std::string_view)>& on_data,
                                const std::atomic<bool>& abort, std::chrono::seconds idle_timeout) {
  transfer t;
  t.on_data = &on_data;
  t.abort = &abort;
  t.idle_timeout = idle_timeout;
  auto r = run(req, t);
  if (!r)
    return r.error();
  if (r->code < 200 || r->code >= 300) {
    auto e = decode_status(r->code, t.error_body);
    if (r->code == 401 && creds_)
      creds_->invalidate(loaded_generation_);
    return e;
  }
  return r->code;
}

} // namespace gpu_partitioner::kube

// LeakSanitizer's own suppressions, for every program that reaches the API server through
// libcurl. The rule: a leak whose allocation is in OpenSSL is not reported. OpenSSL 3.0
// under libcurl 7.88 has, at an operator's exit, left a few of its own objects unreferenced
// (80 bytes direct and 9 KB under them, every frame in libcrypto). A handle this code fails
// to clean up is still reported: its root is libcurl's allocation, not OpenSSL's.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libcrypto.so\nleak:libssl.so\n";
}
