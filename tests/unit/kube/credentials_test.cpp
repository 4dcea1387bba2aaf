// Credentials: static tokens and certificates, a token file re-read as it rotates, and
// exec credential plugins (real shell scripts in a temp folder) run again when their
// credential expires or the server refused it. And RFC 3339 timestamps.
#include "kube/credentials.hpp"
#include "protocol/timestamp.hpp"
#include "tests/unit/kube/problem.hpp"
#include "tests/unit/kube/temp_dir.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <rapidjson/document.h>

#include <chrono>
#include <ctime>
#include <optional>
#include <ostream>
#include <string>
#include <thread>

namespace kube = gpu_partitioner::kube;
namespace bdata = boost::unit_test::data;
using gpu_partitioner::kube::testing::problem;
using gpu_partitioner::kube::testing::temp_dir;
using namespace std::chrono_literals;
using clock_type = kube::credentials::clock;

namespace {

// A credential plugin that counts its runs in `runs`, saves KUBERNETES_EXEC_INFO in
// `exec_info`, and answers according to the file `mode`: "ok" prints a token made of
// its first argument, $TOKEN_SUFFIX and the run number, expiring at the time in the
// file `expiry` (none if empty); "fail" writes to stderr and exits 3; "garbage" prints
// something that is not JSON; "cert" prints a client certificate and key.
const char* const plugin_script = R"sh(#!/bin/sh
dir=$(dirname "$0")
n=$(cat "$dir/runs" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$dir/runs"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$dir/exec_info"
mode=$(cat "$dir/mode")
case "$mode" in
  ok)
    expiry=$(cat "$dir/expiry")
    if [ -n "$expiry" ]; then
      expiry_field=",\"expirationTimestamp\":\"$expiry\""
    fi
    printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
    printf '"status":{"token":"%s%s-%s"%s}}\n' "$1" "$TOKEN_SUFFIX" "$n" "$expiry_field"
    ;;
  cert)
    printf '{"kind":"ExecCredential","status":{"clientCertificateData":"CERT-%s","clientKeyData":"KEY-%s"}}' "$n" "$n"
    ;;
  nothing)
    printf '{"kind":"ExecCredential","status":{}}'
    ;;
  nostatus)
    printf '{"kind":"ExecCredential"}'
    ;;
  badexpiry)
    printf '{"kind":"ExecCredential","status":{"token":"t","expirationTimestamp":"tomorrow"}}'
    ;;
  garbage)
    echo "Please log in at https://login.example.com"
    ;;
  flood)
    yes '{"kind":"ExecCredential","status":{"token":"t"}}' | head -c 3000000
    ;;
  hang)
    sleep 100 &
    echo $! > "$dir/child"
    sleep 100
    ;;
  *)
    echo "token endpoint said: invalid_grant" >&2
    echo "(and a second line)" >&2
    exit 3
    ;;
esac
)sh";

struct plugin_fixture {
  temp_dir dir;
  std::string command;

  plugin_fixture() {
    command = dir.write("plugin.sh", plugin_script, true);
    set_mode("ok");
    set_expiry("");
  }

  void set_mode(const std::string& mode) const { dir.write("mode", mode + "\n"); }
  void set_expiry(const std::string& expiry) const { dir.write("expiry", expiry + "\n"); }
  int runs() const {
    auto r = kube::read_file(dir.file("runs"));
    return r.ok() ? std::stoi(r.value()) : 0;
  }

  kube::exec_plugin plugin(bool cluster_info = false) const {
    kube::exec_plugin p;
    p.command = command;
    p.args = {"tok-"};
    p.env = {{"TOKEN_SUFFIX", "sfx"}};
    p.provide_cluster_info = cluster_info;
    return p;
  }

  kube::connection_config config(bool cluster_info = false) const {
    kube::connection_config c;
    c.server = "https://10.0.0.1:6443";
    c.exec = plugin(cluster_info);
    c.origin = "test";
    return c;
  }
};

kube::credential_material current(kube::credentials& creds) {
  auto r = creds.current();
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  return r.value();
}

} // namespace

