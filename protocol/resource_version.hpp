#pragma once

#include <optional>
#include <string>

namespace gpu_partitioner::protocol {

/// Orders two resourceVersions of objects of one resource, as Kubernetes 1.35 defines it
/// (KEP-5504, client-go's CompareResourceVersion): both positive integers without leading
/// zeros, of any length. -1, 0 or 1; nothing when either is not such a number.
std::optional<int> compare_resource_versions(const std::string& a, const std::string& b);

} // namespace gpu_partitioner::protocol
