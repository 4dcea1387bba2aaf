// What one pass of a drain costs at N nodes when a budget holds the node's pods: each
// held pod is checked for a deadlock (could its replacement run only on nodes this
// operator holds?), which reads the other nodes. Timed over a synthetic cluster of N GPU
// nodes, all open; never a timed assertion.
//
//   bazel run -c opt //tests/bench:drain_bench -- 5000
#include "controller/drain.hpp"

#include "tests/bench/timed.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace gc = gpu_partitioner::controller;
using gpu_partitioner::bench::timed;
namespace gp = gpu_partitioner::protocol;

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 5000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 200;
  gc::shared_map<gc::node_info> nodes;
  for (int i = 0; i < n; ++i) {
    auto node = std::make_shared<gc::node_info>();
    char name[32];
    std::snprintf(name, sizeof name, "gpu-%05d", i);
    node->name = name;
    node->labels = {{"kubernetes.io/hostname", name},
                    {"nodepool", "training-gpu"},
                    {"amd.com/gpu.ready", "true"}};
    node->ready = true;
    node->allocatable = {{"amd.com/gpu", "8"}, {"cpu", "192"}};
    nodes.set(name, node);
  }
  std::vector<gc::pod_info> pods;
  for (int i = 0; i < 3; ++i) {
    gc::pod_info p;
    p.ns = "work";
    p.name = "trainer-" + std::to_string(i);
    p.uid = "uid-" + p.name;
    p.node_name = "gpu-00000";
    p.labels = {{"app", p.name}};
    p.phase = "Running";
    p.gpus = 1;
    p.node_selector = {{"nodepool", "training-gpu"}};
    pods.push_back(p);
  }
  std::vector<gc::pdb_info> pdbs;
  for (const auto& p : pods) {
    gc::pdb_info b;
    b.ns = p.ns;
    b.name = p.name;
    b.match_labels = p.labels;
    pdbs.push_back(b); // no disruption allowed: every pod is held
  }
  const auto now = gp::wall_clock::now();
  gc::drain_context context(now);
  context.node = "gpu-00000";
  context.nodes = &nodes;
  std::printf("%d nodes, 3 pods held by their budgets, %d rounds\n", n, rounds);
  timed("room_for_replacement (every node), a pod", rounds,
        [&] { (void)gc::room_for_replacement(pods[0], context); });
  timed("deadlock_of (to the first open node), a pod", rounds,
        [&] { (void)gc::deadlock_of(pods[0], context); });
  gp::drain_policy drain;
  timed("plan_evictions, a pass of the node", rounds,
        [&] { (void)gc::plan_evictions(pods, pdbs, {}, drain, context); });
  return 0;
}
