#pragma once

#include "kube/client.hpp"

#include <chrono>
#include <functional>
#include <list>
#include <map>
#include <string>

namespace gpu_partitioner::kube {

/// The object an Event is about.
struct object_reference {
  std::string api_version;
  std::string kind;
  std::string ns;
  std::string name;
  std::string uid;
};

struct event_spec {
  object_reference regarding;
  /// "Normal" or "Warning".
  std::string type = "Normal";
  /// CamelCase, machine-readable: "DrainBlocked".
  std::string reason;
  std::string message;
  /// source.host: the node the reporting component runs on ("" for none).
  std::string host;
};

/// Writes core/v1 Events, aggregating repeats: the same event about the same object
/// within `window` bumps `count` and `lastTimestamp` of the Event already written
/// instead of creating one object per repeat (as kubectl describe shows "x5 over 2m").
class event_recorder {
public:
  using clock = std::chrono::system_clock;

  event_recorder(client& api, std::string component, std::string instance,
                 std::chrono::seconds window = std::chrono::minutes(10),
                 std::size_t remembered = 4096);

  /// Records one occurrence. Returns the Event's name, or the error.
  result<std::string> record(const event_spec& event);

  /// For tests.
  void set_clock(std::function<clock::time_point()> now) { now_ = std::move(now); }

private:
  /// The Event's identity (regarding kind, namespace, name, uid; type, reason, message) in
  /// one string, each field prefixed by its length: one allocation per remembered Event,
  /// not seven (two recorders remember 8,192 Events in a large rollout).
  using key = std::string;
  struct entry {
    std::string ns;
    std::string name;
    long long count = 0;
    clock::time_point first;
    clock::time_point last;
    /// Where the entry is in ages_, which points at the key (map keys do not move).
    std::list<const key*>::iterator age;
  };

  result<std::string> create(const event_spec& e, const std::string& ns, clock::time_point now);

  client& api_;
  std::string component_;
  std::string instance_;
  std::chrono::seconds window_;
  std::size_t remembered_;
  std::map<key, entry> cache_;
  std::list<const key*> ages_;
  std::function<clock::time_point()> now_ = [] { return clock::now(); };
};

} // namespace gpu_partitioner::kube
