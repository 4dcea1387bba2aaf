// Errors as values: the API server's Status bodies decode into a kind a caller can
// switch on, with the server's reason, message, causes and retry hint; and which
// failures a retry can fix.
#include "kube/error.hpp"
#include "kube/optimistic.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <ostream>
#include <set>
#include <string>

namespace kube = gpu_partitioner::kube;
namespace bdata = boost::unit_test::data;

using kube::error_kind;

BOOST_AUTO_TEST_SUITE(status_decoding)

BOOST_AUTO_TEST_CASE(not_found_status) {
  const auto e = kube::decode_status(
      404, R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
           R"("message":"nodes \"gpu-node-09\" not found","reason":"NotFound",)"
           R"("details":{"name":"gpu-node-09","kind":"nodes"},"code":404})");
  BOOST_TEST(e.kind == error_kind::not_found);
  BOOST_TEST(e.code == 404);
  BOOST_TEST(e.reason == "NotFound");
  BOOST_TEST(e.message == "nodes \"gpu-node-09\" not found");
  BOOST_TEST(e.causes.empty());
  BOOST_TEST(e.retry_after.count() == 0);
  BOOST_TEST(e.describe() == "NotFound (404): nodes \"gpu-node-09\" not found");
}

BOOST_AUTO_TEST_CASE(conflict_status) {
  const auto e = kube::decode_status(
      409, R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
           R"("message":"Operation cannot be fulfilled on nodes \"gpu-node-01\": the object has )"
           R"(been modified; please apply your changes to the latest version and try again",)"
           R"("reason":"Conflict","details":{"name":"gpu-node-01","kind":"nodes"},"code":409})");
  BOOST_TEST(e.kind == error_kind::conflict);
  BOOST_TEST(e.code == 409);
  BOOST_TEST(e.message.rfind("Operation cannot be fulfilled on nodes \"gpu-node-01\"", 0) == 0u);
  BOOST_TEST(!kube::is_retryable(e));
}

BOOST_AUTO_TEST_CASE(already_exists_status) {
  const auto e = kube::decode_status(
      409,
      R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"leases.coordination.)"
      R"(k8s.io \"gpu-partitioner\" already exists","reason":"AlreadyExists","code":409})");
  BOOST_TEST(e.kind == error_kind::already_exists);
  BOOST_TEST(e.describe() ==
             "AlreadyExists (409): leases.coordination.k8s.io \"gpu-partitioner\" already exists");
}

BOOST_AUTO_TEST_CASE(invalid_status_keeps_every_cause) {
  const auto e = kube::decode_status(
      422,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
      R"("message":"PartitioningPlan.infrastructure.silogen.ai \"p\" is invalid: [spec.maxUnavailable: )"
      R"(Invalid value: \"150%\": must be at most 100%, metadata.name: Required value]",)"
      R"("reason":"Invalid","details":{"name":"p","group":"infrastructure.silogen.ai",)"
      R"("kind":"PartitioningPlan","causes":[)"
      R"({"reason":"FieldValueInvalid","message":"Invalid value: \"150%\": must be at most 100%",)"
      R"("field":"spec.maxUnavailable"},)"
      R"({"reason":"FieldValueRequired","message":"Required value","field":"metadata.name"}]},)"
      R"("code":422})");
  BOOST_TEST(e.kind == error_kind::invalid);
  BOOST_TEST(e.code == 422);
  BOOST_TEST_REQUIRE(e.causes.size() == 2u);
  BOOST_TEST(e.causes[0].type == "FieldValueInvalid");
  BOOST_TEST(e.causes[0].field == "spec.maxUnavailable");
  BOOST_TEST(e.causes[0].message == "Invalid value: \"150%\": must be at most 100%");
  BOOST_TEST(e.causes[1].type == "FieldValueRequired");
  BOOST_TEST(e.causes[1].field == "metadata.name");
  BOOST_TEST(e.causes[1].message == "Required value");
}

