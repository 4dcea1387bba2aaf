// The helpers of the HTTP client: the retry back-off (half jitter, capped, never shorter
// than the server's Retry-After), the resource label of a request path, where requests go
// (tls-server-name, impersonation), and what is never sent (credentials over plain http, a
// token that would break its header line).
#include "kube/client.hpp"
#include "kube/http_client.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cstring>
#include <memory>
#include <netinet/in.h>
#include <ostream>
#include <poll.h>
#include <random>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace kube = gpu_partitioner::kube;
namespace bdata = boost::unit_test::data;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(retry_backoff)

namespace {

const kube::retry_policy policy{5, 200ms, 10000ms};

// The ceiling of attempt n: base * 2^(n-1), at most the policy's cap.
long long ceiling(int attempt) {
  return std::min<long long>(10000, 200LL << std::min(attempt - 1, 30));
}

} // namespace

BOOST_DATA_TEST_CASE(delay_is_within_half_and_all_of_the_attempts_ceiling, bdata::xrange(1, 13),
                     attempt) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(attempt));
  long long low = ceiling(attempt), high = 0;
  for (int i = 0; i < 2000; ++i) {
    const long long d = kube::backoff_delay(policy, attempt, 0s, rng).count();
    BOOST_TEST_REQUIRE(d >= ceiling(attempt) / 2);
    BOOST_TEST_REQUIRE(d <= ceiling(attempt));
    low = std::min(low, d);
    high = std::max(high, d);
  }
  // Jittered over the whole range, not pinned to one end.
  BOOST_TEST(low < ceiling(attempt) / 2 + ceiling(attempt) / 10);
  BOOST_TEST(high > ceiling(attempt) - ceiling(attempt) / 10);
}

BOOST_AUTO_TEST_CASE(ceiling_doubles_per_attempt_until_the_cap) {
  std::mt19937_64 rng(1);
  // Attempt 4's ceiling is 1600 ms: its floor, 800 ms, is above all of attempt 3.
  for (int i = 0; i < 200; ++i) {
    BOOST_TEST_REQUIRE(kube::backoff_delay(policy, 3, 0s, rng).count() <= 800);
    BOOST_TEST_REQUIRE(kube::backoff_delay(policy, 4, 0s, rng).count() >= 800);
  }
}

BOOST_AUTO_TEST_CASE(huge_attempt_numbers_stay_at_the_cap) {
  std::mt19937_64 rng(2);
  for (int attempt : {7, 20, 21, 64, 1000, 1 << 30}) {
    const auto d = kube::backoff_delay(policy, attempt, 0s, rng).count();
    BOOST_TEST(d >= 5000);
    BOOST_TEST(d <= 10000);
  }
}

BOOST_AUTO_TEST_CASE(retry_after_is_a_floor_up_to_a_minute) {
  std::mt19937_64 rng(4);
  BOOST_TEST(kube::backoff_delay(policy, 1, 7s, rng).count() == 7000);
  // A server asking for a year (or a hostile Status's retryAfterSeconds) gets a minute.
  BOOST_TEST(kube::backoff_delay(policy, 1, std::chrono::seconds(365LL * 86400), rng).count() ==
             60000);
  BOOST_TEST(kube::backoff_delay(policy, 1, std::chrono::seconds(2147483647), rng).count() ==
             60000);
}

BOOST_AUTO_TEST_CASE(attempt_zero_or_below_is_treated_as_the_first) {
  std::mt19937_64 rng(3);
  for (int attempt : {0, -5}) {
    const auto d = kube::backoff_delay(policy, attempt, 0s, rng).count();
    BOOST_TEST(d >= 100);
    BOOST_TEST(d <= 200);
  }
}

BOOST_AUTO_TEST_CASE(retry_after_is_a_floor_even_above_the_cap) {
  std::mt19937_64 rng(4);
  BOOST_TEST(kube::backoff_delay(policy, 1, 3s, rng).count() == 3000);
  BOOST_TEST(kube::backoff_delay(policy, 9, 30s, rng).count() == 30000);
}

BOOST_AUTO_TEST_CASE(retry_after_below_the_jitter_does_not_shorten_it) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 100; ++i) {
    const auto d = kube::backoff_delay(policy, 6, 1s, rng).count(); // ceiling 6400
    BOOST_TEST_REQUIRE(d >= 3200);
    BOOST_TEST_REQUIRE(d <= 6400);
  }
}

