#pragma once

#include "kube/error.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace gpu_partitioner::kube {

/// Where a list+watch loop stands. The loop is this enum plus `watch_step`: the I/O
/// around it (requests, sleeping) lives in `list_watch`, so every transition is tested
/// without a server.
enum class watch_phase {
  /// Needs a full list (at start, after 410 Gone, after a watch cannot resume).
  listing,
  /// Streaming from `resource_version`.
  watching,
  /// Waiting `delay` before the next request, after a failure.
  backing_off,
};

const char* to_string(watch_phase phase);

enum class event_type { added, modified, deleted, bookmark, error };

/// The identity of an object in a watched collection.
struct object_key {
  std::string namespace_;
  std::string name;
  bool operator<(const object_key& o) const {
    return namespace_ != o.namespace_ ? namespace_ < o.namespace_ : name < o.name;
  }
  bool operator==(const object_key& o) const {
    return namespace_ == o.namespace_ && name == o.name;
  }
};

/// What the driver tells the step function. Objects are described by their key and
/// resourceVersion only; their bodies stay with the driver.
struct watch_input {
  enum class kind {
    /// One page of a list: `items`, `continue_token` ("" on the last page) and the
    /// list's `resource_version`.
    list_page,
    /// One event off the stream (`event`, `item`). An ERROR event carries `code`.
    event,
    /// The stream ended normally (server-side timeoutSeconds).
    stream_closed,
    /// A request failed before or during the stream (`failure`).
    request_failed,
    /// The back-off delay has passed.
    timer_fired,
  };
  struct item {
    object_key key;
    std::string resource_version;
  };
  kind what = kind::timer_fired;
  std::vector<item> items;
  std::string continue_token;
  std::string resource_version;
  event_type event = event_type::added;
  item object;
  int code = 0;
  kube::failure failure;
  /// When the driver saw it (steady clock): how long a watch lasted after its list.
  std::chrono::steady_clock::time_point now{};
};

/// What the step function asks for: deliver these changes, then make this request.
struct watch_output {
  /// For a list page: which of its items to deliver and as what (index, added|modified);
  /// unchanged items are not delivered again.
  std::vector<std::pair<std::size_t, event_type>> deliver_items;
  /// Deliver the current stream event, as this type: the consumer's view decides, not
  /// the server's word (an ADDED for a key the consumer knows is a modification to it).
  std::optional<event_type> deliver_as;
  /// Objects that vanished while we were not watching (found missing by a relist).
  std::vector<object_key> deleted;
  /// The collection is now fully known (end of a list): caches are synced.
  bool synced = false;
  enum class request { none, list, watch, sleep } next = request::none;
  /// For `list`: the continue token ("" starts a new list).
  std::string continue_token;
  /// For `watch`: the resourceVersion to resume from.
  std::string resource_version;
  /// For `sleep`.
  std::chrono::milliseconds delay{0};
  /// Why the loop is relisting or backing off, for logs and metrics.
  std::string note;
  bool relist = false;
};

/// The complete state of one list+watch loop.
struct watch_state {
  watch_phase phase = watch_phase::listing;
  std::string resource_version;
  /// What the consumer has been told exists, with the resourceVersion it was told.
  std::map<object_key, std::string> known;
  /// Keys seen by the list in progress, to find deletions at its end.
  std::map<object_key, bool> listed;
  /// Consecutive failures, for back-off.
  int failures = 0;
  /// What to do once a back-off ends.
  bool relist_after_backoff = true;
  /// When the last list ended, and how many 410 Gone in a row came within `quiet` of
  /// the list before them: a server that keeps answering 410 is not listed again at once
  /// for ever (every list of pods is the whole cluster's).
  std::optional<std::chrono::steady_clock::time_point> listed_at;
  int gone_streak = 0;
  /// How often the configured page size has been halved because a page was too large to
  /// read. Never undone: the collection has shown that it holds large objects.
  int page_halvings = 0;
  std::mt19937_64 rng{0x5eed};
};

struct watch_backoff {
  std::chrono::milliseconds base{500};
  std::chrono::milliseconds cap{30000};
  /// A 410 Gone this long or longer after the list it follows is the ordinary kind (etcd
  /// compacted past a watch): relisted at once. Sooner, it counts toward a streak; from
  /// the second in a row the relist waits base, then twice as long each time, up to cap
  /// (client-go's reflector backs off the same way, resetting after two quiet minutes).
  std::chrono::milliseconds quiet{60000};
};

/// The one transition function of the list+watch protocol.
watch_output watch_step(watch_state& state, const watch_input& input,
                        const watch_backoff& backoff = {});

/// The first request of a fresh loop.
watch_output watch_start(watch_state& state);

/// The page size to list with: `configured` halved once per page that was too large, but
/// at least 1; 0 (no paging) stays 0.
long long page_size(const watch_state& state, long long configured);

} // namespace gpu_partitioner::kube
