#pragma once

#include <string_view>

namespace gpu_partitioner::protocol {

/// The API group and version of the three kinds (manifests/crds/).
inline constexpr std::string_view api_group = "infrastructure.silogen.ai";
inline constexpr std::string_view api_group_version = "v1alpha1";
inline constexpr std::string_view api_version = "infrastructure.silogen.ai/v1alpha1";

} // namespace gpu_partitioner::protocol
