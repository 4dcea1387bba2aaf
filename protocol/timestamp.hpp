#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace gpu_partitioner::protocol {

using wall_clock = std::chrono::system_clock;

/// "2026-11-29T15:20:00Z": the form of metav1.Time in status and conditions.
std::string format_time(wall_clock::time_point t);

/// Parses what format_time writes (and fractional seconds, "Z" or an offset). Nothing
/// if the text is not such a time.
std::optional<wall_clock::time_point> parse_time(const std::string& text);

} // namespace gpu_partitioner::protocol
