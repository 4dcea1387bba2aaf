#include "kube/config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
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

/// `file` relative to `base_dir`; as it is when absolute or when there is no base (a path
/// already resolved as its file was merged).
std::string resolve(const std::string& base_dir, const std::string& file) {
  if (file.empty() || file[0] == '/' || base_dir.empty())
    return file;
  return base_dir + "/" + file;
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

namespace {

// -- merging kubeconfig files, as client-go's loader does --

/// A cluster, user or context entry and the file that defined it (its messages name
/// that file).
struct named_entry {
  YAML::Node body;
  std::string file;
};

struct merged_kubeconfig {
  std::map<std::string, named_entry> clusters;
  std::map<std::string, named_entry> users;
  std::map<std::string, named_entry> contexts;
  std::string current_context;
  std::vector<std::string> files;
};

/// A path field relative to the file that named it, made usable from anywhere.
void resolve_field(YAML::Node map, const char* key, const std::string& base_dir) {
  if (!map.IsMap())
    return;
  YAML::Node v = map[key];
  if (v && v.IsScalar() && !v.as<std::string>().empty())
    map[key] = resolve(base_dir, v.as<std::string>());
}

/// Adds one file's entries to `merged`: a name already defined by an earlier file keeps
/// that file's entry, current-context is the first file's that sets one, and relative
/// paths are resolved against the folder of the file that holds them (client-go's rules).
std::optional<failure> merge_kubeconfig(merged_kubeconfig& merged, const std::string& text,
                                        const std::string& path) {
  const std::string where = "kubeconfig " + quoted(path);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return make_error(error_kind::config, where + ": not valid YAML (line " +
                                              std::to_string(e.mark.line + 1) + "): " + e.msg);
  }
  if (!root.IsMap())
    return make_error(error_kind::config,
                      where + ": not a kubeconfig (expected a map with clusters, users and "
                              "contexts)");
  merged.files.push_back(path);
  const std::string base_dir = folder_of(path);
  try {
    std::string current, problem;
    if (!scalar(root, "current-context", current, problem))
      return make_error(error_kind::config, where + ": " + problem);
    if (merged.current_context.empty())
      merged.current_context = current;
    struct list_spec {
      const char* list;
      const char* inner;
      std::map<std::string, named_entry>* into;
    };
    for (const list_spec& l : {list_spec{"clusters", "cluster", &merged.clusters},
                               list_spec{"users", "user", &merged.users},
                               list_spec{"contexts", "context", &merged.contexts}}) {
      const YAML::Node entries = root[l.list];
      if (!entries || !entries.IsSequence())
        continue;
      for (const auto& entry : entries) {
        if (!entry.IsMap() || !entry["name"] || !entry["name"].IsScalar())
          continue;
        const std::string name = entry["name"].as<std::string>();
        if (l.into->count(name) != 0)
          continue;
        YAML::Node body =
            entry[l.inner] ? YAML::Clone(entry[l.inner]) : YAML::Node(YAML::NodeType::Map);
        resolve_field(body, "certificate-authority", base_dir);
        resolve_field(body, "client-certificate", base_dir);
        resolve_field(body, "client-key", base_dir);
        resolve_field(body, "tokenFile", base_dir);
        // A command without a slash is looked up on PATH; one with a relative path is
        // relative to the kubeconfig, as client-go does.
        if (body.IsMap() && body["exec"] && body["exec"].IsMap()) {
          YAML::Node exec = body["exec"];
          if (exec["command"] && exec["command"].IsScalar() &&
              exec["command"].as<std::string>().find('/') != std::string::npos)
            resolve_field(exec, "command", base_dir);
        }
        l.into->emplace(name, named_entry{body, path});
      }
    }
  } catch (const YAML::Exception& e) {
    return make_error(error_kind::config, where + ": unexpected structure: " + e.what());
  }
  return std::nullopt;
}

std::string files_named(const std::vector<std::string>& files) {
  std::string out = "kubeconfig ";
  for (std::size_t i = 0; i < files.size(); ++i)
    out += (i ? ", " : "") + quoted(files[i]);
  return out;
}

/// The connection a merged kubeconfig gives for `selection`.
result<connection_config> select_connection(const merged_kubeconfig& merged,
                                            const kubeconfig_selection& selection) {
  std::string where = files_named(merged.files);
  auto fail = [&](const std::string& problem) {
    return make_error(error_kind::config, where + ": " + problem);
  };
  const std::string base_dir; // paths were resolved as the files were merged
  try {
    std::string context_name = selection.context;
    if (context_name.empty()) {
      context_name = merged.current_context;
      if (context_name.empty())
        return fail("no current-context is set and no context was given");
    }
    const auto ctx_entry = merged.contexts.find(context_name);
    if (ctx_entry == merged.contexts.end())
      return fail("context " + quoted(context_name) + " not found");
    const YAML::Node ctx = ctx_entry->second.body;
    where = "kubeconfig " + quoted(ctx_entry->second.file);

    std::string cluster_name, user_name, ns, problem;
    if (!scalar(ctx, "cluster", cluster_name, problem) ||
        !scalar(ctx, "user", user_name, problem) || !scalar(ctx, "namespace", ns, problem))
      return fail("context " + quoted(context_name) + ": " + problem);
    if (!selection.cluster.empty())
      cluster_name = selection.cluster;
    if (!selection.user.empty())
      user_name = selection.user;
    if (cluster_name.empty())
      return fail("context " + quoted(context_name) + ": cluster is missing");

    connection_config cfg;
    cfg.origin = where + " context " + quoted(context_name);
    if (!ns.empty())
      cfg.default_namespace = ns;

    const std::string cluster_where = "cluster " + quoted(cluster_name);
    const auto cluster_entry = merged.clusters.find(cluster_name);
    if (cluster_entry == merged.clusters.end())
      return fail(cluster_where + " not found");
    where = "kubeconfig " + quoted(cluster_entry->second.file);
    const YAML::Node cluster = cluster_entry->second.body;
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
    const std::string user_where = "user " + quoted(user_name);
    const auto user_entry = merged.users.find(user_name);
    if (user_entry == merged.users.end())
      return fail(user_where + " not found");
    where = "kubeconfig " + quoted(user_entry->second.file);
    const YAML::Node user = user_entry->second.body;
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
    where = "kubeconfig " + quoted(cluster_entry->second.file);
    if (is_plain_http(cfg.server) && has_credentials(cfg))
      return fail(cluster_where + ": server " + quoted(cfg.server) + " is plain http://, and " +
                  user_where + " would send its " + credential_kind(cfg) +
                  " in the clear; use https://");
    return cfg;
  } catch (const YAML::Exception& e) {
    return fail(std::string("unexpected structure: ") + e.what());
  }
}

} // namespace

