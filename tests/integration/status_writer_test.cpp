// actors::status_writer against the real API server: a write-ahead (persist) is answered;
// a status sent before it, as a worker sends them, is never written after it (the
// persist goes at high priority, ahead of queued flushes, and must not overtake it), also
// when both wait behind a write in progress (held there by the writer's test hook); and
// statuses are coalesced, those that may wait over a longer window; a stop writes what is pending;
// a persist is not held up by a coalesced status that the rate limiter starves; Events beyond a
// writer's backlog are dropped, Normal ones first.
#include "actors/event_writer.hpp"
#include "actors/messages.hpp"
#include "actors/operator_metrics.hpp"
#include "actors/status_writer.hpp"
#include "protocol/json.hpp"
#include "tests/integration/support/cluster.hpp"

#include <boost/test/unit_test.hpp>
#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

namespace ga = gpu_partitioner::actors;
namespace gp = gpu_partitioner::protocol;
namespace gt = gpu_partitioner::testing;
namespace kube = gpu_partitioner::kube;

namespace {

const kube::resource items{"infrastructure.silogen.ai", "v1alpha1", "nodepartitionings", false};

// The operator's own count of status writes, as /metrics shows it (every code).
double status_patches() {
  std::istringstream text(ga::process_metrics().registry.expose());
  const std::string prefix =
      R"(gpu_partitioner_api_requests_total{verb="PATCH",resource="nodepartitionings/status",)";
  double sum = 0;
  for (std::string line; std::getline(text, line);)
    if (line.rfind(prefix, 0) == 0)
      sum += std::stod(line.substr(line.rfind(' ') + 1));
  return sum;
}

// A sample of the operator's /metrics, 0 when it has none.
double sample(const std::string& series) {
  std::istringstream text(ga::process_metrics().registry.expose());
  for (std::string line; std::getline(text, line);)
    if (line.rfind(series + " ", 0) == 0)
      return std::stod(line.substr(series.size() + 1));
  return 0;
}

gp::node_partitioning_status status_in(gp::node_phase phase, int blocked) {
  gp::node_partitioning_status st;
  st.phase = phase;
  st.drain.pods_blocked = blocked;
  st.started_at = "2026-11-30T00:00:00Z";
  return st;
}

// Once armed, holds the writer's first status write of `item` (on the writer's thread)
// until `behind` messages wait at that writer: they are then handled in the order the
// writer gives them, whatever the scheduler did.
class write_gate {
public:
  void arm(const std::string& item, std::size_t behind) {
    std::lock_guard<std::mutex> lock(m_);
    item_ = item;
    behind_ = behind;
  }
  /// Ready once the write is held.
  std::future<void> held() { return held_.get_future(); }
  /// Whether the held write saw `behind` messages waiting before it went on.
  bool saw_them_queued() {
    std::lock_guard<std::mutex> lock(m_);
    return queued_;
  }

  void before_write(const std::string& name, const std::function<std::size_t()>& waiting) {
    std::size_t behind = 0;
    {
      std::lock_guard<std::mutex> lock(m_);
      if (item_.empty() || name != item_ || used_)
        return;
      used_ = true;
      behind = behind_;
    }
    held_.set_value();
    // Bounded, so that a message that never comes fails the case instead of hanging it.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (waiting() < behind && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const bool queued = waiting() >= behind;
    std::lock_guard<std::mutex> lock(m_);
    queued_ = queued;
  }

private:
  std::mutex m_;
  std::string item_;
  std::size_t behind_ = 0;
  bool used_ = false;
  bool queued_ = false;
  std::promise<void> held_;
};

struct writer_fixture {
  gt::connection c{gt::cluster::admin()};
  std::string item = gt::unique_name("writer");
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg.set("logger.verbosity", caf::atom("quiet"))};
  caf::scoped_actor self{sys};
  std::shared_ptr<write_gate> gate = std::make_shared<write_gate>();
  ga::status_writer_actor writer;

