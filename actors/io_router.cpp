#include "actors/io_router.hpp"

#include "actors/messages.hpp"
#include "actors/operator_metrics.hpp"

#include <deque>
#include <functional>
#include <memory>
#include <string>

namespace gpu_partitioner::actors {

namespace {

// Asks executor `x` and passes its answer, or its failure, on to the original requester;
// then `x` is free for the next request.
template <class Answer, class Io, class Release>
void ask_executor(io_actor::pointer self, caf::typed_response_promise<Answer> rp, const io_actor& x,
                  Io io, Release release) {
  self->request(x, caf::infinite, io_atom_v, std::move(io))
      .then(
          [=](Answer& answer) mutable {
            rp.deliver(std::move(answer));
            release(x);
          },
          [=](caf::error& e) mutable {
            rp.deliver(std::move(e));
            release(x);
          });
}

} // namespace

io_actor::behavior_type io_pool(io_actor::pointer self, std::vector<io_actor> executors,
                                std::string name) {
  struct state {
    std::vector<io_actor> idle;
    std::deque<std::function<void(const io_actor&)>> waiting;
  };
  auto s = std::make_shared<state>();
  auto& depth = process_metrics().io_queue_depth;
  depth.set({name}, 0);
  process_metrics().superseded_writes.ensure({name});
  auto publish = [s, name, &depth] { depth.set({name}, static_cast<double>(s->waiting.size())); };
  for (auto& x : executors) {
    self->link_to(x);
    s->idle.push_back(std::move(x));
  }
  // An executor that answered takes the oldest waiting request, or waits for the next.
  // Waiting requests hold `release`, so it holds the state weakly: a strong hold would be
  // a cycle (state, request, release, state) that outlives the pool when it stops with
  // requests still waiting.
  auto release = [weak = std::weak_ptr<state>(s), name, &depth](const io_actor& x) {
    const auto s = weak.lock();
    if (!s)
      return;
    if (s->waiting.empty()) {
      s->idle.push_back(x);
      return;
    }
    auto next = std::move(s->waiting.front());
    s->waiting.pop_front();
    depth.set({name}, static_cast<double>(s->waiting.size()));
    next(x);
  };
  auto submit = [s, publish](std::function<void(const io_actor&)> job) {
    if (s->idle.empty()) {
      s->waiting.push_back(std::move(job));
      publish();
      return;
    }
    // The executor freed last: its connection is the warmest.
    auto x = std::move(s->idle.back());
    s->idle.pop_back();
    job(x);
  };
  // Queues a request of any kind; `rp` answers its asker.
  auto enqueue = [=](auto io, auto rp) {
    submit([=](const io_actor& x) mutable { ask_executor(self, rp, x, std::move(io), release); });
    return rp;
  };
  return {
      [=](io_atom, node_io& io) {
        return enqueue(std::move(io), self->make_response_promise<node_io_result>());
      },
      [=](io_atom, item_io& io) {
        auto rp = self->make_response_promise<std::string>();
        // A write its supervisor no longer wants when its turn comes is answered unsent,
        // and the executor goes to the next.
        submit([=, io = std::move(io)](const io_actor& x) mutable {
          if (is_superseded(io)) {
            process_metrics().superseded_writes.add({name});
            rp.deliver(item_io_superseded);
            release(x);
            return;
          }
          ask_executor(self, rp, x, std::move(io), release);
        });
        return rp;
      },
  };
}

io_actor::behavior_type io_router(io_actor::pointer self, io_actor writes, io_actor evictions,
                                  io_actor items) {
  self->link_to(writes);
  self->link_to(evictions);
  self->link_to(items);
  return {
      [=](io_atom, node_io& io) {
        auto rp = self->make_response_promise<node_io_result>();
        const bool only_removals = !io.patch && !io.taint && !io.device_taint && !io.dcm &&
                                   !io.add_finalizer && !io.remove_finalizer && !io.clear_retry &&
                                   !io.read_node;
        if (io.removals.size() < 2 || !only_removals) {
          rp.delegate(io.removals.empty() ? writes : evictions, io_atom_v, std::move(io));
          return rp;
        }
        // A node's pods are evicted side by side, one request each, as kubectl drain does:
        // each may wait for the API server's 500 ms retry of a conflicting budget update,
        // and those waits overlap. The answers are merged into one.
        struct merged {
          node_io_result result;
          std::size_t left = 0;
        };
        auto m = std::make_shared<merged>();
        m->left = io.removals.size();
        auto one_done = [m, rp]() mutable {
          if (--m->left == 0)
            rp.deliver(std::move(m->result));
        };
        for (std::size_t i = 0; i < io.removals.size(); ++i) {
          node_io one;
          one.item = io.item;
          one.node = io.node;
          one.removals.push_back(io.removals[i]);
          if (i == 0)
            one.reacting_to = io.reacting_to; // one reaction, timed once
          self->request(evictions, caf::infinite, io_atom_v, std::move(one))
              .then(
                  [=](node_io_result& r) mutable {
                    for (auto& [pod, outcome] : r.evictions)
                      m->result.evictions[pod] = std::move(outcome);
                    if (!r.error.empty() && m->result.error.empty())
                      m->result.error = std::move(r.error);
                    one_done();
                  },
                  [=](caf::error& e) mutable {
                    if (m->result.error.empty())
                      m->result.error = "evicting: " + self->system().render(e);
                    one_done();
                  });
        }
        return rp;
      },
      [=](io_atom, item_io& io) { return self->delegate(items, io_atom_v, std::move(io)); },
  };
}

} // namespace gpu_partitioner::actors
