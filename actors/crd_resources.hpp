#pragma once

// The project's own resources as the API serves them, defined once for the watches and the
// writers.

#include "kube/resource.hpp"

namespace gpu_partitioner::actors {

inline const kube::resource plans_resource{"infrastructure.silogen.ai", "v1alpha1",
                                           "partitioningplans", false};
inline const kube::resource profiles_resource{"infrastructure.silogen.ai", "v1alpha1",
                                              "partitioningprofiles", false};
inline const kube::resource items_resource{"infrastructure.silogen.ai", "v1alpha1",
                                           "nodepartitionings", false};

} // namespace gpu_partitioner::actors
