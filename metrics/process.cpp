#include "metrics/process.hpp"

#include <charconv>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <dirent.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

// glibc's own figures, where glibc's malloc is the one in use (not under a sanitizer's).
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)) &&          \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define GP_GLIBC_HEAP 1
#else
#define GP_GLIBC_HEAP 0
#endif

namespace gpu_partitioner::metrics {

bool heap_figures_available() {
  return GP_GLIBC_HEAP != 0;
}

namespace {

std::optional<unsigned long long> number(std::string_view s) {
  unsigned long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size())
    return std::nullopt;
  return v;
}

std::string read_file(const char* path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::optional<double> open_fds() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr)
    return std::nullopt;
  double n = 0;
  while (const dirent* e = readdir(d))
    if (e->d_name[0] != '.')
      ++n;
  closedir(d);
  return n - 1; // the directory's own descriptor, open while it is read
}

} // namespace

std::optional<process_figures> parse_proc_stat(std::string_view stat, double ticks_per_second,
                                               double page_bytes, double boot_time_seconds) {
  const auto close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0)
    return std::nullopt;
  // The fields after the command name, the first being the third of the line (the state).
  std::vector<std::string_view> fields;
  std::string_view rest = stat.substr(close + 1);
  while (!rest.empty()) {
    const auto start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos)
      break;
    rest.remove_prefix(start);
    const auto end = rest.find_first_of(" \n");
    fields.push_back(rest.substr(0, end));
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  }
  // utime, stime (fields 14, 15), starttime (22), vsize (23), rss in pages (24).
  constexpr std::size_t first = 3;
  if (fields.size() < 24 - first + 1)
    return std::nullopt;
  const auto utime = number(fields[14 - first]);
  const auto stime = number(fields[15 - first]);
  const auto start = number(fields[22 - first]);
  const auto vsize = number(fields[23 - first]);
  const auto rss = number(fields[24 - first]);
  if (!utime || !stime || !start || !vsize || !rss)
    return std::nullopt;
  process_figures p;
  p.cpu_seconds = static_cast<double>(*utime + *stime) / ticks_per_second;
  p.start_time_seconds = boot_time_seconds + static_cast<double>(*start) / ticks_per_second;
  p.virtual_bytes = static_cast<double>(*vsize);
  p.resident_bytes = static_cast<double>(*rss) * page_bytes;
  return p;
}

std::optional<double> parse_boot_time(std::string_view proc_stat) {
  std::size_t at = 0;
  while (at < proc_stat.size()) {
    auto end = proc_stat.find('\n', at);
    if (end == std::string_view::npos)
      end = proc_stat.size();
    const auto line = proc_stat.substr(at, end - at);
    if (line.rfind("btime ", 0) == 0)
      if (auto v = number(line.substr(6)))
        return static_cast<double>(*v);
    at = end + 1;
  }
  return std::nullopt;
}

void register_process_metrics(registry& r) {
  auto& cpu =
      r.counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.");
  auto& resident = r.gauge("process_resident_memory_bytes", "Resident memory size in bytes.");
  auto& virt = r.gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.");
  auto& started = r.gauge("process_start_time_seconds",
                          "Start time of the process since unix epoch in seconds.");
  auto& fds = r.gauge("process_open_fds", "Number of open file descriptors.");
  auto& max_fds = r.gauge("process_max_fds", "Maximum number of open file descriptors.");
  auto& heap = r.gauge(
      "gpu_partitioner_heap_bytes",
      "The heap as glibc's allocator holds it, by state: in_use, what the operator's objects "
      "take now; free, what they freed and the allocator keeps rather than returns to the "
      "kernel (the operator trims it every 10 s).",
      {"state"});
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  const double boot = parse_boot_time(read_file("/proc/stat")).value_or(0);
  r.add_collector([&, ticks, page, boot] {
    if (auto p = parse_proc_stat(read_file("/proc/self/stat"), ticks, page, boot)) {
      cpu.set({}, p->cpu_seconds);
      resident.set({}, p->resident_bytes);
      virt.set({}, p->virtual_bytes);
      started.set({}, p->start_time_seconds);
    }
    if (auto n = open_fds())
      fds.set({}, *n);
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0)
      max_fds.set({}, static_cast<double>(limit.rlim_cur));
#if GP_GLIBC_HEAP
    // Every arena's figures summed: uordblks is what is allocated in the arenas, hblkhd
    // what is allocated in chunks of their own mmap, fordblks what is free in the arenas.
    const struct mallinfo2 m = mallinfo2();
    heap.set({"in_use"}, static_cast<double>(m.uordblks + m.hblkhd));
    heap.set({"free"}, static_cast<double>(m.fordblks));
#else
    (void)heap;
#endif
  });
}

} // namespace gpu_partitioner::metrics
