#include "actors/status_writer.hpp"

#include "actors/event_writer.hpp"

#include "actors/crd_resources.hpp"
#include "actors/executor.hpp"
#include "actors/log.hpp"
#include "actors/messages.hpp"
#include "actors/operator_metrics.hpp"
#include "protocol/json.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>

namespace gpu_partitioner::actors {

namespace {

// One of the status writers: the statuses of the objects routed to it, coalesced per
// object, written in the order the objects first changed, one per message. A status that
// may wait joins that order once status_settle_window has passed since it came, unless a
// status that may not wait replaces it first.
using status_shard_actor = caf::typed_actor<
    caf::reacts_to<status_atom, std::string, protocol::node_partitioning_status>,
    caf::reacts_to<status_atom, later_atom, std::string, protocol::node_partitioning_status>,
    caf::reacts_to<later_atom>,
    caf::replies_to<persist_atom, std::string,
                    protocol::node_partitioning_status>::with<std::string>,
    caf::reacts_to<plan_status_atom, std::string, protocol::partitioning_plan_status>,
    caf::reacts_to<flush_atom>, caf::replies_to<flush_atom, stop_atom>::with<bool>>;

status_shard_actor::behavior_type status_shard(status_shard_actor::pointer self, io_config config,
                                               status_write_hook before_write) {
  struct state {
    explicit state(io_config c) : x(std::move(c)) {}
    executor x;
    // Latest status per object, flushed in the order objects first changed in the window.
    std::map<std::string, protocol::node_partitioning_status> items;
    std::deque<std::string> item_order;
    // Items whose pending status may wait, in the order they came, and when each is due.
    std::deque<std::pair<std::string, std::chrono::steady_clock::time_point>> settling;
    std::map<std::string, protocol::partitioning_plan_status> plans;
    bool flush_pending = false;
    bool settle_pending = false;
    // Takes `item` out of `settling`, if it waits there.
    bool unsettle(const std::string& item) {
      auto it = std::find_if(settling.begin(), settling.end(),
                             [&](const auto& e) { return e.first == item; });
      if (it == settling.end())
        return false;
      settling.erase(it);
      return true;
    }
    // Moves the settling items due by `now` (all of them if `all`) to the flush order.
    void settle(std::chrono::steady_clock::time_point now, bool all) {
      while (!settling.empty() && (all || settling.front().second <= now)) {
        item_order.push_back(settling.front().first);
        settling.pop_front();
      }
    }
  };
  config.connection.lane = kube::request_lane::status;
  auto s = std::make_shared<state>(std::move(config));
  auto schedule = [=] {
    if (!s->flush_pending) {
      s->flush_pending = true;
      self->delayed_send(self, std::chrono::milliseconds(100), flush_atom_v);
    }
  };
  auto schedule_settle = [=] {
    if (!s->settle_pending && !s->settling.empty()) {
      s->settle_pending = true;
      const auto wait = s->settling.front().second - std::chrono::steady_clock::now();
      self->delayed_send(self,
                         std::max(std::chrono::duration_cast<std::chrono::milliseconds>(wait),
                                  std::chrono::milliseconds(1)),
                         later_atom_v);
    }
  };
  // The whole status, replaced in one JSON patch: fields that went away go away too.
  // "" when written (or the object is gone); else the error, and whether to try again
  // (a passing failure), or that it was not sent for want of a token in time.
  struct outcome {
    std::string error;
    bool retry = false;
    bool throttled = false;
  };
  auto write = [=](const kube::resource& r, const std::string& name,
                   const std::string& status) -> outcome {
    if (before_write)
      before_write(name, [self] { return self->mailbox().size(); });
    kube::patch_options o = s->x.manager;
    o.subresource = "status";
    auto done =
        s->x.api.patch(r, "", name, kube::patch_type::json,
                       "[{\"op\":\"add\",\"path\":\"/status\",\"value\":" + status + "}]", o);
    if (!done && done.error().kind == kube::error_kind::throttled)
      return {"", false, true};
    if (!done && done.error().kind != kube::error_kind::not_found) {
      const std::string error = "writing the status of " + name + ": " + done.error().describe();
      log_warning(error);
      return {error, kube::is_retryable(done.error())};
    }
    return {};
  };
  enum class flushed { done, retry_later, throttled };
  // Writes the statuses of up to `batch` objects (oldest change first) and the plans'.
  // A write that failed for a passing reason (the API server away) is kept, not lost: it
  // is written again a second later, unless a newer status replaces it. One that found
  // no token within its patience stops the flush, and it and the rest keep their turn.
  auto write_some = [=](std::size_t batch) {
    flushed result = flushed::done;
    for (std::size_t n = 0; n < batch && !s->item_order.empty(); ++n) {
      const std::string name = s->item_order.front();
      auto it = s->items.find(name);
      const auto o = write(items_resource, name, protocol::to_json(it->second));
      if (o.throttled)
        return flushed::throttled;
      s->item_order.pop_front();
      if (o.retry) {
        s->item_order.push_back(name);
        result = flushed::retry_later;
      } else {
        s->items.erase(it);
      }
    }
    for (auto it = s->plans.begin(); it != s->plans.end();) {
      const auto o = write(plans_resource, it->first, protocol::to_json(it->second));
      if (o.throttled)
        return flushed::throttled;
      if (o.retry) {
        result = flushed::retry_later;
        ++it;
      } else {
        it = s->plans.erase(it);
      }
    }
    return result;
  };
  // A coalesced status waits for its token at most this long, then lets the shard's
  // mailbox be read: a worker's persist that came meanwhile (its node's next step waits
  // for it, in a more urgent lane) goes first, and the flush tries again after it. The
  // status lane can starve for seconds while a wave's cordons and evictions take every
  // token, and a persist must never wait that out behind it.
  constexpr auto flush_patience = std::chrono::milliseconds(50);
  s->x.http.set_patience(flush_patience);
  return {
      [=](status_atom, const std::string& item, const protocol::node_partitioning_status& st) {
        // A status that may not wait takes the place of one that could, and its urgency.
        if (s->items.insert_or_assign(item, st).second || s->unsettle(item))
          s->item_order.push_back(item);
        schedule();
      },
      [=](status_atom, later_atom, const std::string& item,
          const protocol::node_partitioning_status& st) {
        // Pending already: it replaces that status and keeps its turn.
        if (!s->items.insert_or_assign(item, st).second)
          return;
        s->settling.emplace_back(item, std::chrono::steady_clock::now() + status_settle_window);
        schedule_settle();
      },
      [=](later_atom) {
        s->settle_pending = false;
        const auto before = s->item_order.size();
        s->settle(std::chrono::steady_clock::now(), false);
        if (s->item_order.size() > before)
          schedule();
        schedule_settle();
      },
      [=](persist_atom, const std::string& item,
          const protocol::node_partitioning_status& st) -> std::string {
        if (s->items.erase(item) > 0 && !s->unsettle(item))
          s->item_order.erase(std::find(s->item_order.begin(), s->item_order.end(), item));
        // The worker's next step waits for this write: it goes in the rollout's lane, or
        // ahead of it when it records the node on its way back to service.
        const bool returning = st.phase == protocol::node_phase::verifying ||
                               st.phase == protocol::node_phase::succeeded ||
                               st.phase == protocol::node_phase::failed;
        s->x.http.set_lane(returning ? kube::request_lane::restore : kube::request_lane::rollout);
        s->x.http.set_patience(std::nullopt);
        auto error = write(items_resource, item, protocol::to_json(st)).error;
        s->x.http.set_lane(kube::request_lane::status);
        s->x.http.set_patience(flush_patience);
        return error;
      },
      [=](plan_status_atom, const std::string& plan, const protocol::partitioning_plan_status& st) {
        s->plans[plan] = st;
        schedule();
      },
      [=](flush_atom) {
        s->flush_pending = false;
        // One object a message, oldest change first; the rest follow at once, after
        // whatever else waits. A worker's write-ahead persist, at high priority, then
        // waits for one write at most, not for a batch (and every node step waits for
        // its persist).
        const auto result = write_some(1);
        if (result == flushed::retry_later) {
          s->flush_pending = true;
          self->delayed_send(self, std::chrono::seconds(1), flush_atom_v);
        } else if (result == flushed::throttled || !s->item_order.empty()) {
          s->flush_pending = true;
          self->send(self, flush_atom_v);
        }
      },
      [=](flush_atom, stop_atom) {
        // The operator stops: everything pending is written now, once.
        s->x.http.set_patience(std::nullopt);
        s->settle(std::chrono::steady_clock::now(), true);
        write_some(s->items.size());
        return true;
      },
  };
}

} // namespace

status_writer_actor::behavior_type status_writer(status_writer_actor::pointer self,
                                                 io_config config) {
  return hooked_status_writer(self, std::move(config), {});
}

status_writer_actor::behavior_type hooked_status_writer(status_writer_actor::pointer self,
                                                        io_config config,
                                                        status_write_hook before_write) {
  // Each object always goes to the same writer, so its statuses stay in order; objects
  // on different writers are written side by side, on connections of their own. Every
  // node step waits for its write-ahead, and a writer writes one status at a time: at
  // maxParallel 200 a busy API server takes 0.5 to 1.5 s a status write, and with eight
  // writers the write-aheads of a wave waited 5.9 s on average behind each other
  // (docs/performance.md, 5,000 nodes). Thirty-two keep that queue about one write deep
  // there; an idle writer costs a thread and a connection.
  constexpr std::size_t status_writers = 32;
  // The Events' own bucket (kube::events_share, 10 a second by default), not the writers,
  // is to be their limit: a writer records one Event at a time, and a busy API server
  // takes 0.1 to 0.2 s a create, so two carried about 8 a second at 5,000 nodes.
  constexpr std::size_t event_writers = 4;
  std::vector<status_shard_actor> statuses;
  std::vector<event_writer_actor> events;
  std::vector<event_backlog> backlogs;
  for (std::size_t i = 0; i < status_writers; ++i)
    statuses.push_back(
        self->spawn<caf::detached + caf::linked>(status_shard, config, before_write));
  for (std::size_t i = 0; i < event_writers; ++i) {
    backlogs.push_back(std::make_shared<std::atomic<int>>(0));
    events.push_back(
        self->spawn<caf::detached + caf::linked>(event_writer, config, backlogs.back()));
  }
  // The first Event dropped is logged, and then one in a thousand.
  auto dropped = std::make_shared<std::uint64_t>(0);
  auto pick = [](const auto& writers, const std::string& key) {
    return writers[std::hash<std::string>{}(key) % writers.size()];
  };
  return {
      [=](status_atom a, const std::string& item, const protocol::node_partitioning_status& st) {
        // At the persists' priority: a worker's statuses reach its writer in the order it
        // sent them, so a write-ahead is never followed by an older status that it overtook.
        self->send<caf::message_priority::high>(pick(statuses, item), a, item, st);
      },
      [=](status_atom a, later_atom b, const std::string& item,
          const protocol::node_partitioning_status& st) {
        self->send<caf::message_priority::high>(pick(statuses, item), a, b, item, st);
      },
      [=](persist_atom a, const std::string& item, const protocol::node_partitioning_status& st) {
        // Asked on at high priority, ahead of the writer's queued flushes, and answered
        // here. (CAF 0.17's delegate<high> re-marks the request so that its answer never
        // reaches the asker: tests/integration:status_writer_test.)
        auto rp = self->make_response_promise<std::string>();
        self->request<caf::message_priority::high>(pick(statuses, item), caf::infinite, a, item, st)
            .then([=](const std::string& error) mutable { rp.deliver(error); },
                  [=](caf::error& e) mutable {
                    rp.deliver("the status writer failed: " + self->system().render(e));
                  });
        return rp;
      },
      [=](plan_status_atom a, const std::string& plan,
          const protocol::partitioning_plan_status& st) {
        self->send(pick(statuses, plan), a, plan, st);
      },
      [=](event_atom a, const event_io& e) {
        const std::size_t i = std::hash<std::string>{}(e.kind + "/" + e.name) % events.size();
        if (!event_admitted(*backlogs[i], e.type)) {
          process_metrics().events_dropped.add({e.type});
          if ((*dropped)++ % 1000 == 0)
            log_warning("Events are made faster than the API server takes them: " +
                        std::to_string(backlogs[i]->load()) + " wait for one writer; dropped " +
                        e.type + " " + e.reason + " on " + e.kind + " " + e.name + " (" +
                        std::to_string(*dropped) + " dropped so far)");
          return;
        }
        ++*backlogs[i];
        self->send(events[i], a, e);
      },
      [=](flush_atom a, stop_atom b) {
        // The operator stops: each writer writes what it holds; answered once all have.
        auto rp = self->make_response_promise<bool>();
        auto left = std::make_shared<std::size_t>(statuses.size());
        auto one_done = [=]() mutable {
          if (--*left == 0)
            rp.deliver(true);
        };
        for (const auto& shard : statuses)
          self->request(shard, caf::infinite, a, b)
              .then([=](bool) mutable { one_done(); }, [=](caf::error&) mutable { one_done(); });
        return rp;
      },
  };
}

} // namespace gpu_partitioner::actors
