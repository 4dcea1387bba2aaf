// actors::node_worker on CAF's test_coordinator: it steps the node state machine on
// every view, grant, timer and io answer; hands the step's writes to the io executor one
// batch at a time; writes status and events through the StatusWriter; and tells the
// governor where it stands. The io executor, StatusWriter and governor are test actors
// (actor_fixture.hpp); the io one plays the cluster.
#include "actor_fixture.hpp"
#include "actors/node_worker.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace actor_test;
using namespace std::chrono_literals;

namespace {

const std::string item_name = std::string(plan_name) + "-gpu-1";

struct worker_fixture : actor_fixture {
  std::shared_ptr<io_double_state> io_state = std::make_shared<io_double_state>();
  std::shared_ptr<writer_double_state> written = std::make_shared<writer_double_state>();
  std::shared_ptr<governor_double_state> governed = std::make_shared<governor_double_state>();
  io_double_actor io = spawn(io_double, io_state);
  ga::status_writer_actor writer = spawn(writer_double, written);
  ga::governor_actor governor = spawn(governor_double, governed);
  ga::node_worker_actor worker;
  std::chrono::milliseconds watch_lag_limit{10000};
  /// The worker's wall clock, which the io stand-in stamps by too; it moves only when a
  /// test moves it (timers fire when a test triggers them).
  manual_clock clock;

  cluster_model& cluster() { return io_state->cluster; }

  worker_fixture() {
    cluster().now = clock.reader();
    cluster().put(make_node("gpu-1"));
    cluster().put(make_pod("gpu-1", "web-0"));
    auto plugin = make_pod("gpu-1", "device-plugin", "device-plugin");
    plugin.ns = "kube-amd-gpu";
    plugin.daemon_set = true;
    cluster().put(plugin);
    cluster().put(make_item("gpu-1"));
    cluster().put(make_plan());
  }

  void start() {
    ga::node_worker_config c;
    c.item = item_name;
    c.plan = plan_name;
    c.io = io.address();
    c.writer = writer.address();
    c.governor = governor;
    c.watch_lag_limit = watch_lag_limit;
    c.now = clock.reader();
    worker = spawn(ga::node_worker, c);
    sched.run();
  }

  // As the plan's supervisor shows a view: the worker is sent its slice of it.
  void show(const ga::snapshot_ptr& view, bool budgets_only = false) {
    caf::anon_send(worker, ga::view_atom_v, slice_of(*view), budgets_only);
    sched.run();
  }
  ga::node_slice_ptr slice_of(const ga::cluster_snapshot& view) const {
    const auto& item = view.items.count(item_name) ? *view.items.at(item_name) : make_item("gpu-1");
    return std::make_shared<const gc::node_slice>(gc::view_slicer(view, io_state->dcm).slice(item));
  }

  void show_view() { show(cluster().snapshot()); }

  void deliver() {
    caf::anon_send(io, deliver_atom_v);
    sched.run();
  }

  std::size_t requests() const { return io_state->node_requests.size(); }

  // Starts the worker, shows it the cluster and grants it the token; its first write is
  // then asked for (and held, if the io executor holds its answers).
  void start_with_the_token() {
    start_granted();
    sched.trigger_timeouts();
    sched.run();
  }

  // Starts the worker with the token and runs it (io answering at once) to its end.
  void run_the_whole_way() {
    start_granted();
    show_view(); // the status echo
    run_with_timers(40);
  }

  void start_granted() {
    start();
    show_view();
    caf::anon_send(worker, ga::grant_atom_v);
    sched.run();
  }

  bool sets_profile_label(std::size_t i) const {
    return request(i).patch && request(i).patch->labels.count(gc::dcm_profile_label) &&
           request(i).patch->labels.at(gc::dcm_profile_label).has_value();
  }

  // Starts the worker with DCM silent and the io executor holding its answers, grants it
  // the token and lets it run, a batch at a time, until it asks for the profile label.
  // Answers with that request's index (its answer is still held).
  std::size_t run_to_the_label_write() {
    cluster().dcm_answer = "";
    io_state->hold = true;
    start_with_the_token();
    for (int round = 0; round < 20 && !(requests() > 0 && sets_profile_label(requests() - 1));
         ++round) {
      deliver();
      sched.trigger_timeouts();
      sched.run();
    }
    BOOST_TEST_REQUIRE(sets_profile_label(requests() - 1));
    return requests() - 1;
  }
  const ga::node_io& request(std::size_t i) const { return io_state->node_requests.at(i); }
  const gc::governor_node& last_facts() const { return governed->wants.back().facts; }