BOOST_AUTO_TEST_CASE(zero_base_never_sleeps_long) {
  std::mt19937_64 rng(6);
  const kube::retry_policy none{3, 0ms, 0ms};
  for (int attempt = 1; attempt < 5; ++attempt)
    BOOST_TEST(kube::backoff_delay(none, attempt, 0s, rng).count() <= 1);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(request_resource_label)

namespace {

struct path_label {
  const char* path;
  const char* resource;
};

std::ostream& operator<<(std::ostream& os, const path_label& p) {
  return os << p.path;
}

const path_label path_labels[] = {
    {"/api/v1/nodes", "nodes"},
    {"/api/v1/nodes/gpu-node-01", "nodes"},
    {"/api/v1/nodes/gpu-node-01/status", "nodes/status"},
    {"/api/v1/pods", "pods"},
    {"/api/v1/namespaces/kube-system/pods", "pods"},
    {"/api/v1/namespaces/kube-system/pods/p-1", "pods"},
    {"/api/v1/namespaces/default/pods/p-1/eviction", "pods/eviction"},
    {"/api/v1/namespaces/default/pods/p-1/log", "pods/log"},
    {"/api/v1/namespaces", "namespaces"},
    {"/api/v1/namespaces/kube-system", "namespaces"},
    {"/api/v1/namespaces/kube-system/status", "namespaces/status"},
    {"/api/v1/namespaces/kube-system/finalize", "namespaces/finalize"},
    {"/api/v1/namespaces/x/events", "events"},
    {"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/gpu-partitioner", "leases"},
    {"/apis/policy/v1/namespaces/ns/poddisruptionbudgets", "poddisruptionbudgets"},
    {"/apis/infrastructure.silogen.ai/v1alpha1/partitioningplans", "partitioningplans"},
    {"/apis/infrastructure.silogen.ai/v1alpha1/partitioningplans/p", "partitioningplans"},
    {"/apis/infrastructure.silogen.ai/v1alpha1/partitioningplans/p/status",
     "partitioningplans/status"},
    {"/apis/example.com/v2/namespaces/team-a/widgets/w1/scale", "widgets/scale"},
    {"/api/v1/nodes?limit=500&continue=abc%2Fdef", "nodes"},
    {"/api/v1/namespaces/ns/pods?watch=1&resourceVersion=100&labelSelector=a%3Db", "pods"},
    {"/api/v1/nodes/n/status?fieldManager=gpu-partitioner", "nodes/status"},
    {"/api/v1/nodes/", "nodes"},
    {"//api//v1//nodes", "nodes"},
    {"/version", "version"},
    {"/healthz?verbose", "healthz"},
    {"/", "/"},
    {"", "/"},
};

} // namespace

BOOST_DATA_TEST_CASE(resource_label_of_a_request_path, bdata::make(path_labels), row) {
  BOOST_TEST(kube::resource_of(row.path) == row.resource);
}

BOOST_AUTO_TEST_SUITE_END()

// The leader's write gate (connection_config::may_write): asked before every request
// that is not a GET; a closed gate refuses the request without sending it.
BOOST_AUTO_TEST_SUITE(write_gate)

BOOST_AUTO_TEST_CASE(a_closed_gate_refuses_writes_unsent_and_lets_reads_through) {
  kube::connection_config c;
  c.server = "http://127.0.0.1:1"; // nothing listens: a request that is sent fails on the wire
  int asked = 0;
  bool open = false;
  c.may_write = [&] {
    ++asked;
    return open;
  };
  kube::http_client http(c, nullptr, kube::retry_policy{1, 1ms, 1ms});
  for (auto v : {kube::verb::post, kube::verb::put, kube::verb::patch, kube::verb::del}) {
    kube::http_request write;
    write.method = v;
    write.path = "/api/v1/nodes/x";
    auto refused = http.call(write);
    BOOST_TEST_REQUIRE(!refused.ok());
    BOOST_TEST(refused.error().kind == kube::error_kind::aborted, refused.error().describe());
  }
  BOOST_TEST(asked == 4);

  kube::http_request read;
  read.path = "/api/v1/nodes/x";
  auto sent = http.call(read);
  BOOST_TEST_REQUIRE(!sent.ok());
  BOOST_TEST(sent.error().kind != kube::error_kind::aborted, sent.error().describe());
  BOOST_TEST(asked == 4); // reads do not ask

  open = true;
  kube::http_request write;
  write.method = kube::verb::patch;
  write.path = "/api/v1/nodes/x";
  auto through = http.call(write);
  BOOST_TEST_REQUIRE(!through.ok());
  BOOST_TEST(through.error().kind != kube::error_kind::aborted, through.error().describe());
}

BOOST_AUTO_TEST_SUITE_END()

// Where requests go: tls-server-name becomes the URL's host (SNI and the name verified),
// the real address stays in curl's CONNECT_TO, and Host names the server as configured.
// Impersonation becomes one header per value.
BOOST_AUTO_TEST_SUITE(request_targets)

BOOST_AUTO_TEST_CASE(without_tls_server_name_or_impersonation_the_server_is_used_as_it_is) {
  kube::connection_config c;
  c.server = "https://10.0.0.1:6443";
  const auto t = kube::target_of(c);
  BOOST_TEST(t.url_base == "https://10.0.0.1:6443");
  BOOST_TEST(t.connect_to == "");
  BOOST_TEST(t.headers.empty());
}

BOOST_AUTO_TEST_CASE(tls_server_name_replaces_the_host_and_keeps_port_and_prefix) {
  kube::connection_config c;
  c.tls_server_name = "kubernetes.default.svc";
  c.server = "https://10.0.0.1:6443";
  auto t = kube::target_of(c);
  BOOST_TEST(t.url_base == "https://kubernetes.default.svc:6443");
  BOOST_TEST(t.connect_to == "kubernetes.default.svc:6443:10.0.0.1:6443");
  BOOST_TEST((t.headers == std::vector<std::string>{"Host: 10.0.0.1:6443"}));

  c.server = "https://[fd00::1]:8443/k8s/clusters/c-1";
  t = kube::target_of(c);
  BOOST_TEST(t.url_base == "https://kubernetes.default.svc:8443/k8s/clusters/c-1");
  BOOST_TEST(t.connect_to == "kubernetes.default.svc:8443:[fd00::1]:8443");
  BOOST_TEST((t.headers == std::vector<std::string>{"Host: [fd00::1]:8443"}));

  c.server = "https://[fd00::1]";
  t = kube::target_of(c);
  BOOST_TEST(t.url_base == "https://kubernetes.default.svc:443");
  BOOST_TEST(t.connect_to == "kubernetes.default.svc:443:[fd00::1]:443");

  c.server = "https://api.example.com/prefix";
  t = kube::target_of(c);
  BOOST_TEST(t.url_base == "https://kubernetes.default.svc:443/prefix");
  BOOST_TEST(t.connect_to == "kubernetes.default.svc:443:api.example.com:443");
  BOOST_TEST((t.headers == std::vector<std::string>{"Host: api.example.com"}));
}

BOOST_AUTO_TEST_CASE(impersonation_is_one_header_per_value) {
  kube::connection_config c;
  c.server = "https://k";
  c.impersonate.user = "jane";
  c.impersonate.groups = {"ops", "system:authenticated"};
  c.impersonate.uid = "42";
  c.impersonate.extra = {{"scopes", {"view", "edit"}}, {"reason/why é", {"audit"}}};
  const auto t = kube::target_of(c);
  BOOST_TEST((t.headers == std::vector<std::string>{
                               "Impersonate-User: jane",
                               "Impersonate-Group: ops",
                               "Impersonate-Group: system:authenticated",
                               "Impersonate-Uid: 42",
                               "Impersonate-Extra-scopes: view",
                               "Impersonate-Extra-scopes: edit",
                               "Impersonate-Extra-reason%2Fwhy%20%C3%A9: audit",
                           }));
}

BOOST_AUTO_TEST_CASE(header_keys_keep_token_characters_and_escape_the_rest) {
  BOOST_TEST(kube::header_key_escape("abc-XYZ.09!#$&'*+^_`|~") == "abc-XYZ.09!#$&'*+^_`|~");
  BOOST_TEST(kube::header_key_escape("a/b c:d%") == "a%2Fb%20c%3Ad%25");
  BOOST_TEST(kube::header_key_escape("") == "");
}

BOOST_AUTO_TEST_SUITE_END()

// Credentials never leave over plain http, even when a configuration did not come from a
// kubeconfig (which refuses it earlier): a listener on a real socket sees nothing at all.
BOOST_AUTO_TEST_SUITE(plain_http)

namespace {

// A TCP listener on 127.0.0.1 that records every byte sent to it until closed.
struct listener {
  int fd = -1;
  int port = 0;
  std::string received;
  std::thread thread;
  std::atomic<bool> stop{false};
  /// What every request gets back, with 200 OK.
  std::string body;

  explicit listener(std::string answer = "{}") : body(std::move(answer)) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_TEST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t n = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
    port = ntohs(a.sin_port);
    BOOST_TEST_REQUIRE(::listen(fd, 8) == 0);
    thread = std::thread([this] {
      while (!stop) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0)
          continue;
        int c = ::accept(fd, nullptr, nullptr);
        if (c < 0)
          continue;
        char buf[4096];
        for (ssize_t got; (got = ::recv(c, buf, sizeof buf, MSG_DONTWAIT)) != 0;) {
          if (got > 0)
            received.append(buf, static_cast<std::size_t>(got));
          else if (stop)
            break;
          else
            std::this_thread::sleep_for(5ms);
          if (received.find("\r\n\r\n") != std::string::npos) {
            const std::string answer =
                "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                body;
            (void)!::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
            break;
          }
        }
        ::close(c);
      }
    });
  }
  ~listener() {
    stop = true;
    thread.join();
    ::close(fd);
  }
};