BOOST_AUTO_TEST_SUITE(static_credentials)

BOOST_AUTO_TEST_CASE(static_token_is_returned_unchanged) {
  kube::connection_config c;
  c.token = "abc";
  kube::credentials creds(c);
  auto first = current(creds);
  BOOST_TEST(first.token == "abc");
  BOOST_TEST(first.generation == 1u);
  creds.invalidate(first.generation);
  auto second = current(creds);
  BOOST_TEST(second.token == "abc");
  BOOST_TEST(second.generation == 1u);
}

BOOST_AUTO_TEST_CASE(static_client_certificate_is_returned) {
  kube::connection_config c;
  c.client_cert_pem = "CERT";
  c.client_key_pem = "KEY";
  kube::credentials creds(c);
  auto m = current(creds);
  BOOST_TEST(m.client_cert_pem == "CERT");
  BOOST_TEST(m.client_key_pem == "KEY");
  BOOST_TEST(m.token == "");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(token_file)

BOOST_AUTO_TEST_CASE(token_file_is_read_and_trimmed) {
  temp_dir dir;
  kube::connection_config c;
  c.token_file = dir.write("token", "first-token\r\n");
  kube::credentials creds(c);
  BOOST_TEST(current(creds).token == "first-token");
}

BOOST_AUTO_TEST_CASE(token_file_is_reread_after_its_period_and_generation_follows_content) {
  temp_dir dir;
  kube::connection_config c;
  c.token_file = dir.write("token", "first-token\n");
  kube::credentials creds(c);
  creds.set_token_file_period(0s);
  auto first = current(creds);
  BOOST_TEST(first.token == "first-token");

  auto same = current(creds);
  BOOST_TEST(same.token == "first-token");
  BOOST_TEST(same.generation == first.generation);

  dir.write("token", "rotated-token\n");
  auto rotated = current(creds);
  BOOST_TEST(rotated.token == "rotated-token");
  BOOST_TEST(rotated.generation == first.generation + 1);

  auto again = current(creds);
  BOOST_TEST(again.generation == rotated.generation);
}

BOOST_AUTO_TEST_CASE(token_file_is_not_reread_before_its_period) {
  temp_dir dir;
  kube::connection_config c;
  c.token_file = dir.write("token", "first-token\n");
  kube::credentials creds(c);
  const auto first = current(creds);
  BOOST_TEST(first.token == "first-token");
  dir.write("token", "rotated-token\n");
  BOOST_TEST(current(creds).token == "first-token");
  creds.invalidate(first.generation);
  BOOST_TEST(current(creds).token == "rotated-token");
}

BOOST_AUTO_TEST_CASE(missing_token_file_is_an_error_naming_it) {
  temp_dir dir;
  kube::connection_config c;
  c.origin = "kubeconfig \"x\" context \"y\"";
  c.token_file = dir.file("absent");
  kube::credentials creds(c);
  auto r = creds.current();
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().message == "kubeconfig \"x\" context \"y\": tokenFile: cannot read \"" +
                                      dir.file("absent") + "\": No such file or directory");
}

