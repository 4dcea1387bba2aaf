// kube/ against a real kube-apiserver (tools/cluster): CRUD, status, conflicts,
// pagination, size limits on responses and watch events, watches through restarts and
// 410 Gone, eviction under a PDB, leader election, events, and authentication.
#include "kube/event_recorder.hpp"
#include "kube/leader_election.hpp"
#include "kube/list_watch.hpp"
#include "tests/integration/support/cluster.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

using namespace gpu_partitioner;
using namespace gpu_partitioner::testing;
using kube::error_kind;

namespace {

const kube::resource plans{"infrastructure.silogen.ai", "v1alpha1", "partitioningplans", false};
const kube::resource items{"infrastructure.silogen.ai", "v1alpha1", "nodepartitionings", false};

std::string config_map(const std::string& ns, const std::string& name, const std::string& value,
                       const std::string& labels = "{}") {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
         R"(","namespace":")" + ns + R"(","labels":)" + labels + R"(},"data":{"k":")" + value +
         R"("}})";
}

std::string rv_of(const rapidjson::Value& object) {
  const auto* rv = kube::find_path(object, {"metadata", "resourceVersion"});
  return rv != nullptr && rv->IsString() ? rv->GetString() : "";
}

std::string data_k(const rapidjson::Value& object) {
  const auto* v = kube::find_path(object, {"data", "k"});
  return v != nullptr && v->IsString() ? v->GetString() : "";
}

/// Records what a list+watch loop delivers, in order, and the view built from it.
struct recording_handler : kube::watch_handler {
  std::mutex mutex;
  std::vector<std::pair<kube::event_type, std::string>> log;
  std::map<std::string, std::string> view; // name -> data.k
  int syncs = 0;
  int restarts = 0;
  int relists = 0;
  std::vector<std::string> errors;

  void on_change(const kube::watch_delivery& d) override {
    std::lock_guard<std::mutex> lock(mutex);
    log.emplace_back(d.type, d.key.name);
    if (d.type == kube::event_type::deleted)
      view.erase(d.key.name);
    else
      view[d.key.name] = d.object != nullptr ? data_k(*d.object) : "";
  }
  void on_synced() override {
    std::lock_guard<std::mutex> lock(mutex);
    ++syncs;
  }
  void on_restart(const std::string&, bool relist) override {
    std::lock_guard<std::mutex> lock(mutex);
    ++restarts;
    relists += relist ? 1 : 0;
  }
  void on_error(const kube::failure& e) override {
    std::lock_guard<std::mutex> lock(mutex);
    errors.push_back(e.describe());
  }
  std::map<std::string, std::string> snapshot() {
    std::lock_guard<std::mutex> lock(mutex);
    return view;
  }
  int relists_so_far() {
    std::lock_guard<std::mutex> lock(mutex);
    return relists;
  }
  bool reported(const std::string& error) {
    std::lock_guard<std::mutex> lock(mutex);
    return std::find(errors.begin(), errors.end(), error) != errors.end();
  }
};

/// Runs a list+watch loop on its own thread and connection.
struct watch_thread {
  connection conn{cluster::admin()};
  recording_handler handler;
  kube::list_watch loop;
  std::atomic<bool> stop{false};
  std::thread thread;

  explicit watch_thread(kube::list_watch_options options)
      : watch_thread(std::move(options), [](kube::http_client&) {}) {}
  /// `setup` configures the loop's connection before the loop starts.
  watch_thread(kube::list_watch_options options,
               const std::function<void(kube::http_client&)>& setup)
      : loop(conn.api, std::move(options), handler) {
    setup(conn.http);
    start();
  }
  void start() {
    stop = false;
    thread = std::thread([this] { loop.run(stop); });
  }
  void halt() {
    stop = true;
    if (thread.joinable())
      thread.join();
  }
  ~watch_thread() { halt(); }
};

kube::list_watch_options config_maps_in(const std::string& ns) {
  kube::list_watch_options o;
  o.what = kube::resources::config_maps();
  o.ns = ns;
  o.page_size = 7;
  o.watch_timeout = std::chrono::seconds(30);
  o.backoff.base = std::chrono::milliseconds(100);
  o.backoff.cap = std::chrono::milliseconds(1000);
  return o;
}

