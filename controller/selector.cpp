#include "controller/selector.hpp"

#include <algorithm>

namespace gpu_partitioner::controller {

bool matches(const protocol::label_selector& selector,
             const std::map<std::string, std::string>& labels) {
  for (const auto& [k, v] : selector.match_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v)
      return false;
  }
  using op = protocol::selector_operator;
  for (const auto& r : selector.match_expressions) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end();
    const bool in =
        has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    switch (r.op) {
    case op::in:
      if (!in)
        return false;
      break;
    case op::not_in:
      if (in)
        return false;
      break;
    case op::exists:
      if (!has)
        return false;
      break;
    case op::does_not_exist:
      if (has)
        return false;
      break;
    }
  }
  return true;
}

bool is_empty(const protocol::label_selector& selector) {
  return selector.match_labels.empty() && selector.match_expressions.empty();
}

} // namespace gpu_partitioner::controller
