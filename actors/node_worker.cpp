#include "actors/node_worker.hpp"

#include "actors/decode.hpp"
#include "actors/log.hpp"
#include "actors/messages.hpp"
#include "actors/operator_metrics.hpp"
#include "actors/status_writer.hpp"
#include "actors/worker_report.hpp"
#include "controller/drain.hpp"
#include "controller/node_inputs.hpp"
#include "controller/read_your_writes.hpp"
#include "controller/write_order.hpp"
#include "kube/resource.hpp"
#include "protocol/codec/quote.hpp"

#include <algorithm>

namespace gpu_partitioner::actors {

namespace {

using namespace std::chrono_literals;

struct worker_state {
  /// The latest slice of the cluster the supervisor sent.
  node_slice_ptr slice;
  /// The status this worker last wrote (it is the item's only status writer).
  std::optional<protocol::node_partitioning_status> status;
  /// The Node as our last write left it, until the watch shows that version.
  std::shared_ptr<const controller::node_info> written_node;
  /// The resourceVersion the view had when we wrote.
  std::string written_over;
  protocol::wall_clock::time_point written_at{};
  /// The watch has not shown our last write for a while: the node is read directly, at
  /// most once per watch_lag_limit (a failed read is not repeated at once).
  bool lag_logged = false;
  protocol::wall_clock::time_point read_at{};
  /// The status that ends the run is being written; the governor hears once it is.
  bool release_pending = false;
  /// What only this worker knows, for the step: its token, its evictions so far, its
  /// last write's error (and the last one resolved).
  controller::worker_facts facts;
  bool busy = false;
  /// The phase and start of the run last known written to the item's status ("" if
  /// unknown), so node changes are made only once the status that decided them is kept.
  std::string persisted;
  /// Consecutive failed write batches, for back-off.
  int write_failures = 0;
  bool dirty = false;
  std::uint64_t timer_generation = 0;
  std::optional<protocol::node_phase> logged_phase;
  /// The node whose drain_blocked_pods series this worker sets ("" before the first).
  std::string metric_node;
  /// The last step wrote nothing and waits for the world (DCM, kubelet, the device
  /// plugin) to change the node or its pods.
  bool waiting = false;
  /// The arrival of the earliest such change not yet answered: the start of the reaction
  /// latency of the next write.
  std::optional<protocol::wall_clock::time_point> change_at;
};

} // namespace

node_worker_actor::behavior_type node_worker(node_worker_actor::pointer self,
                                             node_worker_config config) {
  auto s = std::make_shared<worker_state>();
  auto writer = [config] { return caf::actor_cast<status_writer_actor>(config.writer); };
  // A worker that ends (its item is gone) takes its series along.
  self->attach_functor([s, plan = config.plan] {
    if (!s->metric_node.empty())
      process_metrics().blocked_pods.remove({plan, s->metric_node});
  });

  // Writes a status at once (a worker's write-ahead), then calls `then` with "" or the error.
  auto persist = [=](const protocol::node_partitioning_status& status, const std::string& marker,
                     std::function<void(const std::string&)> then) {
    auto status_writer = writer();
    self->request<caf::message_priority::high>(status_writer, caf::infinite, persist_atom_v,
                                               config.item, status)
        .then(
            [=](const std::string& error) {
              if (error.empty())
                s->persisted = marker;
              then(error);
            },
            [=](caf::error&) { then("the status writer did not answer"); });
  };
  // One step: build the inputs from the latest slice, decide, and act. A weak self
  // reference: the function must not keep itself (and the handles it names) alive.
  auto step = std::make_shared<std::function<void()>>();
  std::weak_ptr<std::function<void()>> weak_step = step;
  *step = [=] {
    const auto slice = s->slice;
    if (!slice || !slice->item)
      return;
    if (s->busy) {
      s->dirty = true;
      return;
    }
    const auto& recorded = *slice->item; // the item as the view has it
    bool lagging = false;
    auto item = recorded;
    if (s->status)
      item.status = *s->status;
    const auto now = config.now();
    std::optional<controller::node_info> decide_on;
    if (const auto& seen = slice->node) {
      // Read our own writes until the watch shows them (controller/read_your_writes).
      controller::node_choice choice;
      choice.caught_up = true;
      if (s->written_node)
        choice = controller::choose_node(*seen, *s->written_node, s->written_over, s->written_at,
                                         now, s->read_at, config.watch_lag_limit);
      if (choice.own) {
        decide_on = *s->written_node;
        lagging = choice.read_directly;
      } else {
        decide_on = *seen;
        s->lag_logged = false;
        // The view has our write: our copy of the node is no longer needed (kept, it
        // would be a second copy of every node the rollout is done with).
        if (choice.caught_up)
          s->written_node.reset();
      }
    }
    const auto in = controller::assemble_node_inputs(*slice, std::move(item), std::move(decide_on),
                                                     s->facts, now);
    // A profile just created names a ConfigMap whose watch is still listing: whether the
    // payload exists is not known, and a missing one would fail preflight.
    if (in.profile.payload_pending)
      return;
    auto out = controller::step_node(in);

    if (out.status) {
      s->status = out.status;
      // At the priority of the write-ahead persists, so that none overtakes a status sent
      // before it (and that older status is then written after it).
      if (controller::status_may_wait(in.item.status, *out.status))
        self->send<caf::message_priority::high>(writer(), status_atom_v, later_atom_v, config.item,
                                                *out.status);
      else
        self->send<caf::message_priority::high>(writer(), status_atom_v, config.item, *out.status);
      report_status(config.plan, in.item.spec.node_name, s->logged_phase, *out.status);
      s->metric_node = in.item.spec.node_name;
      s->logged_phase = out.status->phase;
    }
    for (const auto& e : out.events)
      self->send(writer(), event_atom_v, event_of(e, in));
    // Tell the governor where we stand; it answers with a grant when one is free.
    const auto facts = controller::governor_facts(in, out);
    // A run this worker holds, or that the record shows in flight (a worker started
    // since finds it ended): its end goes on record before the token goes back.
    const bool holds_run = s->facts.token || in_flight(recorded);
    if (!out.in_flight && !out.wants_token)
      s->facts.token = false;
    auto report = [=] {
      self->send(config.governor, report_atom_v, config.item, facts,
                 caf::actor_cast<grant_receiver>(self));
    };
    const std::string marker = s->status ? controller::phase_record(*s->status) : std::string{};
    if (controller::phase_record(recorded.status) == marker)
      s->persisted = marker; // the watch shows it written
    const auto sequence = controller::order_writes(out, s->status, s->persisted, holds_run);
    const bool report_when_persisted = sequence.release_after_status && writer();
    if (!report_when_persisted && !s->release_pending)
      report();
    auto release_when_persisted = [=, node = in.item.spec.node_name] {
      s->release_pending = true;
      persist(*s->status, marker, [=](const std::string& error) {
        s->release_pending = false;
        if (!error.empty())
          log_warning(error, config.plan, node);
        report(); // written or not, the governor hears; the status follows with the others
      });
    };

    auto io = writes_of(config.item, out, in);
    const bool writes = any_write(io);
    if (!writes && lagging) {
      // The watch has not shown our last write of the node for a while: read the node
      // from the API server (every watch_lag_limit until the watch catches up), so that
      // DCM's labels and the device plugin's resources are seen all the same.
      if (!s->lag_logged) {
        s->lag_logged = true;
        log_warning("the watch of nodes has not shown version " +
                        s->written_node->resource_version + " of the node (our write) for " +
                        std::to_string(
                            std::chrono::duration_cast<std::chrono::seconds>(in.now - s->written_at)
                                .count()) +
                        " s; reading the node from the API server until it does",
                    config.plan, io.node);
      }
      auto executor = caf::actor_cast<io_actor>(config.io);
      if (!executor)
        return;
      node_io read;
      read.item = config.item;
      read.node = io.node;
      read.read_node = true;
      s->busy = true;
      s->read_at = in.now;
      self->request(executor, caf::infinite, io_atom_v, read)
          .then(
              [=](const node_io_result& r) {
                s->busy = false;
                if (!r.error.empty())
                  log_warning(r.error, config.plan, read.node);
                if (r.node && s->written_node) {
                  const auto order = protocol::compare_resource_versions(
                      r.node->resource_version, s->written_node->resource_version);
                  if (order && *order >= 0) {
                    s->written_node = r.node;
                    s->written_at = config.now();
                  }
                }
                if (auto again = weak_step.lock())
                  (*again)();
              },
              [=](caf::error&) { s->busy = false; });
      return;
    }
    if (writes) {
      io.reacting_to = s->change_at;
      s->change_at.reset();
      s->waiting = false;
      const std::string observed_rv = in.node ? in.node->resource_version : std::string{};
      // The run whose step asked for these evictions: what became of them is its own.
      const std::string run = s->status ? s->status->started_at : std::string{};
      auto executor = caf::actor_cast<io_actor>(config.io);
      if (!executor)
        return; // shutting down
      s->busy = true;
      auto failed = [=](const std::string& error) {
        s->busy = false;
        log_warning(error, config.plan, io.node);
        process_metrics().reconcile_errors.add({config.plan});
        // Back off (0.5 s doubling to 32 s) instead of retrying at once.
        s->facts.write_error = error;
        const int shift = std::min(s->write_failures++, 6);
        self->delayed_send(self, std::chrono::milliseconds(500 << shift), tick_atom_v,
                           ++s->timer_generation);
      };
      auto perform = [=] {
        // No request timeout: its timer would hold this worker for that long after
        // shutdown. A dead executor answers with an error instead.
        self->request(executor, caf::infinite, io_atom_v, io)
            .then(
                [=](const node_io_result& r) {
                  s->busy = false;
                  if (r.node) {
                    s->written_node = r.node;
                    s->written_over = observed_rv;
                    s->written_at = config.now();
                  }
                  auto& m = process_metrics();
                  for (const auto& [pod, outcome] : r.evictions) {
                    m.evictions.add({outcome.blocked ? "pdb_blocked"
                                     : outcome.done  ? "evicted"
                                                     : "error"});
                    auto mine = outcome;
                    mine.run = run;
                    controller::record_eviction(s->facts.evictions, pod, std::move(mine));
                  }
                  if (!r.error.empty()) {
                    failed(r.error);
                    return;
                  }
                  s->write_failures = 0;
                  if (!s->facts.write_error.empty())
                    s->facts.resolved_write_error = s->facts.write_error;
                  s->facts.write_error.clear();
                  // A weak reference: the handler must not keep the step (and the handles
                  // it names) alive after the worker is gone.
                  if (auto again = weak_step.lock())
                    (*again)();
                },
                [=](caf::error&) {
                  s->busy = false;
                  log_warning("a write timed out; retrying", config.plan, io.node);
                  self->delayed_send(self, 1s, tick_atom_v, ++s->timer_generation);
                });
      };
      // Write ahead (controller/write_order): killed between a node change and the status
      // that decided it, a restarted operator would read an older phase and, say,
      // relabel a node whose DCM run is under way.
      auto status_writer = writer();
      if (sequence.status_first && status_writer) {
        persist(*s->status, marker, [=](const std::string& error) {
          if (!error.empty()) {
            failed(error);
            return;
          }
          if (report_when_persisted)
            report();
          perform();
        });
        return;
      }
      perform();
      if (report_when_persisted)
        release_when_persisted();
      return;
    }
    if (report_when_persisted)
      release_when_persisted();
    // A change that brought no write is answered, unless the machine goes on at once
    // (a phase change whose writes come in the next step).
    s->waiting = out.requeue.count() == 0 || out.requeue > 1ms;
    if (s->waiting)
      s->change_at.reset();
    if (s->dirty) {
      s->dirty = false;
      self->send(self, tick_atom_v, ++s->timer_generation);
      return;
    }
    if (out.requeue.count() > 0)
      self->delayed_send(self, out.requeue, tick_atom_v, ++s->timer_generation);
  };

  return {
      [=](view_atom, const node_slice_ptr& slice, bool budgets_only) {
        s->slice = slice;
        if (!slice->item)
          return;
        const bool first = !s->status;
        if (!s->status)
          s->status = slice->item->status;
        // Only a change the worker was waiting for starts a reaction: not the echo of its
        // own write, which it reads already.
        if (slice->node_changed_at && s->waiting && !s->change_at)
          s->change_at = slice->node_changed_at;
        // Budgets matter only to a drain (or a dry run's preview); their timers cover time
        // passing otherwise.
        const bool draining = s->status && s->status->phase == protocol::node_phase::draining;
        if (first || !budgets_only || draining || slice->item->spec.dry_run)
          (*step)();
      },
      [=](grant_atom) {
        if (!s->facts.token) {
          s->facts.token = true;
          (*step)();
        }
      },
      [=](tick_atom, std::uint64_t generation) {
        if (generation == s->timer_generation)
          (*step)();
      },
  };
}

} // namespace gpu_partitioner::actors
