// Kubeconfig and in-cluster configuration: every auth form a kubeconfig can use is read
// into a connection_config, and every broken file is refused with a message that names
// the file, the entry and the problem.
#include "kube/config.hpp"
#include "tests/unit/kube/problem.hpp"
#include "tests/unit/kube/temp_dir.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace kube = gpu_partitioner::kube;
namespace bdata = boost::unit_test::data;
using gpu_partitioner::kube::testing::problem;
using gpu_partitioner::kube::testing::temp_dir;

namespace {

const std::string folder = "tests/unit/kube/testdata/kubeconfigs";
const std::string auth_forms = folder + "/auth_forms.yaml";

kube::connection_config load(const std::string& context) {
  auto r = kube::load_kubeconfig(auth_forms, context);
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  return r.value();
}

std::string contents(const std::string& path) {
  auto r = kube::read_file(path);
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  return r.value();
}

} // namespace

BOOST_AUTO_TEST_SUITE(kubeconfig_auth_forms)

BOOST_AUTO_TEST_CASE(current_context_with_ca_data_and_token) {
  auto cfg = load("");
  BOOST_TEST(cfg.server == "https://10.0.0.1:6443");
  BOOST_TEST(cfg.tls_server_name == "kubernetes");
  BOOST_TEST(cfg.ca_pem ==
             "-----BEGIN CERTIFICATE-----\nMIIBinline-ca\n-----END CERTIFICATE-----\n");
  BOOST_TEST(!cfg.insecure_skip_tls_verify);
  BOOST_TEST(cfg.token == "abc.def-ghi");
  BOOST_TEST(cfg.token_file == "");
  BOOST_TEST(cfg.client_cert_pem == "");
  BOOST_TEST(!cfg.exec.has_value());
  BOOST_TEST(cfg.default_namespace == "gpu-system");
  BOOST_TEST(cfg.origin == "kubeconfig \"" + auth_forms + "\" context \"ca-data-token\"");
}

BOOST_AUTO_TEST_CASE(ca_file_and_client_cert_files_are_read_relative_to_the_kubeconfig) {
  auto cfg = load("ca-file-cert-files");
  BOOST_TEST(cfg.server == "https://gpu-cluster.example.com");
  BOOST_TEST(cfg.ca_pem == contents(folder + "/ca.crt"));
  BOOST_TEST(cfg.ca_pem.find("MIIBcluster-ca-from-file") != std::string::npos);
  BOOST_TEST(cfg.client_cert_pem == contents(folder + "/certs/client.crt"));
  BOOST_TEST(cfg.client_key_pem == contents(folder + "/certs/client.key"));
  BOOST_TEST(cfg.client_key_pem.find("MHcclient-key-from-file") != std::string::npos);
  BOOST_TEST(cfg.token == "");
  BOOST_TEST(cfg.default_namespace == "default");
}

BOOST_AUTO_TEST_CASE(insecure_flag_and_inline_client_cert_data) {
  auto cfg = load("insecure-cert-data");
  BOOST_TEST(cfg.server == "https://127.0.0.1:8443");
  BOOST_TEST(cfg.insecure_skip_tls_verify);
  BOOST_TEST(cfg.ca_pem == "");
  BOOST_TEST(cfg.client_cert_pem ==
             "-----BEGIN CERTIFICATE-----\nMIIBinline-client-cert\n-----END CERTIFICATE-----\n");
  BOOST_TEST(
      cfg.client_key_pem ==
      "-----BEGIN EC PRIVATE KEY-----\nMHcinline-client-key\n-----END EC PRIVATE KEY-----\n");
}

BOOST_AUTO_TEST_CASE(insecure_flag_false_keeps_verification_and_token_file_is_relative) {
  auto cfg = load("secure-token-file");
  BOOST_TEST(!cfg.insecure_skip_tls_verify);
  BOOST_TEST(cfg.token_file == folder + "/token");
  BOOST_TEST(cfg.token == "");
  BOOST_TEST(contents(cfg.token_file) == "eyJhbGciOiJSUzI1NiJ9.token-from-file.sig\n");
}

BOOST_AUTO_TEST_CASE(exec_plugin_with_args_env_api_version_and_cluster_info) {
  auto cfg = load("exec");
  BOOST_TEST_REQUIRE(cfg.exec.has_value());
  const auto& e = *cfg.exec;
  BOOST_TEST(e.command == folder + "/bin/credential-plugin");
  BOOST_TEST(e.args == (std::vector<std::string>{"--cluster", "prod east"}),
             boost::test_tools::per_element());
  BOOST_TEST_REQUIRE(e.env.size() == 2u);
  BOOST_TEST(e.env[0].first == "PLUGIN_MODE");
  BOOST_TEST(e.env[0].second == "1");
  BOOST_TEST(e.env[1].first == "PLUGIN_REGION");
  BOOST_TEST(e.env[1].second == "eu-west");
  BOOST_TEST(e.api_version == "client.authentication.k8s.io/v1beta1");
  BOOST_TEST(e.provide_cluster_info);
  BOOST_TEST(cfg.token == "");
}

