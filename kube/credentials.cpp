#include "kube/credentials.hpp"

#include "protocol/timestamp.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace gpu_partitioner::kube {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
    s.pop_back();
  return s;
}

std::string exec_info(const exec_plugin& plugin, const std::string& server) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("apiVersion");
  w.String(plugin.api_version.c_str());
  w.Key("kind");
  w.String("ExecCredential");
  w.Key("spec");
  w.StartObject();
  w.Key("interactive");
  w.Bool(false);
  if (plugin.provide_cluster_info) {
    w.Key("cluster");
    w.StartObject();
    w.Key("server");
    w.String(server.c_str());
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  return buffer.GetString();
}

struct process_output {
  int status = -1;
  std::string out;
  std::string err;
};

// An ExecCredential is a few kilobytes even with a certificate chain; more is a plugin gone
// wrong, and must not grow the operator's memory.
constexpr std::size_t max_plugin_stdout = 1 << 20;
// Only the start of stderr goes into the error message.
constexpr std::size_t max_plugin_stderr = 16 << 10;

// Runs a command with extra environment variables, capturing stdout and stderr, with a
// deadline: a plugin that hangs must not hang the operator. It runs in a process group of
// its own, so that the whole group (a shell script's children too) is killed at the
// deadline or when its output passes the bound.
result<process_output> run_captured(const std::vector<std::string>& argv,
                                    const std::vector<std::string>& extra_env,
                                    std::chrono::milliseconds deadline) {
  int out_pipe[2], err_pipe[2];
  if (::pipe(out_pipe) != 0)
    return make_error(error_kind::config, std::string("pipe: ") + std::strerror(errno));
  if (::pipe(err_pipe) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return make_error(error_kind::config, std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
  posix_spawn_file_actions_addclose(&actions, err_pipe[0]);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);

  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e)
    env_storage.emplace_back(*e);
  env_storage.insert(env_storage.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp, args;
  for (auto& e : env_storage)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_storage = argv;
  for (auto& a : argv_storage)
    args.push_back(a.data());
  args.push_back(nullptr);

  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return make_error(error_kind::config,
                      "cannot run " + argv[0] + ": " + std::string(std::strerror(rc)));
  }

  process_output result_out;
  const auto until = std::chrono::steady_clock::now() + deadline;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  bool timed_out = false;
  bool too_long = false;
  while (open_fds > 0 && !too_long) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    if (::poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR)
      break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0)
        continue;
      char buf[4096];
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else if (i == 0) {
        result_out.out.append(buf, static_cast<std::size_t>(n));
        too_long = result_out.out.size() > max_plugin_stdout;
      } else if (result_out.err.size() < max_plugin_stderr) {
        result_out.err.append(
            buf, std::min(static_cast<std::size_t>(n), max_plugin_stderr - result_out.err.size()));
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0)
      ::close(f.fd);
  // The group goes in every case: a plugin that exited may have left a child behind.
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    return make_error(error_kind::config, argv[0] + " did not finish within " +
                                              std::to_string(deadline.count()) +
                                              " ms, and was killed");
  if (too_long)
    return make_error(error_kind::config, argv[0] + " wrote more than " +
                                              std::to_string(max_plugin_stdout >> 10) +
                                              " KiB on stdout, and was killed");
  result_out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result_out;
}

} // namespace

