#pragma once

// Which version of its node a worker decides on. The watch shows the worker's own write
// of the node a moment later; until then the view is older than what the worker knows,
// and deciding on it would undo or repeat the write.

#include "controller/observed.hpp"
#include "protocol/timestamp.hpp"

#include <chrono>
#include <string>

namespace gpu_partitioner::controller {

struct node_choice {
  /// Decide on the worker's own write: the view is older than it.
  bool own = false;
  /// The view shows the write, or a later version: the write need not be kept.
  bool caught_up = false;
  /// The watch has not shown the write for `lag_limit`, nor has the node been read
  /// directly for as long: read it from the API server.
  bool read_directly = false;
};

/// `viewed`: the node in the view. `written`: the Node as the worker's last write left it,
/// `written_over` the version the view showed then, `written_at` when. `last_read`: when
/// the worker last read the node directly. Versions that are numbers are ordered (Kubernetes 1.35):
/// a view older than the write stays older however long the watch takes. Where they are not, a view
/// whose version differs from the one written over is taken after 5 s at most.
node_choice
choose_node(const node_info& viewed, const node_info& written, const std::string& written_over,
            protocol::wall_clock::time_point written_at, protocol::wall_clock::time_point now,
            protocol::wall_clock::time_point last_read, std::chrono::milliseconds lag_limit);

} // namespace gpu_partitioner::controller