BOOST_AUTO_TEST_CASE(exec_command_without_a_slash_is_left_for_path_lookup) {
  auto cfg = load("exec-on-path");
  BOOST_TEST_REQUIRE(cfg.exec.has_value());
  BOOST_TEST(cfg.exec->command == "kubelogin");
  BOOST_TEST(cfg.exec->args.empty());
  BOOST_TEST(cfg.exec->api_version == "client.authentication.k8s.io/v1");
  BOOST_TEST(!cfg.exec->provide_cluster_info);
}

BOOST_AUTO_TEST_CASE(impersonation_and_proxy_are_read) {
  const std::string text = R"(current-context: c
clusters:
- name: k
  cluster: {server: 'https://k:6443', proxy-url: 'socks5://proxy.internal:1080'}
users:
- name: u
  user:
    token: t
    as: jane
    as-uid: '1234'
    as-groups: [ops, 'system:authenticated']
    as-user-extra: {scopes: [view, edit], 'reason/why': [audit]}
contexts:
- {name: c, context: {cluster: k, user: u}}
)";
  auto r = kube::parse_kubeconfig(text, "/x/config");
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  const auto& who = r->impersonate;
  BOOST_TEST(r->proxy_url == "socks5://proxy.internal:1080");
  BOOST_TEST(who.user == "jane");
  BOOST_TEST(who.uid == "1234");
  BOOST_TEST((who.groups == std::vector<std::string>{"ops", "system:authenticated"}));
  BOOST_TEST_REQUIRE(who.extra.size() == 2u);
  BOOST_TEST(who.extra[0].first == "scopes");
  BOOST_TEST((who.extra[0].second == std::vector<std::string>{"view", "edit"}));
  BOOST_TEST(who.extra[1].first == "reason/why");
  BOOST_TEST((who.extra[1].second == std::vector<std::string>{"audit"}));
}

BOOST_AUTO_TEST_CASE(plain_http_without_credentials_is_allowed) {
  auto r = kube::parse_kubeconfig(R"(current-context: c
clusters:
- {name: k, cluster: {server: 'http://127.0.0.1:8001'}}
users:
- {name: u, user: {as: jane}}
contexts:
- {name: c, context: {cluster: k, user: u}}
)",
                                  "/x/config");
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(!kube::has_credentials(r.value()));
  BOOST_TEST(kube::is_plain_http(r->server));
}

BOOST_AUTO_TEST_CASE(context_without_a_user_has_no_credentials) {
  auto cfg = load("anonymous");
  BOOST_TEST(cfg.server == "https://gpu-cluster.example.com");
  BOOST_TEST(cfg.token == "");
  BOOST_TEST(cfg.token_file == "");
  BOOST_TEST(cfg.client_cert_pem == "");
  BOOST_TEST(!cfg.exec.has_value());
}

