#pragma once

#include "protocol/label_selector.hpp"

#include <map>
#include <string>

namespace gpu_partitioner::controller {

/// Whether `labels` satisfy a metav1.LabelSelector. An empty selector matches
/// everything (as Kubernetes defines it); callers that must not select everything by
/// accident check `is_empty` themselves.
bool matches(const protocol::label_selector& selector,
             const std::map<std::string, std::string>& labels);

bool is_empty(const protocol::label_selector& selector);

} // namespace gpu_partitioner::controller