BOOST_AUTO_TEST_CASE(too_many_requests_status_carries_retry_after) {
  const auto e = kube::decode_status(
      429,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
      R"("message":"Cannot evict pod as it would violate the pod's disruption budget.",)"
      R"("reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget",)"
      R"("message":"The disruption budget train-pdb needs 2 healthy pods and has 2 currently"}],)"
      R"("retryAfterSeconds":7},"code":429})");
  BOOST_TEST(e.kind == error_kind::too_many_requests);
  BOOST_TEST(e.retry_after.count() == 7);
  BOOST_TEST_REQUIRE(e.causes.size() == 1u);
  BOOST_TEST(e.causes[0].type == "DisruptionBudget");
  BOOST_TEST(e.causes[0].field == "");
  BOOST_TEST(kube::is_retryable(e));
}

BOOST_AUTO_TEST_CASE(non_positive_retry_after_is_ignored) {
  const auto e = kube::decode_status(
      429,
      R"({"kind":"Status","reason":"TooManyRequests","details":{"retryAfterSeconds":0},"code":429})");
  BOOST_TEST(e.retry_after.count() == 0);
  const auto n = kube::decode_status(
      429, R"({"kind":"Status","reason":"TooManyRequests","details":{"retryAfterSeconds":-3}})");
  BOOST_TEST(n.retry_after.count() == 0);
}

BOOST_AUTO_TEST_CASE(expired_status_is_gone) {
  const auto e = kube::decode_status(
      410,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
      R"json("message":"too old resource version: 1001 (2040)","reason":"Expired","code":410})json");
  BOOST_TEST(e.kind == error_kind::gone);
  BOOST_TEST(e.reason == "Expired");
  BOOST_TEST(e.describe() == "Gone (410): too old resource version: 1001 (2040)");
}

BOOST_AUTO_TEST_CASE(continue_token_expired_status_is_gone) {
  const auto e = kube::decode_status(
      410, R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":)"
           R"("The provided continue parameter is too old to display a consistent list result.",)"
           R"("reason":"Expired","code":410})");
  BOOST_TEST(e.kind == error_kind::gone);
}

BOOST_AUTO_TEST_CASE(status_code_in_the_body_wins_over_the_http_code) {
  const auto e =
      kube::decode_status(200, R"({"kind":"Status","message":"m","reason":"","code":503})");
  BOOST_TEST(e.code == 503);
  BOOST_TEST(e.kind == error_kind::service_unavailable);
}

BOOST_AUTO_TEST_CASE(unknown_reason_falls_back_to_the_code) {
  const auto e = kube::decode_status(
      403,
      R"({"kind":"Status","message":"nodes is forbidden: User \"system:serviceaccount:gp:op\" )"
      R"(cannot list resource \"nodes\"","reason":"SomethingNew","code":403})");
  BOOST_TEST(e.kind == error_kind::forbidden);
  BOOST_TEST(e.reason == "SomethingNew");
}

BOOST_AUTO_TEST_CASE(timeout_reasons_are_server_timeouts) {
  BOOST_TEST(kube::decode_status(504, R"({"kind":"Status","reason":"Timeout","code":504})").kind ==
             error_kind::server_timeout);
  BOOST_TEST(
      kube::decode_status(500, R"({"kind":"Status","reason":"ServerTimeout","code":500})").kind ==
      error_kind::server_timeout);
}

BOOST_AUTO_TEST_CASE(non_status_body_keeps_the_code_and_the_text) {
  const auto e =
      kube::decode_status(503, "upstream connect error or disconnect/reset before headers");
  BOOST_TEST(e.kind == error_kind::service_unavailable);
  BOOST_TEST(e.code == 503);
  BOOST_TEST(e.reason == "");
  BOOST_TEST(e.message == "upstream connect error or disconnect/reset before headers");
}

BOOST_AUTO_TEST_CASE(json_that_is_not_a_status_is_kept_as_text) {
  const std::string body = R"({"kind":"Node","metadata":{"name":"x"}})";
  const auto e = kube::decode_status(400, body);
  BOOST_TEST(e.kind == error_kind::bad_request);
  BOOST_TEST(e.message == body);
}