/// The ConfigMaps of a namespace as the server has them now (name -> data.k).
std::map<std::string, std::string> truth(kube::client& api, const std::string& ns) {
  std::map<std::string, std::string> out;
  auto list = api.list(kube::resources::config_maps(), ns);
  BOOST_REQUIRE_MESSAGE(list.ok(), (list.ok() ? "" : list.error().describe()));
  for (const auto& item : list.value()["items"].GetArray()) {
    const std::string name = kube::string_at(item["metadata"], "name");
    if (name != "kube-root-ca.crt")
      out[name] = data_k(item);
  }
  return out;
}

std::map<std::string, std::string> without_root_ca(std::map<std::string, std::string> view) {
  view.erase("kube-root-ca.crt");
  return view;
}

} // namespace

BOOST_AUTO_TEST_SUITE(kube_client)

BOOST_AUTO_TEST_CASE(crud_on_core_objects_with_every_write_verb) {
  scratch_namespace ns("kube-it");
  auto& api = ns.conn.api;
  const auto cm = kube::resources::config_maps();

  auto created = api.create(cm, ns.name, config_map(ns.name, "a", "1"));
  BOOST_REQUIRE_MESSAGE(created.ok(), (created.ok() ? "" : created.error().describe()));
  auto again = api.create(cm, ns.name, config_map(ns.name, "a", "1"));
  BOOST_REQUIRE(!again);
  BOOST_TEST(to_string(again.error().kind) == "AlreadyExists");

  auto got = api.get(cm, ns.name, "a");
  BOOST_REQUIRE(got);
  BOOST_TEST(data_k(got.value()) == "1");

  auto merged = api.patch(cm, ns.name, "a", kube::patch_type::merge, R"({"data":{"k":"2"}})");
  BOOST_REQUIRE(merged);
  BOOST_TEST(data_k(merged.value()) == "2");

  // A JSON patch with a failing `test` is refused and changes nothing.
  auto guarded = api.patch(cm, ns.name, "a", kube::patch_type::json,
                           R"([{"op":"test","path":"/data/k","value":"1"},)"
                           R"({"op":"replace","path":"/data/k","value":"3"}])");
  BOOST_REQUIRE(!guarded);
  BOOST_TEST(data_k(api.get(cm, ns.name, "a").value()) == "2");
  auto tested = api.patch(cm, ns.name, "a", kube::patch_type::json,
                          R"([{"op":"test","path":"/data/k","value":"2"},)"
                          R"({"op":"replace","path":"/data/k","value":"3"}])");
  BOOST_REQUIRE_MESSAGE(tested.ok(), (tested.ok() ? "" : tested.error().describe()));
  BOOST_TEST(data_k(tested.value()) == "3");

  auto applied = api.apply(cm, ns.name, "b", config_map(ns.name, "b", "applied"), "kube-it");
  BOOST_REQUIRE_MESSAGE(applied.ok(), (applied.ok() ? "" : applied.error().describe()));
  BOOST_TEST(data_k(applied.value()) == "applied");
  // Another manager changing an applied field conflicts unless it forces.
  auto contested = api.apply(cm, ns.name, "b", config_map(ns.name, "b", "mine"), "other");
  BOOST_REQUIRE(!contested);
  BOOST_TEST(to_string(contested.error().kind) == "Conflict");
  auto forced = api.apply(cm, ns.name, "b", config_map(ns.name, "b", "mine"), "other", true);
  BOOST_REQUIRE(forced);
  BOOST_TEST(data_k(forced.value()) == "mine");

  kube::delete_options wrong_uid;
  wrong_uid.precondition_uid = "00000000-0000-0000-0000-000000000000";
  auto refused = api.remove(cm, ns.name, "a", wrong_uid);
  BOOST_REQUIRE(!refused);
  BOOST_TEST(to_string(refused.error().kind) == "Conflict");
  BOOST_REQUIRE(api.remove(cm, ns.name, "a"));
  auto gone = api.get(cm, ns.name, "a");
  BOOST_REQUIRE(!gone);
  BOOST_TEST(to_string(gone.error().kind) == "NotFound");
  BOOST_TEST(gone.error().code == 404);
}

