#pragma once

#include "kube/client.hpp"
#include "kube/watch_protocol.hpp"
#include "kube/watch_stream.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>

namespace gpu_partitioner::kube {

/// One change delivered to the consumer. `object` is null for a deletion found by a
/// relist (only the key is known then); it is valid only during the callback.
struct watch_delivery {
  event_type type = event_type::added;
  object_key key;
  std::string resource_version;
  const rapidjson::Value* object = nullptr;
};

/// The consumer of a list+watch loop. Called on the loop's thread.
class watch_handler {
public:
  virtual ~watch_handler() = default;
  virtual void on_change(const watch_delivery& change) = 0;
  /// Everything listed so far has been delivered: the view is complete.
  virtual void on_synced() {}
  /// A stream with may_be_absent whose resource is not served (404), or not granted (403:
  /// `forbidden`): it has listed nothing, once. By default the same as a sync.
  virtual void on_absent(bool forbidden) {
    (void)forbidden;
    on_synced();
  }
  /// The loop relisted or backed off; `note` says why.
  virtual void on_restart(const std::string& note, bool relist) {
    (void)note;
    (void)relist;
  }
  /// A list or watch request failed with `error` (not called when the loop is stopped);
  /// on_restart follows with what the loop does about it. A TooLarge error names the limit
  /// and recurs until the object behind it shrinks or goes, so it deserves more than a
  /// restart's note.
  virtual void on_error(const failure& error) { (void)error; }
};

struct list_watch_options {
  resource what;
  /// Empty: all namespaces (or a cluster-scoped resource).
  std::string ns;
  std::string label_selector;
  std::string field_selector;
  /// Halved after a page too large to read (see http_client::set_max_body), down to 1.
  long long page_size = 500;
  /// Server-side watch timeout; the loop resumes from the last resourceVersion after it.
  std::chrono::seconds watch_timeout{300};
  /// Nothing at all (not even a bookmark) for this long means a dead connection.
  std::chrono::seconds idle_timeout{120};
  watch_backoff backoff;
  /// The longest watch event read. A longer one ends the watch with a TooLarge error
  /// before it is buffered whole, and the loop lists again after a back-off.
  std::size_t max_event_bytes = default_max_event_bytes;
  /// The resource may not be served (an API group the cluster does not offer) or not be
  /// granted: a list answered 404 or 403 reports the view synced, empty, once (the
  /// restart note says why), and the loop keeps trying.
  bool may_be_absent = false;
};

/// Drives `watch_step` with real requests: lists, watches, resumes, relists after
/// 410 Gone, backs off after failures. Blocks in `run` until `abort` is set.
class list_watch {
public:
  list_watch(client& api, list_watch_options options, watch_handler& handler)
      : api_(api), options_(std::move(options)), handler_(handler) {}

  /// Returns when `abort` is set (within about a second).
  void run(const std::atomic<bool>& abort);

  const watch_state& state() const { return state_; }

private:
  void apply(const watch_output& out, const std::atomic<bool>& abort);
  watch_output do_list(const std::string& continue_token);
  watch_output do_watch(const std::string& resource_version, const std::atomic<bool>& abort);
  /// Reports a failed request to the handler and steps the protocol with it.
  watch_output failed(const failure& error);

  client& api_;
  list_watch_options options_;
  watch_handler& handler_;
  watch_state state_;
  bool absent_reported_ = false;
};

} // namespace gpu_partitioner::kube
