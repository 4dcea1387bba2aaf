#pragma once

// The project's own resources as the API serves them, defined once for the watches and the
// writers, from the group, version and plural the protocol's types declare.

#include "kube/resource.hpp"
#include "protocol/api_group.hpp"
#include "protocol/node_partitioning.hpp"
#include "protocol/partitioning_plan.hpp"
#include "protocol/partitioning_profile.hpp"

#include <string>

namespace gpu_partitioner::actors {

/// The cluster-scoped resource of one of the project's kinds.
template <class Kind>
kube::resource crd_resource() {
  return {std::string(protocol::api_group), std::string(protocol::api_group_version),
          std::string(Kind::plural), false};
}

inline const kube::resource plans_resource = crd_resource<protocol::partitioning_plan>();
inline const kube::resource profiles_resource = crd_resource<protocol::partitioning_profile>();
inline const kube::resource items_resource = crd_resource<protocol::node_partitioning>();

} // namespace gpu_partitioner::actors
