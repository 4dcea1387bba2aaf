#include "controller/rollout_governor.hpp"

namespace gpu_partitioner::controller {

const char* to_string(hold_reason reason) {
  switch (reason) {
  case hold_reason::none:
    return "None";
  case hold_reason::paused:
    return "Paused";
  case hold_reason::failed_node:
    return "NodeFailed";
  case hold_reason::max_parallel:
    return "MaxParallelReached";
  case hold_reason::max_unavailable:
    return "MaxUnavailableReached";
  case hold_reason::no_candidates:
    return "NothingToStart";
  case hold_reason::not_allowed:
    return "NotAllowedYet";
  }
  return "None";
}

void rollout_governor::observe(const std::string& node, const governor_node& facts) {
  nodes_[node] = facts;
  if (facts.in_flight)
    tokens_.insert(node);
}

void rollout_governor::forget(const std::string& node) {
  nodes_.erase(node);
  tokens_.erase(node);
}

void rollout_governor::release(const std::string& node) {
  tokens_.erase(node);
  auto it = nodes_.find(node);
  if (it != nodes_.end()) {
    // Done: neither in flight nor asking, until an observation says otherwise.
    it->second.in_flight = false;
    it->second.wants_token = false;
  }
}

std::int32_t rollout_governor::in_flight() const {
  return static_cast<std::int32_t>(tokens_.size());
}

bool rollout_governor::counts_unavailable(const std::string& node,
                                          const governor_node& facts) const {
  if (facts.unavailable || facts.failed)
    return true;
  if (facts.soaking)
    return false;
  return facts.in_flight || tokens_.count(node) > 0;
}

std::int32_t rollout_governor::unavailable() const {
  std::int32_t n = 0;
  for (const auto& [name, facts] : nodes_)
    if (counts_unavailable(name, facts))
      ++n;
  return n;
}

std::int32_t rollout_governor::failed() const {
  std::int32_t n = 0;
  for (const auto& [name, facts] : nodes_)
    if (facts.failed)
      ++n;
  return n;
}

hold_reason rollout_governor::check(const std::string& candidate,
                                    const governor_node& facts) const {
  if (limits_.paused)
    return hold_reason::paused;
  if (failed() > limits_.max_failures)
    return hold_reason::failed_node;
  if (!allowed(candidate))
    return hold_reason::not_allowed;
  if (in_flight() + 1 > limits_.max_parallel)
    return hold_reason::max_parallel;
  // A node that is already unavailable (an admin cordoned it) takes no more capacity
  // down by starting, so it does not add one.
  const std::int32_t after = unavailable() + (counts_unavailable(candidate, facts) ? 0 : 1);
  if (after > max_unavailable())
    return hold_reason::max_unavailable;
  return hold_reason::none;
}

std::vector<std::string> rollout_governor::grant(const std::string* before) {
  // What check() decides for each candidate in name order, with the counts kept as
  // tokens are granted instead of recounted per candidate: one pass over the nodes, and
  // none when the rollout is full (a plan of a thousand nodes asks this on every report).
  std::vector<std::string> granted;
  if (limits_.paused || in_flight() >= limits_.max_parallel)
    return granted;
  std::int32_t unavailable_now = 0;
  std::int32_t failed_now = 0;
  for (const auto& [name, facts] : nodes_) {
    if (facts.failed && ++failed_now > limits_.max_failures)
      return granted;
    if (counts_unavailable(name, facts))
      ++unavailable_now;
  }
  const std::int32_t limit = max_unavailable();
  for (const auto& [name, facts] : nodes_) {
    if (before != nullptr && name >= *before)
      break;
    if (!facts.wants_token || tokens_.count(name) > 0 || facts.failed || !allowed(name))
      continue;
    if (in_flight() + 1 > limits_.max_parallel)
      break;
    const bool adds = !counts_unavailable(name, facts);
    if (unavailable_now + (adds ? 1 : 0) > limit)
      continue;
    tokens_.insert(name);
    granted.push_back(name);
    if (adds)
      ++unavailable_now;
  }
  return granted;
}

hold_reason rollout_governor::holding() const {
  hold_reason first = hold_reason::no_candidates;
  for (const auto& [name, facts] : nodes_) {
    if (!facts.wants_token || tokens_.count(name) > 0 || facts.failed)
      continue;
    hold_reason r = check(name, facts);
    if (r == hold_reason::none)
      return r;
    if (first == hold_reason::no_candidates)
      first = r;
  }
  return first;
}

} // namespace gpu_partitioner::controller