// The write gate is asked again as the request goes out, after connecting: a replica
// frozen between the first check and the send (its lease run out meanwhile) sends nothing.
BOOST_AUTO_TEST_CASE(a_write_gate_that_closes_before_the_send_keeps_the_write_unsent) {
  scratch_namespace ns("kube-it");
  auto config = cluster::admin();
  int asked = 0;
  config.may_write = [&] { return ++asked == 1; }; // open when asked first, closed after
  connection gated(config);
  auto made = gated.api.create(kube::resources::config_maps(), ns.name,
                               R"({"metadata":{"name":"gated"},"data":{"k":"v"}})");
  BOOST_TEST_REQUIRE(!made.ok());
  BOOST_TEST(made.error().kind == kube::error_kind::aborted, made.error().describe());
  BOOST_TEST(made.error().describe().find("as it was sent") != std::string::npos,
             made.error().describe());
  BOOST_TEST(asked == 2);
  auto got = ns.conn.api.get(kube::resources::config_maps(), ns.name, "gated");
  BOOST_TEST_REQUIRE(!got.ok());
  BOOST_TEST(got.error().kind == kube::error_kind::not_found, got.error().describe());
}

BOOST_AUTO_TEST_CASE(update_with_stale_resource_version_is_a_conflict) {
  scratch_namespace ns("kube-it");
  auto& api = ns.conn.api;
  const auto cm = kube::resources::config_maps();
  auto created = api.create(cm, ns.name, config_map(ns.name, "c", "1"));
  BOOST_REQUIRE(created);
  const std::string stale = rv_of(created.value());
  BOOST_REQUIRE(api.patch(cm, ns.name, "c", kube::patch_type::merge, R"({"data":{"k":"2"}})"));

  std::string body = config_map(ns.name, "c", "3");
  body.insert(body.find("\"labels\""), "\"resourceVersion\":\"" + stale + "\",");
  auto update = api.update(cm, ns.name, "c", body);
  BOOST_REQUIRE(!update);
  BOOST_TEST(update.error().kind == error_kind::conflict);
  BOOST_TEST(update.error().code == 409);
  BOOST_TEST(data_k(api.get(cm, ns.name, "c").value()) == "2");
}

