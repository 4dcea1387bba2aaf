#pragma once

// RFC 3339 times as the Kubernetes API writes them: metav1.Time ("...Z", seconds) and
// metav1.MicroTime. Shared by kube/ (Events, Leases, exec credentials) and protocol/.

#include <chrono>
#include <optional>
#include <string>

namespace gpu_partitioner::protocol {

using wall_clock = std::chrono::system_clock;

/// "2026-11-29T15:20:00Z": metav1.Time, as in status, conditions and Events.
std::string format_time(wall_clock::time_point t);

/// "2026-11-29T15:20:00.123456Z": metav1.MicroTime (Lease renewTime, Event eventTime).
std::string format_time_micro(wall_clock::time_point t);

/// Parses an RFC 3339 date-time: "T" (or "t"), optional fractional seconds (at least one
/// digit), and "Z" or a "+hh:mm"/"-hh:mm" offset, which is required. Nothing if the text
/// is not such a time or names a day or time of day that does not exist.
std::optional<wall_clock::time_point> parse_time(const std::string& text);

} // namespace gpu_partitioner::protocol
