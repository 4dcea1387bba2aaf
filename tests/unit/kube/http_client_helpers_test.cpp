// The pure helpers of the HTTP client: the retry back-off (half jitter, capped, never
// shorter than the server's Retry-After) and the resource label of a request path.
#include "kube/http_client.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <ostream>
#include <random>
#include <string>

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
