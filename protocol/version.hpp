#pragma once

namespace gpu_partitioner {

/// The operator's release, printed by --version and used in the User-Agent.
inline constexpr const char* version = "0.1.0-dev";

} // namespace gpu_partitioner
