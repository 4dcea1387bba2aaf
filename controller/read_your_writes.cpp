#include "controller/read_your_writes.hpp"

#include "protocol/resource_version.hpp"

namespace gpu_partitioner::controller {

node_choice
choose_node(const node_info& viewed, const node_info& written, const std::string& written_over,
            protocol::wall_clock::time_point written_at, protocol::wall_clock::time_point now,
            protocol::wall_clock::time_point last_read, std::chrono::milliseconds lag_limit) {
  node_choice out;
  // A version past the one written over is not enough where versions are ordered:
  // another writer's update that landed between the worker's read and its write is such a
  // version too, without the worker's change.
  const auto order =
      protocol::compare_resource_versions(viewed.resource_version, written.resource_version);
  out.caught_up = order ? *order >= 0 : viewed.resource_version != written_over;
  if (!out.caught_up && (order || now - written_at < std::chrono::seconds(5))) {
    out.own = true;
    out.read_directly = order && now - written_at >= lag_limit && now - last_read >= lag_limit;
  }
  return out;
}

} // namespace gpu_partitioner::controller