BOOST_AUTO_TEST_CASE(token_file_that_could_not_be_read_is_read_again_next_time) {
  temp_dir dir;
  kube::connection_config c;
  c.token_file = dir.write("token", "first-token\n");
  kube::credentials creds(c);
  creds.set_token_file_period(0s);
  BOOST_TEST(current(creds).token == "first-token");
  // The kubelet swaps the projected token: for a moment the file is not there.
  dir.remove("token");
  BOOST_TEST(!creds.current().ok());
  dir.write("token", "rotated-token\n");
  BOOST_TEST(current(creds).token == "rotated-token");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(exec_credential_plugin)

BOOST_AUTO_TEST_CASE(plugin_token_uses_args_and_env) {
  plugin_fixture f;
  clock_type::time_point expires{};
  auto r = kube::run_exec_plugin(f.plugin(), "https://10.0.0.1:6443", expires);
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(r->token == "tok-sfx-1");
  BOOST_TEST((expires == clock_type::time_point::max()));
  BOOST_TEST(f.runs() == 1);
}

BOOST_AUTO_TEST_CASE(plugin_expiration_timestamp_is_returned) {
  plugin_fixture f;
  f.set_expiry("2031-02-03T04:05:06Z");
  clock_type::time_point expires{};
  auto r = kube::run_exec_plugin(f.plugin(), "https://k", expires);
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(clock_type::to_time_t(expires) == 1927857906);
}

BOOST_AUTO_TEST_CASE(plugin_gets_exec_info_without_cluster_unless_asked) {
  plugin_fixture f;
  clock_type::time_point expires{};
  BOOST_TEST_REQUIRE(kube::run_exec_plugin(f.plugin(), "https://10.0.0.1:6443", expires).ok());
  rapidjson::Document info;
  const auto text = kube::read_file(f.dir.file("exec_info")).value();
  info.Parse(text.c_str());
  BOOST_TEST_REQUIRE(!info.HasParseError(), text);
  BOOST_TEST(std::string(info["apiVersion"].GetString()) == "client.authentication.k8s.io/v1");
  BOOST_TEST(std::string(info["kind"].GetString()) == "ExecCredential");
  BOOST_TEST(info["spec"]["interactive"].GetBool() == false);
  BOOST_TEST(!info["spec"].HasMember("cluster"));
}

BOOST_AUTO_TEST_CASE(plugin_gets_the_cluster_server_when_it_asks_for_cluster_info) {
  plugin_fixture f;
  clock_type::time_point expires{};
  auto p = f.plugin(true);
  p.api_version = "client.authentication.k8s.io/v1beta1";
  BOOST_TEST_REQUIRE(kube::run_exec_plugin(p, "https://10.0.0.1:6443", expires).ok());
  const auto text = kube::read_file(f.dir.file("exec_info")).value();
  BOOST_TEST(text ==
             R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",)"
             R"("spec":{"interactive":false,"cluster":{"server":"https://10.0.0.1:6443"}}})");
}

BOOST_AUTO_TEST_CASE(plugin_certificate_and_key_are_returned) {
  plugin_fixture f;
  f.set_mode("cert");
  clock_type::time_point expires{};
  auto r = kube::run_exec_plugin(f.plugin(), "https://k", expires);
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(r->client_cert_pem == "CERT-1");
  BOOST_TEST(r->client_key_pem == "KEY-1");
  BOOST_TEST(r->token == "");
}

namespace {

struct plugin_failure {
  const char* mode;
  const char* message; // after "exec plugin <path>"
};

std::ostream& operator<<(std::ostream& os, const plugin_failure& p) {
  return os << p.mode;
}

const plugin_failure plugin_failures[] = {
    {"fail", " exited with status 3: token endpoint said: invalid_grant\n(and a second line)"},
    {"garbage", ": output is not a JSON ExecCredential"},
    {"nostatus", ": ExecCredential has no status"},
    {"nothing", ": ExecCredential status has neither a token nor a client certificate and key"},
    {"badexpiry", ": expirationTimestamp \"tomorrow\" is not an RFC 3339 time"},
};

} // namespace

BOOST_DATA_TEST_CASE(plugin_failure_is_a_config_error_saying_why, bdata::make(plugin_failures),
                     row) {
  plugin_fixture f;
  f.set_mode(row.mode);
  clock_type::time_point expires{};
  auto r = kube::run_exec_plugin(f.plugin(), "https://k", expires);
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST((r.error().kind == kube::error_kind::config));
  BOOST_TEST(r.error().message == "exec plugin " + f.command + row.message);
}

BOOST_AUTO_TEST_CASE(plugin_writing_without_end_is_killed_past_a_mebibyte) {
  plugin_fixture f;
  f.set_mode("flood");
  auto expires = clock_type::time_point::max();
  auto r = kube::run_exec_plugin(f.plugin(), "https://k", expires);
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().message == "exec plugin " + f.command + ": " + f.command +
                                      " wrote more than 1024 KiB on stdout, and was killed");
}

// The plugin and what it started are killed at the deadline: a shell script's child
// holding the output pipe must not outlive it, nor hold the operator.
BOOST_AUTO_TEST_CASE(plugin_past_its_deadline_is_killed_with_its_children) {
  plugin_fixture f;
  f.set_mode("hang");
  auto expires = clock_type::time_point::max();
  const auto start = std::chrono::steady_clock::now();
  auto r = kube::run_exec_plugin(f.plugin(), "https://k", expires, 500ms);
  BOOST_TEST((std::chrono::steady_clock::now() - start < 20s)); // not the script's 100 s
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().message == "exec plugin " + f.command + ": " + f.command +
                                      " did not finish within 500 ms, and was killed");
  auto child = kube::read_file(f.dir.file("child"));
  BOOST_TEST_REQUIRE(child.ok(), problem(child));
  const std::string stat = "/proc/" + std::to_string(std::stoi(child.value())) + "/stat";
  // Gone, or a zombie its new parent has yet to reap: either way no longer running.
  auto running = [&] {
    auto s = kube::read_file(stat);
    if (!s.ok())
      return false;
    const auto close = s.value().rfind(')');
    return close == std::string::npos || s.value().compare(close + 2, 1, "Z") != 0;
  };
  for (int i = 0; i < 50 && running(); ++i)
    std::this_thread::sleep_for(100ms);
  BOOST_TEST(!running());
}