// A client that tries once, with the credentials `c` names.
kube::http_client client_of(const kube::connection_config& c) {
  return kube::http_client(c, std::make_shared<kube::credentials>(c),
                           kube::retry_policy{1, 1ms, 1ms});
}

const kube::http_request list_nodes = [] {
  kube::http_request r;
  r.path = "/api/v1/nodes";
  return r;
}();

} // namespace

BOOST_AUTO_TEST_CASE(a_token_is_refused_unsent_and_a_request_without_one_goes_out) {
  listener l;
  kube::connection_config c;
  c.server = "http://127.0.0.1:" + std::to_string(l.port);
  c.origin = "test config";
  c.token = "secret-token-value";
  auto refused = client_of(c).call(list_nodes);
  BOOST_TEST_REQUIRE(!refused.ok());
  BOOST_TEST(refused.error().kind == kube::error_kind::config);
  BOOST_TEST(refused.error().message == "test config: refusing to send credentials to " + c.server +
                                            ", which is plain http://");

  c.token.clear();
  c.client_cert_pem = "CERT";
  c.client_key_pem = "KEY";
  BOOST_TEST(!client_of(c).call(list_nodes).ok());

  c.client_cert_pem.clear();
  c.client_key_pem.clear();
  auto sent = client_of(c).call(list_nodes);
  BOOST_TEST(sent.ok(), (sent.ok() ? "" : sent.error().describe()));
  BOOST_TEST(l.received.find("GET /api/v1/nodes") != std::string::npos, l.received);
  BOOST_TEST(l.received.find("secret-token-value") == std::string::npos);
  BOOST_TEST(l.received.find("Authorization") == std::string::npos);
}

