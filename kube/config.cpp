#include "kube/config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace gpu_partitioner::kube {

namespace {

std::string quoted(const std::string& s) {
  return "\"" + s + "\"";
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string folder_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string{"."} : path.substr(0, slash == 0 ? 1 : slash);
}

std::string resolve(const std::string& base_dir, const std::string& file) {
  if (file.empty() || file[0] == '/')
    return file;
  return base_dir + "/" + file;
}

// Finds the entry of a named list (`clusters`, `users`, `contexts`) called `name`, and
// returns its inner map (`cluster`, `user`, `context`).
YAML::Node find_named(const YAML::Node& root, const char* list, const char* inner,
                      const std::string& name) {
  const YAML::Node entries = root[list];
  if (!entries || !entries.IsSequence())
    return YAML::Node(YAML::NodeType::Undefined);
  for (const auto& entry : entries) {
    if (entry.IsMap() && entry["name"] && entry["name"].IsScalar() &&
        entry["name"].as<std::string>() == name) {
      YAML::Node body = entry[inner];
      return body ? body : YAML::Node(YAML::NodeType::Map);
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

// Reads an optional scalar field of a map; a non-scalar is an error worth naming.
bool scalar(const YAML::Node& map, const char* key, std::string& out, std::string& problem) {
  const YAML::Node v = map[key];
  if (!v || v.IsNull())
    return true;
  if (!v.IsScalar()) {
    problem = std::string(key) + ": expected a string";
    return false;
  }
  out = v.as<std::string>();
  return true;
}

// The inline `-data` form (base64) or a file path, for CA, certificate and key.
bool pem_field(const YAML::Node& map, const char* file_key, const char* data_key,
               const std::string& base_dir, std::string& out, std::string& problem) {
  std::string data, file;
  if (!scalar(map, data_key, data, problem) || !scalar(map, file_key, file, problem))
    return false;
  if (!data.empty()) {
    auto decoded = decode_base64(data);
    if (!decoded) {
      problem = std::string(data_key) + ": not valid base64";
      return false;
    }
    out = std::move(*decoded);
    return true;
  }
  if (!file.empty()) {
    auto content = read_file(resolve(base_dir, file));
    if (!content) {
      problem = std::string(file_key) + ": " + content.error().message;
      return false;
    }
    out = std::move(content.value());
    // An empty file would mean "no CA", trusting the system's roots, or no client key.
    if (out.empty()) {
      problem = std::string(file_key) + ": " + quoted(resolve(base_dir, file)) + " is empty";
      return false;
    }
  }
  return true;
}

// What the user would send, in words, for the refusal to send it over plain http.
std::string credential_kind(const connection_config& c) {
  if (!c.token.empty())
    return "token";
  if (!c.token_file.empty())
    return "tokenFile";
  if (!c.client_cert_pem.empty())
    return "client certificate";
  return "exec plugin's credential";
}

// A list of strings (null is an empty one).
bool strings_of(const YAML::Node& v, std::vector<std::string>& out) {
  if (!v || v.IsNull())
    return true;
  if (!v.IsSequence())
    return false;
  for (const auto& item : v) {
    if (!item.IsScalar())
      return false;
    out.push_back(item.as<std::string>());
  }
  return true;
}

// `as`, `as-groups`, `as-uid` and `as-user-extra`. Groups, a uid or extras without a user
// are refused, as the API server refuses them: they would be an impersonation of nobody.
bool impersonation_fields(const YAML::Node& user, impersonation& out, std::string& problem) {
  if (!scalar(user, "as", out.user, problem) || !scalar(user, "as-uid", out.uid, problem))
    return false;
  if (!strings_of(user["as-groups"], out.groups)) {
    problem = "as-groups: expected a list of strings";
    return false;
  }
  if (const YAML::Node extra = user["as-user-extra"]; extra && !extra.IsNull()) {
    if (!extra.IsMap()) {
      problem = "as-user-extra: expected a map of lists of strings";
      return false;
    }
    for (const auto& entry : extra) {
      std::vector<std::string> values;
      if (!entry.first.IsScalar() || !strings_of(entry.second, values)) {
        problem = "as-user-extra: expected a map of lists of strings";
        return false;
      }
      out.extra.emplace_back(entry.first.as<std::string>(), std::move(values));
    }
  }
  // Each value becomes a header line: a control character could end it and add another.
  auto clean = [](const std::string& v) {
    return std::none_of(v.begin(), v.end(),
                        [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
  };
  bool all_clean =
      clean(out.user) && clean(out.uid) && std::all_of(out.groups.begin(), out.groups.end(), clean);
  for (const auto& [key, values] : out.extra)
    all_clean = all_clean && clean(key) && std::all_of(values.begin(), values.end(), clean);
  if (!all_clean) {
    problem = "as, as-uid, as-groups and as-user-extra may not hold control characters";
    return false;
  }
  if (out.user.empty() && !out.empty()) {
    problem = std::string(!out.groups.empty() ? "as-groups"
                          : !out.uid.empty()  ? "as-uid"
                                              : "as-user-extra") +
              " is set without as: impersonation needs a user name";
    return false;
  }
  return true;
}

// client-go's proxy schemes; curl would take more, and a kubeconfig that works here must
// work with kubectl too.
bool valid_proxy(const std::string& url) {
  for (unsigned char c : url)
    if (c <= 0x20 || c >= 0x7f)
      return false;
  for (const char* scheme : {"http://", "https://", "socks5://"}) {
    const std::size_t n = std::strlen(scheme);
    if (url.compare(0, n, scheme) == 0)
      return url.find_first_not_of('/', n) != std::string::npos;
  }
  return false;
}

} // namespace

std::string shown_url(const std::string& url) {
  const std::size_t scheme = url.find("://");
  const std::size_t host_at = scheme == std::string::npos ? 0 : scheme + 3;
  const std::size_t end = url.find_first_of("/?#", host_at);
  const std::size_t at = url.rfind('@', end == std::string::npos ? std::string::npos : end);
  if (at == std::string::npos || at < host_at)
    return url;
  return url.substr(0, host_at) + "***" + url.substr(at);
}

std::optional<std::string> server_url_problem(const std::string& server) {
  // Not shown: such a character would break the line of the message or log it goes to.
  for (std::size_t i = 0; i < server.size(); ++i)
    if (static_cast<unsigned char>(server[i]) <= 0x20 ||
        static_cast<unsigned char>(server[i]) >= 0x7f)
      return "holds a space, control or non-ASCII character (byte " + std::to_string(i) + ")";
  const std::string shown = quoted(shown_url(server));
  if (server.rfind("https://", 0) != 0 && server.rfind("http://", 0) != 0)
    return shown + " is not an http:// or https:// URL";
  const std::size_t host_at = server.find("://") + 3;
  const std::size_t path_at = server.find('/', host_at);
  const std::string authority =
      server.substr(host_at, path_at == std::string::npos ? std::string::npos : path_at - host_at);
  if (authority.find('@') != std::string::npos)
    return shown + " holds a user name or password; give credentials in the user entry";
  if (server.find_first_of("?#") != std::string::npos)
    return shown + " has a query or fragment";
  if (authority.empty())
    return shown + " names no host";
  // host, [v6 address] or either with :port.
  const std::size_t bracket = authority.rfind(']');
  const std::size_t colon = authority.rfind(':');
  const bool has_port =
      colon != std::string::npos &&
      (authority.front() != '[' || (bracket != std::string::npos && colon > bracket));
  const std::string host = has_port ? authority.substr(0, colon) : authority;
  if (host.empty() || host == "[]")
    return shown + " names no host";
  if (host.front() == '[' ? host.back() != ']' || host.find_first_of("[]", 1) != host.size() - 1
                          : host.find_first_of("[]:") != std::string::npos)
    return shown + " has a host that is neither a name nor an address";
  if (has_port) {
    const std::string port = authority.substr(colon + 1);
    if (port.empty() || port.size() > 5 ||
        port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) < 1 ||
        std::stoi(port) > 65535)
      return shown + " has a port that is not a number from 1 to 65535";
  }
  return std::nullopt;
}

bool is_plain_http(const std::string& server) {
  return server.rfind("http://", 0) == 0;
}

bool has_credentials(const connection_config& c) {
  return !c.token.empty() || !c.token_file.empty() || !c.client_cert_pem.empty() ||
         c.exec.has_value();
}

std::optional<std::string> decode_base64(const std::string& text) {
  auto value_of = [](char c) -> int {
    if (c >= 'A' && c <= 'Z')
      return c - 'A';
    if (c >= 'a' && c <= 'z')
      return c - 'a' + 26;
    if (c >= '0' && c <= '9')
      return c - '0' + 52;
    if (c == '+')
      return 62;
    if (c == '/')
      return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() * 3 / 4);
  unsigned buffer = 0;
  int bits = 0;
  bool padding = false;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
      continue;
    if (c == '=') {
      padding = true;
      continue;
    }
    int v = value_of(c);
    if (v < 0 || padding)
      return std::nullopt;
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  // Leftover bits must be padding zeros; 6 leftover bits means a truncated quantum.
  if (bits >= 6)
    return std::nullopt;
  return out;
}

result<std::string> read_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return make_error(error_kind::config, "cannot read " + quoted(path) + ": Is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return make_error(error_kind::config, "cannot read " + quoted(path) + ": " +
                                              std::strerror(errno != 0 ? errno : ENOENT));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

result<connection_config> parse_kubeconfig(const std::string& text, const std::string& path,
                                           const std::string& context) {
  const std::string where = "kubeconfig " + quoted(path);
  auto fail = [&](const std::string& problem) {
    return make_error(error_kind::config, where + ": " + problem);
  };
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return fail("not valid YAML (line " + std::to_string(e.mark.line + 1) + "): " + e.msg);
  }
  if (!root.IsMap())
    return fail("not a kubeconfig (expected a map with clusters, users and contexts)");

  try {
    std::string context_name = context;
    if (context_name.empty()) {
      std::string problem;
      if (!scalar(root, "current-context", context_name, problem))
        return fail(problem);
      if (context_name.empty())
        return fail("no current-context is set and no context was given");
    }
    const YAML::Node ctx = find_named(root, "contexts", "context", context_name);
    if (!ctx)
      return fail("context " + quoted(context_name) + " not found");

    std::string cluster_name, user_name, ns, problem;
    if (!scalar(ctx, "cluster", cluster_name, problem) ||
        !scalar(ctx, "user", user_name, problem) || !scalar(ctx, "namespace", ns, problem))
      return fail("context " + quoted(context_name) + ": " + problem);
    if (cluster_name.empty())
      return fail("context " + quoted(context_name) + ": cluster is missing");

    connection_config cfg;
    cfg.origin = where + " context " + quoted(context_name);
    if (!ns.empty())
      cfg.default_namespace = ns;
    const std::string base_dir = folder_of(path);

    const YAML::Node cluster = find_named(root, "clusters", "cluster", cluster_name);
    const std::string cluster_where = "cluster " + quoted(cluster_name);
    if (!cluster)
      return fail(cluster_where + " not found");
    std::string insecure;
    if (!scalar(cluster, "server", cfg.server, problem) ||
        !scalar(cluster, "tls-server-name", cfg.tls_server_name, problem) ||
        !scalar(cluster, "insecure-skip-tls-verify", insecure, problem) ||
        !scalar(cluster, "proxy-url", cfg.proxy_url, problem))
      return fail(cluster_where + ": " + problem);
    if (cfg.server.empty())
      return fail(cluster_where + ": server is missing");
    if (const auto problem = server_url_problem(cfg.server))
      return fail(cluster_where + ": server " + *problem);
    // Trailing slashes go (a host is there: the scheme's own two stay).
    while (cfg.server.back() == '/')
      cfg.server.pop_back();
    if (!insecure.empty() && insecure != "true" && insecure != "false")
      return fail(cluster_where + ": insecure-skip-tls-verify: expected true or false, got " +
                  quoted(insecure));
    cfg.insecure_skip_tls_verify = insecure == "true";
    // As client-go: a CA beside the flag means one of the two is a mistake, and guessing
    // which would either ignore the CA or break the connection.
    const bool ca_given = [&] {
      for (const char* key : {"certificate-authority", "certificate-authority-data"})
        if (cluster[key] && cluster[key].IsScalar() && !cluster[key].as<std::string>().empty())
          return true;
      return false;
    }();
    if (cfg.insecure_skip_tls_verify && ca_given)
      return fail(cluster_where +
                  ": insecure-skip-tls-verify is true and a certificate-authority is given; "
                  "set only one (the CA verifies the server, the flag turns verification off)");
    if (!pem_field(cluster, "certificate-authority", "certificate-authority-data", base_dir,
                   cfg.ca_pem, problem))
      return fail(cluster_where + ": " + problem);
    if (!cfg.proxy_url.empty() && !valid_proxy(cfg.proxy_url))
      return fail(cluster_where + ": proxy-url " + quoted(shown_url(cfg.proxy_url)) +
                  " is not an http://, https:// or socks5:// URL with a host");

    if (user_name.empty())
      return cfg;
    const YAML::Node user = find_named(root, "users", "user", user_name);
    const std::string user_where = "user " + quoted(user_name);
    if (!user)
      return fail(user_where + " not found");
    if (user["auth-provider"])
      return fail(user_where + ": auth-provider is not supported; use an exec plugin");
    if (user["username"] || user["password"])
      return fail(user_where + ": username and password (basic authentication) are not "
                               "supported; use a token, a client certificate or an exec plugin");
    if (!impersonation_fields(user, cfg.impersonate, problem))
      return fail(user_where + ": " + problem);
    if (!pem_field(user, "client-certificate", "client-certificate-data", base_dir,
                   cfg.client_cert_pem, problem) ||
        !pem_field(user, "client-key", "client-key-data", base_dir, cfg.client_key_pem, problem) ||
        !scalar(user, "token", cfg.token, problem) ||
        !scalar(user, "tokenFile", cfg.token_file, problem))
      return fail(user_where + ": " + problem);
    if (cfg.client_cert_pem.empty() != cfg.client_key_pem.empty())
      return fail(user_where + (cfg.client_cert_pem.empty()
                                    ? ": client-key is set without client-certificate"
                                    : ": client-certificate is set without client-key"));
    cfg.token_file = resolve(base_dir, cfg.token_file);

    if (const YAML::Node exec = user["exec"]; exec && !exec.IsNull()) {
      const std::string exec_where = user_where + ": exec";
      if (!exec.IsMap())
        return fail(exec_where + ": expected a map");
      exec_plugin plugin;
      if (!scalar(exec, "command", plugin.command, problem) ||
          !scalar(exec, "apiVersion", plugin.api_version, problem))
        return fail(exec_where + ": " + problem);
      if (plugin.command.empty())
        return fail(exec_where + ": command is missing");
      if (plugin.api_version != "client.authentication.k8s.io/v1" &&
          plugin.api_version != "client.authentication.k8s.io/v1beta1")
        return fail(exec_where + ": apiVersion " + quoted(plugin.api_version) +
                    " is not supported (use client.authentication.k8s.io/v1)");
      // A command without a slash is looked up on PATH; one with a relative path is
      // relative to the kubeconfig, as client-go does.
      if (plugin.command.find('/') != std::string::npos)
        plugin.command = resolve(base_dir, plugin.command);
      if (const YAML::Node args = exec["args"]; args && !args.IsNull()) {
        if (!args.IsSequence())
          return fail(exec_where + ": args: expected a list of strings");
        for (const auto& a : args)
          plugin.args.push_back(a.as<std::string>());
      }
      if (const YAML::Node env = exec["env"]; env && !env.IsNull()) {
        if (!env.IsSequence())
          return fail(exec_where + ": env: expected a list of {name, value}");
        for (const auto& e : env) {
          if (!e.IsMap() || !e["name"])
            return fail(exec_where + ": env: every entry needs a name");
          plugin.env.emplace_back(e["name"].as<std::string>(),
                                  e["value"] ? e["value"].as<std::string>() : std::string{});
        }
      }
      if (const YAML::Node pci = exec["provideClusterInfo"]; pci && pci.IsScalar())
        plugin.provide_cluster_info = pci.as<std::string>() == "true";
      std::string interactive;
      if (!scalar(exec, "interactiveMode", interactive, problem))
        return fail(exec_where + ": " + problem);
      // The operator has no terminal: a plugin that must ask someone would hang until its
      // deadline on every refresh.
      if (interactive == "Always")
        return fail(exec_where + ": interactiveMode Always needs a terminal, and the operator "
                                 "has none; use Never or IfAvailable");
      cfg.exec = std::move(plugin);
    }
    if (is_plain_http(cfg.server) && has_credentials(cfg))
      return fail(cluster_where + ": server " + quoted(cfg.server) + " is plain http://, and " +
                  user_where + " would send its " + credential_kind(cfg) +
                  " in the clear; use https://");
    return cfg;
  } catch (const YAML::Exception& e) {
    return fail(std::string("unexpected structure: ") + e.what());
  }
}

result<connection_config> load_kubeconfig(const std::string& path, const std::string& context) {
  auto text = read_file(path);
  if (!text)
    return make_error(error_kind::config, "kubeconfig: " + text.error().message);
  return parse_kubeconfig(text.value(), path, context);
}

result<connection_config> in_cluster_config(const std::function<const char*(const char*)>& getenv,
                                            const std::string& account_dir) {
  const char* host = getenv("KUBERNETES_SERVICE_HOST");
  const char* port = getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0')
    return make_error(error_kind::config,
                      "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set "
                      "(not running in a pod?)");
  connection_config cfg;
  cfg.origin = "in-cluster";
  std::string h = host;
  // An IPv6 service address needs brackets in a URL.
  if (h.find(':') != std::string::npos && h.front() != '[')
    h = "[" + h + "]";
  cfg.server = "https://" + h + ":" + port;
  if (const auto problem = server_url_problem(cfg.server))
    return make_error(error_kind::config,
                      "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT make the "
                      "server " +
                          *problem);
  cfg.token_file = account_dir + "/token";
  auto token = read_file(cfg.token_file);
  if (!token)
    return make_error(error_kind::config,
                      "in-cluster: service account token: " + token.error().message);
  auto ca = read_file(account_dir + "/ca.crt");
  if (!ca)
    return make_error(error_kind::config, "in-cluster: service account CA: " + ca.error().message);
  cfg.ca_pem = std::move(ca.value());
  if (auto ns = read_file(account_dir + "/namespace"); ns && !ns.value().empty()) {
    std::string n = ns.value();
    while (!n.empty() && (n.back() == '\n' || n.back() == ' '))
      n.pop_back();
    cfg.default_namespace = n;
  }
  return cfg;
}

result<connection_config> default_config(const std::string& kubeconfig_flag) {
  if (!kubeconfig_flag.empty())
    return load_kubeconfig(kubeconfig_flag);
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::string list = env;
    std::size_t start = 0;
    while (start <= list.size()) {
      auto end = list.find(':', start);
      std::string path = list.substr(start, end == std::string::npos ? end : end - start);
      if (!path.empty() && file_exists(path))
        return load_kubeconfig(path);
      if (end == std::string::npos)
        break;
      start = end + 1;
    }
    return make_error(error_kind::config, "KUBECONFIG names no file that exists: " + list);
  }
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST"); host != nullptr && *host != '\0')
    return in_cluster_config([](const char* name) { return std::getenv(name); });
  const char* home = std::getenv("HOME");
  std::string fallback = std::string(home != nullptr ? home : "") + "/.kube/config";
  if (file_exists(fallback))
    return load_kubeconfig(fallback);
  return make_error(
      error_kind::config,
      "no configuration: pass --kubeconfig, set KUBECONFIG, run in a pod, or create " + fallback);
}

} // namespace gpu_partitioner::kube