BOOST_AUTO_TEST_CASE(plugin_that_cannot_be_run_is_an_error_naming_it) {
  temp_dir dir;
  kube::exec_plugin p;
  p.command = dir.file("no-such-plugin");
  clock_type::time_point expires{};
  auto r = kube::run_exec_plugin(p, "https://k", expires);
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().message.rfind("exec plugin " + p.command, 0) == 0u);
}

BOOST_AUTO_TEST_CASE(credentials_run_the_plugin_once_while_its_token_is_valid) {
  plugin_fixture f;
  f.set_expiry(gpu_partitioner::protocol::format_time(clock_type::now() + 1h));
  kube::credentials creds(f.config());
  auto first = current(creds);
  auto second = current(creds);
  BOOST_TEST(first.token == "tok-sfx-1");
  BOOST_TEST(second.token == "tok-sfx-1");
  BOOST_TEST(second.generation == first.generation);
  BOOST_TEST(f.runs() == 1);
}

BOOST_AUTO_TEST_CASE(credentials_without_expiry_run_the_plugin_once) {
  plugin_fixture f;
  kube::credentials creds(f.config());
  current(creds);
  current(creds);
  current(creds);
  BOOST_TEST(f.runs() == 1);
}

BOOST_AUTO_TEST_CASE(expired_credential_reruns_the_plugin_on_next_current) {
  plugin_fixture f;
  f.set_expiry("2001-01-01T00:00:00Z");
  kube::credentials creds(f.config());
  creds.set_min_exec_interval(0ms);
  auto first = current(creds);
  BOOST_TEST(first.token == "tok-sfx-1");
  auto second = current(creds);
  BOOST_TEST(second.token == "tok-sfx-2");
  BOOST_TEST(second.generation == first.generation + 1);
  BOOST_TEST(f.runs() == 2);
}

BOOST_AUTO_TEST_CASE(credential_about_to_expire_is_refreshed_ahead_of_time) {
  plugin_fixture f;
  f.set_expiry(gpu_partitioner::protocol::format_time(clock_type::now() + 5s));
  kube::credentials creds(f.config());
  creds.set_min_exec_interval(0ms);
  current(creds);
  BOOST_TEST(current(creds).token == "tok-sfx-2");
}

BOOST_AUTO_TEST_CASE(invalidate_reruns_the_plugin) {
  plugin_fixture f;
  kube::credentials creds(f.config());
  creds.set_min_exec_interval(0ms);
  auto first = current(creds);
  creds.invalidate(first.generation);
  auto second = current(creds);
  BOOST_TEST(second.token == "tok-sfx-2");
  BOOST_TEST(second.generation > first.generation);
  BOOST_TEST(f.runs() == 2);
}