  writer_fixture() {
    BOOST_REQUIRE(c.api.create(
        items, "",
        R"({"apiVersion":"infrastructure.silogen.ai/v1alpha1","kind":"NodePartitioning",)"
        R"("metadata":{"name":")" +
            item +
            R"("},"spec":{"planRef":{"name":"p","uid":"u"},"nodeName":"n",)"
            R"("desiredHash":"sha256:75cc631b7bafd7db8980425749892f275713248b205bb47e5809951cdeb9733d",)"
            R"("profileRef":{"name":"x"}}})"));
    ga::io_config io;
    io.connection = gt::cluster::admin();
    io.identity = "status-writer-test";
    writer = sys.spawn(ga::hooked_status_writer, io,
                       ga::status_write_hook([gate = gate](const std::string& name,
                                                           const std::function<std::size_t()>& n) {
                         gate->before_write(name, n);
                       }));
  }
  ~writer_fixture() {
    self->send_exit(writer, caf::exit_reason::user_shutdown);
    (void)c.api.remove(items, "", item);
  }

  // Asked at high priority from an event-based actor, as a worker asks; the answer comes
  // back here. `before`, if any, is sent to coalesce first, from the same actor, as a
  // worker does.
  std::string persist(const gp::node_partitioning_status& st,
                      std::optional<gp::node_partitioning_status> before = std::nullopt) {
    auto reply_to = caf::actor_cast<caf::actor>(self);
    auto w = writer;
    auto name = item;
    sys.spawn([=](caf::event_based_actor* asker) -> caf::behavior {
      if (before)
        asker->send<caf::message_priority::high>(w, ga::status_atom_v, name, *before);
      asker
          ->request<caf::message_priority::high>(w, std::chrono::seconds(30), ga::persist_atom_v,
                                                 name, st)
          .then(
              [=](const std::string& e) {
                asker->send(reply_to, e);
                asker->quit();
              },
              [=](caf::error& e) {
                asker->send(reply_to, "failed: " + asker->system().render(e));
                asker->quit();
              });
      return {[](int) {}};
    });
    std::string error = "no answer";
    self->receive([&](const std::string& e) { error = e; },
                  caf::after(std::chrono::seconds(40)) >> [] {});
    return error;
  }

  // Everything the writer holds is written now, as when the operator stops (an older
  // status still pending would land here, after the persist); true once done.
  bool write_what_is_pending() {
    bool done = false;
    self->request(writer, std::chrono::seconds(30), ga::flush_atom_v, ga::stop_atom_v)
        .receive([&](bool) { done = true; }, [](caf::error&) {});
    return done;
  }

  // The phase and blocked-pod count the API server shows.
  std::string shown() {
    auto got = c.api.get(items, "", item);
    if (!got || !got.value().HasMember("status"))
      return "";
    const auto& st = got.value()["status"];
    int blocked = 0;
    if (st.HasMember("drain") && st["drain"].HasMember("podsBlocked"))
      blocked = st["drain"]["podsBlocked"].GetInt();
    return std::string(st.HasMember("phase") ? st["phase"].GetString() : "") + "/" +
           std::to_string(blocked);
  }
};

// The writer behind a rate limiter of `qps` requests a second, one at a time, and another
// thread of the same process that wants every token in the rollout's lane: the status
// and Events lanes starve while it runs.
template <int qps>
struct starved_at : writer_fixture {
  std::shared_ptr<kube::rate_limiter> limiter =
      std::make_shared<kube::rate_limiter>(kube::rate_limit{qps, 1});
  std::atomic<bool> stop_hog{false};
  std::atomic<bool> hog_ran_out{false};
  std::thread hog;

  starved_at() {
    self->send_exit(writer, caf::exit_reason::user_shutdown);
    ga::io_config io;
    io.connection = gt::cluster::admin();
    io.connection.limiter = limiter;
    io.identity = "status-writer-test";
    writer = sys.spawn(ga::status_writer, io);
    hog = std::thread([this] {
      // Bounded, so that a writer that never lets the persist through fails the case
      // instead of hanging it.
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!stop_hog) {
        if (std::chrono::steady_clock::now() >= end) {
          hog_ran_out = true;
          return;
        }
        limiter->wait(kube::request_lane::rollout);
      }
    });
  }
  ~starved_at() {
    stop_hog = true;
    hog.join();
  }
};
using starved_writer_fixture = starved_at<5>;
// The same, the Events given a bucket of their own as the operator gives them.
struct starved_with_an_event_bucket : starved_at<5> {
  starved_with_an_event_bucket() {
    self->send_exit(writer, caf::exit_reason::user_shutdown);
    ga::io_config io;
    io.connection = gt::cluster::admin();
    io.connection.limiter = limiter;
    io.event_limiter = std::make_shared<kube::rate_limiter>(kube::events_share({50, 10}));
    io.identity = "status-writer-test";
    writer = sys.spawn(ga::status_writer, io);
  }
};
// Fast enough that the Events a case leaves waiting are written before it ends.
using fast_starved_writer_fixture = starved_at<200>;

} // namespace

