#include "protocol/resource_version.hpp"

namespace gpu_partitioner::protocol {

std::optional<int> compare_resource_versions(const std::string& a, const std::string& b) {
  auto valid = [](const std::string& v) {
    if (v.empty() || v[0] == '0')
      return false;
    for (char c : v)
      if (c < '0' || c > '9')
        return false;
    return true;
  };
  if (!valid(a) || !valid(b))
    return std::nullopt;
  if (a.size() != b.size())
    return a.size() < b.size() ? -1 : 1;
  const int c = a.compare(b);
  return c < 0 ? -1 : c > 0 ? 1 : 0;
}

} // namespace gpu_partitioner::protocol