BOOST_AUTO_TEST_CASE(crud_and_status_subresource_on_custom_resources) {
  connection conn(cluster::admin());
  auto& api = conn.api;
  // A plan (profiles have no status) selecting no node: no operator runs here anyway.
  const std::string name = unique_name("kube-it-plan");
  const std::string plan =
      R"({"apiVersion":"infrastructure.silogen.ai/v1alpha1","kind":"PartitioningPlan",)"
      R"("metadata":{"name":")" +
      name +
      R"("},"spec":{"paused":true,"partitionings":[{"name":"none","selector":)"
      R"({"matchLabels":{"kube-client-test":"selects-nothing"}},"profileRef":{"name":"x"}}]}})";
  auto created = api.create(plans, "", plan);
  BOOST_REQUIRE_MESSAGE(created.ok(), (created.ok() ? "" : created.error().describe()));

  // Schema validation answers Invalid with causes naming the field.
  auto invalid = api.patch(plans, "", name, kube::patch_type::merge,
                           R"({"spec":{"rollout":{"drainPolicy":{"evictionKind":"Drain"}}}})");
  BOOST_REQUIRE(!invalid);
  BOOST_TEST(invalid.error().kind == error_kind::invalid);
  BOOST_REQUIRE(!invalid.error().causes.empty());
  BOOST_TEST(invalid.error().causes.front().field == "spec.rollout.drainPolicy.evictionKind");

  // The status subresource changes status only; the main resource ignores status.
  kube::patch_options status;
  status.subresource = "status";
  auto with_status =
      api.patch(plans, "", name, kube::patch_type::merge,
                R"({"spec":{"paused":false},"status":{"observedGeneration":1}})", status);
  BOOST_REQUIRE_MESSAGE(with_status.ok(), (with_status.ok() ? "" : with_status.error().describe()));
  const auto* generation = kube::find_path(with_status.value(), {"status", "observedGeneration"});
  BOOST_REQUIRE(generation != nullptr);
  BOOST_TEST(generation->GetInt64() == 1);
  BOOST_TEST(kube::find_path(with_status.value(), {"spec", "paused"})->GetBool());
  auto spec_only = api.patch(plans, "", name, kube::patch_type::merge,
                             R"({"spec":{"dryRun":true},"status":{"observedGeneration":7}})");
  BOOST_REQUIRE(spec_only);
  BOOST_TEST(kube::find_path(spec_only.value(), {"spec", "dryRun"})->GetBool());
  BOOST_TEST(kube::find_path(spec_only.value(), {"status", "observedGeneration"})->GetInt64() == 1);

  BOOST_REQUIRE(api.remove(plans, "", name));
  BOOST_TEST(api.get(plans, "", name).error().kind == error_kind::not_found);
}

BOOST_AUTO_TEST_CASE(list_pages_through_continue_tokens_with_selectors) {
  scratch_namespace ns("kube-it");
  auto& api = ns.conn.api;
  const auto cm = kube::resources::config_maps();
  for (int i = 0; i < 23; ++i)
    BOOST_REQUIRE(
        api.create(cm, ns.name,
                   config_map(ns.name, "m" + std::to_string(i), std::to_string(i),
                              i % 2 == 0 ? R"({"parity":"even"})" : R"({"parity":"odd"})")));
  kube::list_options page;
  page.limit = 5;
  page.label_selector = "parity in (even)";
  auto first = api.list_page(cm, ns.name, page);
  BOOST_REQUIRE(first);
  BOOST_TEST(first.value()["items"].Size() == 5u);
  BOOST_TEST(!kube::string_at(first.value()["metadata"], "continue").empty());

  kube::list_options all = page;
  auto listed = api.list(cm, ns.name, all);
  BOOST_REQUIRE(listed);
  BOOST_TEST(listed.value()["items"].Size() == 12u);

  kube::list_options by_name;
  by_name.field_selector = "metadata.name=m7";
  auto one = api.list(cm, ns.name, by_name);
  BOOST_REQUIRE(one);
  BOOST_REQUIRE(one.value()["items"].Size() == 1u);
  BOOST_TEST(data_k(one.value()["items"][0]) == "7");
}

BOOST_AUTO_TEST_CASE(a_response_over_the_body_limit_fails_naming_it_and_is_not_retried) {
  scratch_namespace ns("kube-it");
  auto& api = ns.conn.api;
  const auto cm = kube::resources::config_maps();
  BOOST_REQUIRE(api.create(cm, ns.name, config_map(ns.name, "small", "1", R"({"size":"small"})")));
  connection capped{cluster::admin()};
  capped.http.set_max_body(256 * 1024);
  int requests = 0;
  capped.http.set_observer([&](const kube::request_record&) { ++requests; });
  const kube::list_options everything;
  auto small_list = capped.api.list_page(cm, ns.name, everything);
  BOOST_REQUIRE_MESSAGE(small_list.ok(), (small_list.ok() ? "" : small_list.error().describe()));

  BOOST_REQUIRE(api.create(
      cm, ns.name, config_map(ns.name, "big", std::string(300 * 1024, 'x'), R"({"size":"big"})")));
  const std::string path = "/api/v1/namespaces/" + ns.name + "/configmaps";
  requests = 0;
  auto big_list = capped.api.list_page(cm, ns.name, everything);
  BOOST_REQUIRE(!big_list.ok());
  BOOST_TEST(big_list.error().kind == error_kind::too_large);
  BOOST_TEST(big_list.error().message ==
             "response body from GET " + path + " exceeds the 256 KiB limit");
  BOOST_TEST(requests == 1); // refused once, not retried
  auto big_one = capped.api.get(cm, ns.name, "big");
  BOOST_REQUIRE(!big_one.ok());
  BOOST_TEST(big_one.error().message ==
             "response body from GET " + path + "/big exceeds the 256 KiB limit");

  // The same connection still serves what fits, and an unlimited one reads the big object.
  kube::list_options small_only;
  small_only.label_selector = "size=small";
  auto selected = capped.api.list_page(cm, ns.name, small_only);
  BOOST_REQUIRE_MESSAGE(selected.ok(), (selected.ok() ? "" : selected.error().describe()));
  BOOST_TEST(selected.value()["items"].Size() == 1u);
  BOOST_TEST(api.get(cm, ns.name, "big").ok());
}

BOOST_AUTO_TEST_CASE(a_watch_event_over_its_limit_restarts_the_loop_until_the_object_goes,
                     *boost::unit_test::timeout(120)) {
  scratch_namespace ns("kube-it");
  auto& api = ns.conn.api;
  const auto cm = kube::resources::config_maps();
  const std::string labels = R"({"bounded":"yes"})";
  BOOST_REQUIRE(api.create(cm, ns.name, config_map(ns.name, "before", "1", labels)));
  auto options = config_maps_in(ns.name);
  options.label_selector = "bounded=yes";
  options.max_event_bytes = 256 * 1024;
  watch_thread w(options, [](kube::http_client& http) { http.set_max_body(256 * 1024); });
  BOOST_REQUIRE(eventually([&] { return w.handler.snapshot().count("before") == 1; }));
  const int relists_at_start = w.handler.relists_so_far();

  BOOST_REQUIRE(
      api.create(cm, ns.name, config_map(ns.name, "big", std::string(300 * 1024, 'x'), labels)));
  // Its ADDED event ends the watch; each relist then fails on the list's body while the
  // object is there, and the loop keeps trying after a back-off.
  const std::string path = "/api/v1/namespaces/" + ns.name + "/configmaps";
  BOOST_REQUIRE(eventually([&] {
    return w.handler.reported("TooLarge: watch event from GET " + path +
                              " exceeds the 256 KiB limit");
  }));
  BOOST_REQUIRE(eventually([&] {
    return w.handler.reported("TooLarge: response body from GET " + path +
                              " exceeds the 256 KiB limit") &&
           w.handler.relists_so_far() >= relists_at_start + 2;
  }));
  BOOST_TEST(w.handler.snapshot().count("big") == 0u);
  {
    std::lock_guard<std::mutex> lock(w.handler.mutex);
    BOOST_TEST_MESSAGE(w.handler.relists - relists_at_start
                       << " relists, " << w.handler.errors.size()
                       << " errors, the first: " << w.handler.errors.front());
  }

  // Once the object is gone the next relist succeeds, and later objects arrive.
  BOOST_REQUIRE(api.remove(cm, ns.name, "big"));
  BOOST_REQUIRE(api.create(cm, ns.name, config_map(ns.name, "after", "2", labels)));
  BOOST_TEST(eventually([&] {
    const auto view = w.handler.snapshot();
    return view.count("before") == 1 && view.count("after") == 1;
  }));
  BOOST_REQUIRE(api.patch(cm, ns.name, "after", kube::patch_type::merge, R"({"data":{"k":"3"}})"));
  BOOST_TEST(eventually([&] { return w.handler.snapshot()["after"] == "3"; }));
  BOOST_TEST(w.handler.snapshot().count("big") == 0u);
}

BOOST_AUTO_TEST_CASE(watch_sees_added_modified_deleted_in_order) {
  scratch_namespace ns("kube-it");
  auto& api = ns.conn.api;
  const auto cm = kube::resources::config_maps();
  watch_thread w(config_maps_in(ns.name));
  BOOST_REQUIRE(eventually([&] {
    std::lock_guard<std::mutex> lock(w.handler.mutex);
    return w.handler.syncs > 0;
  }));
  BOOST_REQUIRE(api.create(cm, ns.name, config_map(ns.name, "w", "1")));
  BOOST_REQUIRE(api.patch(cm, ns.name, "w", kube::patch_type::merge, R"({"data":{"k":"2"}})"));
  BOOST_REQUIRE(api.remove(cm, ns.name, "w"));
  std::vector<kube::event_type> seen;
  BOOST_REQUIRE(eventually([&] {
    std::lock_guard<std::mutex> lock(w.handler.mutex);
    seen.clear();
    for (const auto& [type, name] : w.handler.log)
      if (name == "w")
        seen.push_back(type);
    return seen.size() >= 3;
  }));
  BOOST_REQUIRE(seen.size() == 3u);
  BOOST_TEST((seen[0] == kube::event_type::added));
  BOOST_TEST((seen[1] == kube::event_type::modified));
  BOOST_TEST((seen[2] == kube::event_type::deleted));
}

BOOST_AUTO_TEST_CASE(an_idle_watch_stops_within_a_second_of_abort) {
  scratch_namespace ns("kube-it");
  watch_thread w(config_maps_in(ns.name));
  BOOST_REQUIRE(eventually([&] {
    std::lock_guard<std::mutex> lock(w.handler.mutex);
    return w.handler.syncs > 0;
  }));
  // Let the stream go quiet, so the abort lands in a blocked read.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const auto asked = std::chrono::steady_clock::now();
  w.halt();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - asked);
  BOOST_TEST_MESSAGE("abort took " << took.count() << " ms");
  BOOST_TEST(took.count() <= 1500);
}

