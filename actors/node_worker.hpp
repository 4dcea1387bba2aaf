#pragma once

#include "actors/messages.hpp"
#include "actors/rollout_governor.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace gpu_partitioner::actors {

struct node_worker_config {
  std::string item;
  std::string plan;
  /// Weak handles: a worker's pending timers keep the worker alive for a while after
  /// shutdown, and it must not keep the io threads waiting with it.
  caf::actor_addr io;     // an io_actor
  caf::actor_addr writer; // a status_writer_actor
  governor_actor governor;
  /// How long the watch may go without showing the worker's own write of the node before
  /// the worker reads the node directly (a watch shows a write within milliseconds).
  std::chrono::milliseconds watch_lag_limit{10000};
  /// The clock the worker compares recorded times with (its writes, evictions, DCM's
  /// answers, the phases' deadlines): the wall clock, unless a test moves one of its own.
  std::function<protocol::wall_clock::time_point()> now = [] {
    return protocol::wall_clock::now();
  };
};

/// A NodeWorker: the governor's grants, its slice of each view with news for it (and
/// whether the news is only of the budgets that cover its pods), and its own timers
/// (tagged with a generation: only the latest armed one counts).
using node_worker_actor = grant_receiver::extend<caf::reacts_to<view_atom, node_slice_ptr, bool>,
                                                 caf::reacts_to<tick_atom, std::uint64_t>>;

/// Drives one NodePartitioning through the node state machine (controller/node_machine):
/// on every new slice, timer or finished write it builds the inputs, steps, and hands the
/// writes to the io executors, one batch at a time.
node_worker_actor::behavior_type node_worker(node_worker_actor::pointer self,
                                             node_worker_config config);

} // namespace gpu_partitioner::actors
