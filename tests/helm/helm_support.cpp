#include "tests/helm/helm_support.hpp"

#include "tests/e2e/support/e2e.hpp"

#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace gpu_partitioner::helm_test {

namespace fs = std::filesystem;

std::string command_result::describe() const {
  return "`" + command + "` exited " + std::to_string(status) + "\n--- stdout ---\n" + out +
         "--- stderr ---\n" + err;
}

namespace {

std::string temp_dir() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t != nullptr && *t != '\0' ? t : fs::temp_directory_path().string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace

command_result run(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env) {
  static int counter = 0;
  command_result r;
  for (const auto& a : args)
    r.command += (r.command.empty() ? "" : " ") + a;
  const std::string base =
      temp_dir() + "/cmd-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  const std::string out_path = base + ".out";
  const std::string err_path = base + ".err";

  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq != std::string::npos && env.count(entry.substr(0, eq)) > 0)
      continue;
    env_storage.push_back(entry);
  }
  for (const auto& [k, v] : env)
    env_storage.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_storage)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> arg_storage = args;
  std::vector<char*> argv;
  for (auto& a : arg_storage)
    argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&files, STDERR_FILENO, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv[0], &files, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&files);
  if (rc != 0) {
    r.err = std::string("cannot start: ") + std::strerror(rc);
    return r;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  std::error_code ignored;
  fs::remove(out_path, ignored);
  fs::remove(err_path, ignored);
  return r;
}

std::string chart_copy() {
  static int counter = 0;
  const fs::path from = fs::path(e2e::runfile("helm/gpu-partitioner/Chart.yaml")).parent_path();
  const fs::path to =
      fs::path(temp_dir()) / ("chart-" + std::to_string(++counter)) / "gpu-partitioner";
  fs::remove_all(to);
  fs::create_directories(to);
  // Runfiles are symlinks: copy what they point at, so that helm sees plain files.
  for (auto it = fs::recursive_directory_iterator(from); it != fs::recursive_directory_iterator();
       ++it) {
    const auto rel = it->path().lexically_relative(from);
    if (fs::is_directory(it->path()))
      fs::create_directories(to / rel);
    else
      fs::copy_file(fs::canonical(it->path()), to / rel);
  }
  return to.string();
}

std::vector<YAML::Node> documents(const std::string& yaml) {
  std::vector<YAML::Node> out;
  for (auto& d : YAML::LoadAll(yaml))
    if (d && !d.IsNull())
      out.push_back(d);
  return out;
}

YAML::Node find(const std::vector<YAML::Node>& docs, const std::string& kind,
                const std::string& name) {
  for (const auto& d : docs)
    if (d["kind"] && d["kind"].as<std::string>() == kind &&
        (name.empty() || d["metadata"]["name"].as<std::string>() == name))
      return d;
  return YAML::Node(YAML::NodeType::Undefined);
}

std::vector<YAML::Node> find_all(const std::vector<YAML::Node>& docs, const std::string& kind) {
  std::vector<YAML::Node> out;
  for (const auto& d : docs)
    if (d["kind"] && d["kind"].as<std::string>() == kind)
      out.push_back(d);
  return out;
}

bool same(const YAML::Node& a, const YAML::Node& b) {
  if (a.Type() != b.Type())
    return false;
  switch (a.Type()) {
  case YAML::NodeType::Scalar:
    return a.Scalar() == b.Scalar();
  case YAML::NodeType::Sequence:
    if (a.size() != b.size())
      return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same(a[i], b[i]))
        return false;
    return true;
  case YAML::NodeType::Map:
    if (a.size() != b.size())
      return false;
    for (const auto& kv : a) {
      const auto key = kv.first.as<std::string>();
      if (!b[key] || !same(kv.second, b[key]))
        return false;
    }
    return true;
  default:
    return true;
  }
}

std::vector<std::string> strings(const YAML::Node& seq) {
  std::vector<std::string> out;
  if (seq && seq.IsSequence())
    for (const auto& v : seq)
      out.push_back(v.as<std::string>());
  return out;
}

} // namespace gpu_partitioner::helm_test