BOOST_AUTO_TEST_CASE(watch_survives_an_apiserver_restart_and_converges,
                     *boost::unit_test::timeout(240)) {
  scratch_namespace ns("kube-it");
  auto& api = ns.conn.api;
  const auto cm = kube::resources::config_maps();
  for (int i = 0; i < 5; ++i)
    BOOST_REQUIRE(api.create(cm, ns.name, config_map(ns.name, "r" + std::to_string(i), "0")));
  watch_thread w(config_maps_in(ns.name));
  BOOST_REQUIRE(
      eventually([&] { return without_root_ca(w.handler.snapshot()) == truth(api, ns.name); }));

  BOOST_REQUIRE(cluster::control("restart kube-apiserver"));
  // Changes after the restart reach the watcher, which reconnected on its own.
  BOOST_REQUIRE(api.patch(cm, ns.name, "r1", kube::patch_type::merge, R"({"data":{"k":"9"}})"));
  BOOST_REQUIRE(api.remove(cm, ns.name, "r2"));
  BOOST_REQUIRE(api.create(cm, ns.name, config_map(ns.name, "r5", "new")));
  BOOST_TEST(
      eventually([&] { return without_root_ca(w.handler.snapshot()) == truth(api, ns.name); },
                 std::chrono::seconds(60)));
  std::lock_guard<std::mutex> lock(w.handler.mutex);
  BOOST_TEST(w.handler.restarts > 0);
}

