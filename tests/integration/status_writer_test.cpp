// actors::status_writer against the real API server: a write-ahead (persist) is answered;
// a status sent before it, as a worker sends them, is never written after it (the
// persist goes at high priority, ahead of queued flushes, and must not overtake it); and
// statuses are coalesced; a stop writes what is pending.
#include "actors/messages.hpp"
#include "actors/operator_metrics.hpp"
#include "actors/status_writer.hpp"
#include "protocol/json.hpp"
#include "tests/integration/support/cluster.hpp"

#include <boost/test/unit_test.hpp>
#include <caf/all.hpp>

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

gp::node_partitioning_status status_in(gp::node_phase phase, int blocked) {
  gp::node_partitioning_status st;
  st.phase = phase;
  st.drain.pods_blocked = blocked;
  st.started_at = "2026-11-30T00:00:00Z";
  return st;
}

struct writer_fixture {
  gt::connection c{gt::cluster::admin()};
  std::string item = gt::unique_name("writer");
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg.set("logger.verbosity", caf::atom("quiet"))};
  caf::scoped_actor self{sys};
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
    writer = sys.spawn(ga::status_writer, io);
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
  // Well past the coalescing interval (100 ms): the older status never lands.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  BOOST_TEST(shown() == "Applying/0");
  BOOST_TEST(status_patches() - before == 1.0);
}

// The race itself: the writer is held in a write (the API server frozen) while a worker's
// status and then its write-ahead queue up behind it. Were the status sent at a lower
// priority than the persist, the persist would be handled first and the older status
// written after it.
BOOST_FIXTURE_TEST_CASE(a_status_queued_before_a_persist_is_not_written_after_it, writer_fixture) {
  const double before = status_patches();
  std::thread freeze([] { BOOST_CHECK(gt::cluster::control("freeze kube-apiserver 2")); });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  // Flushed 100 ms later: the writer then waits for the frozen API server.
  self->send<caf::message_priority::high>(writer, ga::status_atom_v, item,
                                          status_in(gp::node_phase::draining, 5));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const auto answer =
      persist(status_in(gp::node_phase::applying, 0), status_in(gp::node_phase::draining, 1));
  freeze.join();
  BOOST_TEST(answer == "");
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
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
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  BOOST_TEST(shown() == "Draining/0");
  BOOST_TEST(status_patches() - before == 1.0);
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

BOOST_AUTO_TEST_SUITE_END()
