#include "tests/integration/support/cluster.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

namespace gpu_partitioner::testing {

namespace {

kube::connection_config load(const char* variable) {
  const char* path = std::getenv(variable);
  if (path == nullptr || *path == '\0')
    BOOST_FAIL(std::string(variable) + " is not set: run the integration tests through tools/test");
  auto config = kube::load_kubeconfig(path);
  if (!config)
    BOOST_FAIL(config.error().message);
  return config.value();
}

} // namespace

kube::connection_config cluster::admin() {
  return load("KUBECONFIG");
}

kube::connection_config cluster::token() {
  return load("GPU_PARTITIONER_TOKEN_KUBECONFIG");
}

bool cluster::control(const std::string& args) {
  const char* ctl = std::getenv("GPU_PARTITIONER_CLUSTER_CTL");
  if (ctl == nullptr || *ctl == '\0')
    BOOST_FAIL(
        "GPU_PARTITIONER_CLUSTER_CTL is not set: run the integration tests through tools/test");
  const std::string command = std::string(ctl) + " " + args + " >&2";
  return std::system(command.c_str()) == 0;
}

std::string unique_name(const std::string& prefix) {
  static std::mt19937_64 rng(std::random_device{}());
  static const char* digits = "0123456789abcdef";
  std::string suffix;
  for (int i = 0; i < 8; ++i)
    suffix.push_back(digits[rng() % 16]);
  return prefix + "-" + suffix;
}

scratch_namespace::scratch_namespace(const std::string& prefix) : name(unique_name(prefix)) {
  auto made = conn.api.create(kube::resources::namespaces(), "",
                              R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" +
                                  name + R"("}})");
  BOOST_REQUIRE_MESSAGE(made.ok(), (made.ok() ? "" : made.error().describe()));
}

scratch_namespace::~scratch_namespace() {
  (void)conn.api.remove(kube::resources::namespaces(), "", name);
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (condition())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return condition();
}

} // namespace gpu_partitioner::testing