BOOST_AUTO_TEST_CASE(relist_after_410_reports_what_changed_while_away,
                     *boost::unit_test::timeout(240)) {
  scratch_namespace ns("kube-it");
  auto& api = ns.conn.api;
  const auto cm = kube::resources::config_maps();
  for (int i = 0; i < 10; ++i)
    BOOST_REQUIRE(api.create(cm, ns.name, config_map(ns.name, "g" + std::to_string(i), "0")));
  watch_thread w(config_maps_in(ns.name));
  BOOST_REQUIRE(
      eventually([&] { return without_root_ca(w.handler.snapshot()) == truth(api, ns.name); }));
  // Stop watching, change things, and compact etcd past our resourceVersion: resuming
  // from it must fail with 410 and the relist must report the differences.
  w.halt();
  const std::string resumed_from = w.loop.state().resource_version;
  BOOST_REQUIRE(api.remove(cm, ns.name, "g3"));
  BOOST_REQUIRE(api.remove(cm, ns.name, "g4"));
  BOOST_REQUIRE(api.patch(cm, ns.name, "g5", kube::patch_type::merge, R"({"data":{"k":"5"}})"));
  BOOST_REQUIRE(api.create(cm, ns.name, config_map(ns.name, "g10", "new")));
  BOOST_REQUIRE(cluster::control("compact"));
  BOOST_REQUIRE(cluster::control("restart kube-apiserver"));
  {
    std::lock_guard<std::mutex> lock(w.handler.mutex);
    w.handler.log.clear();
  }
  w.start();
  BOOST_TEST(
      eventually([&] { return without_root_ca(w.handler.snapshot()) == truth(api, ns.name); },
                 std::chrono::seconds(60)));
  std::lock_guard<std::mutex> lock(w.handler.mutex);
  std::map<std::string, int> deliveries;
  for (const auto& [type, name] : w.handler.log)
    ++deliveries[name];
  BOOST_TEST(deliveries["g3"] == 1); // deleted, once
  BOOST_TEST(deliveries["g4"] == 1);
  BOOST_TEST(deliveries["g5"] == 1); // modified, once
  BOOST_TEST(deliveries["g10"] == 1);
  BOOST_TEST(deliveries["g0"] == 0); // unchanged: not delivered again
  BOOST_TEST(w.loop.state().resource_version != resumed_from);
}

