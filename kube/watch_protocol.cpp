#include "kube/watch_protocol.hpp"

#include <algorithm>

namespace gpu_partitioner::kube {

const char* to_string(watch_phase phase) {
  switch (phase) {
  case watch_phase::listing:
    return "listing";
  case watch_phase::watching:
    return "watching";
  case watch_phase::backing_off:
    return "backing_off";
  }
  return "unknown";
}

namespace {

watch_output list_from_start(watch_state& state, std::string note) {
  state.phase = watch_phase::listing;
  state.listed.clear();
  watch_output out;
  out.next = watch_output::request::list;
  out.relist = true;
  out.note = std::move(note);
  return out;
}

watch_output watch_from(watch_state& state) {
  state.phase = watch_phase::watching;
  watch_output out;
  out.next = watch_output::request::watch;
  out.resource_version = state.resource_version;
  return out;
}

/// Enough halvings to bring any page size up to 65536 down to one object.
constexpr int max_page_halvings = 16;

// Sleeps before the next request (a relist if `relist`): half to all of base doubled
// `doublings` times, at most cap (cap itself when `longest`).
watch_output sleep_for(watch_state& state, const watch_backoff& backoff, bool relist, int doublings,
                       std::string note, bool longest = false) {
  state.phase = watch_phase::backing_off;
  state.relist_after_backoff = relist;
  const int shift = std::min(doublings, 16);
  const long long cap =
      longest ? backoff.cap.count()
              : std::min<long long>(backoff.cap.count(), backoff.base.count() << shift);
  std::uniform_int_distribution<long long> jitter(cap / 2, std::max(cap, 1LL));
  watch_output out;
  out.next = watch_output::request::sleep;
  out.delay = std::chrono::milliseconds(jitter(state.rng));
  out.note = std::move(note);
  return out;
}

// After a failure: the back-off grows with the failures in a row.
watch_output back_off(watch_state& state, const watch_backoff& backoff, bool relist,
                      std::string note, bool longest = false) {
  ++state.failures;
  return sleep_for(state, backoff, relist, state.failures - 1, std::move(note), longest);
}

// 410 Gone: list again, at once unless the server has answered so soon after each list
// that it may go on doing so (see watch_backoff::quiet).
watch_output gone(watch_state& state, const watch_input& in, const watch_backoff& backoff,
                  std::string note) {
  const bool soon = state.listed_at && in.now - *state.listed_at < backoff.quiet;
  state.gone_streak = soon ? state.gone_streak + 1 : 0;
  if (state.gone_streak < 2)
    return list_from_start(state, std::move(note));
  return sleep_for(state, backoff, true, state.gone_streak - 2,
                   note + " (" + std::to_string(state.gone_streak) +
                       " in a row soon after a list: relisting after a back-off)");
}

watch_output on_list_page(watch_state& state, const watch_input& in) {
  watch_output out;
  for (std::size_t i = 0; i < in.items.size(); ++i) {
    const auto& item = in.items[i];
    state.listed[item.key] = true;
    auto known = state.known.find(item.key);
    if (known == state.known.end()) {
      out.deliver_items.emplace_back(i, event_type::added);
      state.known.emplace(item.key, item.resource_version);
    } else if (known->second != item.resource_version) {
      out.deliver_items.emplace_back(i, event_type::modified);
      known->second = item.resource_version;
    }
  }
  if (!in.continue_token.empty()) {
    out.next = watch_output::request::list;
    out.continue_token = in.continue_token;
    return out;
  }
  // The last page: whatever we knew and the list no longer has was deleted while we
  // were away.
  for (auto it = state.known.begin(); it != state.known.end();) {
    if (state.listed.count(it->first) == 0) {
      out.deleted.push_back(it->first);
      it = state.known.erase(it);
    } else {
      ++it;
    }
  }
  state.listed.clear();
  state.resource_version = in.resource_version;
  state.failures = 0;
  state.listed_at = in.now;
  out.synced = true;
  auto next = watch_from(state);
  out.next = next.next;
  out.resource_version = next.resource_version;
  return out;
}

watch_output on_event(watch_state& state, const watch_input& in, const watch_backoff& backoff) {
  if (in.event == event_type::error) {
    if (in.code == 410)
      return gone(state, in, backoff,
                  "resourceVersion " + state.resource_version +
                      " is too old (410 Gone): relisting");
    return back_off(state, backoff, false,
                    "watch ERROR event (code " + std::to_string(in.code) + ")");
  }
  watch_output out;
  if (!in.object.resource_version.empty())
    state.resource_version = in.object.resource_version;
  state.failures = 0;
  switch (in.event) {
  case event_type::bookmark:
    break;
  case event_type::deleted:
    // Unknown means a relist already reported it gone: do not report it twice.
    if (state.known.erase(in.object.key) > 0)
      out.deliver_as = event_type::deleted;
    break;
  default: {
    auto known = state.known.find(in.object.key);
    // After a relist the stream can repeat what the list already delivered.
    if (known != state.known.end() && known->second == in.object.resource_version)
      break;
    out.deliver_as = known == state.known.end() ? event_type::added : event_type::modified;
    state.known[in.object.key] = in.object.resource_version;
    break;
  }
  }
  return out;
}

} // namespace

watch_output watch_start(watch_state& state) {
  return list_from_start(state, "initial list");
}

long long page_size(const watch_state& state, long long configured) {
  if (configured <= 0)
    return configured;
  return std::max(1LL, configured >> state.page_halvings);
}

watch_output watch_step(watch_state& state, const watch_input& in, const watch_backoff& backoff) {
  using k = watch_input::kind;
  switch (in.what) {
  case k::list_page:
    if (state.phase != watch_phase::listing)
      return {};
    return on_list_page(state, in);
  case k::event:
    if (state.phase != watch_phase::watching)
      return {};
    return on_event(state, in, backoff);
  case k::stream_closed:
    if (state.phase != watch_phase::watching)
      return {};
    // A normal end (timeoutSeconds): resume where we were, at once.
    return watch_from(state);
  case k::request_failed:
    if (in.failure.kind == error_kind::gone)
      return gone(state, in, backoff, "410 Gone: " + in.failure.message);
    if (in.failure.kind == error_kind::aborted)
      return {};
    if (in.failure.kind == error_kind::too_large) {
      // Resuming a watch from the last resourceVersion would replay the event too large to
      // read, so it lists again, past that event. The list that follows succeeds and resets
      // `failures`, so the back-off would never grow: it is the longest at once, or an
      // object that stays too large would have the collection listed again and again after
      // the shortest one.
      if (state.phase != watch_phase::listing)
        return back_off(state, backoff, true, in.failure.describe(), true);
      // A page too large: smaller pages. These failures add up, so the back-off grows.
      state.page_halvings = std::min(state.page_halvings + 1, max_page_halvings);
      return back_off(state, backoff, true, in.failure.describe());
    }
    // A failed list starts over; a failed watch resumes from the last resourceVersion.
    return back_off(state, backoff,
                    state.phase == watch_phase::listing || state.resource_version.empty(),
                    in.failure.describe());
  case k::timer_fired:
    if (state.phase != watch_phase::backing_off)
      return {};
    if (state.relist_after_backoff)
      return list_from_start(state, "retrying list");
    return watch_from(state);
  }
  return {};
}

} // namespace gpu_partitioner::kube
