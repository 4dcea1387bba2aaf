// The process's own figures: /proc/<pid>/stat as the kernel writes it (a command name with
// spaces and parentheses among them), and the families as /metrics shows them.
#include "metrics/process.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <sstream>
#include <string>

#include <unistd.h>

using namespace gpu_partitioner::metrics;

namespace {

// A line of /proc/<pid>/stat with the given command name: utime 250 and stime 150 ticks,
// started 1000 ticks after boot, 200 MiB virtual, 5,000 pages resident.
std::string stat_line(const std::string& comm) {
  return "4242 (" + comm +
         ") S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 150 0 0 20 0 30 0 1000 209715200 5000 "
         "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
}

// The value of the sample `series` (its name and labels as exposed), or -1.
double sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(series + " ", 0) == 0)
      return std::strtod(line.c_str() + series.size() + 1, nullptr);
  return -1;
}

} // namespace

BOOST_AUTO_TEST_SUITE(process_metrics)

BOOST_AUTO_TEST_CASE(a_stat_line_gives_cpu_start_and_memory) {
  const auto p = parse_proc_stat(stat_line("gpu-partitioner"), 100, 4096, 1'700'000'000);
  BOOST_REQUIRE(p);
  BOOST_TEST(p->cpu_seconds == 4.0);
  BOOST_TEST(p->start_time_seconds == 1'700'000'010.0);
  BOOST_TEST(p->virtual_bytes == 209715200.0);
  BOOST_TEST(p->resident_bytes == 5000.0 * 4096);
}

BOOST_AUTO_TEST_CASE(a_command_name_with_spaces_and_parentheses_does_not_shift_the_fields) {
  const auto p = parse_proc_stat(stat_line("a) b (c ) 9 9"), 100, 4096, 0);
  BOOST_REQUIRE(p);
  BOOST_TEST(p->cpu_seconds == 4.0);
  BOOST_TEST(p->resident_bytes == 5000.0 * 4096);
}

BOOST_AUTO_TEST_CASE(a_line_that_is_not_a_stat_line_gives_nothing) {
  BOOST_TEST(!parse_proc_stat("", 100, 4096, 0));
  BOOST_TEST(!parse_proc_stat("4242 gpu-partitioner S 1 2 3", 100, 4096, 0));
  BOOST_TEST(!parse_proc_stat("4242 (x) S 1 2 3", 100, 4096, 0));
  std::string bad = stat_line("x");
  bad.replace(bad.find(" 250 "), 5, " 2x0 ");
  BOOST_TEST(!parse_proc_stat(bad, 100, 4096, 0));
  BOOST_TEST(!parse_proc_stat(stat_line("x"), 0, 4096, 0));
}

BOOST_AUTO_TEST_CASE(the_boot_time_is_the_btime_line) {
  BOOST_TEST(parse_boot_time("cpu  1 2 3\nintr 5\nbtime 1765000000\nprocesses 9\n").value() ==
             1765000000.0);
  BOOST_TEST(!parse_boot_time("cpu  1 2 3\nbtimex 5\n"));
  BOOST_TEST(!parse_boot_time("btime soon\n"));
}

BOOST_AUTO_TEST_CASE(this_process_is_read_when_metrics_are_exposed) {
  registry r;
  register_process_metrics(r);
  const std::string text = r.expose();
  BOOST_TEST(text.find("# TYPE process_cpu_seconds_total counter") != std::string::npos);
  BOOST_TEST(sample(text, "process_resident_memory_bytes") > 1e6);
  BOOST_TEST(sample(text, "process_virtual_memory_bytes") >=
             sample(text, "process_resident_memory_bytes"));
  BOOST_TEST(sample(text, "process_open_fds") >= 3);
  BOOST_TEST(sample(text, "process_max_fds") >= sample(text, "process_open_fds"));
  const double started = sample(text, "process_start_time_seconds");
  const double now = static_cast<double>(std::time(nullptr));
  BOOST_TEST(started > now - 3600);
  BOOST_TEST(started <= now + 1);
}

BOOST_AUTO_TEST_CASE(the_heap_figures_follow_what_is_allocated_and_freed) {
  registry r;
  register_process_metrics(r);
  if (!heap_figures_available()) {
    // A sanitizer's allocator, which glibc does not see: no figures rather than wrong ones.
    BOOST_TEST(sample(r.expose(), "gpu_partitioner_heap_bytes{state=\"in_use\"}") == -1);
    return;
  }
  const double before = sample(r.expose(), "gpu_partitioner_heap_bytes{state=\"in_use\"}");
  BOOST_TEST(before > 0);
  constexpr std::size_t size = 64 << 20;
  auto block = std::make_unique<char[]>(size);
  std::memset(block.get(), 1, size);
  const double during = sample(r.expose(), "gpu_partitioner_heap_bytes{state=\"in_use\"}");
  BOOST_TEST(during >= before + size);
  block.reset();
  const double after = sample(r.expose(), "gpu_partitioner_heap_bytes{state=\"in_use\"}");
  BOOST_TEST(after < during - size / 2);
  BOOST_TEST(sample(r.expose(), "gpu_partitioner_heap_bytes{state=\"free\"}") >= 0);
}

BOOST_AUTO_TEST_SUITE_END()