BOOST_AUTO_TEST_CASE(eviction_blocked_by_a_pdb_reports_it_and_succeeds_once_allowed,
                     *boost::unit_test::timeout(120)) {
  scratch_namespace ns("kube-it");
  auto& api = ns.conn.api;
  BOOST_REQUIRE(eventually(
      [&] { return bool(api.get(kube::resources::service_accounts(), ns.name, "default")); }));
  const std::string pod =
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"guarded","labels":{"app":"guarded"}},)"
      R"("spec":{"nodeName":"no-such-node","automountServiceAccountToken":false,)"
      R"("containers":[{"name":"c","image":"busybox"}]}})";
  BOOST_REQUIRE(api.create(kube::resources::pods(), ns.name, pod));
  // Play kubelet: the pod runs and is ready, so the budget counts it as healthy.
  kube::patch_options status;
  status.subresource = "status";
  BOOST_REQUIRE(api.patch(
      kube::resources::pods(), ns.name, "guarded", kube::patch_type::merge,
      R"({"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}})", status));
  const std::string pdb =
      R"({"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"keep-one"},)"
      R"("spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"guarded"}}}})";
  BOOST_REQUIRE(api.create(kube::resources::pod_disruption_budgets(), ns.name, pdb));
  BOOST_REQUIRE(eventually([&] {
    auto got = api.get(kube::resources::pod_disruption_budgets(), ns.name, "keep-one");
    const auto* healthy =
        got ? kube::find_path(got.value(), {"status", "currentHealthy"}) : nullptr;
    return healthy != nullptr && healthy->GetInt() == 1;
  }));

  auto blocked = api.evict(ns.name, "guarded");
  BOOST_REQUIRE_MESSAGE(blocked.ok(), (blocked.ok() ? "" : blocked.error().describe()));
  BOOST_TEST((blocked->outcome == kube::eviction_outcome::blocked_by_pdb));
  BOOST_TEST(blocked->message.find("disruption budget") != std::string::npos);

  BOOST_REQUIRE(api.patch(kube::resources::pod_disruption_budgets(), ns.name, "keep-one",
                          kube::patch_type::merge, R"({"spec":{"minAvailable":0}})"));
  BOOST_REQUIRE(eventually([&] {
    auto got = api.get(kube::resources::pod_disruption_budgets(), ns.name, "keep-one");
    const auto* allowed =
        got ? kube::find_path(got.value(), {"status", "disruptionsAllowed"}) : nullptr;
    return allowed != nullptr && allowed->GetInt() >= 1;
  }));
  kube::delete_options now;
  now.grace_period_seconds = 0;
  auto evicted = api.evict(ns.name, "guarded", now);
  BOOST_REQUIRE_MESSAGE(evicted.ok(), (evicted.ok() ? "" : evicted.error().describe()));
  BOOST_TEST((evicted->outcome == kube::eviction_outcome::evicted));
  BOOST_REQUIRE(eventually([&] {
    auto again = api.evict(ns.name, "guarded");
    return again && again->outcome == kube::eviction_outcome::gone;
  }));
}

