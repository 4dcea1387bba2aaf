#pragma once

// The process's own figures on /metrics: the standard process_* families, named and meant
// as every Prometheus client library exports them (CPU, resident and virtual memory, start
// time, file descriptors), and what glibc's allocator holds (gpu_partitioner_heap_bytes).
// Read from /proc/self each time /metrics is asked, not sampled on a timer.

#include "metrics/registry.hpp"

#include <optional>
#include <string_view>

namespace gpu_partitioner::metrics {

struct process_figures {
  /// User and system CPU time.
  double cpu_seconds = 0;
  /// Since the Unix epoch.
  double start_time_seconds = 0;
  double virtual_bytes = 0;
  double resident_bytes = 0;
};

/// From /proc/<pid>/stat. Its second field, the command name, is in parentheses and may
/// itself hold spaces and parentheses, so the fields after it are counted from the last
/// ')'. `boot_time_seconds` is /proc/stat's btime (the start time is counted in clock
/// ticks after boot). nullopt if the text is not such a line.
std::optional<process_figures> parse_proc_stat(std::string_view stat, double ticks_per_second,
                                               double page_bytes, double boot_time_seconds);

/// The "btime" line of /proc/stat: when the machine booted, in seconds since the epoch.
std::optional<double> parse_boot_time(std::string_view proc_stat);

/// Whether gpu_partitioner_heap_bytes is filled: glibc's malloc is the allocator (not a
/// sanitizer's, whose memory glibc does not see).
bool heap_figures_available();

/// Registers the families with `r` and a collector that fills them when exposed.
void register_process_metrics(registry& r);

} // namespace gpu_partitioner::metrics
