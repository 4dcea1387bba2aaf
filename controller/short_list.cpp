#include "controller/short_list.hpp"

#include <algorithm>

namespace gpu_partitioner::controller {

std::string comma_list(const std::vector<std::string>& names, std::size_t shown,
                       std::size_t total) {
  total = std::max(total, names.size());
  std::string out;
  std::size_t n = 0;
  for (; n < names.size() && n < shown; ++n)
    out += (n ? ", " : "") + names[n];
  if (n < total)
    out += (n ? " and " : "") + std::to_string(total - n) + " more";
  return out;
}

std::string listed(const std::vector<std::string>& parts, std::size_t total) {
  constexpr std::size_t max_parts = 10;
  constexpr std::size_t max_chars = 4000;
  total = std::max(total, parts.size());
  std::string out;
  std::size_t shown = 0;
  for (const auto& p : parts) {
    if (shown == max_parts || out.size() + p.size() > max_chars)
      break;
    out += (out.empty() ? "" : "; ") + p;
    ++shown;
  }
  if (shown < total)
    out += (out.empty() ? "" : "; ") + std::string("... and ") + std::to_string(total - shown) +
           " more";
  return out;
}

} // namespace gpu_partitioner::controller