BOOST_AUTO_TEST_CASE(exactly_one_elector_leads_and_the_other_takes_over,
                     *boost::unit_test::timeout(120)) {
  const std::string lease = unique_name("kube-it-lease");
  struct candidate {
    connection conn{cluster::admin()};
    std::unique_ptr<kube::leader_elector> elector;
    std::atomic<bool> stop{false};
    std::thread thread;
  };
  auto make_config = [&](const std::string& id, bool release) {
    kube::election_config c;
    c.lease_namespace = "default";
    c.lease_name = lease;
    c.identity = id;
    c.lease_duration = std::chrono::seconds(3);
    c.renew_deadline = std::chrono::seconds(2);
    c.retry_period = std::chrono::milliseconds(300);
    c.release_on_stop = release;
    return c;
  };
  candidate a, b;
  a.elector = std::make_unique<kube::leader_elector>(a.conn.api, make_config("a", false));
  b.elector = std::make_unique<kube::leader_elector>(b.conn.api, make_config("b", true));
  a.thread = std::thread([&] { a.elector->run(a.stop, nullptr, nullptr); });
  BOOST_REQUIRE(eventually([&] { return a.elector->leading(); }, std::chrono::seconds(10)));
  b.thread = std::thread([&] { b.elector->run(b.stop, nullptr, nullptr); });

  // For a while: never both.
  bool both = false;
  for (int i = 0; i < 100; ++i) {
    both = both || (a.elector->leading() && b.elector->leading());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  BOOST_TEST(!both);
  BOOST_TEST(a.elector->leading());
  BOOST_TEST(!b.elector->leading());

  // The leader dies without releasing: the other leads within the lease duration (3 s)
  // plus one retry period of observation, and never while the old one still did.
  a.stop = true;
  a.thread.join();
  const auto died = std::chrono::steady_clock::now();
  BOOST_REQUIRE(eventually([&] { return b.elector->leading(); }, std::chrono::seconds(15)));
  const auto waited = std::chrono::steady_clock::now() - died;
  BOOST_TEST(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count() <=
             3000 + 2 * 300 + 1000);
  b.stop = true;
  b.thread.join();
  // b released on a clean stop: the lease names nobody now.
  connection check(cluster::admin());
  auto released = check.api.get(kube::resources::leases(), "default", lease);
  BOOST_REQUIRE(released);
  BOOST_TEST(kube::string_at(released.value()["spec"], "holderIdentity").empty());
  (void)check.api.remove(kube::resources::leases(), "default", lease);
}

BOOST_AUTO_TEST_CASE(repeated_events_are_aggregated_into_one_object) {
  scratch_namespace ns("kube-it");
  auto& api = ns.conn.api;
  kube::event_recorder recorder(api, "gpu-partitioner", "it");
  kube::event_spec e;
  e.regarding = {"v1", "ConfigMap", ns.name, "subject", ""};
  e.type = "Warning";
  e.reason = "DrainBlocked";
  e.message = "pdb x blocks eviction";
  std::string first;
  for (int i = 0; i < 3; ++i) {
    auto name = recorder.record(e);
    BOOST_REQUIRE_MESSAGE(name.ok(), (name.ok() ? "" : name.error().describe()));
    if (i == 0)
      first = name.value();
    BOOST_TEST(name.value() == first);
  }
  e.message = "something else";
  BOOST_REQUIRE(recorder.record(e));
  auto events = api.list(kube::resources::events(), ns.name);
  BOOST_REQUIRE(events);
  BOOST_REQUIRE(events.value()["items"].Size() == 2u);
  auto got = api.get(kube::resources::events(), ns.name, first);
  BOOST_REQUIRE(got);
  BOOST_TEST(got.value()["count"].GetInt() == 3);
  BOOST_TEST(kube::string_at(got.value()["involvedObject"], "name") == "subject");
}

BOOST_AUTO_TEST_CASE(an_event_about_an_object_named_at_the_253_character_limit_is_recorded) {
  scratch_namespace ns("kube-it");
  auto& api = ns.conn.api;
  kube::event_recorder recorder(api, "gpu-partitioner", "it");
  kube::event_spec e;
  // 253 characters; cut to make room for the ".<hex time>" suffix (17 characters), the
  // object's part would end in '-', which no name may.
  const std::string subject = std::string(235, 'a') + "-" + std::string(17, 'b');
  BOOST_REQUIRE(subject.size() == 253u);
  e.regarding = {"v1", "ConfigMap", ns.name, subject, ""};
  e.type = "Normal";
  e.reason = "Started";
  e.message = "long names";
  auto name = recorder.record(e);
  BOOST_REQUIRE_MESSAGE(name.ok(), (name.ok() ? "" : name.error().describe()));
  BOOST_TEST(name.value().size() <= 253u);
  auto got = api.get(kube::resources::events(), ns.name, name.value());
  BOOST_REQUIRE(got);
  BOOST_TEST(kube::string_at(got.value()["involvedObject"], "name") == subject);
}

BOOST_AUTO_TEST_CASE(token_kubeconfig_authenticates) {
  auto config = cluster::token();
  BOOST_TEST(!config.token.empty());
  BOOST_TEST(config.client_cert_pem.empty());
  connection conn(config);
  auto ns = conn.api.get(kube::resources::namespaces(), "", "default");
  BOOST_REQUIRE_MESSAGE(ns.ok(), (ns.ok() ? "" : ns.error().describe()));

  config.token = "not-a-valid-token";
  connection wrong(config);
  auto refused = wrong.api.get(kube::resources::namespaces(), "", "default");
  BOOST_REQUIRE(!refused);
  BOOST_TEST(refused.error().kind == error_kind::unauthorized);
}

BOOST_AUTO_TEST_CASE(a_wrong_ca_fails_with_a_clear_tls_error) {
  auto config = cluster::admin();
  // The system's public roots do not include the local cluster's own CA.
  auto roots = kube::read_file("/etc/ssl/certs/ca-certificates.crt");
  BOOST_REQUIRE(roots);
  config.ca_pem = roots.value();
  connection conn(config);
  auto refused = conn.api.get(kube::resources::namespaces(), "", "default");
  BOOST_REQUIRE(!refused);
  BOOST_TEST(refused.error().kind == error_kind::tls);
  BOOST_TEST_MESSAGE(refused.error().message);
  BOOST_TEST(refused.error().message.find("certificate") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