// Issue 38: every connection sharing the credentials reports the same 401; only the first
// refusal of a generation runs the plugin again.
BOOST_AUTO_TEST_CASE(a_refusal_of_material_already_replaced_runs_nothing) {
  plugin_fixture f;
  kube::credentials creds(f.config());
  creds.set_min_exec_interval(0ms);
  auto first = current(creds);
  creds.invalidate(first.generation);
  BOOST_TEST(current(creds).token == "tok-sfx-2");
  for (int connection = 0; connection < 39; ++connection)
    creds.invalidate(first.generation);
  BOOST_TEST(current(creds).token == "tok-sfx-2");
  BOOST_TEST(f.runs() == 2);
}

// Issue 38: a plugin that hands out a credential already expired ran before every request.
// It runs at most once per interval; meanwhile its last credential (or error) serves.
BOOST_AUTO_TEST_CASE(a_plugin_handing_out_expired_credentials_runs_once_per_interval) {
  plugin_fixture f;
  f.set_expiry("2001-01-01T00:00:00Z");
  kube::credentials creds(f.config());
  creds.set_min_exec_interval(300ms);
  for (int request = 0; request < 20; ++request)
    BOOST_TEST(current(creds).token == "tok-sfx-1");
  BOOST_TEST(f.runs() == 1);
  std::this_thread::sleep_for(350ms);
  BOOST_TEST(current(creds).token == "tok-sfx-2");
  BOOST_TEST(f.runs() == 2);
  // A failing plugin's error serves the same way.
  f.set_mode("fail");
  std::this_thread::sleep_for(350ms);
  BOOST_TEST(!creds.current().ok());
  BOOST_TEST(!creds.current().ok());
  BOOST_TEST(f.runs() == 3);
}

// Shared through the configuration: every client of it, and of its copies, the same.
BOOST_AUTO_TEST_CASE(shared_credentials_are_one_for_every_copy_of_the_configuration) {
  plugin_fixture f;
  auto c = f.config();
  BOOST_TEST(kube::credentials_for(c) != kube::credentials_for(c), "not shared: one each");
  kube::share_credentials(c);
  const auto copy = c;
  BOOST_TEST(kube::credentials_for(copy) == kube::credentials_for(c));
  current(*kube::credentials_for(c));
  current(*kube::credentials_for(copy));
  BOOST_TEST(f.runs() == 1);
}

BOOST_AUTO_TEST_CASE(plugin_certificate_replaces_the_configured_one) {
  plugin_fixture f;
  f.set_mode("cert");
  auto c = f.config();
  c.client_cert_pem = "STATIC-CERT";
  c.client_key_pem = "STATIC-KEY";
  kube::credentials creds(c);
  auto m = current(creds);
  BOOST_TEST(m.client_cert_pem == "CERT-1");
  BOOST_TEST(m.client_key_pem == "KEY-1");
}

BOOST_AUTO_TEST_CASE(failed_plugin_is_reported_by_current) {
  plugin_fixture f;
  f.set_mode("fail");
  kube::credentials creds(f.config());
  auto r = creds.current();
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().message.find("exited with status 3") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(plugin_that_failed_to_refresh_an_expired_token_is_run_again_next_time) {
  plugin_fixture f;
  f.set_expiry("2001-01-01T00:00:00Z");
  kube::credentials creds(f.config());
  creds.set_min_exec_interval(0ms);
  BOOST_TEST(current(creds).token == "tok-sfx-1");
  f.set_mode("fail");
  BOOST_TEST(!creds.current().ok());
  BOOST_TEST(f.runs() == 2);
  // The identity provider is back: the next request must get a fresh token, not the
  // expired one.
  f.set_mode("ok");
  auto r = creds.current();
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(r->token == "tok-sfx-3");
  BOOST_TEST(f.runs() == 3);
}

BOOST_AUTO_TEST_SUITE_END()