BOOST_AUTO_TEST_SUITE(status_writer)

BOOST_FIXTURE_TEST_CASE(a_persist_is_answered_once_written, writer_fixture) {
  const double before = status_patches();
  BOOST_TEST(persist(status_in(gp::node_phase::draining, 2)) == "");
  BOOST_TEST(shown() == "Draining/2");
  BOOST_TEST(status_patches() - before == 1.0);
}

BOOST_FIXTURE_TEST_CASE(a_status_sent_before_a_persist_is_not_written_after_it, writer_fixture) {
  const double before = status_patches();
  // A worker's coalesced status, then the write-ahead of the next one.
  BOOST_TEST(persist(status_in(gp::node_phase::applying, 0),
                     status_in(gp::node_phase::draining, 1)) == "");
  BOOST_TEST(write_what_is_pending());
  BOOST_TEST(shown() == "Applying/0");
  BOOST_TEST(status_patches() - before == 1.0);
}

// The race itself: the writer is held in the write of a worker's status while the
// worker's next status and then its write-ahead queue up behind it. Were the status sent
// at a lower priority than the persist, the persist would be handled first and the older
// status written after it.
BOOST_FIXTURE_TEST_CASE(a_status_queued_before_a_persist_is_not_written_after_it, writer_fixture) {
  const double before = status_patches();
  gate->arm(item, 2);
  auto held = gate->held();
  self->send<caf::message_priority::high>(writer, ga::status_atom_v, item,
                                          status_in(gp::node_phase::draining, 5));
  // Flushed 100 ms later, and held in that write.
  BOOST_REQUIRE(held.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  // Sent while it is held; answered once the held write and what queued behind it are done.
  const auto answer =
      persist(status_in(gp::node_phase::applying, 0), status_in(gp::node_phase::draining, 1));
  BOOST_TEST(gate->saw_them_queued(), "the status and the persist never both waited");
  BOOST_TEST(answer == "");
  BOOST_TEST(write_what_is_pending());
  BOOST_TEST(shown() == "Applying/0");
  // The first status, then the write-ahead; the status it replaced is never written.
  BOOST_TEST(status_patches() - before == 2.0);
}

BOOST_FIXTURE_TEST_CASE(statuses_sent_together_are_written_once, writer_fixture) {
  const double before = status_patches();
  for (int left = 3; left >= 0; --left)
    self->send<caf::message_priority::high>(writer, ga::status_atom_v, item,
                                            status_in(gp::node_phase::draining, left));
  BOOST_TEST(gt::eventually([&] { return shown() == "Draining/0"; }));
  BOOST_TEST(write_what_is_pending());
  BOOST_TEST(shown() == "Draining/0");
  BOOST_TEST(status_patches() - before == 1.0);
}

// Statuses that may wait (a drain's progress within its phase) are held for the settle
// window and written once; one that may not wait, sent meanwhile, takes their place and
// is written at once.
BOOST_FIXTURE_TEST_CASE(statuses_that_may_wait_are_held_and_written_once, writer_fixture) {
  const double before = status_patches();
  auto later = [&](int blocked) {
    self->send<caf::message_priority::high>(writer, ga::status_atom_v, ga::later_atom_v, item,
                                            status_in(gp::node_phase::draining, blocked));
  };
  const auto sent = std::chrono::steady_clock::now();
  later(3);
  later(2);
  later(1);
  BOOST_TEST(gt::eventually([&] { return shown() == "Draining/1"; }));
  BOOST_TEST(status_patches() - before == 1.0);
  // Not before the window: a prompt status of the same would be written within 100 ms.
  BOOST_TEST((std::chrono::steady_clock::now() - sent >= ga::status_settle_window));

  // Held again, then replaced by the next phase's status, which goes at once.
  later(0);
  const auto next = std::chrono::steady_clock::now();
  self->send<caf::message_priority::high>(writer, ga::status_atom_v, item,
                                          status_in(gp::node_phase::applying, 0));
  BOOST_TEST(gt::eventually([&] { return shown() == "Applying/0"; }));
  BOOST_TEST((std::chrono::steady_clock::now() - next < ga::status_settle_window));
  BOOST_TEST(write_what_is_pending());
  BOOST_TEST(status_patches() - before == 2.0);
}

// A neighbour that rewrites the item's status while one of ours is held: the held status,
// written at the window's end, replaces the neighbour's whole (the status is the
// operator's record, and a field it did not write would be taken as its own by a
// restarted operator).
BOOST_FIXTURE_TEST_CASE(a_held_status_replaces_what_a_neighbour_wrote_meanwhile, writer_fixture) {
  const double before = status_patches();
  self->send<caf::message_priority::high>(writer, ga::status_atom_v, ga::later_atom_v, item,
                                          status_in(gp::node_phase::draining, 3));
  auto mine = c.api.patch(
      items, "", item, kube::patch_type::merge,
      R"({"status":{"phase":"Succeeded","drain":{"podsBlocked":7},"lastError":"neighbour"}})", [] {
        kube::patch_options o;
        o.subresource = "status";
        return o;
      }());
  BOOST_REQUIRE_MESSAGE(mine.ok(), (mine.ok() ? "" : mine.error().describe()));
  BOOST_TEST(shown() == "Succeeded/7", "the held status is not written at once");
  BOOST_TEST(gt::eventually([&] { return shown() == "Draining/3"; }));
  auto got = c.api.get(items, "", item);
  BOOST_REQUIRE(got);
  BOOST_TEST(!got.value()["status"].HasMember("lastError"), "the neighbour's field is gone");
  BOOST_TEST(write_what_is_pending());
  BOOST_TEST(status_patches() - before == 1.0);
}

// A stop writes a held status too, and a persist replaces one.
BOOST_FIXTURE_TEST_CASE(a_stop_writes_a_held_status_and_a_persist_replaces_one, writer_fixture) {
  const double before = status_patches();
  self->send<caf::message_priority::high>(writer, ga::status_atom_v, ga::later_atom_v, item,
                                          status_in(gp::node_phase::draining, 4));
  BOOST_TEST(write_what_is_pending());
  BOOST_TEST(shown() == "Draining/4");
  BOOST_TEST(status_patches() - before == 1.0);

  self->send<caf::message_priority::high>(writer, ga::status_atom_v, ga::later_atom_v, item,
                                          status_in(gp::node_phase::draining, 2));
  BOOST_TEST(persist(status_in(gp::node_phase::applying, 0)) == "");
  BOOST_TEST(write_what_is_pending());
  BOOST_TEST(shown() == "Applying/0");
  BOOST_TEST(status_patches() - before == 2.0);
}

// A clean stop: what waits in the writers is written before the operator exits, and
// the stop is answered only then (before, the stop's flush reached the router, which had
// no handler for it, and the pending statuses were lost).
BOOST_FIXTURE_TEST_CASE(a_stop_writes_what_is_pending_then_answers, writer_fixture) {
  const double before = status_patches();
  self->send<caf::message_priority::high>(writer, ga::status_atom_v, item,
                                          status_in(gp::node_phase::verifying, 0));
  bool answered = false;
  // Asked at once: the status is still inside its 100 ms coalescing window.
  self->request(writer, std::chrono::seconds(10), ga::flush_atom_v, ga::stop_atom_v)
      .receive([&](bool) { answered = true; }, [](caf::error&) {});
  BOOST_TEST(answered);
  BOOST_TEST(status_patches() - before == 1.0);
  self->send_exit(writer, caf::exit_reason::user_shutdown);
  BOOST_TEST(shown() == "Verifying/0");
}

// A coalesced status waits for its token in the status lane, which the other thread's
// rollout requests starve; the worker's persist, in a lane above theirs, is written while
// they still take every other token, and the older status is not written after it.
BOOST_FIXTURE_TEST_CASE(a_persist_is_not_held_up_by_a_starved_status, starved_writer_fixture) {
  self->send<caf::message_priority::high>(writer, ga::status_atom_v, item,
                                          status_in(gp::node_phase::draining, 3));
  // The status write ran out of patience at least once (and was not sent then).
  BOOST_REQUIRE(gt::eventually([&] { return limiter->given_up() > 0; }));
  BOOST_TEST(persist(status_in(gp::node_phase::verifying, 0)) == "");
  const bool hog_still_running = !hog_ran_out;
  BOOST_TEST(hog_still_running, "the persist waited until the other requests stopped");
  BOOST_TEST(shown() == "Verifying/0");
  stop_hog = true;
  BOOST_TEST(write_what_is_pending());
  BOOST_TEST(shown() == "Verifying/0");
}

// The Events waiting for a writer are bounded: with the Events lane starved, those sent
// beyond event_backlog_limit are dropped and counted, Normal ones first, while a Warning
// still joins; those that joined are recorded once the lane has tokens again.
BOOST_FIXTURE_TEST_CASE(events_beyond_the_backlog_are_dropped_normal_ones_first,
                        fast_starved_writer_fixture) {
  const std::string normal = R"(gpu_partitioner_events_dropped_total{type="Normal"})";
  const std::string warning = R"(gpu_partitioner_events_dropped_total{type="Warning"})";
  const double normal0 = sample(normal);
  const double warning0 = sample(warning);
  auto event = [&](const std::string& type, int i) {
    ga::event_io e;
    e.api_version = "infrastructure.silogen.ai/v1alpha1";
    e.kind = "NodePartitioning";
    e.name = item;
    e.type = type;
    e.reason = "Backlog";
    e.message = type + " " + std::to_string(i);
    return e;
  };
  const int extra = 300;
  for (int i = 0; i < ga::event_backlog_limit + extra; ++i)
    self->send(writer, ga::event_atom_v, event("Normal", i));
  for (int i = 0; i < 10; ++i)
    self->send(writer, ga::event_atom_v, event("Warning", i));
  // Answered once the writer has taken every message sent before it.
  BOOST_TEST(write_what_is_pending());
  const bool hog_still_running = !hog_ran_out;
  BOOST_REQUIRE_MESSAGE(hog_still_running, "the Events lane was not starved throughout");
  // Next to none is recorded while the lane starves (the first waits for its token, in
  // the count; one may find a token in the instant the other thread is between two).
  const double dropped = sample(normal) - normal0;
  BOOST_TEST(dropped <= extra);
  BOOST_TEST(dropped >= extra - 10);
  BOOST_TEST(sample(warning) - warning0 == 0);
  stop_hog = true;
  BOOST_TEST(gt::eventually([&] {
    kube::list_options o;
    o.field_selector = "involvedObject.name=" + item + ",reason=Backlog";
    auto got = c.api.list(kube::resources::events(), "default", o);
    return got && got.value()["items"].Size() >= 3;
  }));
}

// With a bucket of their own, Events are recorded while the other lanes' requests take
// every token of the shared one (the case above, with the one change the operator makes).
BOOST_FIXTURE_TEST_CASE(events_with_a_bucket_of_their_own_are_recorded_while_the_rest_starve,
                        starved_with_an_event_bucket) {
  for (int i = 0; i < 5; ++i) {
    ga::event_io e;
    e.api_version = "infrastructure.silogen.ai/v1alpha1";
    e.kind = "NodePartitioning";
    e.name = item;
    e.type = "Normal";
    e.reason = "OwnBucket";
    e.message = "event " + std::to_string(i);
    self->send(writer, ga::event_atom_v, e);
  }
  BOOST_TEST(gt::eventually([&] {
    kube::list_options o;
    o.field_selector = "involvedObject.name=" + item + ",reason=OwnBucket";
    auto got = c.api.list(kube::resources::events(), "default", o);
    return got && got.value()["items"].Size() == 5;
  }));
  const bool hog_still_running = !hog_ran_out;
  BOOST_TEST(hog_still_running, "the Events were recorded only once the shared bucket was free");
}

BOOST_AUTO_TEST_SUITE_END()
