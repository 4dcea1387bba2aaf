#include "actors/log.hpp"

#include "protocol/printable.hpp"
#include "protocol/timestamp.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace gpu_partitioner::actors {

namespace {

std::atomic<int> threshold{static_cast<int>(log_level::info)};
std::mutex out_mutex;

const char* name_of(log_level l) {
  switch (l) {
  case log_level::debug:
    return "debug";
  case log_level::info:
    return "info";
  case log_level::warning:
    return "warning";
  case log_level::error:
    return "error";
  }
  return "info";
}

} // namespace

std::string log_value(const std::string& v) {
  constexpr protocol::printable_style in_quotes{false, true};
  std::string escaped = protocol::printable(v, in_quotes);
  if (!v.empty() && escaped == v && v.find_first_of(" =") == std::string::npos)
    return v;
  return "\"" + escaped + "\"";
}

void set_log_level(log_level level) {
  threshold = static_cast<int>(level);
}

bool parse_log_level(const std::string& text, log_level& out) {
  for (auto l : {log_level::debug, log_level::info, log_level::warning, log_level::error})
    if (text == name_of(l)) {
      out = l;
      return true;
    }
  return false;
}

void log_at(log_level level, const std::string& message, const std::string& plan,
            const std::string& node) {
  if (static_cast<int>(level) < threshold.load())
    return;
  std::string line = "time=" + protocol::format_time(protocol::wall_clock::now()) +
                     " level=" + name_of(level) + " msg=" + log_value(message);
  if (!plan.empty())
    line += " plan=" + log_value(plan);
  if (!node.empty())
    line += " node=" + log_value(node);
  std::lock_guard<std::mutex> lock(out_mutex);
  std::fprintf(stderr, "%s\n", line.c_str());
}

} // namespace gpu_partitioner::actors
