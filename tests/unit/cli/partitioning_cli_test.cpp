// kubectl-partitioning's pure part: the command line, the status and list text, and
// which retries and promotions it refuses.
#include "cli/partitioning_cli.hpp"
#include "controller/item_name.hpp"
#include "protocol/json.hpp"
#include "tests/unit/cli/parse.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace cli = gpu_partitioner::cli;
namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;
using namespace std::chrono_literals;

namespace {

using cli::testing::parsed;

std::string refused(std::vector<std::string> args) {
  return cli::testing::refusal(std::move(args)).message;
}

const gp::wall_clock::time_point now = *gp::parse_time("2026-11-29T12:00:00Z");

gp::partitioning_plan plan_named(std::string name, std::string uid) {
  gp::partitioning_plan p;
  p.metadata.name = std::move(name);
  p.metadata.uid = std::move(uid);
  p.metadata.generation = 1;
  p.metadata.creation_timestamp = "2026-11-29T11:00:00Z";
  p.status.observed_generation = 1;
  return p;
}

gp::node_partitioning item(const gp::partitioning_plan& plan, std::string node,
                           std::optional<gp::node_phase> phase, std::string since) {
  gp::node_partitioning i;
  i.metadata.name = plan.metadata.name + "-" + node;
  i.spec.plan_ref = {plan.metadata.name, plan.metadata.uid};
  i.spec.node_name = std::move(node);
  i.spec.profile_ref.name = "mi300x-cpx-nps4";
  i.status.phase = phase;
  if (phase)
    i.status.history.push_back({*phase, std::move(since), "", ""});
  return i;
}

} // namespace

BOOST_TEST_DONT_PRINT_LOG_VALUE(cli::command_kind)

BOOST_AUTO_TEST_SUITE(arguments)

BOOST_AUTO_TEST_CASE(each_command_with_its_operands) {
  BOOST_TEST(parsed({"list"}).kind == cli::command_kind::list);
  auto s = parsed({"status", "p1", "--all"});
  BOOST_TEST(s.kind == cli::command_kind::status);
  BOOST_TEST(s.plan == "p1");
  BOOST_TEST(s.all_nodes);
  // -A is kubectl's all-namespaces, not --all: plans are cluster-scoped.
  BOOST_TEST(!parsed({"status", "p1", "-A"}).all_nodes);
  BOOST_TEST(parsed({"list", "--all-namespaces"}).kind == cli::command_kind::list);
  BOOST_TEST(parsed({"pause", "p1"}).kind == cli::command_kind::pause);
  BOOST_TEST(parsed({"resume", "p1"}).kind == cli::command_kind::resume);
  auto pr = parsed({"promote", "p1"});
  BOOST_TEST(pr.kind == cli::command_kind::promote);
  BOOST_TEST(pr.plan == "p1");
  auto r = parsed({"--kubeconfig", "/k", "retry", "p1", "gpu-node-03", "--context=c"});
  BOOST_TEST(r.kind == cli::command_kind::retry);
  BOOST_TEST(r.plan == "p1");
  BOOST_TEST(r.node == "gpu-node-03");
  BOOST_TEST(r.kubeconfig == "/k");
  BOOST_TEST(r.context == "c");
  BOOST_TEST(parsed({"status", "p", "--help"}).kind == cli::command_kind::help);
  BOOST_TEST(parsed({"version"}).kind == cli::command_kind::version);
  BOOST_TEST(parsed({"--version"}).kind == cli::command_kind::version);
}