// Issue 38: a server that answers with JSON that is not an object (or a list whose items
// are not a list) reached RapidJSON's member access on it: an assertion in a debug
// build, undefined behaviour in a release one. Such an answer is a Decode error.
BOOST_AUTO_TEST_CASE(an_answer_that_is_not_an_object_is_a_decode_error) {
  for (const char* body : {"[]", "5", "\"x\"", "null", "[{\"items\":[]}]"}) {
    listener l(body);
    kube::connection_config c;
    c.server = "http://127.0.0.1:" + std::to_string(l.port);
    auto http = client_of(c);
    kube::client api(http);
    for (bool listing : {false, true}) {
      const auto answer = listing ? api.list(kube::resources::nodes(), "")
                                  : api.get(kube::resources::nodes(), "", "n");
      BOOST_TEST_REQUIRE(!answer.ok(), body);
      BOOST_TEST(answer.error().kind == kube::error_kind::decode, body);
      BOOST_TEST(answer.error().message.find("is not a JSON object") != std::string::npos,
                 answer.error().message);
    }
  }
  // A list whose items are an object: read as no items.
  listener l(R"({"kind":"NodeList","metadata":{},"items":{"a":1}})");
  kube::connection_config c;
  c.server = "http://127.0.0.1:" + std::to_string(l.port);
  auto http = client_of(c);
  kube::client api(http);
  const auto listed = api.list(kube::resources::nodes(), "");
  BOOST_TEST_REQUIRE(listed.ok());
  BOOST_TEST(listed.value()["items"].IsArray());
  BOOST_TEST(listed.value()["items"].Size() == 0u);
}

BOOST_AUTO_TEST_CASE(a_token_with_a_line_break_is_refused_unsent) {
  listener l;
  kube::connection_config c;
  c.server = "https://127.0.0.1:" + std::to_string(l.port);
  c.origin = "test config";
  c.token = "abc\r\nImpersonate-User: admin";
  auto refused = client_of(c).call(list_nodes);
  BOOST_TEST_REQUIRE(!refused.ok());
  BOOST_TEST(refused.error().message ==
             "test config: the token holds control characters; refusing to send it");
  BOOST_TEST(l.received.empty(), l.received);
}

BOOST_AUTO_TEST_SUITE_END()