BOOST_AUTO_TEST_CASE(empty_body_says_the_http_code) {
  const auto e = kube::decode_status(502, "");
  BOOST_TEST(e.kind == error_kind::server_error);
  BOOST_TEST(e.message == "HTTP 502");
  BOOST_TEST(e.describe() == "InternalError (502): HTTP 502");
}

BOOST_AUTO_TEST_CASE(long_non_status_body_is_cut_at_512_bytes) {
  const std::string body(2000, 'x');
  const auto e = kube::decode_status(500, body);
  BOOST_TEST(e.message == std::string(512, 'x') + "...");
}

// Found by fuzz/api_status_fuzz.cpp: the recursive parser overflowed the stack on a
// body nested a million levels deep.
BOOST_AUTO_TEST_CASE(deeply_nested_body_is_kept_as_text_not_a_stack_overflow) {
  const std::string body = R"({"kind":"Status","details":)" + std::string(1 << 20, '[');
  const auto e = kube::decode_status(500, body);
  BOOST_TEST(e.kind == error_kind::server_error);
  BOOST_TEST(e.message == body.substr(0, 512) + "...");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(error_classification)

namespace {

struct code_kind {
  int code;
  error_kind kind;
};

std::ostream& operator<<(std::ostream& os, const code_kind& c) {
  return os << c.code;
}

const code_kind code_kinds[] = {
    {400, error_kind::bad_request},
    {401, error_kind::unauthorized},
    {403, error_kind::forbidden},
    {404, error_kind::not_found},
    {405, error_kind::method_not_allowed},
    {409, error_kind::conflict},
    {410, error_kind::gone},
    {422, error_kind::invalid},
    {429, error_kind::too_many_requests},
    {500, error_kind::server_error},
    {502, error_kind::server_error},
    {503, error_kind::service_unavailable},
    {504, error_kind::server_timeout},
    {599, error_kind::server_error},
    {418, error_kind::unknown_status},
    {302, error_kind::unknown_status},
    {0, error_kind::unknown_status},
};

struct retryable_case {
  error_kind kind;
  bool retryable;
};

std::ostream& operator<<(std::ostream& os, const retryable_case& c) {
  return os << kube::to_string(c.kind);
}

const retryable_case retryable_cases[] = {
    {error_kind::too_many_requests, true},
    {error_kind::server_error, true},
    {error_kind::service_unavailable, true},
    {error_kind::server_timeout, true},
    {error_kind::transport, true},
    {error_kind::timeout, true},
    {error_kind::bad_request, false},
    {error_kind::unauthorized, false},
    {error_kind::forbidden, false},
    {error_kind::not_found, false},
    {error_kind::method_not_allowed, false},
    {error_kind::already_exists, false},
    {error_kind::conflict, false},
    {error_kind::gone, false},
    {error_kind::invalid, false},
    {error_kind::unknown_status, false},
    {error_kind::config, false},
    {error_kind::tls, false},
    {error_kind::aborted, false},
    {error_kind::decode, false},
    {error_kind::too_large, false},
    {error_kind::throttled, false},
};

struct size_case {
  std::size_t bytes;
  const char* text;
};

std::ostream& operator<<(std::ostream& os, const size_case& c) {
  return os << c.bytes;
}

const size_case size_cases[] = {
    {0, "0 bytes"},
    {1, "1 byte"},
    {1000, "1000 bytes"},
    {1024, "1 KiB"},
    {256 * 1024, "256 KiB"},
    {1536 * 1024, "1536 KiB"},
    {1024 * 1024, "1 MiB"},
    {std::size_t{64} << 20, "64 MiB"},
    {(std::size_t{64} << 20) + 1, "67108865 bytes"},
};

} // namespace

BOOST_DATA_TEST_CASE(http_code_without_status_maps_to_a_kind, bdata::make(code_kinds), row) {
  BOOST_TEST(kube::kind_for_code(row.code) == row.kind);
  BOOST_TEST(kube::decode_status(row.code, "plain text").kind == row.kind);
}

BOOST_DATA_TEST_CASE(only_transient_failures_are_retryable, bdata::make(retryable_cases), row) {
  BOOST_TEST(kube::is_retryable(kube::make_error(row.kind, "x")) == row.retryable);
}

BOOST_DATA_TEST_CASE(sizes_are_written_exactly_in_the_largest_whole_unit, bdata::make(size_cases),
                     row) {
  BOOST_TEST(kube::format_size(row.bytes) == row.text);
}

BOOST_AUTO_TEST_CASE(a_too_large_error_names_what_and_the_limit) {
  const auto e =
      kube::too_large_error("response body from GET /api/v1/nodes", std::size_t{64} << 20);
  BOOST_TEST(e.kind == error_kind::too_large);
  BOOST_TEST(e.code == 0);
  BOOST_TEST(e.describe() == "TooLarge: response body from GET /api/v1/nodes exceeds the 64 MiB "
                             "limit");
  BOOST_TEST(!kube::is_retryable(e));
}

BOOST_AUTO_TEST_CASE(describe_leaves_out_a_missing_code_or_message) {
  BOOST_TEST(kube::make_error(error_kind::transport, "Couldn't connect to server").describe() ==
             "Transport: Couldn't connect to server");
  kube::failure gone;
  gone.kind = error_kind::gone;
  gone.code = 410;
  BOOST_TEST(gone.describe() == "Gone (410)");
  BOOST_TEST(kube::make_error(error_kind::aborted, "").describe() == "Aborted");
}

BOOST_AUTO_TEST_CASE(every_kind_has_a_distinct_name) {
  std::set<std::string> names;
  for (int k = static_cast<int>(error_kind::bad_request);
       k <= static_cast<int>(error_kind::throttled); ++k)
    names.insert(kube::to_string(static_cast<error_kind>(k)));
  BOOST_TEST(names.size() == static_cast<std::size_t>(error_kind::throttled) + 1);
  BOOST_TEST(names.count("Unknown") == 1u);
}

BOOST_AUTO_TEST_CASE(result_holds_a_value_or_an_error) {
  kube::result<int> good(5);
  BOOST_TEST(good.ok());
  BOOST_TEST(good.value() == 5);
  kube::result<int> bad(kube::make_error(error_kind::config, "nope"));
  BOOST_TEST(!bad.ok());
  BOOST_TEST(!static_cast<bool>(bad));
  BOOST_TEST(bad.error().message == "nope");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(optimistic)

BOOST_AUTO_TEST_CASE(a_lost_race_is_a_conflict_or_a_failed_test) {
  BOOST_TEST(kube::lost_race(kube::make_error(kube::error_kind::conflict, "409")));
  BOOST_TEST(kube::lost_race(kube::make_error(kube::error_kind::invalid, "test failed")));
  for (auto kind : {kube::error_kind::not_found, kube::error_kind::forbidden,
                    kube::error_kind::transport, kube::error_kind::already_exists})
    BOOST_TEST(!kube::lost_race(kube::make_error(kind, "")), kube::to_string(kind));
}

BOOST_AUTO_TEST_CASE(an_attempt_that_loses_a_race_is_run_again_up_to_the_limit) {
  int runs = 0;
  auto won_third = kube::retry_on_conflict(
      [&](int i) -> std::optional<std::string> {
        ++runs;
        if (i < 2)
          return std::nullopt;
        return "written on attempt " + std::to_string(i);
      },
      [] { return std::string("gave up"); });
  BOOST_TEST(won_third == "written on attempt 2");
  BOOST_TEST(runs == 3);

  runs = 0;
  auto never = kube::retry_on_conflict(
      [&](int) -> std::optional<std::string> {
        ++runs;
        return std::nullopt;
      },
      [] { return std::string("gave up"); });
  BOOST_TEST(never == "gave up");
  BOOST_TEST(runs == kube::conflict_attempts);

  runs = 0;
  auto failed_for_good = kube::retry_on_conflict(
      [&](int) -> std::optional<std::string> {
        ++runs;
        return std::string("forbidden");
      },
      [] { return std::string("gave up"); });
  BOOST_TEST(failed_for_good == "forbidden", "an outcome other than a lost race ends it");
  BOOST_TEST(runs == 1);
}

BOOST_AUTO_TEST_SUITE_END()