BOOST_AUTO_TEST_CASE(absolute_paths_are_used_as_they_are) {
  temp_dir dir;
  const auto ca = dir.write("ca.pem", "CA-ABSOLUTE");
  const auto token = dir.write("tok", "t");
  const auto text = "current-context: c\n"
                    "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                    "clusters: [{name: k, cluster: {server: 'https://k', certificate-authority: '" +
                    ca + "'}}]\n" + "users: [{name: u, user: {tokenFile: '" + token + "'}}]\n";
  auto r = kube::parse_kubeconfig(text, "/somewhere/else/config");
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(r->ca_pem == "CA-ABSOLUTE");
  BOOST_TEST(r->token_file == token);
}

BOOST_AUTO_TEST_CASE(missing_kubeconfig_file_names_the_file) {
  auto r = kube::load_kubeconfig("tests/unit/kube/testdata/no-such-kubeconfig");
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST((r.error().kind == kube::error_kind::config));
  BOOST_TEST(r.error().message == "kubeconfig: cannot read "
                                  "\"tests/unit/kube/testdata/no-such-kubeconfig\": No such file "
                                  "or directory");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(kubeconfig_refused)

namespace {

struct broken_kubeconfig {
  const char* name;
  std::string text;
  std::string context;
  std::string message;
};

std::ostream& operator<<(std::ostream& os, const broken_kubeconfig& b) {
  return os << b.name;
}

// Everything a broken row does not break.
std::string config(const std::string& clusters, const std::string& users,
                   const std::string& contexts = "- {name: c, context: {cluster: k, user: u}}\n",
                   const std::string& current = "current-context: c\n") {
  return "apiVersion: v1\nkind: Config\n" + current + "clusters:\n" + clusters + "users:\n" +
         users + "contexts:\n" + contexts;
}

const std::string good_cluster = "- {name: k, cluster: {server: 'https://k:6443'}}\n";
const std::string good_user = "- {name: u, user: {token: t}}\n";
const std::string where = "kubeconfig \"/nonexistent/kube/config\": ";

std::string cluster(const std::string& fields) {
  return "- {name: k, cluster: {" + fields + "}}\n";
}
std::string user(const std::string& fields) {
  return "- {name: u, user: {" + fields + "}}\n";
}

const broken_kubeconfig broken_kubeconfigs[] = {
    {"no_current_context",
     config(good_cluster, good_user, "- {name: c, context: {cluster: k}}\n", ""), "",
     where + "no current-context is set and no context was given"},
    {"current_context_not_listed",
     config(good_cluster, good_user, "- {name: other, context: {}}\n"), "",
     where + "context \"c\" not found"},
    {"requested_context_not_listed", config(good_cluster, good_user), "prod",
     where + "context \"prod\" not found"},
    {"context_without_cluster",
     config(good_cluster, good_user, "- {name: c, context: {user: u}}\n"), "",
     where + "context \"c\": cluster is missing"},
    {"unknown_cluster", config(good_cluster, good_user, "- {name: c, context: {cluster: x}}\n"), "",
     where + "cluster \"x\" not found"},
    {"unknown_user",
     config(good_cluster, good_user, "- {name: c, context: {cluster: k, user: x}}\n"), "",
     where + "user \"x\" not found"},
    {"server_missing", config(cluster("certificate-authority-data: QUJD"), good_user), "",
     where + "cluster \"k\": server is missing"},
    {"server_not_a_url", config(cluster("server: '10.0.0.1:6443'"), good_user), "",
     where + "cluster \"k\": server \"10.0.0.1:6443\" is not an http:// or https:// URL"},
    // Found by the kubeconfig fuzzer: trailing slashes stripped, "https://" became "https:".
    {"server_without_a_host", config(cluster("server: 'https:///'"), good_user), "",
     where + "cluster \"k\": server \"https:///\" names no host"},
    // Issue 38: userinfo would be sent as Basic auth (over http:// too) and logged; a
    // CR/LF would end the Host header's line (tls-server-name makes one of the authority).
    {"server_with_a_password",
     config(cluster("server: 'https://admin:hunter2@k:6443/prefix'"), good_user), "",
     where + "cluster \"k\": server \"https://***@k:6443/prefix\" holds a user name or "
             "password; give credentials in the user entry"},
    {"server_with_a_line_break",
     config(cluster("server: \"https://k:6443\\r\\nX-Injected: 1\", tls-server-name: k"),
            good_user),
     "", where + "cluster \"k\": server holds a space, control or non-ASCII character (byte 14)"},
    {"server_with_a_query", config(cluster("server: 'https://k:6443/?a=b'"), good_user), "",
     where + "cluster \"k\": server \"https://k:6443/?a=b\" has a query or fragment"},
    {"server_with_a_bad_port", config(cluster("server: 'https://k:99999'"), good_user), "",
     where + "cluster \"k\": server \"https://k:99999\" has a port that is not a number from 1 "
             "to 65535"},
    {"server_with_an_unbracketed_v6_host", config(cluster("server: 'https://fd00::1'"), good_user),
     "",
     where + "cluster \"k\": server \"https://fd00::1\" has a host that is neither a name nor "
             "an address"},
    {"proxy_with_a_password_not_echoed",
     config(cluster("server: 'https://k', proxy-url: 'ftp://u:secret@p:21'"), good_user), "",
     where + "cluster \"k\": proxy-url \"ftp://***@p:21\" is not an http://, https:// or "
             "socks5:// URL with a host"},
    {"server_not_a_string", config(cluster("server: {host: x}"), good_user), "",
     where + "cluster \"k\": server: expected a string"},
    {"ca_data_not_base64",
     config(cluster("server: 'https://k', certificate-authority-data: 'not*base64'"), good_user),
     "", where + "cluster \"k\": certificate-authority-data: not valid base64"},
    {"client_cert_data_not_base64",
     config(good_cluster, user("client-certificate-data: 'QUJD!', client-key-data: QUJD")), "",
     where + "user \"u\": client-certificate-data: not valid base64"},
    {"client_key_data_not_base64",
     config(good_cluster, user("client-certificate-data: QUJD, client-key-data: 'Q'")), "",
     where + "user \"u\": client-key-data: not valid base64"},
    {"cert_without_key", config(good_cluster, user("client-certificate-data: QUJD")), "",
     where + "user \"u\": client-certificate is set without client-key"},
    {"key_without_cert", config(good_cluster, user("client-key-data: QUJD")), "",
     where + "user \"u\": client-key is set without client-certificate"},
    {"unreadable_ca_file",
     config(cluster("server: 'https://k', certificate-authority: ca.crt"), good_user), "",
     where + "cluster \"k\": certificate-authority: cannot read \"/nonexistent/kube/ca.crt\": "
             "No such "
             "file or directory"},
    {"unreadable_client_key_file",
     config(good_cluster, user("client-certificate-data: QUJD, client-key: /nonexistent/key.pem")),
     "",
     where + "user \"u\": client-key: cannot read \"/nonexistent/key.pem\": No such file or "
             "directory"},
    {"bad_yaml",
     "apiVersion: v1\ncurrent-context: c\nclusters:\n- name: k\n  cluster: {server: [\n", "",
     where + "not valid YAML (line 6): end of sequence flow not found"},
    {"not_a_map", "- clusters\n- users\n", "",
     where + "not a kubeconfig (expected a map with clusters, users and contexts)"},
    {"auth_provider",
     config(good_cluster,
            user("auth-provider: {name: oidc, config: {idp-issuer-url: 'https://x'}}")),
     "", where + "user \"u\": auth-provider is not supported; use an exec plugin"},
    {"exec_without_command",
     config(good_cluster, user("exec: {apiVersion: client.authentication.k8s.io/v1, args: [x]}")),
     "", where + "user \"u\": exec: command is missing"},
    {"exec_unsupported_api_version",
     config(good_cluster,
            user("exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}")),
     "",
     where + "user \"u\": exec: apiVersion \"client.authentication.k8s.io/v1alpha1\" is not "
             "supported (use client.authentication.k8s.io/v1)"},
    {"exec_not_a_map", config(good_cluster, user("exec: kubelogin")), "",
     where + "user \"u\": exec: expected a map"},
    {"exec_args_not_a_list", config(good_cluster, user("exec: {command: x, args: '--a --b'}")), "",
     where + "user \"u\": exec: args: expected a list of strings"},
    {"exec_env_entry_without_name",
     config(good_cluster, user("exec: {command: x, env: [{value: v}]}")), "",
     where + "user \"u\": exec: env: every entry needs a name"},
    {"insecure_flag_not_a_boolean",
     config(cluster("server: 'https://k', insecure-skip-tls-verify: 'yes please'"), good_user), "",
     where + "cluster \"k\": insecure-skip-tls-verify: expected true or false, got \"yes please\""},
    {"token_not_a_string", config(good_cluster, user("token: [a, b]")), "",
     where + "user \"u\": token: expected a string"},
    // As client-go: a CA beside the flag is a contradiction, not a choice to guess.
    {"insecure_flag_beside_a_ca",
     config(cluster("server: 'https://k', insecure-skip-tls-verify: true, "
                    "certificate-authority-data: QUJD"),
            good_user),
     "",
     where + "cluster \"k\": insecure-skip-tls-verify is true and a certificate-authority is "
             "given; set only one (the CA verifies the server, the flag turns verification off)"},
    {"insecure_flag_beside_a_ca_file",
     config(cluster("server: 'https://k', insecure-skip-tls-verify: true, "
                    "certificate-authority: /dev/null"),
            good_user),
     "",
     where + "cluster \"k\": insecure-skip-tls-verify is true and a certificate-authority is "
             "given; set only one (the CA verifies the server, the flag turns verification off)"},
    // An empty CA would mean the system's roots: not what a file named as the CA says.
    {"ca_file_that_is_empty",
     config(cluster("server: 'https://k', certificate-authority: /dev/null"), good_user), "",
     where + "cluster \"k\": certificate-authority: \"/dev/null\" is empty"},
    // Credentials never travel in the clear, whatever their form.
    {"token_over_plain_http", config(cluster("server: 'http://k:8080'"), good_user), "",
     where + "cluster \"k\": server \"http://k:8080\" is plain http://, and user \"u\" would "
             "send its token in the clear; use https://"},
    {"token_file_over_plain_http", config(cluster("server: 'http://k'"), user("tokenFile: t")), "",
     where + "cluster \"k\": server \"http://k\" is plain http://, and user \"u\" would send "
             "its tokenFile in the clear; use https://"},
    {"client_certificate_over_plain_http",
     config(cluster("server: 'http://k'"),
            user("client-certificate-data: QUJD, client-key-data: QUJD")),
     "",
     where + "cluster \"k\": server \"http://k\" is plain http://, and user \"u\" would send "
             "its client certificate in the clear; use https://"},
    {"exec_plugin_over_plain_http",
     config(cluster("server: 'http://k'"), user("exec: {command: get-token}")), "",
     where + "cluster \"k\": server \"http://k\" is plain http://, and user \"u\" would send "
             "its exec plugin's credential in the clear; use https://"},
    {"basic_auth", config(good_cluster, user("username: admin, password: secret")), "",
     where + "user \"u\": username and password (basic authentication) are not supported; use "
             "a token, a client certificate or an exec plugin"},
    {"impersonated_groups_without_a_user", config(good_cluster, user("token: t, as-groups: [x]")),
     "", where + "user \"u\": as-groups is set without as: impersonation needs a user name"},
    {"impersonated_uid_without_a_user", config(good_cluster, user("token: t, as-uid: '7'")), "",
     where + "user \"u\": as-uid is set without as: impersonation needs a user name"},
    {"impersonated_groups_not_a_list", config(good_cluster, user("token: t, as: j, as-groups: x")),
     "", where + "user \"u\": as-groups: expected a list of strings"},
    {"impersonated_extra_not_a_map",
     config(good_cluster, user("token: t, as: j, as-user-extra: [a]")), "",
     where + "user \"u\": as-user-extra: expected a map of lists of strings"},
    // Each value becomes a header line: a line break would add a header of its own.
    {"impersonated_user_with_a_line_break",
     config(good_cluster, user("token: t, as: \"jane\\r\\nImpersonate-Group: system:masters\"")),
     "",
     where + "user \"u\": as, as-uid, as-groups and as-user-extra may not hold control "
             "characters"},
    {"proxy_url_not_a_proxy",
     config(cluster("server: 'https://k', proxy-url: 'ftp://p:21'"), good_user), "",
     where + "cluster \"k\": proxy-url \"ftp://p:21\" is not an http://, https:// or socks5:// "
             "URL with a host"},
    {"interactive_exec_plugin",
     config(good_cluster, user("exec: {command: x, interactiveMode: Always}")), "",
     where + "user \"u\": exec: interactiveMode Always needs a terminal, and the operator has "
             "none; use Never or IfAvailable"},
    // A folder opens as a stream and reads as nothing: it must not become an empty CA,
    // which would mean "trust the system's roots".
    {"ca_file_is_a_folder",
     config(cluster("server: 'https://k', certificate-authority: '/'"), good_user), "",
     where + "cluster \"k\": certificate-authority: cannot read \"/\": Is a directory"},
};

} // namespace

BOOST_DATA_TEST_CASE(broken_kubeconfig_is_refused_with_its_exact_problem,
                     bdata::make(broken_kubeconfigs), row) {
  auto r = kube::parse_kubeconfig(row.text, "/nonexistent/kube/config", row.context);
  BOOST_TEST_REQUIRE(!r.ok(), "accepted:\n" << row.text);
  BOOST_TEST((r.error().kind == kube::error_kind::config));
  BOOST_TEST(r.error().message == row.message);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(base64)

namespace {

struct base64_case {
  const char* text;
  std::optional<std::string> decoded;
};

std::ostream& operator<<(std::ostream& os, const base64_case& c) {
  return os << "\"" << c.text << "\"";
}

const base64_case base64_cases[] = {
    {"", std::string()},
    {"YQ==", std::string("a")},
    {"YQ", std::string("a")},
    {"YWI=", std::string("ab")},
    {"YWJj", std::string("abc")},
    {"YWJjZA==", std::string("abcd")},
    {"YW Jj\nZA\r\n==\t", std::string("abcd")},
    {"//79", std::string("\xff\xfe\xfd")},
    {"+/+/", std::string("\xfb\xff\xbf")},
    {"AA==", std::string(1, '\0')},
    {"Y", std::nullopt},
    {"YWJjZ", std::nullopt},
    {"YQ=x", std::nullopt},
    {"YQ==YQ==", std::nullopt},
    {"YW*j", std::nullopt},
    {"-_-_", std::nullopt},
};

} // namespace

BOOST_DATA_TEST_CASE(decodes_standard_base64_or_refuses_it, bdata::make(base64_cases), row) {
  auto d = kube::decode_base64(row.text);
  BOOST_TEST(d.has_value() == row.decoded.has_value());
  if (d && row.decoded)
    BOOST_TEST(*d == *row.decoded);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(in_cluster)

namespace {

using env_map = std::map<std::string, std::string>;

std::function<const char*(const char*)> fake_getenv(const env_map& env) {
  return [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
}

// A service-account folder as the kubelet mounts it.
void mount_account(const temp_dir& dir) {
  dir.write("token", "eyJhbGciOiJSUzI1NiJ9.in-cluster.sig");
  dir.write("ca.crt",
            "-----BEGIN CERTIFICATE-----\nMIIBin-cluster-ca\n-----END CERTIFICATE-----\n");
  dir.write("namespace", "gpu-partitioner-system\n");
}

const env_map service_env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                             {"KUBERNETES_SERVICE_PORT", "443"}};

} // namespace

BOOST_AUTO_TEST_CASE(in_cluster_reads_service_env_and_account_folder) {
  temp_dir dir;
  mount_account(dir);
  auto r = kube::in_cluster_config(fake_getenv(service_env), dir.path());
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(r->server == "https://10.96.0.1:443");
  BOOST_TEST(r->token_file == dir.file("token"));
  BOOST_TEST(r->ca_pem ==
             "-----BEGIN CERTIFICATE-----\nMIIBin-cluster-ca\n-----END CERTIFICATE-----\n");
  BOOST_TEST(r->default_namespace == "gpu-partitioner-system");
  BOOST_TEST(r->origin == "in-cluster");
  BOOST_TEST(!r->insecure_skip_tls_verify);
}

BOOST_AUTO_TEST_CASE(in_cluster_ipv6_service_host_is_bracketed) {
  temp_dir dir;
  mount_account(dir);
  const env_map env = {{"KUBERNETES_SERVICE_HOST", "fd00:10:96::1"},
                       {"KUBERNETES_SERVICE_PORT", "6443"}};
  auto r = kube::in_cluster_config(fake_getenv(env), dir.path());
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(r->server == "https://[fd00:10:96::1]:6443");
}

BOOST_AUTO_TEST_CASE(in_cluster_without_namespace_file_uses_default) {
  temp_dir dir;
  mount_account(dir);
  dir.remove("namespace");
  auto r = kube::in_cluster_config(fake_getenv(service_env), dir.path());
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(r->default_namespace == "default");
}

BOOST_AUTO_TEST_CASE(in_cluster_without_service_env_says_so) {
  temp_dir dir;
  mount_account(dir);
  const std::string expected = "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
                               "are not set (not running in a pod?)";
  for (const env_map& env :
       {env_map{}, env_map{{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}},
        env_map{{"KUBERNETES_SERVICE_PORT", "443"}},
        env_map{{"KUBERNETES_SERVICE_HOST", ""}, {"KUBERNETES_SERVICE_PORT", "443"}}}) {
    auto r = kube::in_cluster_config(fake_getenv(env), dir.path());
    BOOST_TEST_REQUIRE(!r.ok());
    BOOST_TEST((r.error().kind == kube::error_kind::config));
    BOOST_TEST(r.error().message == expected);
  }
}

BOOST_AUTO_TEST_CASE(in_cluster_without_token_file_names_it) {
  temp_dir dir;
  mount_account(dir);
  dir.remove("token");
  auto r = kube::in_cluster_config(fake_getenv(service_env), dir.path());
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().message == "in-cluster: service account token: cannot read \"" +
                                      dir.file("token") + "\": No such file or directory");
}

BOOST_AUTO_TEST_CASE(in_cluster_without_ca_file_names_it) {
  temp_dir dir;
  mount_account(dir);
  dir.remove("ca.crt");
  auto r = kube::in_cluster_config(fake_getenv(service_env), dir.path());
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().message == "in-cluster: service account CA: cannot read \"" +
                                      dir.file("ca.crt") + "\": No such file or directory");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(default_configuration)

namespace {

// Sets an environment variable for one test and restores it after.
class scoped_env {
public:
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name))
      old_ = old;
    if (value != nullptr)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~scoped_env() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

private:
  const char* name_;
  std::optional<std::string> old_;
};

} // namespace

BOOST_AUTO_TEST_CASE(kubeconfig_flag_wins_over_the_environment) {
  scoped_env kubeconfig("KUBECONFIG", "/nonexistent/a");
  auto r = kube::default_config(auth_forms);
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(r->server == "https://10.0.0.1:6443");
}

BOOST_AUTO_TEST_CASE(the_files_of_the_kubeconfig_list_that_exist_are_used) {
  scoped_env kubeconfig("KUBECONFIG",
                        ("/nonexistent/a::" + auth_forms + ":/nonexistent/b").c_str());
  auto r = kube::default_config("");
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(r->origin == "kubeconfig \"" + auth_forms + "\" context \"ca-data-token\"");
}

BOOST_AUTO_TEST_CASE(kubeconfig_list_without_an_existing_file_says_so) {
  scoped_env kubeconfig("KUBECONFIG", "/nonexistent/a:/nonexistent/b");
  auto r = kube::default_config("");
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().message ==
             "KUBECONFIG names no file that exists: /nonexistent/a:/nonexistent/b");
}

BOOST_AUTO_TEST_CASE(without_kubeconfig_or_pod_or_home_config_says_what_to_do) {
  temp_dir home;
  scoped_env kubeconfig("KUBECONFIG", nullptr);
  scoped_env service("KUBERNETES_SERVICE_HOST", nullptr);
  scoped_env home_env("HOME", home.path().c_str());
  auto r = kube::default_config("");
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().message == "no configuration: pass --kubeconfig, set KUBECONFIG, run in a "
                                  "pod, or create " +
                                      home.path() + "/.kube/config");
}

BOOST_AUTO_TEST_CASE(home_kubeconfig_is_the_last_resort) {
  temp_dir home;
  ::mkdir(home.file(".kube").c_str(), 0755);
  home.write(".kube/config", kube::read_file(auth_forms).value());
  scoped_env kubeconfig("KUBECONFIG", nullptr);
  scoped_env service("KUBERNETES_SERVICE_HOST", nullptr);
  scoped_env home_env("HOME", home.path().c_str());
  auto r = kube::default_config("");
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(r->origin ==
             "kubeconfig \"" + home.path() + "/.kube/config\" context \"ca-data-token\"");
}

BOOST_AUTO_TEST_SUITE_END()

// client-go's merge of a KUBECONFIG list (loader.go): maps merged by name with the first
// file to define a name winning, current-context from the first file that sets it,
// relative paths resolved against the file that holds them, missing files skipped.
BOOST_AUTO_TEST_SUITE(kubeconfig_list_merge)

namespace {

std::string one_cluster_file(const std::string& current, const std::string& cluster,
                             const std::string& server, const std::string& extra = {}) {
  return (current.empty() ? std::string() : "current-context: " + current + "\n") +
         "clusters:\n- name: " + cluster + "\n  cluster: {server: '" + server + "'" + extra + "}\n";
}

} // namespace

BOOST_AUTO_TEST_CASE(first_file_to_define_a_name_wins_and_the_rest_is_merged) {
  temp_dir dir;
  // a: the context and an entry "shared"; b: its own "shared" (loses) and the user.
  const auto a =
      dir.write("a", "current-context: ctx\n"
                     "contexts:\n- {name: ctx, context: {cluster: shared, user: alice}}\n"
                     "clusters:\n- {name: shared, cluster: {server: 'https://from-a:6443'}}\n");
  const auto b =
      dir.write("b", "current-context: other\n"
                     "contexts:\n- {name: ctx, context: {cluster: none}}\n"
                     "clusters:\n- {name: shared, cluster: {server: 'https://from-b:6443'}}\n"
                     "users:\n- {name: alice, user: {token: from-b}}\n");
  auto r = kube::load_kubeconfigs({a, b});
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(r->server == "https://from-a:6443");
  BOOST_TEST(r->token == "from-b");
  BOOST_TEST(r->origin == "kubeconfig \"" + a + "\" context \"ctx\"");
}

BOOST_AUTO_TEST_CASE(current_context_comes_from_the_first_file_that_sets_one) {
  temp_dir dir;
  const auto none = dir.write("none", one_cluster_file("", "k1", "https://one:6443"));
  const auto sets =
      dir.write("sets", "current-context: c2\n" + one_cluster_file("", "k2", "https://two:6443") +
                            "contexts:\n- {name: c1, context: {cluster: k1}}\n"
                            "- {name: c2, context: {cluster: k2}}\n");
  const auto later = dir.write("later", "current-context: c1\n");
  auto r = kube::load_kubeconfigs({none, sets, later});
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(r->server == "https://two:6443");
}

BOOST_AUTO_TEST_CASE(relative_paths_resolve_against_the_file_that_names_them) {
  temp_dir dir;
  ::mkdir(dir.file("x").c_str(), 0755);
  ::mkdir(dir.file("y").c_str(), 0755);
  dir.write("x/ca.crt", "CA OF X");
  dir.write("y/token", "token-of-y");
  const auto x = dir.write("x/config", "current-context: c\n"
                                       "contexts:\n- {name: c, context: {cluster: k, user: u}}\n"
                                       "clusters:\n- {name: k, cluster: {server: 'https://k:6443',"
                                       " certificate-authority: ca.crt}}\n");
  const auto y = dir.write("y/config", "users:\n- {name: u, user: {tokenFile: token}}\n");
  auto r = kube::load_kubeconfigs({x, y});
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(r->ca_pem == "CA OF X");
  BOOST_TEST(r->token_file == dir.file("y/token"));
}

BOOST_AUTO_TEST_CASE(missing_files_are_skipped_and_none_existing_is_an_error) {
  temp_dir dir;
  const auto real =
      dir.write("real", "current-context: c\ncontexts:\n- {name: c, context: {cluster: k}}\n" +
                            one_cluster_file("", "k", "https://k:6443"));
  auto r = kube::load_kubeconfigs({dir.file("gone"), real, dir.file("gone-too")});
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(r->server == "https://k:6443");
  auto none = kube::load_kubeconfigs({dir.file("gone")});
  BOOST_TEST_REQUIRE(!none.ok());
  BOOST_TEST(none.error().message == "KUBECONFIG names no file that exists: " + dir.file("gone"));
}

BOOST_AUTO_TEST_CASE(an_entry_at_fault_is_named_with_its_own_file) {
  temp_dir dir;
  const auto a = dir.write("a", "current-context: c\n"
                                "contexts:\n- {name: c, context: {cluster: k, user: u}}\n" +
                                    one_cluster_file("", "k", "https://k:6443"));
  const auto b = dir.write("b", "users:\n- {name: u, user: {client-key-data: QUJD}}\n");
  auto r = kube::load_kubeconfigs({a, b});
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().message ==
             "kubeconfig \"" + b + "\": user \"u\": client-key is set without client-certificate");
  // A name defined nowhere: every file is named.
  auto missing = kube::load_kubeconfigs({a, b}, {"nope", {}, {}});
  BOOST_TEST_REQUIRE(!missing.ok());
  BOOST_TEST(missing.error().message ==
             "kubeconfig \"" + a + "\", \"" + b + "\": context \"nope\" not found");
}

