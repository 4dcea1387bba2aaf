#include "actors/event_writer.hpp"

#include "actors/executor.hpp"
#include "actors/log.hpp"
#include "kube/event_recorder.hpp"

#include <memory>

namespace gpu_partitioner::actors {

namespace {

/// How many of the latest Events an event writer remembers to count their repeats.
constexpr std::size_t remembered_events = 1024;

} // namespace

event_writer_actor::behavior_type event_writer(event_writer_actor::pointer, io_config config,
                                               event_backlog backlog) {
  // The recorder writes through the executor's client: both live as long as the actor.
  struct state {
    explicit state(io_config c)
        : x(std::move(c)), events(x.api, "gpu-partitioner", x.config.identity,
                                  std::chrono::minutes(10), remembered_events) {}
    executor x;
    kube::event_recorder events;
  };
  config.connection.lane = kube::request_lane::events;
  if (config.event_limiter)
    config.connection.limiter = config.event_limiter;
  auto s = std::make_shared<state>(std::move(config));
  return {
      [=](event_atom, const event_io& e) {
        kube::event_spec spec;
        spec.regarding = {e.api_version, e.kind, "", e.name, e.uid};
        spec.type = e.type;
        spec.reason = e.reason;
        spec.message = e.message;
        auto recorded = s->events.record(spec);
        if (!recorded)
          log_debug("event " + e.reason + " on " + e.name + ": " + recorded.error().describe());
        if (backlog)
          --*backlog;
      },
  };
}

} // namespace gpu_partitioner::actors
