#pragma once

#include "kube/client.hpp"
#include "kube/config.hpp"
#include "kube/credentials.hpp"
#include "kube/http_client.hpp"
#include "kube/resource.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace gpu_partitioner::testing {

/// The local control plane that tools/test started (tools/cluster), as the environment
/// describes it: KUBECONFIG, GPU_PARTITIONER_TOKEN_KUBECONFIG, GPU_PARTITIONER_CLUSTER_CTL.
struct cluster {
  /// The admin kubeconfig; fails the test if there is none.
  static kube::connection_config admin();
  /// The bearer-token kubeconfig.
  static kube::connection_config token();

  /// Runs `tools/cluster <args> --name <this cluster>`; true on exit status 0.
  static bool control(const std::string& args);
};

/// A client with its own connection, for one thread.
struct connection {
  explicit connection(const kube::connection_config& config)
      : http(config, std::make_shared<kube::credentials>(config)), api(http) {}
  kube::http_client http;
  kube::client api;
};

/// A name unique to this test run, for objects that must not collide with other tests.
std::string unique_name(const std::string& prefix);

/// A namespace of a unique name for one test, created by the admin and deleted at the end;
/// fails the test if it cannot be created.
struct scratch_namespace {
  explicit scratch_namespace(const std::string& prefix = "it");
  ~scratch_namespace();
  scratch_namespace(const scratch_namespace&) = delete;
  scratch_namespace& operator=(const scratch_namespace&) = delete;
  connection conn{cluster::admin()};
  std::string name;
};

/// Polls `condition` every 50 ms until it holds or `timeout` passes.
bool eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = std::chrono::seconds(30));

} // namespace gpu_partitioner::testing
