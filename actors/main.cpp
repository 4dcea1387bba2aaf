// gpu-partitioner: rolls AMD GPU partition profiles across Kubernetes nodes safely.
// The operator's actors are not wired up yet; this entry point answers --version and --help.
#include <cstring>
#include <iostream>

#include "protocol/version.hpp"

namespace {

constexpr const char* usage = R"(Usage: gpu-partitioner [flags]

Rolls AMD GPU partition profiles (PartitioningPlan, infrastructure.silogen.ai/v1alpha1)
across a cluster's GPU nodes: cordon, drain, taint, apply through AMD's Device Config
Manager, verify, untaint, uncordon, within the plan's rollout limits.

Flags:
  --help       print this help and exit
  --version    print the version and exit
)";

} // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::cout << usage;
      return 0;
    }
    if (std::strcmp(argv[i], "--version") == 0) {
      std::cout << "gpu-partitioner " << gpu_partitioner::version << '\n';
      return 0;
    }
    std::cerr << "gpu-partitioner: unknown flag '" << argv[i] << "' (see --help)\n";
    return 2;
  }
  std::cerr << "gpu-partitioner: the operator is not built yet; see --help\n";
  return 1;
}
