#pragma once

#include "kube/error.hpp"
#include "kube/rate_limiter.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpu_partitioner::kube {

class credentials;

/// An exec credential plugin (client.authentication.k8s.io ExecCredential): a command
/// that prints a token or a client certificate on stdout.
struct exec_plugin {
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string api_version = "client.authentication.k8s.io/v1";
  /// The cluster fields to hand the plugin in KUBERNETES_EXEC_INFO (when it asks).
  bool provide_cluster_info = false;
};

/// Kubeconfig impersonation (`as`, `as-groups`, `as-uid`, `as-user-extra`): every request
/// is made as this identity, which the authenticated user must be allowed to impersonate.
struct impersonation {
  std::string user;
  std::vector<std::string> groups;
  std::string uid;
  std::vector<std::pair<std::string, std::vector<std::string>>> extra;

  bool empty() const { return user.empty() && groups.empty() && uid.empty() && extra.empty(); }
};

/// Everything needed to reach and authenticate to one API server. PEM material is
/// held in memory and handed to curl as blobs; nothing is written to disk.
struct connection_config {
  /// "https://127.0.0.1:6443", without a trailing slash.
  std::string server;
  /// PEM bundle to verify the server with; empty means the system's roots.
  std::string ca_pem;
  /// Set only when the kubeconfig says so explicitly, and never beside a CA.
  bool insecure_skip_tls_verify = false;
  /// The name the server's certificate is checked against (and sent as SNI) instead of
  /// the URL's host.
  std::string tls_server_name;
  /// An http, https or socks5 proxy every request goes through; empty: the environment's
  /// https_proxy / no_proxy apply, as for client-go.
  std::string proxy_url;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;
  /// Re-read periodically: bound service-account tokens rotate.
  std::string token_file;
  std::optional<exec_plugin> exec;
  impersonation impersonate;
  /// The namespace the context names ("default" when none).
  std::string default_namespace = "default";
  /// Where this came from, for messages: `kubeconfig "/x" context "y"` or `in-cluster`.
  std::string origin;
  /// The User-Agent header; empty means "gpu-partitioner/<version>". The operator puts its
  /// leader-election identity in it, so the API server's audit log shows which replica
  /// made each request.
  std::string user_agent;
  /// Asked before every request that is not a GET; false refuses it unsent (error kind
  /// `aborted`). The operator's writers get its leader elector's write_gate, so a replica
  /// that may have lost the lease writes nothing.
  std::function<bool()> may_write;
  /// The token bucket every request of every client made from this configuration (and
  /// its copies) takes a token from before it goes (kube/rate_limiter.hpp); none: no limit.
  std::shared_ptr<rate_limiter> limiter{};
  /// The limiter's lane of this connection's requests (http_client::set_lane changes it
  /// per request): the operator's item, status and event writers each have their own.
  request_lane lane = request_lane::rollout;
  /// The credentials every client made from this configuration (and its copies) shares
  /// (share_credentials, kube/credentials.hpp): an exec plugin runs once for all of them,
  /// not once per connection. None: each client is given its own.
  std::shared_ptr<credentials> shared_credentials{};
};

/// Whether the configuration sends a credential (a token, a token file, a client
/// certificate or an exec plugin's output) with its requests.
bool has_credentials(const connection_config& config);

/// Whether the server's URL is plain http://: nothing secret may be sent to it.
bool is_plain_http(const std::string& server);

/// A URL as it may be shown (logs, messages): a user name and password in it as "***".
std::string shown_url(const std::string& url);

/// What is wrong with a server URL, in words after "server ": not http:// or https://,
/// no host, a user name or password in it (credentials belong in the user entry; libcurl
/// would send them as Basic auth, over plain http too), a control character or space (it
/// would end the Host header's line and start another), a query or fragment, a port that
/// is not a number from 1 to 65535. Nothing if it is a URL the client can use.
std::optional<std::string> server_url_problem(const std::string& server);

/// What kubectl's flags pick out of a kubeconfig: a context (empty: current-context), and
/// a cluster and a user that replace the context's (empty: the context's).
struct kubeconfig_selection {
  std::string context;
  std::string cluster;
  std::string user;
};

/// Reads a kubeconfig file; `context` empty means its current-context. Relative file
/// paths inside it are resolved against the file's folder, as kubectl does.
result<connection_config> load_kubeconfig(const std::string& path, const std::string& context = {});
result<connection_config> load_kubeconfig(const std::string& path,
                                          const kubeconfig_selection& selection);

/// Reads several kubeconfig files as one, by client-go's rules for a KUBECONFIG list:
/// files that do not exist are skipped; clusters, users and contexts are merged by name,
/// the first file to define a name winning; current-context is the first file's that sets
/// one; relative paths are resolved against the folder of the file that holds them.
/// Messages name the file of the entry at fault. None of them existing is an error.
result<connection_config> load_kubeconfigs(const std::vector<std::string>& paths,
                                           const kubeconfig_selection& selection = {});

/// The files of a KUBECONFIG value (colon-separated), empty entries and repeats dropped.
std::vector<std::string> kubeconfig_list(const std::string& value);

/// Parses kubeconfig text; `path` names it in messages and anchors relative paths.
result<connection_config> parse_kubeconfig(const std::string& text, const std::string& path,
                                           const std::string& context = {});

/// The in-cluster configuration: KUBERNETES_SERVICE_HOST/PORT and the service account's
/// token, CA and namespace under `account_dir`.
result<connection_config>
in_cluster_config(const std::function<const char*(const char*)>& getenv,
                  const std::string& account_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

/// What the operator uses, in controller-runtime's order: `--kubeconfig` when given, else
/// $KUBECONFIG (its files merged as load_kubeconfigs does), else in-cluster, else
/// ~/.kube/config.
result<connection_config> default_config(const std::string& kubeconfig_flag);

/// What kubectl (and the plugin) uses, in kubectl's order: `--kubeconfig` when given (it
/// must exist), else $KUBECONFIG's files merged, else ~/.kube/config; the pod's service
/// account (in-cluster) only when none of those files exists.
result<connection_config> kubectl_config(const std::string& kubeconfig_flag,
                                         const kubeconfig_selection& selection,
                                         const std::function<const char*(const char*)>& getenv);

/// Decodes standard base64 (padding optional, whitespace ignored).
std::optional<std::string> decode_base64(const std::string& text);

/// Reads a whole file; the error names the file and the reason.
result<std::string> read_file(const std::string& path);

} // namespace gpu_partitioner::kube