result<credential_material> run_exec_plugin(const exec_plugin& plugin, const std::string& server,
                                            credentials::clock::time_point& expires,
                                            std::chrono::milliseconds deadline) {
  std::vector<std::string> argv{plugin.command};
  argv.insert(argv.end(), plugin.args.begin(), plugin.args.end());
  std::vector<std::string> env{"KUBERNETES_EXEC_INFO=" + exec_info(plugin, server)};
  for (const auto& [name, value] : plugin.env)
    env.push_back(name + "=" + value);
  const std::string where = "exec plugin " + plugin.command;
  auto run = run_captured(argv, env, deadline);
  if (!run)
    return make_error(error_kind::config, where + ": " + run.error().message);
  if (run->status != 0)
    return make_error(error_kind::config, where + " exited with status " +
                                              std::to_string(run->status) + ": " + trim(run->err));
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(run->out.c_str(), run->out.size());
  if (doc.HasParseError() || !doc.IsObject())
    return make_error(error_kind::config, where + ": output is not a JSON ExecCredential");
  auto status = doc.FindMember("status");
  if (status == doc.MemberEnd() || !status->value.IsObject())
    return make_error(error_kind::config, where + ": ExecCredential has no status");
  const auto& s = status->value;
  auto str = [&](const char* key) {
    auto it = s.FindMember(key);
    return it != s.MemberEnd() && it->value.IsString() ? std::string(it->value.GetString())
                                                       : std::string{};
  };
  credential_material m;
  m.token = str("token");
  m.client_cert_pem = str("clientCertificateData");
  m.client_key_pem = str("clientKeyData");
  if (m.token.empty() && (m.client_cert_pem.empty() || m.client_key_pem.empty()))
    return make_error(error_kind::config,
                      where + ": ExecCredential status has neither a token nor a client "
                              "certificate and key");
  expires = credentials::clock::time_point::max();
  if (auto exp = str("expirationTimestamp"); !exp.empty()) {
    auto parsed = protocol::parse_time(exp);
    if (!parsed)
      return make_error(error_kind::config,
                        where + ": expirationTimestamp \"" + exp + "\" is not an RFC 3339 time");
    expires = *parsed;
  }
  return m;
}

credentials::credentials(connection_config config)
    : config_([&] {
        // Its own copy must not hold it: that would be a cycle no one frees.
        config.shared_credentials = nullptr;
        return std::move(config);
      }()) {}

void share_credentials(connection_config& config) {
  config.shared_credentials = std::make_shared<credentials>(config);
}

std::shared_ptr<credentials> credentials_for(const connection_config& config) {
  return config.shared_credentials ? config.shared_credentials
                                   : std::make_shared<credentials>(config);
}

result<credential_material> credentials::refresh_locked(clock::time_point now) {
  // Until this refresh succeeds, the next call must try again rather than serve
  // material that is already known to be stale.
  loaded_ = false;
  credential_material next;
  next.client_cert_pem = config_.client_cert_pem;
  next.client_key_pem = config_.client_key_pem;
  next.token = config_.token;
  expires_ = clock::time_point::max();
  if (config_.exec) {
    auto m = run_exec_plugin(*config_.exec, config_.server, expires_);
    if (!m)
      return m.error();
    if (!m->token.empty())
      next.token = m->token;
    if (!m->client_cert_pem.empty()) {
      next.client_cert_pem = m->client_cert_pem;
      next.client_key_pem = m->client_key_pem;
    }
  } else if (!config_.token_file.empty()) {
    auto token = read_file(config_.token_file);
    if (!token)
      return make_error(error_kind::config,
                        config_.origin + ": tokenFile: " + token.error().message);
    next.token = trim(token.value());
    expires_ = now + token_file_period_;
  }
  const bool changed = material_.generation == 0 || next.token != material_.token ||
                       next.client_cert_pem != material_.client_cert_pem ||
                       next.client_key_pem != material_.client_key_pem;
  next.generation = material_.generation + (changed ? 1 : 0);
  material_ = std::move(next);
  loaded_ = true;
  return material_;
}

result<credential_material> credentials::current() {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = clock::now();
  // Refresh a little before the plugin's expiry so a request never carries a token
  // that expires in flight.
  if (loaded_ &&
      (expires_ == clock::time_point::max() || now + std::chrono::seconds(10) < expires_))
    return material_;
  if (!config_.exec)
    return refresh_locked(now);
  // After a refusal (401) of the current material a second is enough: the server has
  // said the credential is bad, and a fresh one may already be there.
  const auto interval =
      refused_ ? std::min<std::chrono::milliseconds>(min_exec_interval_, std::chrono::seconds(1))
               : min_exec_interval_;
  if (last_exec_ && now >= *last_exec_ && now - *last_exec_ < interval) {
    if (last_exec_error_)
      return *last_exec_error_;
    if (material_.generation > 0)
      return material_;
  }
  last_exec_ = now;
  refused_ = false;
  auto r = refresh_locked(now);
  last_exec_error_.reset();
  if (!r)
    last_exec_error_ = r.error();
  return r;
}

void credentials::invalidate(std::uint64_t generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  if ((config_.exec || !config_.token_file.empty()) && generation == material_.generation) {
    loaded_ = false;
    refused_ = true;
  }
}

} // namespace gpu_partitioner::kube
