#pragma once

// A plan's NodePartitionings as successive views have them, kept up to date by each view's
// item changes instead of a walk over every item, and which of them a view has news for.

#include "controller/cluster_view.hpp"
#include "controller/node_machine.hpp"

#include <map>
#include <set>
#include <string>
#include <utility>

namespace gpu_partitioner::controller {

class plan_items {
public:
  using by_name = std::map<std::string, const protocol::node_partitioning*>;

  explicit plan_items(std::string plan) : plan_(std::move(plan)) {}

  /// Brings the items up to `view`: all of them the first time, then those it changed.
  /// Shown every view in order (the changes are since the previous one). The pointers are
  /// into the view's objects: valid while it lives (an unchanged item is the same object
  /// in the next view); update never reads the ones it replaces.
  void update(const cluster_view& view);
  const by_name& all() const { return items_; }
  /// The items whose item, node, pods, DCM Events or budgets `view` changed; and the
  /// draining and dry-run ones when a node's schedulability did (their deadlock check).
  by_name touched(const cluster_view& view) const;
  /// Whether `view` may have news for any item, not only the touched ones: what every
  /// node shares or who carries a DCM name changed.
  static bool news_for_all(const cluster_view& view) {
    return view.shared_changed || view.relabelled(dcm_profile_label);
  }

private:
  void put(const std::string& name, const protocol::node_partitioning* item);

  std::string plan_;
  bool built_ = false;
  by_name items_;
  std::map<std::string, std::string> on_node_;
  std::map<std::string, std::string> node_of_;
  /// Items that read every node: draining, or a dry run.
  std::set<std::string> reading_nodes_;
};

} // namespace gpu_partitioner::controller
