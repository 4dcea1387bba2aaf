#include "kube/list_watch.hpp"

#include "kube/watch_stream.hpp"

#include <thread>

namespace gpu_partitioner::kube {

namespace {

void sleep_unless_aborted(std::chrono::milliseconds delay, const std::atomic<bool>& abort) {
  const auto until = std::chrono::steady_clock::now() + delay;
  while (!abort.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(
        std::chrono::milliseconds(100), std::chrono::duration_cast<std::chrono::milliseconds>(
                                            until - std::chrono::steady_clock::now())));
}

} // namespace

void list_watch::run(const std::atomic<bool>& abort) {
  watch_output next = watch_start(state_);
  while (!abort.load()) {
    if (!next.note.empty())
      handler_.on_restart(next.note, next.relist);
    switch (next.next) {
    case watch_output::request::list:
      next = do_list(next.continue_token);
      break;
    case watch_output::request::watch:
      next = do_watch(next.resource_version, abort);
      break;
    case watch_output::request::sleep: {
      sleep_unless_aborted(next.delay, abort);
      watch_input timer;
      timer.what = watch_input::kind::timer_fired;
      timer.now = std::chrono::steady_clock::now();
      next = watch_step(state_, timer, options_.backoff);
      break;
    }
    case watch_output::request::none:
      // Should not happen; start over rather than spin.
      next = watch_start(state_);
      break;
    }
  }
}

watch_output list_watch::do_list(const std::string& continue_token) {
  list_options o;
  o.label_selector = options_.label_selector;
  o.field_selector = options_.field_selector;
  o.limit = page_size(state_, options_.page_size);
  o.continue_token = continue_token;
  auto page = api_.list_page(options_.what, options_.ns, o);
  if (!page) {
    const auto kind = page.error().kind;
    if (options_.may_be_absent &&
        (kind == error_kind::not_found || kind == error_kind::forbidden) && !absent_reported_) {
      absent_reported_ = true;
      handler_.on_absent(kind == error_kind::forbidden);
    }
    return failed(page.error());
  }
  const rapidjson::Document& doc = page.value();
  watch_input in;
  in.what = watch_input::kind::list_page;
  in.now = std::chrono::steady_clock::now();
  in.continue_token = [&] {
    const auto* c = find_path(doc, {"metadata", "continue"});
    return c != nullptr && c->IsString() ? std::string(c->GetString()) : std::string{};
  }();
  {
    const auto* rv = find_path(doc, {"metadata", "resourceVersion"});
    in.resource_version = rv != nullptr && rv->IsString() ? rv->GetString() : "";
  }
  std::vector<const rapidjson::Value*> bodies;
  if (const auto* items = find_path(doc, {"items"}); items != nullptr && items->IsArray()) {
    for (const auto& item : items->GetArray()) {
      watch_input::item entry;
      read_identity(item, entry.key, entry.resource_version);
      in.items.push_back(std::move(entry));
      bodies.push_back(&item);
    }
  }
  watch_output out = watch_step(state_, in, options_.backoff);
  for (const auto& [index, type] : out.deliver_items) {
    watch_delivery d;
    d.type = type;
    d.key = in.items[index].key;
    d.resource_version = in.items[index].resource_version;
    d.object = bodies[index];
    handler_.on_change(d);
  }
  for (const auto& key : out.deleted) {
    watch_delivery d;
    d.type = event_type::deleted;
    d.key = key;
    handler_.on_change(d);
  }
  if (out.synced)
    handler_.on_synced();
  return out;
}

watch_output list_watch::do_watch(const std::string& resource_version,
                                  const std::atomic<bool>& abort) {
  query q;
  q.add("watch", "1")
      .add("resourceVersion", resource_version)
      .add("allowWatchBookmarks", "true")
      .add("timeoutSeconds", static_cast<long long>(options_.watch_timeout.count()))
      .add("labelSelector", options_.label_selector)
      .add("fieldSelector", options_.field_selector);
  http_request req;
  req.path = options_.what.collection_path(options_.ns) + q.str();
  req.timeout = std::chrono::milliseconds(0);
  req.resource = options_.what.plural;

  line_splitter lines(options_.max_event_bytes);
  watch_event event;
  std::optional<watch_output> stop;
  auto on_data = [&](std::string_view chunk) {
    const bool framed = lines.feed(chunk, [&](std::string& line) {
      if (stop)
        return;
      watch_input in;
      in.what = watch_input::kind::event;
      in.now = std::chrono::steady_clock::now();
      auto decoded = decode_event(line, event);
      if (!decoded) {
        stop = failed(decoded.error());
        return;
      }
      in.event = event.type;
      in.code = event.code;
      in.object.key = event.key;
      in.object.resource_version = event.resource_version;
      watch_output out = watch_step(state_, in, options_.backoff);
      if (out.deliver_as) {
        watch_delivery d;
        d.type = *out.deliver_as;
        d.key = event.key;
        d.resource_version = event.resource_version;
        d.object = event.object;
        handler_.on_change(d);
      }
      if (out.next != watch_output::request::none)
        stop = std::move(out);
    });
    if (!framed && !stop)
      stop = failed(too_large_error(
          "watch event from GET " + req.path.substr(0, req.path.find('?')), lines.max_line()));
    return !stop.has_value();
  };
  auto streamed = api_.http().stream(req, on_data, abort, options_.idle_timeout);
  if (stop)
    return std::move(*stop);
  if (!streamed)
    return failed(streamed.error());
  watch_input in;
  in.what = watch_input::kind::stream_closed;
  in.now = std::chrono::steady_clock::now();
  return watch_step(state_, in, options_.backoff);
}

watch_output list_watch::failed(const failure& error) {
  if (error.kind != error_kind::aborted)
    handler_.on_error(error);
  watch_input in;
  in.what = watch_input::kind::request_failed;
  in.now = std::chrono::steady_clock::now();
  in.failure = error;
  return watch_step(state_, in, options_.backoff);
}

} // namespace gpu_partitioner::kube
