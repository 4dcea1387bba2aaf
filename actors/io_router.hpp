#pragma once

#include "actors/io_executor.hpp"

#include <caf/all.hpp>

#include <string>
#include <vector>

namespace gpu_partitioner::actors {

/// A pool of io_executors (linked: they go when it goes) that hands each request to an
/// executor with nothing to do, or, when all are busy, to the first to finish, in the
/// order the requests came. (CAF's round-robin pool queued a write behind a slow one on
/// a busy connection while others were idle.) An item write superseded by the time its
/// turn comes is answered item_io_superseded unsent. `name` labels the pool's metrics
/// (its queue's depth, the writes it dropped).
io_actor::behavior_type io_pool(io_actor::pointer self, std::vector<io_actor> executors,
                                std::string name);

/// The io handle the workers and supervisors use: hands node steps that evict or delete
/// pods to `evictions`, the supervisors' writes of NodePartitionings to `items`, and every
/// other node step to `writes` (each a pool of io_executors). The short writes a rollout
/// waits on (cordon, taint, label, untaint, uncordon) then never queue behind evictions,
/// which the API server may hold for 500 ms on a PDB conflict, nor behind the thousand
/// creates that start a plan of a thousand nodes. A step that only evicts or deletes pods
/// goes out as one request per pod, side by side, and is answered once, with every pod's
/// outcome. Linked to the pools: they go when it goes.
io_actor::behavior_type io_router(io_actor::pointer self, io_actor writes, io_actor evictions,
                                  io_actor items);

} // namespace gpu_partitioner::actors
