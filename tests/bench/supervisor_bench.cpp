// What a plan supervisor's per-view work costs at N nodes: each pure function it calls,
// timed over a synthetic mid-rollout view (every node selected, every item made, some in
// flight). Run by hand or by tools/bench; never a timed assertion.
//
//   bazel run -c opt //tests/bench:supervisor_bench -- 5000
#include "controller/canary_needs.hpp"
#include "controller/item_reconcile.hpp"
#include "controller/plan_items.hpp"
#include "controller/plan_resolution.hpp"
#include "controller/plan_selections.hpp"
#include "controller/plan_status.hpp"
#include "controller/rollout_gate.hpp"

#include "tests/bench/timed.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

namespace gc = gpu_partitioner::controller;
using gpu_partitioner::bench::timed;
namespace gp = gpu_partitioner::protocol;

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 5000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 10;
  gc::cluster_view view;
  auto profile = std::make_shared<gp::partitioning_profile>();
  profile->metadata.name = "cpx";
  profile->spec.operator_payload.name = "cpx-payload";
  view.profiles["cpx"] = profile;
  auto plan = std::make_shared<gp::partitioning_plan>();
  plan->metadata.name = "fleet";
  plan->metadata.uid = "plan-uid";
  gp::partitioning entry;
  entry.name = "all";
  entry.selector.match_labels = {{"pool", "gpu"}};
  entry.profile_ref.name = "cpx";
  plan->spec.partitionings.push_back(entry);
  plan->spec.rollout.max_parallel = 200;
  view.plans["fleet"] = plan;
  for (int i = 0; i < n; ++i) {
    auto node = std::make_shared<gc::node_info>();
    char name[32];
    std::snprintf(name, sizeof name, "gpu-%05d", i);
    node->name = name;
    node->labels = {
        {"pool", "gpu"}, {"kubernetes.io/hostname", name}, {"amd.com/gpu.product-name", "MI300X"}};
    node->allocatable = {{"cpu", "192"}, {"memory", "2Ti"}, {"amd.com/gpu", "8"}};
    view.nodes[name] = node;
  }
  const auto selections = gc::select_nodes(view.plans, view.nodes);
  view.selections = selections;
  auto resolution = gc::resolve_plan(*plan, *selections, view.nodes, {});
  std::map<std::string, std::string> hashes;
  int i = 0;
  for (const auto& sel : resolution.selected) {
    auto item = gc::desired_item(*plan, sel, view, hashes);
    using p = gp::node_phase;
    item.status.phase = i < n / 2 ? p::succeeded : i < n / 2 + 200 ? p::draining : p::pending;
    view.items[item.metadata.name] = std::make_shared<gp::node_partitioning>(item);
    ++i;
  }
  gc::plan_items mine("fleet");
  mine.update(view);
  std::printf("%d nodes, %zu items, %d rounds each\n", n, mine.all().size(), rounds);
  std::map<std::string, std::string> flying;
  timed("select_nodes", rounds, [&] { gc::select_nodes(view.plans, view.nodes); });
  timed("flying (items walk)", rounds, [&] {
    flying.clear();
    for (const auto& [name, item] : view.items)
      if (gc::holds_its_node(*item))
        flying.emplace(item->spec.node_name, item->spec.plan_ref.name);
  });
  timed("resolve_plan", rounds,
        [&] { resolution = gc::resolve_plan(*plan, *selections, view.nodes, flying); });
  timed("wanted_hashes", rounds, [&] { gc::wanted_hashes(*plan, resolution, view); });
  timed("reconcile_items", rounds,
        [&] { gc::reconcile_items(*plan, resolution, mine.all(), view, {}, {}); });
  gp::partitioning_plan_status previous;
  timed("aggregate_plan_status", rounds, [&] {
    previous =
        gc::aggregate_plan_status(*plan, resolution, mine.all(), previous, gp::wall_clock::now());
  });
  timed("devices_by_profile", rounds, [&] { gc::devices_by_profile(resolution, view); });
  timed("decide_gate", rounds, [&] {
    gc::gate_inputs gin;
    gin.plan = plan.get();
    gin.resolution = &resolution;
    gin.items = &mine.all();
    gin.nodes = &view.nodes;
    gin.now = gp::wall_clock::now();
    gc::dcm_settings dcm{"kube-amd-gpu", std::chrono::milliseconds(90000), {}, gc::dcm_retry_bound};
    gc::canary_needs needs(*plan, view, dcm, gin.now);
    gin.need = std::ref(needs);
    gc::decide_gate(gin);
  });
  return 0;
}