  // The item as if its worker had labelled the node and waits for DCM's answer; the
  // node as the label left it (cordoned, tainted, no pods). Answers with the node.
  gc::node_info waiting_for_dcm() {
    auto item = make_item("gpu-1");
    item.status.phase = gp::node_phase::waiting_operator;
    item.status.observed_hash = item.spec.desired_hash;
    item.status.started_at = gp::format_time(clock.now());
    item.status.dcm_events_until = gc::dcm_events_mark({}); // no Event of DCM's at the start
    item.status.history.push_back(
        {gp::node_phase::waiting_operator, gp::format_time(clock.now()), "ProfileApplied", ""});
    cluster().put(item);
    cluster().view.pods_by_node.clear();
    auto n = make_node("gpu-1");
    n.unschedulable = true;
    n.annotations[gc::was_unschedulable_annotation] = "false";
    n.taints.push_back({gc::dcm_taint_key, gc::dcm_taint_value, "NoExecute"});
    n.labels[gc::dcm_profile_label] = dcm_profile;
    n.annotations[gc::applied_hash_annotation] =
        item.spec.desired_hash + "@" + item.status.started_at; // this run's label
    n.labels.erase(gc::dcm_state_label);
    cluster().put(n);
    return n;
  }

  // The item as if its worker had entered Draining just now.
  void draining_and_cordoned() {
    auto item = make_item("gpu-1");
    item.status.phase = gp::node_phase::draining;
    item.status.observed_hash = item.spec.desired_hash;
    item.status.history.push_back(
        {gp::node_phase::draining, gp::format_time(clock.now()), "Started", ""});
    cluster().put(item);
    auto n = make_node("gpu-1");
    n.unschedulable = true;
    n.annotations[gc::was_unschedulable_annotation] = "false";
    cluster().put(n);
  }
};

std::string removal_names(const ga::node_io& io) {
  std::string out;
  for (const auto& r : io.removals)
    out += (out.empty() ? "" : ",") + r.ns + "/" + r.name + (r.evict ? ":evict" : ":delete");
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(node_worker)

BOOST_FIXTURE_TEST_CASE(a_pending_worker_asks_the_governor_and_writes_status_only, worker_fixture) {
  start();
  show_view();
  BOOST_TEST(requests() == 0u);
  BOOST_TEST(written->last_phase(item_name) == "Pending");
  BOOST_TEST_REQUIRE(!governed->wants.empty());
  BOOST_TEST(governed->wants.back().item == item_name);
  BOOST_TEST(last_facts().wants_token);
  BOOST_TEST(!last_facts().in_flight);
}

// A profile just created names a ConfigMap whose watch has not listed yet: the worker
// waits instead of failing preflight, and judges once the watch has listed.
BOOST_FIXTURE_TEST_CASE(a_payload_still_being_listed_is_waited_for_not_failed, worker_fixture) {
  const std::string payload = std::string(dcm_ns) + "/cpx-nps4";
  cluster().view.config_maps.erase(payload);
  cluster().view.config_maps_listed.erase(payload);
  start();
  show_view();
  BOOST_TEST(written->statuses.empty(), "nothing is judged before the payload is listed");
  BOOST_TEST(governed->wants.empty());
  cluster().view.config_maps_listed.insert(payload);
  show_view();
  BOOST_TEST(written->last_phase(item_name) == "Failed");
  BOOST_TEST_REQUIRE(!written->statuses.empty());
  BOOST_TEST(written->statuses.back().second.last_error.find("PayloadNotFound") !=
                 std::string::npos,
             written->statuses.back().second.last_error);
}

// Found by the fault suite: an operator killed between a node write and the (coalesced,
// later) status write restarted the run, and relabelled a node whose DCM run was under way.
BOOST_FIXTURE_TEST_CASE(the_status_of_a_phase_is_written_before_the_node_is_changed,
                        worker_fixture) {
  io_state->hold = true;
  start();
  show_view();
  caf::anon_send(worker, ga::grant_atom_v);
  sched.run();
  BOOST_TEST(written->persisted == 0);
  sched.trigger_timeouts();
  sched.run();
  // Before the cordon goes out, Draining and the run's start are written.
  BOOST_TEST_REQUIRE(requests() == 1u);
  BOOST_TEST_REQUIRE(written->persisted == 1);
  const auto& kept = written->statuses.back().second;
  BOOST_TEST((kept.phase == std::optional<gp::node_phase>(gp::node_phase::draining)));
  BOOST_TEST(!kept.started_at.empty());
  // More changes in the same phase: nothing more to write first.
  deliver();
  BOOST_TEST_REQUIRE(requests() == 2u);
  BOOST_TEST(written->persisted == 1);
}

BOOST_FIXTURE_TEST_CASE(a_status_that_cannot_be_written_holds_back_the_node_change,
                        worker_fixture) {
  written->persist_error = "writing the status: Transport: connection refused";
  start_with_the_token();
  BOOST_TEST(written->persisted == 1);
  BOOST_TEST(requests() == 0u); // no cordon without the status
  // It tries again after a back-off, and goes on once the status is written.
  written->persist_error.clear();
  BOOST_TEST_REQUIRE(sched.has_pending_timeout());
  sched.trigger_timeouts();
  sched.run();
  BOOST_TEST(written->persisted >= 2);
  BOOST_TEST(requests() >= 1u);
}

BOOST_FIXTURE_TEST_CASE(with_a_token_it_cordons_through_io_and_keeps_one_batch_in_flight,
                        worker_fixture) {
  io_state->hold = true;
  start();
  show_view();
  caf::anon_send(worker, ga::grant_atom_v);
  sched.run();
  BOOST_TEST(written->last_phase(item_name) == "Draining");
  BOOST_TEST(last_facts().in_flight);
  // Entering Draining writes status only; the cordon goes out on the next step, which an
  // immediate timer brings (no waiting for the echo of that status write).
  BOOST_TEST(requests() == 0u);
  BOOST_TEST_REQUIRE(sched.has_pending_timeout());
  sched.trigger_timeouts();
  sched.run();
  BOOST_TEST_REQUIRE(requests() == 1u);
  BOOST_TEST_REQUIRE(request(0).patch.has_value());
  BOOST_TEST((request(0).patch->unschedulable == std::optional<bool>(true)));
  BOOST_TEST((request(0).patch->annotations.at(gc::was_unschedulable_annotation) ==
              std::optional<std::string>("false")));
  BOOST_TEST(request(0).removals.empty());
  BOOST_TEST(!request(0).taint);
  BOOST_TEST(request(0).node == "gpu-1");
  BOOST_TEST(request(0).item == item_name);

  // New views while the batch is out: no second batch.
  show_view();
  show_view();
  BOOST_TEST(requests() == 1u);

  // The answer (and the view that shows the cordon) brings the next batch: evictions.
  deliver();
  BOOST_TEST_REQUIRE(requests() == 2u);
  BOOST_TEST(removal_names(request(1)) == "team/web-0:evict");
  BOOST_TEST(!request(1).patch);
  BOOST_TEST(!request(1).taint);

  deliver();
  BOOST_TEST_REQUIRE(requests() == 3u);
  BOOST_TEST((request(2).taint == std::optional<bool>(true)));
  BOOST_TEST(request(2).removals.empty());
}

BOOST_FIXTURE_TEST_CASE(a_worker_drives_its_node_to_succeeded_through_io_writer_and_timers,
                        worker_fixture) {
  run_the_whole_way();

  const std::vector<std::string> path{"Pending",         "Draining",  "Applying",
                                      "WaitingOperator", "Verifying", "Succeeded"};
  BOOST_TEST(written->phases_of(item_name) == path, boost::test_tools::per_element());
  // Each phase's first status goes at once; some within a phase (the drain's progress)
  // may wait to be coalesced with what follows.
  const auto& sent = written->statuses;
  BOOST_TEST_REQUIRE(written->may_wait.size() == sent.size());
  std::size_t waited = 0;
  for (std::size_t i = 0; i < sent.size(); ++i) {
    const bool new_phase = i == 0 || sent[i].second.phase != sent[i - 1].second.phase;
    if (new_phase)
      BOOST_TEST(!written->may_wait[i], "status " << i);
    waited += written->may_wait[i] ? 1 : 0;
  }
  BOOST_TEST(waited > 0u);
  const auto n = cluster().node("gpu-1");
  BOOST_TEST(!n.unschedulable);
  BOOST_TEST(!n.has_dcm_taint());
  BOOST_TEST(n.labels.at(gc::dcm_profile_label) == dcm_profile);
  BOOST_TEST(n.allocatable.at("amd.com/gpu") == "64");
  BOOST_TEST(n.annotations.count(gc::was_unschedulable_annotation) == 0u);
  BOOST_TEST(!last_facts().in_flight);
  BOOST_TEST(!last_facts().wants_token);
  // One write each: cordon with DCM's config, eviction, taint, label, untaint, uncordon.
  BOOST_TEST(requests() == 6u);
  BOOST_TEST(request(0).dcm.has_value());
  BOOST_TEST(
      (request(3).patch && request(3).patch->labels.at(gc::dcm_profile_label) == dcm_profile));
  const auto& cm = cluster().view.config_maps.at(std::string(dcm_ns) + "/" + dcm_cm);
  BOOST_TEST(gc::dcm_config_has(cm->at("config.json"), dcm_profile, payload_json));
  // The untaint and the uncordon go in the rate limiter's lane ahead of other nodes'
  // cordons and evictions; the rest in the rollout's.
  for (std::size_t i = 0; i < requests(); ++i)
    BOOST_TEST((request(i).lane == (i >= 4 ? gpu_partitioner::kube::request_lane::restore
                                           : gpu_partitioner::kube::request_lane::rollout)),
               "request " << i);
  // Events for the node go through the writer, named after the Node.
  const bool cordon_event =
      std::any_of(written->events.begin(), written->events.end(), [](const ga::event_io& e) {
        return e.kind == "Node" && e.name == "gpu-1" && e.uid == "uid-gpu-1" &&
               e.reason == "Cordoned";
      });
  BOOST_TEST(cordon_event);
  BOOST_TEST(!sched.has_pending_timeout());
}

BOOST_FIXTURE_TEST_CASE(the_governor_hears_a_run_ended_only_once_its_end_is_written,
                        worker_fixture) {
  governed->writer = written;
  run_the_whole_way();
  BOOST_TEST_REQUIRE(written->last_phase(item_name) == "Succeeded");
  // The first report after the token was held that gives it back.
  bool held = false;
  std::optional<want_record> release;
  for (const auto& w : governed->wants) {
    if (w.facts.in_flight)
      held = true;
    else if (held) {
      release = w;
      break;
    }
  }
  BOOST_TEST_REQUIRE(release.has_value());
  BOOST_TEST_REQUIRE(!release->persisted_before.empty());
  BOOST_TEST(release->persisted_before.back() == "Succeeded",
             "the token went back with " << release->persisted_before.back()
                                         << " the last status written");
}

// Found by the fault suite (200 nodes): another writer's update landed between the view
// the worker read and its label write; the watch showed that update (past the version the
// worker wrote over, but without its write) and the worker acted on it: it could send the
// label again (removing the state label DCM had written meanwhile), or, as here, take the
// old run's `success` that its own write had removed for DCM's answer.
// The restore goes out before Succeeded is written. A worker started after it (the
// operator restarted) finds the run over while the record still says Verifying: the
// governor, which would count the node free, hears of it only once Succeeded is written.
BOOST_FIXTURE_TEST_CASE(a_run_found_over_but_recorded_in_flight_is_reported_once_written,
                        worker_fixture) {
  governed->writer = written;
  auto item = make_item("gpu-1");
  item.status.phase = gp::node_phase::verifying;
  item.status.observed_hash = item.spec.desired_hash;
  item.status.started_at = gp::format_time(clock.now());
  item.status.history.push_back(
      {gp::node_phase::verifying, gp::format_time(clock.now()), "OperatorSucceeded", ""});
  cluster().put(item);
  cluster().view.pods_by_node.clear();
  auto n = make_node("gpu-1"); // restored: schedulable, untainted, nothing of ours
  n.labels[gc::dcm_profile_label] = dcm_profile;
  n.allocatable["amd.com/gpu"] = "64";
  cluster().put(n);
  start();
  show_view();
  // Something else changes on the node before the watch shows Succeeded written.
  cluster().view.node_changes["gpu-1"] = clock.now();
  show_view();
  cluster().view.node_changes.clear();
  run_with_timers(10);
  BOOST_TEST(written->last_phase(item_name) == "Succeeded");
  BOOST_TEST(requests() == 0u); // nothing left to do on the node
  int free = 0;
  for (const auto& w : governed->wants) {
    if (w.facts.in_flight)
      continue;
    ++free;
    BOOST_TEST_REQUIRE(!w.persisted_before.empty(), "the node was reported free unwritten");
    BOOST_TEST(w.persisted_before.back() == "Succeeded");
  }
  BOOST_TEST(free > 0);
}

BOOST_FIXTURE_TEST_CASE(a_view_older_than_the_workers_own_write_does_not_make_it_write_again,
                        worker_fixture) {
  // DCM stays silent: nothing else changes the node.
  const std::size_t label_request = run_to_the_label_write();
  // Another writer's update lands first (the version between the worker's read and write).
  auto between = cluster().node("gpu-1");
  between.labels["example.com/other"] = "x";
  between.resource_version = std::to_string(std::stoi(between.resource_version) + 1);
  cluster().put(between);
  // The worker's write lands on top of it; the watch shows only the update in between yet.
  io_state->publish = false;
  deliver();
  auto stale = std::make_shared<ga::cluster_snapshot>(*cluster().snapshot());
  stale->nodes["gpu-1"] = std::make_shared<const gc::node_info>(between);
  show(stale);
  sched.trigger_timeouts();
  sched.run();
  for (std::size_t i = label_request + 1; i < requests(); ++i)
    BOOST_TEST(!sets_profile_label(i), "request " << i << " sets the profile label again");
  BOOST_TEST(written->last_phase(item_name) == "WaitingOperator");
}

BOOST_FIXTURE_TEST_CASE(a_watch_that_lags_behind_the_workers_write_is_bypassed_by_reading_the_node,
                        worker_fixture) {
  run_to_the_label_write(); // DCM answers later, by hand
  // From here the watch shows nothing: not the worker's write, not DCM's answer.
  auto stale = cluster().snapshot();
  io_state->publish = false;
  deliver(); // the write is answered: the lag counts from here
  auto reads = [&] {
    std::size_t n = 0;
    for (const auto& r : io_state->node_requests)
      n += r.read_node ? 1 : 0;
    return n;
  };
  auto show_stale = [&] { show(stale); };
  show_stale();
  BOOST_TEST(reads() == 0u, "a read before the watch had time to show the write");
  clock.advance(watch_lag_limit - 1ms);
  show_stale();
  BOOST_TEST(reads() == 0u, "a read before the watch lagged the whole limit");
  BOOST_TEST(written->last_phase(item_name) == "WaitingOperator");
  auto done = cluster().node("gpu-1");
  cluster().dcm_says(done, "success");
  done.resource_version = std::to_string(std::stoi(done.resource_version) + 1);
  cluster().put(done);
  // DCM's Event comes on a watch of its own, which is not the one lagging.
  auto with_answer = std::make_shared<ga::cluster_snapshot>(*stale);
  with_answer->dcm_events_by_node = cluster().view.dcm_events_by_node;
  stale = with_answer;
  clock.advance(1ms);
  show_stale();
  BOOST_TEST_REQUIRE(reads() == 1u, "no read once the watch lagged the whole limit");
  BOOST_TEST(io_state->node_requests.back().read_node);
  deliver();
  // DCM's answer, read directly, moves the node on: Verifying, and the taint goes.
  BOOST_TEST(written->last_phase(item_name) == "Verifying");
  sched.trigger_timeouts();
  sched.run();
  bool untainted = false;
  for (const auto& r : io_state->node_requests)
    untainted = untainted || (r.taint && !*r.taint);
  BOOST_TEST(untainted, "no untaint after the read");
}

BOOST_FIXTURE_TEST_CASE(a_drain_blocked_by_a_pdb_is_retried_when_the_requeue_timer_fires,
                        worker_fixture) {
  gc::pdb_info budget;
  budget.ns = "team";
  budget.name = "web-pdb";
  budget.match_labels = {{"app", "web"}};
  // Its status, seen before the refusal, allows one: the eviction is asked (one that a
  // budget's status shows closed is held unasked) and the API server refuses it.
  budget.disruptions_allowed = 1;
  cluster().put(budget);
  cluster().budgets_refuse = true;
  // The worker compares the refusal's time with its clock: a refusal 4 s old is not
  // retried now, and is due 1 s later.
  cluster().blocked_age = 4s;
  draining_and_cordoned();
  start();
  show_view();
  BOOST_TEST_REQUIRE(requests() == 1u);
  BOOST_TEST(removal_names(request(0)) == "team/web-0:evict");
  const auto& st = written->statuses.back().second;
  BOOST_TEST_REQUIRE(st.drain.blocking_pdbs.size() == 1u);
  BOOST_TEST(st.drain.blocking_pdbs[0].name == "web-pdb");
  BOOST_TEST(sched.has_pending_timeout());

  // The timer fires before the 5 s are up: no retry, another timer.
  sched.trigger_timeouts();
  sched.run();
  BOOST_TEST(requests() == 1u);
  BOOST_TEST_REQUIRE(sched.has_pending_timeout());
  clock.advance(999ms);
  sched.trigger_timeouts();
  sched.run();
  BOOST_TEST(requests() == 1u, "retried before the 5 s were up");
  BOOST_TEST_REQUIRE(sched.has_pending_timeout());

  clock.advance(1ms);
  sched.trigger_timeouts();
  sched.run();
  BOOST_TEST_REQUIRE(requests() == 2u);
  BOOST_TEST(removal_names(request(1)) == "team/web-0:evict");
}

// A drain that timed out on a tainted node is rolled back in two batches: the taint
// alone, then (once the answer shows it gone) the uncordon with the annotations.
BOOST_FIXTURE_TEST_CASE(a_rollback_goes_out_as_two_batches_untaint_then_uncordon, worker_fixture) {
  draining_and_cordoned();
  auto item = make_item("gpu-1");
  item.status = cluster().view.items.at(item_name)->status;
  item.status.history.back().time = gp::format_time(clock.now() - 700s);
  cluster().put(item);
  auto n = cluster().node("gpu-1");
  n.taints.push_back({gc::dcm_taint_key, gc::dcm_taint_value, "NoExecute"});
  cluster().put(n);
  start();
  show_view();
  BOOST_TEST(written->last_phase(item_name) == "Failed");
  BOOST_TEST_REQUIRE(requests() == 2u);
  BOOST_TEST((request(0).taint == std::optional<bool>(false)));
  BOOST_TEST(!request(0).patch);
  BOOST_TEST(!request(1).taint);
  BOOST_TEST_REQUIRE(request(1).patch.has_value());
  BOOST_TEST((request(1).patch->unschedulable == std::optional<bool>(false)));
  BOOST_TEST(request(1).patch->annotations.count(gc::was_unschedulable_annotation) == 1u);
  const auto node = cluster().node("gpu-1");
  BOOST_TEST(!node.unschedulable);
  BOOST_TEST(!node.has_dcm_taint());
  BOOST_TEST(node.annotations.count(gc::was_unschedulable_annotation) == 0u);
}

// Reaction latency: a write carries the arrival of the change that brought it (DCM's
// answer here); a change that brought no write is not carried into a later one.
BOOST_FIXTURE_TEST_CASE(a_write_carries_the_arrival_of_the_change_it_answers, worker_fixture) {
  auto n = waiting_for_dcm();
  start();
  show_view();
  BOOST_TEST(requests() == 0u);

  // Something changed on the node, but DCM has not answered: nothing to write.
  cluster().view.node_changes["gpu-1"] = clock.now() - 1s;
  show_view();
  cluster().view.node_changes.clear();
  BOOST_TEST(requests() == 0u);

  // DCM's answer arrives: Verifying (status only), then at once the untaint.
  const auto answered = clock.now() - 20ms;
  cluster().dcm_says(n, "success");
  cluster().put(n);
  cluster().view.node_changes["gpu-1"] = answered;
  show_view();
  cluster().view.node_changes.clear();
  BOOST_TEST(written->last_phase(item_name) == "Verifying");
  sched.trigger_timeouts();
  sched.run();
  BOOST_TEST_REQUIRE(requests() >= 1u);
  BOOST_TEST((request(0).taint == std::optional<bool>(false)));
  BOOST_TEST_REQUIRE(request(0).reacting_to.has_value());
  BOOST_TEST((*request(0).reacting_to == answered));
  // The next write follows the answer to the untaint, not a new change: nothing carried.
  run_with_timers(10);
  BOOST_TEST_REQUIRE(requests() >= 2u);
  BOOST_TEST(!request(1).reacting_to.has_value());
}

// The untaint that answers DCM's success is safe before Verifying is written (the machine
// says so: node_step::write_ahead), so it does not wait for the status writer.
BOOST_FIXTURE_TEST_CASE(the_untaint_after_dcms_answer_does_not_wait_for_the_status_writer,
                        worker_fixture) {
  auto n = waiting_for_dcm();
  written->persist_error = "writing the status: Transport: connection refused";
  io_state->hold = true; // the worker stops at its first node write
  start();
  show_view();
  cluster().dcm_says(n, "success");
  cluster().put(n);
  show_view();
  sched.trigger_timeouts();
  sched.run();
  BOOST_TEST(written->last_phase(item_name) == "Verifying");
  BOOST_TEST(written->persisted == 0);
  BOOST_TEST_REQUIRE(requests() >= 1u);
  BOOST_TEST((request(0).taint == std::optional<bool>(false)));
}

BOOST_FIXTURE_TEST_CASE(the_echo_of_its_own_write_is_not_a_change_to_react_to, worker_fixture) {
  io_state->hold = true;
  start_with_the_token();
  BOOST_TEST_REQUIRE(requests() == 1u); // the cordon, held
  cluster().view.node_changes["gpu-1"] = clock.now();
  show_view();
  cluster().view.node_changes.clear();
  deliver();
  BOOST_TEST_REQUIRE(requests() == 2u);
  BOOST_TEST(removal_names(request(1)) == "team/web-0:evict");
  BOOST_TEST(!request(1).reacting_to.has_value());
}

// A slice whose only news is the budgets covering the node's pods is no step while the
// node is not draining (no status, no report to the governor); any other slice is.
BOOST_FIXTURE_TEST_CASE(a_slice_of_budget_news_is_no_step_unless_draining, worker_fixture) {
  start();
  show_view();
  const auto wants = governed->wants.size();
  BOOST_TEST_REQUIRE(wants >= 1u);
  show(cluster().snapshot(), true);
  BOOST_TEST(governed->wants.size() == wants);
  show(cluster().snapshot(), false);
  BOOST_TEST(governed->wants.size() == wants + 1);
}

// A worker keeps its slice of a view, not the view: at a thousand nodes a view is about a
// megabyte, and workers holding the ones they were last sent kept many of them alive.
BOOST_FIXTURE_TEST_CASE(a_worker_keeps_none_of_the_views_it_is_sliced_from, worker_fixture) {
  start();
  auto told = cluster().snapshot();
  const std::weak_ptr<const ga::cluster_snapshot> seen = told;
  show(told);
  BOOST_TEST_REQUIRE(!governed->wants.empty()); // it stepped on that slice
  told.reset();
  cluster().put(make_pod("gpu-1", "web-1")); // the model's next view
  (void)cluster().snapshot();
  BOOST_TEST(seen.expired());
}

// The node as the worker's last write left it is kept only until the view has that
// version: kept longer, every node a rollout is done with would be held twice.
BOOST_FIXTURE_TEST_CASE(a_worker_drops_its_written_node_once_the_view_has_it, worker_fixture) {
  run_the_whole_way();
  BOOST_TEST_REQUIRE(written->last_phase(item_name) == "Succeeded");
  const std::weak_ptr<const gc::node_info> ours = cluster().view.nodes.at("gpu-1");
  auto later = cluster().node("gpu-1");
  later.resource_version = std::to_string(std::stoi(later.resource_version) + 1);
  cluster().put(later); // the view moves on past our write
  show_view();
  BOOST_TEST(ours.expired());
}

// A slice whose only news is the budgets is kept without a step while the node does not
// drain; the next step, on a timer, reads it.
BOOST_FIXTURE_TEST_CASE(a_timer_step_reads_the_latest_slice, worker_fixture) {
  cluster().dcm_answer = "";
  run_the_whole_way();
  BOOST_TEST_REQUIRE(written->last_phase(item_name) == "WaitingOperator");
  auto done = cluster().node("gpu-1");
  cluster().dcm_says(done, "success");
  done.resource_version = std::to_string(std::stoi(done.resource_version) + 1);
  cluster().put(done);
  const auto before = written->statuses.size();
  show(cluster().snapshot(), true);
  BOOST_TEST(written->statuses.size() == before, "no step on budget news");
  run_with_timers(40);
  BOOST_TEST(written->last_phase(item_name) == "Succeeded");
}

BOOST_FIXTURE_TEST_CASE(a_worker_whose_item_is_gone_does_nothing, worker_fixture) {
  cluster().view.items.clear();
  start();
  show_view();
  BOOST_TEST(requests() == 0u);
  BOOST_TEST(written->statuses.empty());
  BOOST_TEST(governed->wants.empty());
}

BOOST_AUTO_TEST_SUITE_END()
