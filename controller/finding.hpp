#pragma once

#include <string>

namespace gpu_partitioner::controller {

/// Why a node may not start, or had to stop: the reason a condition carries (CamelCase,
/// for machines and alerts) and the message people read. Kept apart, so that no reader
/// has to split a sentence to find its reason.
struct finding {
  std::string reason;
  std::string message;

  bool empty() const { return reason.empty(); }
  /// "Reason: message": an item's lastError, a dry run's findings, an Event's text.
  std::string text() const { return empty() ? message : reason + ": " + message; }
  bool operator==(const finding& o) const { return reason == o.reason && message == o.message; }
};

} // namespace gpu_partitioner::controller