result<connection_config> parse_kubeconfig(const std::string& text, const std::string& path,
                                           const std::string& context) {
  merged_kubeconfig merged;
  if (auto problem = merge_kubeconfig(merged, text, path))
    return *problem;
  return select_connection(merged, {context, {}, {}});
}

result<connection_config> load_kubeconfig(const std::string& path, const std::string& context) {
  return load_kubeconfig(path, kubeconfig_selection{context, {}, {}});
}

result<connection_config> load_kubeconfig(const std::string& path,
                                          const kubeconfig_selection& selection) {
  auto text = read_file(path);
  if (!text)
    return make_error(error_kind::config, "kubeconfig: " + text.error().message);
  merged_kubeconfig merged;
  if (auto problem = merge_kubeconfig(merged, text.value(), path))
    return *problem;
  return select_connection(merged, selection);
}

std::vector<std::string> kubeconfig_list(const std::string& value) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= value.size()) {
    const auto end = value.find(':', start);
    std::string path = value.substr(start, end == std::string::npos ? end : end - start);
    if (!path.empty() && std::find(out.begin(), out.end(), path) == out.end())
      out.push_back(std::move(path));
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  return out;
}

result<connection_config> load_kubeconfigs(const std::vector<std::string>& paths,
                                           const kubeconfig_selection& selection) {
  merged_kubeconfig merged;
  for (const auto& path : paths) {
    if (!file_exists(path))
      continue;
    auto text = read_file(path);
    if (!text)
      return make_error(error_kind::config, "kubeconfig: " + text.error().message);
    if (auto problem = merge_kubeconfig(merged, text.value(), path))
      return *problem;
  }
  if (merged.files.empty()) {
    std::string names;
    for (const auto& p : paths)
      names += (names.empty() ? "" : ":") + p;
    return make_error(error_kind::config, "KUBECONFIG names no file that exists: " + names);
  }
  return select_connection(merged, selection);
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
    const auto r = load_kubeconfigs(kubeconfig_list(env), {});
    // Said with the variable's own text, as the user wrote it.
    if (!r && r.error().message.rfind("KUBECONFIG names no file", 0) == 0)
      return make_error(error_kind::config,
                        std::string("KUBECONFIG names no file that exists: ") + env);
    return r;
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

result<connection_config> kubectl_config(const std::string& kubeconfig_flag,
                                         const kubeconfig_selection& selection,
                                         const std::function<const char*(const char*)>& getenv) {
  if (!kubeconfig_flag.empty())
    return load_kubeconfig(kubeconfig_flag, selection);
  std::vector<std::string> files;
  const char* env = getenv("KUBECONFIG");
  const char* home = getenv("HOME");
  const std::string home_config = std::string(home != nullptr ? home : "") + "/.kube/config";
  if (env != nullptr && *env != '\0')
    files = kubeconfig_list(env);
  else
    files.push_back(home_config);
  if (std::any_of(files.begin(), files.end(), file_exists))
    return load_kubeconfigs(files, selection);
  // No kubeconfig at all: kubectl falls back to the pod's service account.
  if (const char* host = getenv("KUBERNETES_SERVICE_HOST"); host != nullptr && *host != '\0')
    return in_cluster_config(getenv);
  return make_error(error_kind::config,
                    std::string("no configuration: ") +
                        (env != nullptr && *env != '\0'
                             ? "KUBECONFIG names no file that exists (" + std::string(env) + ")"
                             : home_config + " does not exist") +
                        "; pass --kubeconfig, set KUBECONFIG, or run in a pod");
}

} // namespace gpu_partitioner::kube