BOOST_AUTO_TEST_CASE(mistakes_are_named) {
  BOOST_TEST(refused({"stauts", "p"}) ==
             "unknown command \"stauts\" (list, status, pause, resume, retry, promote)");
  BOOST_TEST(refused({"promote"}) == "promote takes PLAN, given 0");
  BOOST_TEST(refused({"promote", "p", "n"}) == "promote takes PLAN, given 2");
  BOOST_TEST(refused({"status"}) == "status takes PLAN, given 0");
  BOOST_TEST(refused({"retry", "p"}) == "retry takes PLAN NODE, given 1");
  BOOST_TEST(refused({"list", "x"}) == "list takes no arguments, given 1");
  BOOST_TEST(refused({"status", "p", "--force"}) == "unknown flag: --force");
  BOOST_TEST(refused({"status", "p", "--kubeconfig"}) ==
             "flag needs an argument: --kubeconfig FILE");
  BOOST_TEST(refused({"status", "p", "--context="}) == "--context needs a value");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(durations) {
  BOOST_TEST(cli::format_duration(0s) == "0s");
  BOOST_TEST(cli::format_duration(59s) == "59s");
  BOOST_TEST(cli::format_duration(125s) == "2m05s");
  BOOST_TEST(cli::format_duration(3720s) == "1h02m");
  BOOST_TEST(cli::format_duration(std::chrono::seconds(3 * 86400 + 4 * 3600 + 59)) == "3d04h");
  BOOST_TEST(cli::format_duration(-1s) == "-");
}

BOOST_AUTO_TEST_CASE(items_of_a_plan_in_rollout_order) {
  auto p = plan_named("p", "uid-1");
  p.status.order = {"n3", "n1"};
  auto other = plan_named("q", "uid-2");
  auto recreated = plan_named("p", "uid-old");
  std::vector<gp::node_partitioning> all{item(p, "n1", {}, ""), item(other, "n2", {}, ""),
                                         item(p, "n3", {}, ""), item(p, "n0", {}, ""),
                                         item(recreated, "n4", {}, "")};
  auto mine = cli::items_of_plan(p, all);
  std::vector<std::string> nodes;
  for (const auto& i : mine)
    nodes.push_back(i.spec.node_name);
  // Ordered nodes first, then the rest by name; another plan's, and those of an earlier
  // plan of the same name, are not this plan's.
  BOOST_TEST(nodes == (std::vector<std::string>{"n3", "n1", "n0"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(status_shows_phase_time_and_what_blocks_each_node) {
  auto p = plan_named("training-pool-partition", "u");
  p.spec.rollout.max_parallel = 2;
  p.spec.rollout.max_unavailable = gp::int_or_percent::percent(25);
  p.status.phase = gp::plan_phase::degraded;
  p.status.nodes = {4, 1, 1, 0, 0, 0, 1, 1};
  p.status.conditions.push_back({"Degraded",
                                 gp::condition_status::true_,
                                 {},
                                 "2026-11-29T11:58:00Z",
                                 "NodesFailed",
                                 "1 node failed: gpu-node-04"});
  p.status.conditions.push_back({"Completed",
                                 gp::condition_status::false_,
                                 {},
                                 "2026-11-29T11:58:00Z",
                                 "InProgress",
                                 "should not show"});
  p.status.conflicts.push_back({"gpu-node-09", "also selected by plan other"});
  auto draining = item(p, "gpu-node-02", gp::node_phase::draining, "2026-11-29T11:59:30Z");
  draining.status.drain.blocking_pdbs.push_back({"gpu-workloads", "training-job"});
  draining.status.drain.blocking_pods.push_back(
      {"gpu-workloads", "training-job-abc", "PDB", gp::pod_hold::budget});
  draining.status.drain.blocking_pods.push_back(
      {"gpu-workloads", "notebook", "no controller owns it", gp::pod_hold::policy});
  auto failed = item(p, "gpu-node-04", gp::node_phase::failed, "2026-11-29T11:55:00Z");
  failed.status.last_error = "DCM reported failure: GPU busy";
  std::vector<gp::node_partitioning> items{
      item(p, "gpu-node-01", gp::node_phase::succeeded, "2026-11-29T11:57:55Z"), draining,
      item(p, "gpu-node-03", std::nullopt, ""), failed};
  items[2].metadata.creation_timestamp = "2026-11-29T11:50:00Z";

  std::string expected =
      "Plan training-pool-partition: Degraded, 1/4 nodes succeeded, 1 failed  "
      "[###############...............]\n"
      "  maxParallel 2, maxUnavailable 25%\n"
      "  in flight: 1 draining, 0 applying, 0 waiting for DCM, 0 verifying, 0 soaking; pending 1\n"
      "  Degraded: NodesFailed: 1 node failed: gpu-node-04\n"
      "  conflict: node gpu-node-09 left alone: also selected by plan other\n"
      "\n"
      "NODE         PHASE      FOR     PROFILE          DETAIL\n"
      "gpu-node-01  Succeeded  2m05s   mi300x-cpx-nps4\n"
      "gpu-node-02  Draining   30s     mi300x-cpx-nps4  drain blocked by PDB "
      "gpu-workloads/training-job; "
      "pods gpu-workloads/training-job-abc (Budget), gpu-workloads/notebook (Policy)\n"
      "gpu-node-03  Pending    10m00s  mi300x-cpx-nps4\n"
      "gpu-node-04  Failed     5m00s   mi300x-cpx-nps4  DCM reported failure: GPU busy\n";
  BOOST_TEST(cli::render_status(p, items, now, false) == expected);
}

BOOST_AUTO_TEST_CASE(status_counts_the_conflicts_and_the_nodes_to_come_it_does_not_name) {
  auto p = plan_named("everything", "u");
  for (int i = 0; i < 100; ++i)
    p.status.conflicts.push_back(
        {"n" + std::to_string(1000 + i), "also selected by plan a, b, c and 96 more"});
  p.status.conflict_count = 5000;
  for (int i = 0; i < 7; ++i)
    p.status.order.push_back("m" + std::to_string(i));
  p.status.order_count = 4950;
  auto text = cli::render_status(p, {}, now, false);
  std::size_t lines = 0;
  for (auto at = text.find("  conflict: node "); at != std::string::npos;
       at = text.find("  conflict: node ", at + 1))
    ++lines;
  BOOST_TEST(lines == 10u);
  BOOST_TEST(text.find("  conflict: node n1009 left alone: also selected by plan a, b, c and 96 "
                       "more\n  ... and 4990 more nodes left alone\n") != std::string::npos,
             text);
  BOOST_TEST(text.find("  next: m0, m1, m2, m3, m4 and 4945 more\n") != std::string::npos, text);

  // Without counts (an earlier operator's status), the lists are all there is.
  p.status.conflict_count = 0;
  p.status.conflicts.resize(11);
  p.status.order_count = 0;
  text = cli::render_status(p, {}, now, false);
  BOOST_TEST(text.find("  ... and 1 more node left alone\n") != std::string::npos, text);
  BOOST_TEST(text.find("  next: m0, m1, m2, m3, m4 and 2 more\n") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(a_large_plan_lists_only_the_nodes_not_done_unless_all) {
  auto p = plan_named("big", "u");
  std::vector<gp::node_partitioning> items;
  for (int i = 0; i < 25; ++i)
    items.push_back(item(p, "n" + std::to_string(10 + i),
                         i == 7 ? gp::node_phase::verifying : gp::node_phase::succeeded,
                         "2026-11-29T11:59:00Z"));
  auto quiet = cli::render_status(p, items, now, false);
  BOOST_TEST(quiet.find("n17   Verifying") != std::string::npos);
  BOOST_TEST(quiet.find("n10") == std::string::npos);
  BOOST_TEST(quiet.find("(24 Succeeded nodes not shown; --all lists them)") != std::string::npos);
  auto all = cli::render_status(p, items, now, true);
  BOOST_TEST(all.find("n10   Succeeded") != std::string::npos);
  BOOST_TEST(all.find("not shown") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(status_shows_the_window_the_canary_and_the_soaking_nodes) {
  auto p = plan_named("rollout", "u");
  p.spec.rollout.canary = gp::canary_policy{};
  p.status.phase = gp::plan_phase::progressing;
  p.status.nodes = {3, 1, 0, 0, 0, 0, 2, 0, 1};
  p.status.window = gp::window_status{true, true, "2026-11-29T18:00:00Z", "2026-11-29T12:00:00Z"};
  p.status.canary = gp::canary_status{};
  p.status.canary->key = "0123456789abcdef";
  p.status.canary->phase = gp::canary_phase::in_progress;
  p.status.canary->nodes = {"gpu-node-01"};
  p.status.canary->soak_ends = "2026-11-29T12:20:00Z";
  p.status.canary->message = "0/1 canary node(s) done; waiting for gpu-node-01";
  auto canary = item(p, "gpu-node-01", gp::node_phase::verifying, "2026-11-29T11:45:00Z");
  canary.spec.canary = true;
  canary.spec.soak_seconds = 1800;
  canary.status.phase = gp::node_phase::succeeded;
  canary.status.history.push_back({gp::node_phase::succeeded, "2026-11-29T11:50:00Z", "", ""});
  canary.status.completed_at = "2026-11-29T11:50:00Z";
  std::vector<gp::node_partitioning> items{
      canary, item(p, "gpu-node-02", gp::node_phase::succeeded, "2026-11-29T11:00:00Z"),
      item(p, "gpu-node-03", std::nullopt, "")};
  items[2].metadata.creation_timestamp = "2026-11-29T11:00:00Z";

  std::string expected =
      "Plan rollout: Progressing, 2/3 nodes succeeded  [####################..........]\n"
      "  maxParallel 1, maxUnavailable 1\n"
      "  in flight: 0 draining, 0 applying, 0 waiting for DCM, 0 verifying, 1 soaking; pending 1\n"
      "  window: open until 2026-11-29T18:00:00Z (in 6h00m)\n"
      "  canary: InProgress on gpu-node-01; soak ends 2026-11-29T12:20:00Z (in 20m00s)\n"
      "    0/1 canary node(s) done; waiting for gpu-node-01\n"
      "\n"
      "NODE         PHASE      FOR     PROFILE          DETAIL\n"
      "gpu-node-01  Succeeded  10m00s  mi300x-cpx-nps4  canary; soaking, ends in 20m00s\n"
      "gpu-node-02  Succeeded  1h00m   mi300x-cpx-nps4\n"
      "gpu-node-03  Pending    1h00m   mi300x-cpx-nps4\n";
  BOOST_TEST(cli::render_status(p, items, now, false) == expected);

  // A failed node kept tainted while DCM may retry says for how long.
  auto held = items;
  held[2].status.phase = gp::node_phase::failed;
  held[2].status.dcm_may_change_until = "2026-11-29T12:25:00Z";
  const auto with_hold = cli::render_status(p, held, now, false);
  BOOST_TEST(with_hold.find("tainted while DCM may retry, 25m00s more") != std::string::npos,
             with_hold);

  // Nodes in DRA mode: a line per profile with their devices.
  auto dra = p;
  dra.status.devices = {{"mi300x-cpx-nps4", 2, 72, 128}};
  const auto with_devices = cli::render_status(dra, items, now, false);
  BOOST_TEST(with_devices.find("    0/1 canary node(s) done; waiting for gpu-node-01\n"
                               "  devices of mi300x-cpx-nps4: 72/128 on 2 DRA nodes\n") !=
                 std::string::npos,
             with_devices);

  // A large plan still lists a Succeeded node while it soaks.
  for (int i = 0; i < 25; ++i)
    items.push_back(
        item(p, "n" + std::to_string(10 + i), gp::node_phase::succeeded, "2026-11-29T11:59:00Z"));
  auto quiet = cli::render_status(p, items, now, false);
  BOOST_TEST(quiet.find("gpu-node-01  Succeeded") != std::string::npos);
  BOOST_TEST(quiet.find("gpu-node-02") == std::string::npos);
  BOOST_TEST(quiet.find("(26 Succeeded nodes not shown; --all lists them)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(status_says_when_nodes_may_next_start_and_how_the_canary_ended) {
  auto p = plan_named("p", "u");
  auto window_of = [&](gp::window_status w) {
    p.status.window = w;
    auto text = cli::render_status(p, {}, now, false);
    auto at = text.find("  window: ");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  BOOST_TEST(window_of({false, false, "", "2026-11-30T02:00:00Z"}) ==
             "  window: closed; nodes may start from 2026-11-30T02:00:00Z (in 14h00m)");
  BOOST_TEST(window_of({true, false, "2026-11-29T12:10:00Z", "2026-11-30T02:00:00Z"}) ==
             "  window: open until 2026-11-29T12:10:00Z (in 10m00s), too little of it left for a "
             "node to start; nodes may start from 2026-11-30T02:00:00Z (in 14h00m)");
  BOOST_TEST(window_of({false, false, "", ""}) ==
             "  window: closed; no window opens in the next week");

  p.status.window.reset();
  p.status.canary = gp::canary_status{};
  p.status.canary->phase = gp::canary_phase::passed;
  p.status.canary->nodes = {"n1", "n2", "n3", "n4", "n5", "n6", "n7"};
  p.status.canary->soak_ends = "2026-11-29T11:25:00Z";
  p.status.canary->passed_at = "2026-11-29T11:30:00Z";
  p.status.canary->message = "7 canary node(s) passed,\npromoted";
  auto text = cli::render_status(p, {}, now, false);
  BOOST_TEST(text.find("window:") == std::string::npos);
  BOOST_TEST(text.find("  canary: Passed on n1, n2, n3, n4, n5 and 2 more; soak ended "
                       "2026-11-29T11:25:00Z (35m00s ago); passed 2026-11-29T11:30:00Z (30m00s "
                       "ago)\n"
                       "    7 canary node(s) passed, promoted\n") != std::string::npos);

  // Neither line without windows and canary.
  auto plain = cli::render_status(plan_named("q", "u"), {}, now, false);
  BOOST_TEST(plain.find("window:") == std::string::npos);
  BOOST_TEST(plain.find("canary:") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(status_says_when_the_operator_lags_and_when_there_are_no_nodes) {
  auto p = plan_named("p", "u");
  p.metadata.generation = 3;
  auto text = cli::render_status(p, {}, now, false);
  BOOST_TEST(text.find("Plan p: Pending, 0/0 nodes succeeded") == 0u);
  BOOST_TEST(text.find("(the operator has not yet seen generation 3)") != std::string::npos);
  BOOST_TEST(text.find("No nodes yet.") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(list_shows_every_plan) {
  auto a = plan_named("alpha", "1");
  a.status.phase = gp::plan_phase::progressing;
  a.status.nodes = {8, 2, 1, 1, 1, 0, 3, 0};
  a.status.nodes.soaking = 1;
  a.status.window = gp::window_status{true, true, "2026-11-29T18:00:00Z", "2026-11-29T12:00:00Z"};
  a.status.canary = gp::canary_status{};
  a.status.canary->phase = gp::canary_phase::passed;
  auto b = plan_named("beta", "2");
  auto c = plan_named("gamma", "3");
  c.status.window = gp::window_status{false, false, "", "2026-11-30T02:00:00Z"};
  c.status.canary = gp::canary_status{};
  c.status.canary->phase = gp::canary_phase::awaiting_promotion;
  auto d = plan_named("delta", "4");
  d.status.window = gp::window_status{true, false, "2026-11-29T12:10:00Z", "2026-11-30T02:00:00Z"};
  BOOST_TEST(
      cli::render_plans({a, b, c, d}, now) ==
      "PLAN   PHASE        SUCCEEDED  FAILED  IN FLIGHT  SOAKING  WINDOW   CANARY             AGE\n"
      "alpha  Progressing  3/8        0       3          1        open     Passed             "
      "1h00m\n"
      "beta   Pending      0/0        0       0          0        -        -                  "
      "1h00m\n"
      "gamma  Pending      0/0        0       0          0        closed   AwaitingPromotion  "
      "1h00m\n"
      "delta  Pending      0/0        0       0          0        closing  -                  "
      "1h00m\n");
  BOOST_TEST(cli::render_plans({}, now) == "No PartitioningPlans.\n");
}

BOOST_AUTO_TEST_CASE(what_the_objects_say_reaches_the_terminal_escaped) {
  auto p = plan_named("p", "u");
  p.status.phase = gp::plan_phase::degraded;
  p.status.conditions.push_back({"Degraded",
                                 gp::condition_status::true_,
                                 {},
                                 "2026-11-29T11:58:00Z",
                                 "NodesFailed\x1b]0;owned\x07",
                                 "1 node failed:\r\x1b[2Jall fine"});
  auto failed = item(p, "gpu-node-04", gp::node_phase::failed, "2026-11-29T11:55:00Z");
  failed.status.last_error = "\x1b[31mGPU busy\x1b[0m\r\nfake line";
  failed.spec.profile_ref.name = "cpx\tnps4";
  auto other = item(p, "gpu-node-05", gp::node_phase::failed, "2026-11-29T11:55:00Z");

  const auto text = cli::render_status(p, {failed, other}, now, false);
  for (unsigned char c : text)
    BOOST_TEST_REQUIRE(((c >= 0x20 && c != 0x7f) || c == '\n'),
                       "byte " << static_cast<int>(c) << " reaches the terminal in\n"
                               << text);
  BOOST_TEST(text.find("  Degraded: NodesFailed\\x1b]0;owned\\x07: 1 node failed: "
                       "\\x1b[2Jall fine\n") != std::string::npos,
             text);
  // Escaped before the columns are measured: the rows stay aligned.
  BOOST_TEST(text.find("NODE         PHASE   FOR    PROFILE          DETAIL\n"
                       "gpu-node-04  Failed  5m00s  cpx\\tnps4        "
                       "\\x1b[31mGPU busy\\x1b[0m  fake line\n"
                       "gpu-node-05  Failed  5m00s  mi300x-cpx-nps4\n") != std::string::npos,
             text);

  auto hostile = plan_named("evil\x1b[8m", "v");
  BOOST_TEST(
      cli::render_plans({hostile}, now) ==
      "PLAN         PHASE    SUCCEEDED  FAILED  IN FLIGHT  SOAKING  WINDOW  CANARY  AGE\n"
      "evil\\x1b[8m  Pending  0/0        0       0          0        -       -       1h00m\n");
}

// `retry PLAN NODE` finds the node's item by plan and node: under `<plan>-<node>` only if
// it is that plan's item for that node, else under its derived name.
BOOST_AUTO_TEST_CASE(retry_finds_the_item_of_the_plan_and_node_whatever_its_name) {
  const auto gpu = plan_named("gpu", "gpu-uid");
  const auto gpu_a = plan_named("gpu-a", "gpu-a-uid");
  auto theirs = item(gpu, "a-1", gp::node_phase::failed, "2026-11-29T11:00:00Z");
  auto mine = item(gpu_a, "1", gp::node_phase::failed, "2026-11-29T11:00:00Z");
  BOOST_TEST(theirs.metadata.name == mine.metadata.name); // both "gpu-a-1"
  mine.metadata.name = gc::item_names_of("gpu-a", "1").derived;
  const std::vector<gp::node_partitioning> all{theirs, mine};
  const auto found = cli::item_of_node(gpu_a, all, "1");
  BOOST_TEST_REQUIRE(found.has_value());
  BOOST_TEST(found->metadata.name == mine.metadata.name);
  BOOST_TEST(cli::item_of_node(gpu, all, "a-1")->metadata.name == "gpu-a-1");
  BOOST_TEST(!cli::item_of_node(gpu_a, {theirs}, "1"), "the other plan's item is never retried");
}

BOOST_AUTO_TEST_CASE(only_a_failed_node_is_retried) {
  auto p = plan_named("p", "u");
  BOOST_TEST(!cli::retry_refusal(item(p, "n", gp::node_phase::failed, "2026-11-29T11:00:00Z")));
  BOOST_TEST(*cli::retry_refusal(item(p, "n", gp::node_phase::draining, "2026-11-29T11:00:00Z")) ==
             "it is Draining, not Failed; only a Failed node is retried");
  BOOST_TEST(*cli::retry_refusal(item(p, "n", std::nullopt, "")) ==
             "it is Pending, not Failed; only a Failed node is retried");
  auto deleting = item(p, "n", gp::node_phase::failed, "2026-11-29T11:00:00Z");
  deleting.metadata.deletion_timestamp = "2026-11-29T11:59:00Z";
  BOOST_TEST(*cli::retry_refusal(deleting) == "it is being deleted");
}

// A node failed while DCM may still retry keeps its taint until then: the retry says so.
BOOST_AUTO_TEST_CASE(a_retry_while_dcm_may_still_retry_says_the_taint_stays_until_then) {
  auto p = plan_named("p", "u");
  auto held = item(p, "n", gp::node_phase::failed, "2026-11-29T11:00:00Z");
  const auto now = *gp::parse_time("2026-11-29T11:20:00Z");
  BOOST_TEST(!cli::retry_note(held, now));
  held.status.dcm_may_change_until = "2026-11-29T11:40:00Z";
  const auto note = cli::retry_note(held, now);
  BOOST_REQUIRE(note.has_value());
  BOOST_TEST(note->find("until 2026-11-29T11:40:00Z: the node keeps the amd-dcm taint") !=
                 std::string::npos,
             *note);
  BOOST_TEST(!cli::retry_note(held, *gp::parse_time("2026-11-29T11:40:00Z")), "over");
}

BOOST_AUTO_TEST_CASE(only_a_canary_awaiting_promotion_is_promoted) {
  auto p = plan_named("p", "u");
  BOOST_TEST(*cli::promote_refusal(p) == "it has no canary (spec.rollout.canary is not set)");
  p.spec.rollout.canary = gp::canary_policy{};
  p.spec.rollout.canary->promotion = gp::canary_promotion::manual;
  BOOST_TEST(*cli::promote_refusal(p) ==
             "the operator has not reported its canary yet (no status.canary)");

  p.status.canary = gp::canary_status{};
  p.status.canary->key = "0123456789abcdef";
  p.status.canary->nodes = {"n1"};
  p.status.canary->phase = gp::canary_phase::selecting;
  p.status.canary->message = "waiting for every node's preflight before choosing the canary";
  BOOST_TEST(*cli::promote_refusal(p) ==
             "its canary is Selecting, not AwaitingPromotion: its nodes are not chosen yet "
             "(waiting for every node's preflight before choosing the canary)");
  p.status.canary->phase = gp::canary_phase::in_progress;
  p.status.canary->message = "0/1 canary node(s) done;\nwaiting for n1";
  BOOST_TEST(*cli::promote_refusal(p) ==
             "its canary is InProgress, not AwaitingPromotion: it has not finished its soak "
             "(0/1 canary node(s) done; waiting for n1)");
  p.status.canary->phase = gp::canary_phase::passed;
  p.status.canary->passed_at = "2026-11-29T11:30:00Z";
  BOOST_TEST(*cli::promote_refusal(p) ==
             "its canary already passed at 2026-11-29T11:30:00Z; there is nothing to promote");
  p.status.canary->phase = gp::canary_phase::failed;
  p.status.canary->passed_at.clear();
  p.status.canary->message = "canary node(s) failed: n1 (DCM reported failure)";
  BOOST_TEST(*cli::promote_refusal(p) == "its canary is Failed, not AwaitingPromotion (canary "
                                         "node(s) failed: n1 (DCM reported failure))");

  p.status.canary->phase = gp::canary_phase::awaiting_promotion;
  p.status.canary->message = "the canary passed its soak";
  BOOST_TEST(!cli::promote_refusal(p));

  // Its status must be the operator's word on the plan as it is now.
  auto lagging = p;
  lagging.metadata.generation = 2;
  BOOST_TEST(*cli::promote_refusal(lagging) ==
             "the operator has not yet seen generation 2 of it; try again once it has");
  auto keyless = p;
  keyless.status.canary->key.clear();
  BOOST_TEST(*cli::promote_refusal(keyless) == "status.canary has no key to promote");
  auto deleting = p;
  deleting.metadata.deletion_timestamp = "2026-11-29T11:59:00Z";
  BOOST_TEST(*cli::promote_refusal(deleting) == "it is being deleted");
}

BOOST_AUTO_TEST_CASE(patches) {
  BOOST_TEST(cli::pause_patch(true) == R"({"spec":{"paused":true}})");
  BOOST_TEST(cli::pause_patch(false) == R"({"spec":{"paused":false}})");
  BOOST_TEST(
      cli::retry_patch(now) ==
      R"({"metadata":{"annotations":{"infrastructure.silogen.ai/retry":"2026-11-29T12:00:00Z"}}})");
  BOOST_TEST(
      cli::promote_patch("0123456789abcdef") ==
      R"({"metadata":{"annotations":{"infrastructure.silogen.ai/promote-canary":"0123456789abcdef"}}})");
  BOOST_TEST(
      cli::promote_patch("a\"b\\c\n") ==
      R"({"metadata":{"annotations":{"infrastructure.silogen.ai/promote-canary":"a\"b\\c\u000a"}}})");
}
