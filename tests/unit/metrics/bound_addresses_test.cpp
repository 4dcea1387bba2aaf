// The operator binary's listeners on port 0: it binds ports the kernel chooses, serves
// there, and reports them in its log and in --bound-addresses-file (a line per address it
// listens on). No cluster: the kubeconfig names a port where nothing answers, and the
// operator serves its endpoints all the same (not ready, but alive).
#include "tests/support/loopback.hpp"

#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace ts = gpu_partitioner::test_support;

namespace {

std::string runfile(const std::string& path) {
  const char* dir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return dir != nullptr && workspace != nullptr ? std::string(dir) + "/" + workspace + "/" + path
                                                : path;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A kubeconfig whose server refuses every connection at once.
std::string nowhere_kubeconfig() {
  const auto path = ts::fresh_path("nowhere.kubeconfig");
  std::ofstream(path) << "apiVersion: v1\nkind: Config\n"
                         "clusters:\n- name: nowhere\n  cluster:\n"
                         "    server: https://127.0.0.1:1\n"
                         "    insecure-skip-tls-verify: true\n"
                         "users:\n- name: u\n  user:\n    token: t\n"
                         "contexts:\n- name: c\n  context: {cluster: nowhere, user: u}\n"
                         "current-context: c\n";
  return path;
}

// The operator with `flags`, its output in a log file of its own; stopped at the end.
class operator_process {
public:
  explicit operator_process(const std::vector<std::string>& flags)
      : log_(ts::fresh_path("operator.log")) {
    std::vector<std::string> args{runfile("gpu-partitioner"), "--kubeconfig", nowhere_kubeconfig(),
                                  "--dcm-config", "kube-amd-gpu/dcm"};
    args.insert(args.end(), flags.begin(), flags.end());
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
    const int rc = posix_spawn(&pid_, argv[0], &files, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    BOOST_REQUIRE_MESSAGE(rc == 0, "cannot start " << args[0]);
  }
  ~operator_process() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  operator_process(const operator_process&) = delete;
  operator_process& operator=(const operator_process&) = delete;

  bool running() {
    if (pid_ <= 0)
      return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_)
      return true;
    pid_ = 0;
    status_ = status;
    return false;
  }
  /// The exit status once it exits by itself; -1 if it does not within 20 s, or was
  /// ended by a signal.
  int exit_status() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (running())
      return -1;
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
  }
  /// SIGTERM, then the exit status.
  int stop() {
    if (running())
      ::kill(pid_, SIGTERM);
    return exit_status();
  }
  std::string log() const { return read_all(log_); }

private:
  std::string log_;
  pid_t pid_ = 0;
  int status_ = 0;
};

} // namespace

BOOST_AUTO_TEST_SUITE(bound_addresses)

BOOST_AUTO_TEST_CASE(port_0_listens_where_the_kernel_chose_and_the_file_and_log_say_so) {
  const auto file = ts::fresh_path("addresses");
  operator_process op({"--metrics-addr", "127.0.0.1:0", "--health-addr", "127.0.0.1:0",
                       "--bound-addresses-file", file});
  const auto running = [&] { return op.running(); };
  const int metrics = ts::bound_port(file, "metrics", std::chrono::seconds(30), running);
  const int health = ts::bound_port(file, "health", std::chrono::seconds(30), running);
  BOOST_REQUIRE_MESSAGE(metrics != 0 && health != 0, read_all(file) << op.log());
  BOOST_TEST(metrics != health);
  BOOST_TEST(read_all(file) == "metrics 127.0.0.1:" + std::to_string(metrics) +
                                   "\nhealth 127.0.0.1:" + std::to_string(health) + "\n");
  // Served there: the probes on the health address, /metrics on the metrics address.
  BOOST_TEST(ts::http_get(health, "/healthz").code == 200);
  BOOST_TEST(ts::http_get(health, "/metrics").code == 404);
  const auto scrape = ts::http_get(metrics, "/metrics");
  BOOST_TEST(scrape.code == 200);
  BOOST_TEST(scrape.body.find("gpu_partitioner_") != std::string::npos);
  const auto log = op.log();
  BOOST_TEST(log.find("serving /metrics (and /healthz, /readyz) on 127.0.0.1:" +
                      std::to_string(metrics) + "\"") != std::string::npos,
             log);
  BOOST_TEST(log.find("serving /healthz and /readyz on 127.0.0.1:" + std::to_string(health) +
                      "\"") != std::string::npos,
             log);
  BOOST_TEST(op.stop() == 0, op.log());
}

BOOST_AUTO_TEST_CASE(an_address_turned_off_has_no_line) {
  const auto file = ts::fresh_path("addresses");
  operator_process op(
      {"--metrics-addr", "0", "--health-addr", "127.0.0.1:0", "--bound-addresses-file", file});
  const int health =
      ts::bound_port(file, "health", std::chrono::seconds(30), [&] { return op.running(); });
  BOOST_REQUIRE_MESSAGE(health != 0, op.log());
  BOOST_TEST(read_all(file) == "health 127.0.0.1:" + std::to_string(health) + "\n");
  BOOST_TEST(op.stop() == 0, op.log());
}

BOOST_AUTO_TEST_CASE(a_file_that_cannot_be_written_stops_the_operator_naming_it) {
  const auto file = ts::fresh_path("addresses") + ".d/no-such-directory/addresses";
  operator_process op({"--metrics-addr", "127.0.0.1:0", "--health-addr", "127.0.0.1:0",
                       "--bound-addresses-file", file});
  BOOST_TEST(op.exit_status() == 2, op.log());
  BOOST_TEST(op.log().find("--bound-addresses-file: cannot write " + file) != std::string::npos,
             op.log());
}

BOOST_AUTO_TEST_SUITE_END()
