// actors::status_writer against the real API server: a status that reaches it both to
// coalesce and to persist (in either order, as the persist goes at high priority) is
// written once; a status that differs is written; and the object shows the last one.
#include "actors/io_executor.hpp"
#include "actors/messages.hpp"
#include "actors/operator_metrics.hpp"
#include "protocol/json.hpp"
#include "tests/integration/support/cluster.hpp"

#include <boost/test/unit_test.hpp>
#include <caf/all.hpp>

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
  caf::actor writer;

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

  // Asked at high priority, as a worker asks (the router delegates it so), from an
  // event-based actor, as in the operator; the answer comes back here.
  std::string persist(const gp::node_partitioning_status& st) {
    auto reply_to = caf::actor_cast<caf::actor>(self);
    auto w = writer;
    auto name = item;
    sys.spawn([=](caf::event_based_actor* asker) -> caf::behavior {
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

BOOST_FIXTURE_TEST_CASE(a_status_persisted_and_then_sent_to_coalesce_is_written_once,
                        writer_fixture) {
  const double before = status_patches();
  const auto st = status_in(gp::node_phase::draining, 2);
  // The order a busy router gives them: the persist (high priority) overtakes.
  BOOST_TEST(persist(st) == "");
  self->send(writer, ga::status_atom_v, item, st);
  BOOST_TEST(gt::eventually([&] { return shown() == "Draining/2"; }));
  // Well past the coalescing interval (100 ms): nothing more is written.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  BOOST_TEST(status_patches() - before == 1.0);
}

BOOST_FIXTURE_TEST_CASE(a_status_sent_to_coalesce_and_then_persisted_is_written_once,
                        writer_fixture) {
  const double before = status_patches();
  const auto st = status_in(gp::node_phase::draining, 1);
  self->send(writer, ga::status_atom_v, item, st);
  BOOST_TEST(persist(st) == "");
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  BOOST_TEST(shown() == "Draining/1");
  BOOST_TEST(status_patches() - before == 1.0);
}

BOOST_FIXTURE_TEST_CASE(a_different_status_after_a_persist_is_written, writer_fixture) {
  const double before = status_patches();
  BOOST_TEST(persist(status_in(gp::node_phase::draining, 2)) == "");
  self->send(writer, ga::status_atom_v, item, status_in(gp::node_phase::draining, 0));
  BOOST_TEST(gt::eventually([&] { return shown() == "Draining/0"; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  BOOST_TEST(status_patches() - before == 2.0);
}

BOOST_FIXTURE_TEST_CASE(the_same_status_is_written_again_once_the_object_shows_another,
                        writer_fixture) {
  const auto st = status_in(gp::node_phase::applying, 0);
  BOOST_TEST(persist(st) == "");
  // Someone else writes the status; the operator, seeing it, asks for its own again.
  BOOST_REQUIRE(c.api.patch(items, "", item, kube::patch_type::merge,
                            R"({"status":{"phase":"Failed","drain":{"podsBlocked":7}}})", [] {
                              kube::patch_options o;
                              o.subresource = "status";
                              return o;
                            }()));
  BOOST_REQUIRE(shown() == "Failed/7");
  // Within a few seconds of writing it, the same status is taken for a repeat...
  BOOST_TEST(persist(st) == "");
  BOOST_TEST(shown() == "Failed/7");
  // ...after that, it is written again.
  std::this_thread::sleep_for(std::chrono::seconds(5));
  BOOST_TEST(persist(st) == "");
  BOOST_TEST(shown() == "Applying/0");
}

BOOST_AUTO_TEST_SUITE_END()