BOOST_AUTO_TEST_CASE(cluster_and_user_flags_replace_the_contexts) {
  temp_dir dir;
  const auto a = dir.write("a", "current-context: c\n"
                                "contexts:\n- {name: c, context: {cluster: k, user: u}}\n"
                                "clusters:\n- {name: k, cluster: {server: 'https://k:6443'}}\n"
                                "- {name: k2, cluster: {server: 'https://k2:6443'}}\n"
                                "users:\n- {name: u, user: {token: tu}}\n"
                                "- {name: u2, user: {token: tu2}}\n");
  auto r = kube::load_kubeconfigs({a}, {"", "k2", "u2"});
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(r->server == "https://k2:6443");
  BOOST_TEST(r->token == "tu2");
}

BOOST_AUTO_TEST_CASE(kubeconfig_list_drops_empty_entries_and_repeats) {
  BOOST_TEST((kube::kubeconfig_list("a::b:a:") == std::vector<std::string>{"a", "b"}));
}

BOOST_AUTO_TEST_SUITE_END()

// kubectl's order (the plugin's), beside the operator's controller-runtime order above.
BOOST_AUTO_TEST_SUITE(kubectl_configuration)

namespace {

/// A fake environment for kubectl_config.
struct environment {
  std::map<std::string, std::string> vars;
  std::function<const char*(const char*)> getenv() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

void in_cluster_account(environment& env) {
  env.vars["KUBERNETES_SERVICE_HOST"] = "10.96.0.1";
  env.vars["KUBERNETES_SERVICE_PORT"] = "443";
}

} // namespace

BOOST_AUTO_TEST_CASE(a_home_kubeconfig_wins_over_in_cluster) {
  temp_dir home;
  ::mkdir(home.file(".kube").c_str(), 0755);
  home.write(".kube/config", kube::read_file(auth_forms).value());
  environment env;
  env.vars["HOME"] = home.path();
  in_cluster_account(env);
  auto r = kube::kubectl_config("", {}, env.getenv());
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(r->origin ==
             "kubeconfig \"" + home.path() + "/.kube/config\" context \"ca-data-token\"");
}

BOOST_AUTO_TEST_CASE(in_cluster_only_when_no_kubeconfig_file_exists) {
  temp_dir home;
  environment env;
  env.vars["HOME"] = home.path();
  env.vars["KUBECONFIG"] = home.file("gone");
  in_cluster_account(env);
  auto r = kube::kubectl_config("", {}, env.getenv());
  // In-cluster was chosen: its error names the service account's token, which is not
  // mounted here.
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().message.rfind("in-cluster: service account token", 0) == 0,
             r.error().message);
}

BOOST_AUTO_TEST_CASE(without_any_configuration_says_what_was_looked_at) {
  temp_dir home;
  environment env;
  env.vars["HOME"] = home.path();
  auto r = kube::kubectl_config("", {}, env.getenv());
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().message == "no configuration: " + home.path() +
                                      "/.kube/config does not exist; pass --kubeconfig, set "
                                      "KUBECONFIG, or run in a pod");
}

BOOST_AUTO_TEST_CASE(the_flag_must_name_a_file_that_exists) {
  environment env;
  env.vars["KUBECONFIG"] = auth_forms;
  auto r = kube::kubectl_config("/nonexistent/k", {}, env.getenv());
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().message ==
             "kubeconfig: cannot read \"/nonexistent/k\": No such file or directory");
}

BOOST_AUTO_TEST_CASE(the_kubeconfig_list_is_merged_and_the_home_file_ignored) {
  temp_dir dir;
  const auto ctx = dir.write("ctx", "current-context: c\n"
                                    "contexts:\n- {name: c, context: {cluster: k}}\n");
  const auto cl =
      dir.write("cl", "clusters:\n- {name: k, cluster: {server: 'https://merged:6443'}}\n");
  environment env;
  env.vars["KUBECONFIG"] = ctx + ":" + dir.file("gone") + ":" + cl;
  env.vars["HOME"] = "/nonexistent";
  auto r = kube::kubectl_config("", {}, env.getenv());
  BOOST_TEST_REQUIRE(r.ok(), problem(r));
  BOOST_TEST(r->server == "https://merged:6443");
}

BOOST_AUTO_TEST_SUITE_END()
