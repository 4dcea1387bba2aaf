// Hostile input end to end. The table case: with ONE operator running, a table of malformed
// or hostile objects is applied while a healthy plan rolls out on other simulated nodes. Each entry
// is either refused by the API server naming the field, or accepted and reported by the
// operator (a plan or item condition naming the problem) with no node touched: not
// cordoned, not tainted, not labelled for DCM, no mark of ours, no item started. The
// healthy plan must complete, and the operator must be the same process at the end with
// no crash in its log.
//
// Nodes (tests/e2e/support): h1..h4 for the healthy plan, one victim per accepted entry
// (hostile-case=<entry>), and two nodes gpu-sim does not play: a control-plane node that
// looks like a GPU node, and a CPU node without GPUs. Every node of the test carries
// hostile-scope=<key>, which the "selects everything" plan selects.
//
// The other cases, each on its own nodes: unsafe kubeconfigs and slow clients against the
// operator binary; a payload edited after a rollout; and scale as hostile input, a hundred
// plans at once, each selecting every node of the test.
#include "protocol/canonical_json.hpp"
#include "protocol/desired_hash.hpp"
#include "protocol/timestamp.hpp"
#include "tests/e2e/support/e2e.hpp"
#include "tests/support/loopback.hpp"

#include <boost/test/unit_test.hpp>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <yaml-cpp/yaml.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

using namespace gpu_partitioner;
using namespace gpu_partitioner::e2e;
using namespace std::chrono_literals;
namespace utf = boost::unit_test;

#define HOSTILE_NOTE(what)                                                                         \
  do {                                                                                             \
    std::ostringstream hostile_note_;                                                              \
    hostile_note_ << what;                                                                         \
    std::cerr << "hostile: " << hostile_note_.str() << std::endl;                                  \
  } while (false)

namespace {

using clock_type = std::chrono::steady_clock;

const char* const group_version = "infrastructure.silogen.ai/v1alpha1";
const char* const cpx_nps4_json = R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":)"
                                  R"("CPX","memoryPartition":"NPS4","numGPUsAssigned":8}]})";
const char* const int64_max = "9223372036854775807";
// The longest duration a spec may give (a year, the CRDs' maximum of every *Seconds).
const char* const longest_seconds = "31536000";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string repeat(char c, std::size_t n) {
  return std::string(n, c);
}

// -- JSON builders --

std::string object_json(const char* kind, const std::string& name, const std::string& spec,
                        const std::string& metadata_extra = {}) {
  return std::string(R"({"apiVersion":")") + group_version + R"(","kind":")" + kind +
         R"(","metadata":{"name":)" + quoted(name) + metadata_extra + R"(},"spec":)" + spec + "}";
}

struct profile_options {
  std::string payload;               // ConfigMap name in the test namespace
  std::string dcm_name = "cpx-nps4"; // "" leaves operatorPayload.profileName out
  bool gpu_target = true;            // targetSelector gpu.vendor=amd, gpu.family=mi300x
  std::string ready_label = "amd.com/gpu.ready";
  std::string resource = "amd.com/gpu"; // expectedResources[0].name
  long long count = 64;
  std::string timeout = "60"; // verification.timeoutSeconds, as JSON
  std::string display_name = "hostile";
};

std::string profile_spec(const e2e_cluster& c, const profile_options& o) {
  return R"({"displayName":)" + quoted(o.display_name) +
         (o.gpu_target
              ? R"(,"targetSelector":{"matchLabels":{"gpu.vendor":"amd","gpu.family":"mi300x"}})"
              : "") +
         R"(,"expectedResources":[{"name":)" + quoted(o.resource) + R"(,"count":)" +
         std::to_string(o.count) + R"(}],"verification":{"readyLabel":)" + quoted(o.ready_label) +
         R"(,"timeoutSeconds":)" + o.timeout +
         R"(},"operatorPayload":{"kind":"ConfigMap","name":)" + quoted(o.payload) +
         R"(,"namespace":)" + quoted(c.ns) +
         (o.dcm_name.empty() ? "" : R"(,"profileName":)" + quoted(o.dcm_name)) + "}}";
}

struct plan_options {
  std::string max_parallel = "1";
  std::string max_unavailable = "1";
  std::string drain_timeout = "60";
  std::string verification_timeout = "60";
  bool paused = false;
  bool dry_run = false;
  std::string ready_label = "amd.com/gpu.ready";
  std::string plugin_resource = "amd.com/gpu";
  /// {"name":..,"selector":..,"profileRef":..} objects, joined.
  std::vector<std::string> entries;
  /// Extra members of spec, e.g. ,"junk":"...".
  std::string extra;
};

std::string entry_json(const std::string& name, const std::string& selector,
                       const std::string& profile) {
  return R"({"name":)" + quoted(name) + R"(,"selector":)" + selector +
         R"(,"profileRef":{"kind":"PartitioningProfile","name":)" + quoted(profile) + "}}";
}

std::string plan_spec(const plan_options& o) {
  std::string parts;
  for (const auto& e : o.entries)
    parts += (parts.empty() ? "" : ",") + e;
  return std::string(R"({"paused":)") + (o.paused ? "true" : "false") + R"(,"dryRun":)" +
         (o.dry_run ? "true" : "false") + R"(,"rollout":{"maxParallel":)" + o.max_parallel +
         R"(,"maxUnavailable":)" + o.max_unavailable +
         R"(,"drainPolicy":{"enabled":true,"timeoutSeconds":)" + o.drain_timeout +
         R"(,"evictionKind":"Eviction","respectPDB":true}},"verification":{"gpuReadyLabel":)" +
         quoted(o.ready_label) + R"(,"requirePluginResources":[)" + quoted(o.plugin_resource) +
         R"(],"timeoutSeconds":)" + o.verification_timeout + R"(},"partitionings":[)" + parts +
         "]" + o.extra + "}";
}

// -- reading conditions --

struct condition_view {
  std::string status;
  std::string reason;
  std::string message;
};

std::optional<condition_view> condition_of(const rapidjson::Value& object,
                                           const std::string& type) {
  if (const auto* conds = kube::find_path(object, {"status", "conditions"});
      conds != nullptr && conds->IsArray())
    for (const auto& c : conds->GetArray())
      if (kube::string_at(c, "type") == type)
        return condition_view{kube::string_at(c, "status"), kube::string_at(c, "reason"),
                              kube::string_at(c, "message")};
  return std::nullopt;
}

std::string describe(const std::optional<condition_view>& c) {
  if (!c)
    return "(absent)";
  return c->status + "/" + c->reason + ": " + c->message.substr(0, 300);
}

// -- the table --

/// What the test saw of one entry: "" when the expectation holds, else what it saw.
using check_fn = std::function<std::string()>;

struct hostile_entry {
  std::string name;
  /// "refused" or "reported"
  std::string outcome;
  check_fn check;
  std::string last;
  bool held = false;
};

/// Nodes whose state the operator must never change, and what "changed" means.
struct node_mark {
  bool unschedulable = false;
  std::string profile;
  std::string state;
  std::string was;
  std::string applied;
  bool dcm_taint = false;

  static node_mark of(const node_view& n) {
    node_mark m;
    m.unschedulable = n.unschedulable;
    m.profile = n.label(profile_label);
    m.state = n.label(state_label);
    auto a = n.annotations.find(was_unschedulable);
    m.was = a == n.annotations.end() ? "(none)" : a->second;
    auto h = n.annotations.find(applied_hash);
    m.applied = h == n.annotations.end() ? "(none)" : h->second;
    m.dcm_taint = n.dcm_taint;
    return m;
  }
  std::string diff(const node_mark& now) const {
    std::string out;
    if (unschedulable != now.unschedulable)
      out += " unschedulable " + std::to_string(unschedulable) + "->" +
             std::to_string(now.unschedulable);
    if (dcm_taint != now.dcm_taint)
      out += " amd-dcm taint added";
    if (profile != now.profile)
      out += " profile label " + profile + "->" + now.profile;
    if (state != now.state)
      out += " state label " + state + "->" + now.state;
    if (was != now.was)
      out += " was-unschedulable " + was + "->" + now.was;
    if (applied != now.applied)
      out += " applied-hash " + applied + "->" + now.applied;
    return out;
  }
};

/// Nodes and objects the test creates outside the cluster fixture's bookkeeping; removed
/// first (the fixture's teardown needs the operator still running, so this goes before it).
struct extra_objects {
  kube::client& api;
  std::vector<std::string> nodes;
  std::vector<std::string> items;
  std::vector<std::string> plans;
  std::vector<std::string> profiles;
  ~extra_objects() {
    for (const auto& p : plans)
      (void)api.remove(e2e::plans, "", p);
    for (const auto& p : profiles)
      (void)api.remove(e2e::profiles, "", p);
    for (const auto& i : items)
      (void)api.remove(e2e::items, "", i);
    for (const auto& n : nodes)
      (void)api.remove(kube::resources::nodes(), "", n);
  }
};

/// Crash signatures in the operator's log: the process dying, or an actor failing and
/// being restarted by its parent.
std::vector<std::string> crash_lines(const std::string& log) {
  static const char* signatures[] = {"terminate called", "Segmentation fault", "Aborted",
                                     "core dumped",      "failed (",           "AddressSanitizer",
                                     "std::bad_alloc"};
  std::vector<std::string> out;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line))
    for (const char* s : signatures)
      if (contains(line, s)) {
        out.push_back(line.substr(0, 300));
        break;
      }
  return out;
}

// -- the operator's own figures (printed, never asserted: benchmarks own those) --

/// gpu_partitioner_api_requests_total from the operator's /metrics, by "VERB resource" and
/// in all ("(all)"); empty when /metrics does not answer.
std::map<std::string, double> api_requests(int metrics_port) {
  std::map<std::string, double> out;
  const auto r = test_support::http_get(metrics_port, "/metrics", 5);
  if (r.code != 200)
    return out;
  const std::string name = "gpu_partitioner_api_requests_total{";
  std::istringstream in(r.body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) != 0)
      continue;
    auto label = [&](const std::string& key) {
      const auto at = line.find(key + "=\"");
      if (at == std::string::npos)
        return std::string();
      const auto from = at + key.size() + 2;
      return line.substr(from, line.find('"', from) - from);
    };
    const double value = std::strtod(line.c_str() + line.rfind(' ') + 1, nullptr);
    out[label("verb") + " " + label("resource")] += value;
    out["(all)"] += value;
  }
  return out;
}

/// A "Vm..." line of /proc/<pid>/status (VmHWM: the peak resident set), in KiB; -1 if none.
long long vm_kib(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0)
      return std::atoll(line.c_str() + field.size() + 1);
  return -1;
}

std::string json_text(const rapidjson::Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v.Accept(writer);
  return {buffer.GetString(), buffer.GetSize()};
}

long long number_at(const rapidjson::Value& v, std::initializer_list<const char*> path) {
  const auto* n = kube::find_path(v, path);
  return n != nullptr && n->IsInt64() ? n->GetInt64() : -1;
}

/// Plans made outside the fixture's bookkeeping: paused, then deleted at the end, so that
/// none is left to roll out alone once its rivals are gone.
struct plans_to_remove {
  kube::client& api;
  std::vector<std::string> names;
  ~plans_to_remove() {
    for (const auto& p : names)
      (void)api.patch(plans, "", p, kube::patch_type::merge, R"({"spec":{"paused":true}})");
    for (const auto& p : names)
      (void)api.remove(plans, "", p);
  }
};

/// Runs `each(connection, i)` for i in [0, n) on four threads with a connection each, as
/// fast as the API server takes the requests; the errors, as "i: message".
std::vector<std::string> at_once(int n,
                                 const std::function<std::string(kube::client&, int)>& each) {
  const auto config = admin_config();
  std::mutex m;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      connection conn(config);
      for (int i = t; i < n; i += 4)
        if (auto error = each(conn.api, i); !error.empty()) {
          std::lock_guard<std::mutex> lock(m);
          errors.push_back(std::to_string(i) + ": " + error);
        }
    });
  for (auto& t : threads)
    t.join();
  return errors;
}

} // namespace

BOOST_AUTO_TEST_SUITE(hostile_input)

// The operator binary given unsafe kubeconfigs refuses to start, naming the cluster and
// the field, before any request; one that turns verification off alone runs, says so in
// its log and its metrics, and keeps its probes answering while 50 slow clients hold
// its metrics port. No node changes throughout.
BOOST_AUTO_TEST_CASE(unsafe_kubeconfigs_are_refused_and_slow_clients_do_not_stall_the_probes,
                     *utf::timeout(240)) {
  e2e_cluster c;
  node_spec spec;
  spec.labels = {{"hostile-case", "kubeconfig"}};
  c.add_nodes({{"k1", spec}});
  const auto before = node_mark::of(c.node(c.nodes[0]));
  const char* admin = std::getenv("KUBECONFIG");
  BOOST_REQUIRE(admin != nullptr);
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = tmp != nullptr ? tmp : "/tmp";
  auto kubeconfig = [&](const std::string& name,
                        const std::function<void(YAML::Node, YAML::Node)>& edit) {
    YAML::Node root = YAML::LoadFile(admin);
    edit(root["clusters"][0]["cluster"], root["users"][0]["user"]);
    YAML::Emitter out;
    out << root;
    const std::string path = dir + "/" + name + ".kubeconfig";
    std::ofstream(path) << out.c_str();
    return path;
  };
  const std::string cluster_name = YAML::LoadFile(admin)["clusters"][0]["name"].as<std::string>();
  struct refusal {
    std::string name;
    std::function<void(YAML::Node, YAML::Node)> edit;
    std::string message;
  };
  const std::vector<refusal> refusals = {
      {"plain-http-token",
       [](YAML::Node cluster, YAML::Node user) {
         auto server = cluster["server"].as<std::string>();
         cluster["server"] = "http://" + server.substr(server.find("://") + 3);
         user["token"] = "secret";
       },
       "cluster \"" + cluster_name + "\": server \"http://"},
      {"insecure-beside-ca",
       [](YAML::Node cluster, YAML::Node) { cluster["insecure-skip-tls-verify"] = true; },
       "insecure-skip-tls-verify is true and a certificate-authority is given"},
      {"groups-without-user",
       [](YAML::Node, YAML::Node user) { user["as-groups"].push_back("system:masters"); },
       "as-groups is set without as"},
  };
  for (const auto& r : refusals) {
    BOOST_TEST_CONTEXT("kubeconfig " << r.name) {
      const auto path = kubeconfig(r.name, r.edit);
      child_process op({c.operator_binary(), "--kubeconfig", path, "--metrics-addr", "0",
                        "--health-addr", "0", "--dcm-config", c.ns + "/" + dcm_config_name},
                       dir + "/operator-" + r.name + ".log");
      BOOST_TEST(eventually([&] { return !op.alive(); }, 10s, 50ms));
      BOOST_TEST(op.state() == "exited with status 2");
      BOOST_TEST(contains(op.tail(), r.message), op.tail());
    }
  }

  // Verification off, alone: runs, warns, and exports it.
  const auto insecure = kubeconfig("insecure", [](YAML::Node cluster, YAML::Node) {
    cluster.remove("certificate-authority-data");
    cluster["insecure-skip-tls-verify"] = true;
  });
  const auto addresses = test_support::fresh_path("operator-insecure-addresses");
  child_process op({c.operator_binary(), "--kubeconfig", insecure, "--metrics-addr", "127.0.0.1:0",
                    "--health-addr", "127.0.0.1:0", "--bound-addresses-file", addresses,
                    "--dcm-config", c.ns + "/" + dcm_config_name},
                   dir + "/operator-insecure.log");
  const auto running = [&] { return op.alive(); };
  const int metrics_port = test_support::bound_port(addresses, "metrics", 30s, running);
  const int health_port = test_support::bound_port(addresses, "health", 30s, running);
  E2E_REQUIRE(metrics_port != 0 && health_port != 0, op.tail());
  E2E_REQUIRE(eventually([&] { return test_support::http_get(health_port, "/readyz").code == 200; },
                         30s, 200ms),
              op.tail());
  BOOST_TEST(contains(op.tail(200), "TLS VERIFICATION IS OFF"), op.tail(200));
  const auto metrics = test_support::http_get(metrics_port, "/metrics");
  BOOST_TEST(contains(metrics.body, "gpu_partitioner_api_tls_verification_disabled 1"));

  // 50 slow clients on the metrics port: each sends half a request line and waits.
  std::vector<int> slow;
  for (int i = 0; i < 50; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(metrics_port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0)
      (void)!::send(fd, "GET /metr", 9, MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  int answered = 0;
  for (int i = 0; i < 20; ++i) {
    answered += test_support::http_get(health_port, "/healthz", 3).code == 200 ? 1 : 0;
    std::this_thread::sleep_for(250ms);
  }
  BOOST_TEST(answered == 20, "of 20 liveness probes under 50 slow clients");
  for (int fd : slow)
    ::close(fd);
  BOOST_TEST(op.alive(), op.state());
  BOOST_TEST(op.stop() == 0);
  BOOST_TEST(before.diff(node_mark::of(c.node(c.nodes[0]))).empty());
}

// A payload is part of what a run is, so its edit is never given to a node silently. A
// plan whose nodes all carry its DCM name: the edit is refused (DCM would repartition them
// undrained), every node stays as it was and says why, and an edit back heals the plan
// with no run. A plan of one node: the node runs again and gets the new payload.
BOOST_AUTO_TEST_CASE(a_payload_edit_after_a_rollout_is_refused_or_run_never_given_silently,
                     *utf::timeout(300)) {
  e2e_cluster c;
  node_spec shared, solo;
  shared.labels = {{"hostile-case", "payload-shared"}};
  solo.labels = {{"hostile-case", "payload-solo"}};
  c.add_nodes({{"ps1", shared}, {"ps2", shared}, {"po1", solo}});
  c.start_simulator();
  c.start_operator();
  // The same partitions written as two groups of four GPUs: another payload to DCM.
  const std::string edited =
      R"({"skippedGPUs":{"ids":[]},"profiles":[)"
      R"({"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":4},)"
      R"({"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":4}]})";
  auto start = [&](const std::string& which, const std::string& dcm_name) {
    c.create_payload(which + "-payload", cpx_nps4_json);
    profile_options po;
    po.payload = which + "-payload";
    po.dcm_name = dcm_name;
    const auto prof = c.create_profile(which, profile_spec(c, po));
    plan_options o;
    o.max_parallel = "2";
    o.max_unavailable = "2";
    o.entries = {entry_json("p", c.selector({{"hostile-case", "payload-" + which}}), prof)};
    return c.create_plan(which, plan_spec(o));
  };
  const auto shared_plan = start("shared", "shared-cpx");
  const auto solo_plan = start("solo", "solo-cpx");
  E2E_REQUIRE(c.await_plan_phase(shared_plan, "Completed", 120s), c.describe(shared_plan));
  E2E_REQUIRE(c.await_plan_phase(solo_plan, "Completed", 120s), c.describe(solo_plan));
  auto edit_payload = [&](const std::string& which, const std::string& json) {
    c.patch(kube::resources::config_maps(), which + "-payload",
            R"({"data":{"profile.json":)" + quoted(json) + "}}", c.ns);
  };
  edit_payload("shared", edited);
  edit_payload("solo", edited);

  const auto v1 = protocol::payload_hash(cpx_nps4_json);
  const auto v2 = protocol::payload_hash(edited);
  auto observed = [&](const std::string& plan, const std::string& node) {
    const auto item = c.get(items, plan + "-" + node);
    return item ? str(*item, {"status", "observedPayloadHash"}) : std::string("(no item)");
  };
  auto dcm_holds = [&](const std::string& dcm_name) {
    const auto dcm = c.get(kube::resources::config_maps(), dcm_config_name, c.ns);
    if (!dcm)
      return std::string("(no DCM ConfigMap)");
    const auto config = parse_json(str(*dcm, {"data", "config.json"}));
    const auto* held = kube::find_path(config, {"gpu-config-profiles", dcm_name.c_str()});
    if (held == nullptr)
      return std::string("(not held)");
    const auto text = protocol::canonical_json(*held);
    return text.ok() ? protocol::payload_hash(text.value()) : std::string("(not JSON)");
  };

  // The solo node runs again, and ends with the new payload, in DCM's config too.
  const auto solo_node = c.id + "-po1";
  // Phase and payload from one read: a listing (possibly from the API server's cache) and
  // a GET can show different runs of the item.
  E2E_REQUIRE(eventually(
                  [&] {
                    const auto item = c.get(items, solo_plan + "-" + solo_node);
                    return item && str(*item, {"status", "phase"}) == "Succeeded" &&
                           str(*item, {"status", "observedPayloadHash"}) == v2;
                  },
                  120s, 200ms),
              c.describe(solo_plan));
  const auto solo_item = c.item(solo_plan, solo_node);
  BOOST_REQUIRE(solo_item);
  BOOST_TEST(std::count(solo_item->reasons.begin(), solo_item->reasons.end(), "PayloadChanged") ==
             1);
  BOOST_TEST(dcm_holds("solo-cpx") == v2);

  // The shared nodes are refused, naming the cause; nothing on them changed.
  for (const auto& suffix : {"ps1", "ps2"}) {
    const auto node = c.id + "-" + suffix;
    BOOST_TEST_CONTEXT("node " << node) {
      E2E_CHECK(eventually(
                    [&] {
                      const auto i = c.item(shared_plan, node);
                      return i && i->phase == "Failed" &&
                             contains(i->last_error, "DCMProfileInUse");
                    },
                    60s, 200ms),
                c.describe(shared_plan));
      BOOST_TEST(observed(shared_plan, node) == v1, "still the payload its run gave DCM");
      const auto v = c.node(node);
      BOOST_TEST(!v.unschedulable);
      BOOST_TEST(!v.dcm_taint);
      BOOST_TEST(v.gpus == 64);
    }
  }
  BOOST_TEST(dcm_holds("shared-cpx") == v1);
  BOOST_TEST(c.plan_phase(shared_plan) == "Degraded");

  // The edit taken back: the shared plan heals without a run.
  edit_payload("shared", cpx_nps4_json);
  E2E_CHECK(c.await_plan_phase(shared_plan, "Completed", 60s), c.describe(shared_plan));
  for (const auto& i : c.plan_items(shared_plan)) {
    BOOST_TEST((!i.reasons.empty() && i.reasons.back() == "AlreadyInTargetState"), i.node);
    BOOST_TEST(std::count(i.reasons.begin(), i.reasons.end(), "Started") == 1, i.node);
  }
  BOOST_TEST(c.operator_process().alive());
}

BOOST_AUTO_TEST_CASE(
    hostile_objects_are_refused_or_reported_touch_no_node_and_the_healthy_plan_completes,
    *utf::timeout(300)) {
  const auto t0 = clock_type::now();
  e2e_cluster c;
  extra_objects extra{c.api, {}, {}, {}, {}};
  auto& api = c.api;

  // -- nodes --
  const std::vector<std::string> healthy_suffixes = {"h1", "h2", "h3", "h4"};
  const std::vector<std::string> victim_cases = {
      "unknown-profile", "payload-json",  "payload-missing", "payload-key", "compute",
      "memory",          "gpus",          "long-profile",    "long-plan",   "boundary",
      "ready-label",     "resource-name", "two-plans",       "two-entries", "ghost",
      "deleted-profile", "dcm-name",      "payload-tenant"};
  std::vector<std::pair<std::string, node_spec>> specs;
  for (const auto& h : healthy_suffixes) {
    node_spec s;
    s.pool = "healthy";
    s.labels = {{"hostile-scope", c.key}, {"hostile-case", "healthy"}};
    if (h == "h2") // junk in the operator's own annotations: the run must still succeed
      s.annotations = {{was_unschedulable, "\xF0\x9F\x8D\x8C not a boolean"},
                       {applied_hash, "sha256:junk@never"}};
    specs.push_back({h, s});
  }
  for (const auto& v : victim_cases) {
    node_spec s;
    s.pool = "victim";
    s.labels = {{"hostile-scope", c.key}, {"hostile-case", v}};
    if (v == "unknown-profile") { // an admin's cordon, and junk in our annotation
      s.cordoned = true;
      s.annotations = {{was_unschedulable, "banana"}};
    }
    specs.push_back({"v-" + v, s});
  }
  c.add_nodes(specs);
  auto node_of = [&](const std::string& suffix) { return c.id + "-" + suffix; };
  std::vector<std::string> healthy_nodes;
  for (const auto& h : healthy_suffixes)
    healthy_nodes.push_back(node_of(h));

  // Two nodes gpu-sim does not play: a control-plane node that looks like an MI300X node
  // (label and taint, as kubeadm sets them), and a CPU node with no GPUs at all.
  const std::string cp_node = node_of("cp");
  const std::string cp_taint_node = node_of("cp-taint"); // the role taint, no role label
  const std::string cpu_node = node_of("cpu");
  {
    auto make = [&](const std::string& name, const std::string& labels, const std::string& taints) {
      auto made =
          api.create(kube::resources::nodes(), "",
                     R"({"apiVersion":"v1","kind":"Node","metadata":{"name":)" + quoted(name) +
                         R"(,"labels":)" + labels + R"(},"spec":{"taints":)" + taints + "}}");
      BOOST_REQUIRE_MESSAGE(made.ok(), (made.ok() ? "" : made.error().describe()));
      extra.nodes.push_back(name);
    };
    make(cp_node,
         R"({"hostile-scope":)" + quoted(c.key) + R"(,"hostile-case":"control-plane",)" +
             R"("kubernetes.io/hostname":)" + quoted(cp_node) +
             R"(,"node-role.kubernetes.io/control-plane":"","gpu.vendor":"amd",)"
             R"("gpu.family":"mi300x"})",
         R"([{"key":"node-role.kubernetes.io/control-plane","effect":"NoSchedule"}])");
    make(cp_taint_node,
         R"({"hostile-scope":)" + quoted(c.key) + R"(,"hostile-case":"control-plane-taint",)" +
             R"("kubernetes.io/hostname":)" + quoted(cp_taint_node) +
             R"(,"gpu.vendor":"amd","gpu.family":"mi300x"})",
         R"([{"key":"node-role.kubernetes.io/control-plane","effect":"NoSchedule"}])");
    make(cpu_node,
         R"({"hostile-scope":)" + quoted(c.key) + R"(,"hostile-case":"cpu",)" +
             R"("kubernetes.io/hostname":)" + quoted(cpu_node) + "}",
         "[]");
  }

  // A workload the deleted-profile victim cannot drain (a PDB allows no disruption).
  c.await_default_service_account();
  const std::string pinned_node = node_of("v-deleted-profile");
  c.create_deployment("pinned", 1, {{"kubernetes.io/hostname", pinned_node}});
  c.create_pdb("pinned", "pinned", 1);
  // The same on the healthy plan's last node, h4, so that it is still in flight (its drain
  // held by the PDB) when the plan selecting every node comes; the PDB goes afterwards.
  c.create_deployment("held", 1, {{"kubernetes.io/hostname", node_of("h4")}});
  c.create_pdb("held", "held", 1);
  c.start_simulator();
  BOOST_REQUIRE_MESSAGE(
      eventually([&] { return c.healthy_pods("pinned") == 1 && c.healthy_pods("held") == 1; }, 60s,
                 200ms),
      "the pinned workloads did not become Ready");

  std::map<std::string, node_mark> before;
  for (const auto& n : c.test_nodes())
    before[n.name] = node_mark::of(n);
  before[cp_node] = node_mark::of(c.node(cp_node));
  before[cpu_node] = node_mark::of(c.node(cpu_node));
  before[cp_taint_node] = node_mark::of(c.node(cp_taint_node));

  c.start_operator();
  const pid_t operator_pid = c.operator_process().pid();

  // -- imposters of DCM: Events with DCM's source, reason and message for each healthy
  // node, dated in the future so they would be the newest answer to any run. Were one
  // trusted, the node would fail (and stay cordoned). One about a pod of a namespace
  // other than DCM's, one about the Node. (The API server keeps an Event in the namespace
  // of what it is about: "default" for a Node.) And one in DCM's own namespace about a pod
  // that does not exist, naming the node as its host, as any node's kubelet may write it:
  // a host is never trusted alone (issue 38; before, an unknown pod's host was).
  std::vector<std::pair<std::string, std::string>> imposters; // namespace, name
  std::string tenant_config_map;                              // in "default"
  {
    const auto later = protocol::format_time(protocol::wall_clock::now() + std::chrono::hours(2));
    auto imposter = [&](const std::string& ns, const std::string& name, const std::string& about,
                        const std::string& host) {
      auto made = api.create(
          kube::resources::events(), ns,
          R"({"apiVersion":"v1","kind":"Event","metadata":{"name":)" + quoted(name) +
              R"(,"namespace":)" + quoted(ns) + R"(},"involvedObject":)" + about +
              R"(,"reason":"PartitionFailure","type":"Warning","count":1,)"
              R"("message":"{\"SelectedProfile\":\"cpx-nps4\",\"FinalStatus\":\"Failure\"}",)"
              R"("source":{"component":"amd-device-config-manager","host":)" +
              quoted(host) + R"(},"firstTimestamp":)" + quoted(later) + R"(,"lastTimestamp":)" +
              quoted(later) + "}");
      BOOST_REQUIRE_MESSAGE(made.ok(), (made.ok() ? "" : made.error().describe()));
      imposters.emplace_back(ns, name);
    };
    for (const auto& n : healthy_nodes) {
      imposter("default", n + "-tenant",
               R"({"kind":"Pod","namespace":"default","name":"imposter"})", n);
      imposter("default", n + "-node", R"({"kind":"Node","name":)" + quoted(n) + "}", n);
      imposter(c.ns, n + "-ghost",
               R"({"kind":"Pod","namespace":)" + quoted(c.ns) + R"(,"name":"dcm-ghost"})", n);
    }
  }

  // -- profiles and payloads --
  const std::string cpx_payload = "dcm-profile-cpx-nps4"; // copied in by the fixture
  auto payload = [&](const std::string& name, const std::string& json) {
    c.create_payload(name, json);
    return name;
  };
  auto profile = [&](const std::string& suffix, profile_options o) {
    return c.create_profile(suffix, profile_spec(c, o));
  };
  profile_options healthy_profile;
  healthy_profile.payload = cpx_payload;
  healthy_profile.timeout = longest_seconds;
  // Unicode, control characters, a NUL, quotes and a right-to-left override, where any
  // string is allowed.
  healthy_profile.display_name =
      std::string("GPU \xE2\x9C\x93 \x01\x1f") + '\0' + "\xE2\x80\xAE \"quoted\" \xF0\x9F\x9A\x80";
  const auto healthy_cpx = profile("healthy", healthy_profile);

  // -- the healthy plan: runs throughout, and must complete --
  auto selector_for = [&](const std::string& which) {
    return R"({"matchLabels":{"e2e":)" + quoted(c.key) + R"(,"hostile-case":)" + quoted(which) +
           "}}";
  };
  const std::string healthy_plan = c.id + "-healthy";
  std::vector<std::string> watched_plans = {healthy_plan};
  // Plans of the "reported" entries, watched by the sampler (names fixed below).
  auto plan_name = [&](const std::string& suffix) {
    const auto name = c.id + "-" + suffix;
    watched_plans.push_back(name);
    return name;
  };

  // -- the healthy plan starts now, and runs while the rest is applied --
  {
    plan_options o;
    o.drain_timeout = longest_seconds; // no overflow into an instant timeout
    o.verification_timeout = longest_seconds;
    o.entries = {entry_json("healthy", selector_for("healthy"), healthy_cpx)};
    BOOST_REQUIRE_EQUAL(c.create_plan("healthy", plan_spec(o)), healthy_plan);
  }
  // Annotate the plan with control characters and unicode: nothing reads them.
  c.patch(plans, healthy_plan,
          R"({"metadata":{"annotations":{"note":"\u0007\u001b[31m red \u202e txet"}}})");

  std::vector<hostile_entry> table;
  auto add = [&](std::string name, std::string outcome, check_fn check) {
    table.push_back({std::move(name), std::move(outcome), std::move(check), "", false});
  };

  // -- refused by the API server, naming the field --
  auto refused = [&](const kube::resource& r, const std::string& body, const std::string& field,
                     int code = 422) -> check_fn {
    auto got = api.create(r, "", body);
    std::string seen;
    if (got.ok()) {
      seen = "accepted";
      const auto name = str(got.value(), {"metadata", "name"});
      if (r.plural == "partitioningplans")
        extra.plans.push_back(name);
      else if (r.plural == "partitioningprofiles")
        extra.profiles.push_back(name);
      else
        extra.items.push_back(name);
    } else if (got.error().code != code || !contains(got.error().message, field)) {
      seen = "refused with " + std::to_string(got.error().code) + ": " +
             got.error().message.substr(0, 300);
    }
    return [seen] { return seen; };
  };
  auto bad_plan = [&](const std::string& name, const plan_options& o,
                      const std::string& metadata_extra = {}) {
    return object_json("PartitioningPlan", name, plan_spec(o), metadata_extra);
  };
  plan_options nothing; // selects no node: refusals must not depend on the cluster
  nothing.entries = {entry_json("p", selector_for("refused"), healthy_cpx)};
  auto with = [&](auto edit) {
    plan_options o = nothing;
    edit(o);
    return o;
  };
  const std::string refused_name = c.id + "-refused";

  add("plan maxParallel -1", "refused",
      refused(plans, bad_plan(refused_name, with([](auto& o) { o.max_parallel = "-1"; })),
              "spec.rollout.maxParallel"));
  add("plan maxParallel 2147483648 (over int32)", "refused",
      refused(plans, bad_plan(refused_name, with([](auto& o) { o.max_parallel = "2147483648"; })),
              "spec.rollout.maxParallel"));
  add("plan maxUnavailable \"101%\"", "refused",
      refused(plans, bad_plan(refused_name, with([](auto& o) { o.max_unavailable = "\"101%\""; })),
              "spec.rollout.maxUnavailable"));
  add("plan maxUnavailable \"0%\"", "refused",
      refused(plans, bad_plan(refused_name, with([](auto& o) { o.max_unavailable = "\"0%\""; })),
              "spec.rollout.maxUnavailable"));
  add("plan maxUnavailable -3", "refused",
      refused(plans, bad_plan(refused_name, with([](auto& o) { o.max_unavailable = "-3"; })),
              "spec.rollout.maxUnavailable"));
  add("plan drain timeout -5", "refused",
      refused(plans, bad_plan(refused_name, with([](auto& o) { o.drain_timeout = "-5"; })),
              "spec.rollout.drainPolicy.timeoutSeconds"));
  add("plan drain timeout of int64's maximum (over a year)", "refused",
      refused(plans, bad_plan(refused_name, with([](auto& o) { o.drain_timeout = int64_max; })),
              "spec.rollout.drainPolicy.timeoutSeconds"));
  add("plan verification timeout 0", "refused",
      refused(plans, bad_plan(refused_name, with([](auto& o) { o.verification_timeout = "0"; })),
              "spec.verification.timeoutSeconds"));
  {
    profile_options o = healthy_profile;
    o.timeout = "-1";
    add("profile verification timeout -1", "refused",
        refused(profiles, object_json("PartitioningProfile", c.id + "-refused", profile_spec(c, o)),
                "spec.verification.timeoutSeconds"));
    o = healthy_profile;
    o.timeout = int64_max;
    add("profile verification timeout of int64's maximum (over a year)", "refused",
        refused(profiles, object_json("PartitioningProfile", c.id + "-refused", profile_spec(c, o)),
                "spec.verification.timeoutSeconds"));
    o = healthy_profile;
    o.dcm_name = repeat('p', 64);
    add("profile DCM profileName of 64 characters (a label value holds 63)", "refused",
        refused(profiles, object_json("PartitioningProfile", c.id + "-refused", profile_spec(c, o)),
                "spec.operatorPayload.profileName"));
    o = healthy_profile;
    o.payload = "Bad_Name";
    add("profile payload ConfigMap name not a DNS subdomain", "refused",
        refused(profiles, object_json("PartitioningProfile", c.id + "-refused", profile_spec(c, o)),
                "spec.operatorPayload.name"));
  }
  add("plan name of 254 characters", "refused",
      refused(plans, bad_plan(c.id + "-" + repeat('a', 254 - c.id.size() - 1), nothing),
              "metadata.name"));
  add("plan name with unicode", "refused",
      refused(plans, bad_plan(c.id + "-pl\xC3\xA4n", nothing), "metadata.name"));
  add("plan name with a control character", "refused",
      refused(plans,
              bad_plan(c.id + "-a\x01"
                              "b",
                       nothing),
              "metadata.name"));
  add("partitioning name of 64 characters", "refused",
      refused(plans,
              bad_plan(refused_name, with([&](auto& o) {
                         o.entries = {entry_json(repeat('e', 64), selector_for("x"), healthy_cpx)};
                       })),
              "spec.partitionings[0].name"));
  add("two partitionings with one name", "refused",
      refused(plans, bad_plan(refused_name, with([&](auto& o) {
                                o.entries = {entry_json("same", selector_for("x"), healthy_cpx),
                                             entry_json("same", selector_for("y"), healthy_cpx)};
                              })),
              "spec.partitionings[1]"));
  add("selector operator Like", "refused",
      refused(plans, bad_plan(refused_name, with([&](auto& o) {
                                o.entries = {entry_json(
                                    "p", R"({"matchExpressions":[{"key":"a","operator":"Like"}]})",
                                    healthy_cpx)};
                              })),
              "spec.partitionings[0].selector.matchExpressions[0].operator"));
  add("selector In without values", "refused",
      refused(plans, bad_plan(refused_name, with([&](auto& o) {
                                o.entries = {entry_json(
                                    "p", R"({"matchExpressions":[{"key":"a","operator":"In"}]})",
                                    healthy_cpx)};
                              })),
              "spec.partitionings[0].selector.matchExpressions[0]"));
  // Cross-field rules (CEL): the operator marks a stored plan Invalid for each as well
  // (unit-tested in plan_resolution_test and rollout_gate_test).
  add("empty selector (would select every node)", "refused",
      refused(plans, bad_plan(refused_name, with([&](auto& o) {
                                o.entries = {entry_json("p", "{}", healthy_cpx)};
                              })),
              "spec.partitionings[0].selector: Invalid value: empty"));
  add("profileRef of kind ConfigMap", "refused",
      refused(plans, bad_plan(refused_name, with([&](auto& o) {
                                o.entries = {R"({"name":"p","selector":)" + selector_for("x") +
                                             R"(,"profileRef":{"kind":"ConfigMap","name":"x"}})"};
                              })),
              "spec.partitionings[0].profileRef.kind"));
  add("plan with a 1 MiB annotation", "refused",
      refused(plans,
              bad_plan(refused_name, nothing,
                       R"(,"annotations":{"junk":")" + repeat('j', 1 << 20) + "\"}"),
              "metadata.annotations"));
  add("plan with a 1 MiB label value", "refused",
      refused(
          plans,
          bad_plan(refused_name, nothing, R"(,"labels":{"junk":")" + repeat('j', 1 << 20) + "\"}"),
          "metadata.labels"));
  add("a 3.5 MB plan (over the API server's request limit)", "refused",
      refused(plans, bad_plan(refused_name, with([](auto& o) {
                                o.extra = R"(,"junk":")" + repeat('j', 3500000) + "\"";
                              })),
              "too large", 413));
  add("NodePartitioning by hand with a node name that is not a DNS subdomain", "refused",
      refused(items,
              object_json("NodePartitioning", c.id + "-refused",
                          R"({"planRef":{"name":"p","uid":"u"},"nodeName":"Bad_Node",)"
                          R"("desiredHash":"sha256:)" +
                              repeat('0', 64) + R"(","profileRef":{"name":"x"}})"),
              "spec.nodeName"));
  HOSTILE_NOTE("refusals checked at " << seconds_since(t0) << " s");

  // -- accepted, and reported --
  auto plan_cond = [&](const std::string& plan, const std::string& type) {
    auto p = c.get(plans, plan);
    return p ? condition_of(*p, type) : std::nullopt;
  };
  auto item_state = [&](const std::string& plan, const std::string& node) {
    auto i = c.item(plan, node);
    if (!i)
      return std::string("no item");
    return i->phase_or_pending() + " (" + i->last_error + ")";
  };
  // The plan's item for its victim failed preflight with `finding` (Failed, nothing
  // started) and the plan says Degraded naming it.
  auto preflight_fails = [&](const std::string& plan, const std::string& node,
                             const std::string& finding) -> check_fn {
    return [&c, plan, node, finding, item_state, plan_cond] {
      auto i = c.item(plan, node);
      if (!i || i->phase != "Failed" || !contains(i->last_error, finding) ||
          std::find(i->reasons.begin(), i->reasons.end(), "PreflightFailed") == i->reasons.end())
        return "item: " + item_state(plan, node);
      auto d = plan_cond(plan, "Degraded");
      if (!d || d->status != "True" || !contains(d->message, finding))
        return "Degraded: " + describe(d);
      return std::string();
    };
  };
  // The plan carries a True condition `type` whose message names `field`, and has no items.
  auto plan_reports = [&](const std::string& plan, const std::string& type,
                          const std::string& status, const std::string& field) -> check_fn {
    return [&c, plan, type, status, field, plan_cond] {
      auto cond = plan_cond(plan, type);
      if (!cond || cond->status != status || !contains(cond->message, field))
        return type + ": " + describe(cond);
      if (!c.plan_items(plan).empty())
        return std::to_string(c.plan_items(plan).size()) + " item(s) exist";
      return std::string();
    };
  };
  auto one_entry_plan = [&](const std::string& suffix, const std::string& selector,
                            const std::string& profile_name, plan_options o = {}) {
    o.entries = {entry_json("p", selector, profile_name)};
    const auto name = plan_name(suffix);
    BOOST_REQUIRE_EQUAL(c.create_plan(suffix, plan_spec(o)), name);
    return name;
  };

  // Profiles whose payload or definition is broken: every victim fails preflight.
  {
    const auto plan = one_entry_plan("unknown-profile", selector_for("unknown-profile"),
                                     c.id + "-no-such-profile");
    add("plan naming a profile that does not exist (victim admin-cordoned, junk "
        "was-unschedulable)",
        "reported", preflight_fails(plan, node_of("v-unknown-profile"), "ProfileNotFound"));
  }
  struct payload_case {
    std::string name;
    std::string json; // "" for no payload ConfigMap
    std::string finding;
  };
  const std::vector<payload_case> payload_cases = {
      {"payload-json", R"({"profiles": [ {"computePartition": "CPX",)", "PayloadInvalid"},
      {"payload-missing", "", "PayloadNotFound"},
      {"compute",
       R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"XPX","memoryPartition":"NPS4","numGPUsAssigned":8}]})",
       "computePartition"},
      {"memory",
       R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX","memoryPartition":"NPS3","numGPUsAssigned":8}]})",
       "memoryPartition"},
      {"gpus",
       R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":-8}]})",
       "numGPUsAssigned"},
  };
  for (const auto& pc : payload_cases) {
    profile_options o = healthy_profile;
    o.timeout = "60";
    o.payload = "payload-" + pc.name;
    if (!pc.json.empty())
      payload(o.payload, pc.json);
    const auto prof = profile(pc.name, o);
    const auto plan = one_entry_plan(pc.name, selector_for(pc.name), prof);
    add("profile payload: " + pc.name, "reported",
        preflight_fails(plan, node_of("v-" + pc.name), pc.finding));
  }
  {
    // A valid payload in a namespace a tenant may own: only DCM's namespace (the test's)
    // is trusted, so the payload is never read, let alone given to DCM.
    const std::string tenant_payload = c.id + "-tenant-payload";
    auto made = api.create(kube::resources::config_maps(), "default",
                           R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":)" +
                               quoted(tenant_payload) + R"(},"data":{"profile.json":)" +
                               quoted(cpx_nps4_json) + "}}");
    BOOST_REQUIRE(made.ok());
    tenant_config_map = tenant_payload;
    profile_options o = healthy_profile;
    o.timeout = "60";
    o.payload = tenant_payload;
    o.dcm_name = "tenant-cpx";
    std::string spec = profile_spec(c, o);
    const std::string trusted_ns = R"("namespace":)" + quoted(c.ns);
    BOOST_REQUIRE(contains(spec, trusted_ns));
    spec.replace(spec.find(trusted_ns), trusted_ns.size(), R"("namespace":"default")");
    const auto prof = c.create_profile("payload-tenant", spec);
    const auto plan = one_entry_plan("payload-tenant", selector_for("payload-tenant"), prof);
    add("profile payload in a namespace payloads may not live in", "reported",
        preflight_fails(plan, node_of("v-payload-tenant"), "PayloadNamespaceNotAllowed"));
  }
  {
    // The payload ConfigMap exists but holds its profile under another key.
    auto made = api.create(kube::resources::config_maps(), c.ns,
                           R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":)"
                           R"("payload-key"},"data":{"profile.yaml":)" +
                               quoted(cpx_nps4_json) + "}}");
    BOOST_REQUIRE(made.ok());
    profile_options o = healthy_profile;
    o.timeout = "60";
    o.payload = "payload-key";
    const auto prof = profile("payload-key", o);
    const auto plan = one_entry_plan("payload-key", selector_for("payload-key"), prof);
    add("profile payload ConfigMap without data[profile.json]", "reported",
        preflight_fails(plan, node_of("v-payload-key"), "profile.json"));
  }
  {
    // A profile named at the 253-character limit without profileName: its name would be
    // the node label's value, which holds 63 characters.
    profile_options o = healthy_profile;
    o.timeout = "60";
    o.dcm_name = "";
    const auto prof = profile(repeat('l', 253 - c.id.size() - 1), o);
    const auto plan = one_entry_plan("long-profile", selector_for("long-profile"), prof);
    add("profile named with 253 characters and no profileName", "reported",
        preflight_fails(plan, node_of("v-long-profile"), "spec.operatorPayload.profileName"));
  }
  {
    // Two profiles claim one DCM profile name with different (valid) payloads: DCM holds
    // one payload per name, so whichever wrote last would decide what both get.
    profile_options o = healthy_profile;
    o.timeout = "60";
    o.dcm_name = "shared-name";
    const auto mine = profile("dcm-name", o);
    o.payload = "dcm-profile-spx-nps1";
    profile("dcm-name-rival", o);
    const auto plan = one_entry_plan("dcm-name", selector_for("dcm-name"), mine);
    add("two profiles with one DCM profile name and different payloads", "reported",
        preflight_fails(plan, node_of("v-dcm-name"), "DCMProfileNameConflict"));
  }
  {
    profile_options o = healthy_profile;
    o.timeout = "60";
    o.ready_label = "amd.com/" + repeat('r', 64);
    const auto prof = profile("ready-label", o);
    const auto plan = one_entry_plan("ready-label", selector_for("ready-label"), prof);
    add("profile readyLabel with a 64-character name", "reported",
        preflight_fails(plan, node_of("v-ready-label"), "spec.verification.readyLabel"));
  }
  {
    profile_options o = healthy_profile;
    o.timeout = "60";
    o.resource = "amd.com/gpu!!";
    const auto prof = profile("resource-name", o);
    const auto plan = one_entry_plan("resource-name", selector_for("resource-name"), prof);
    add("profile expectedResources name that is not a resource name", "reported",
        preflight_fails(plan, node_of("v-resource-name"), "spec.expectedResources[0].name"));
  }
  // Plans that are wrong in themselves.
  {
    const auto plan = one_entry_plan("nothing", selector_for("no-such-case"), healthy_cpx);
    add("selector matching no node", "reported",
        plan_reports(plan, "NodesSelected", "False", "spec.partitionings[0]"));
  }
  {
    const auto plan = one_entry_plan(
        "mib-selector", R"({"matchLabels":{"hostile-case":")" + repeat('m', 1 << 20) + "\"}}",
        healthy_cpx);
    add("selector with a 1 MiB label value", "reported",
        plan_reports(plan, "Invalid", "True", "spec.partitionings[0].selector.matchLabels"));
  }
  {
    plan_options o;
    o.ready_label = repeat('g', 1 << 20);
    const auto plan = one_entry_plan("mib-ready", selector_for("no-such-case"), healthy_cpx, o);
    add("gpuReadyLabel of 1 MiB", "reported",
        plan_reports(plan, "Invalid", "True", "spec.verification.gpuReadyLabel"));
  }
  {
    plan_options o;
    o.plugin_resource = "amd.com/" + repeat('x', 100);
    const auto plan = one_entry_plan("bad-resource", selector_for("no-such-case"), healthy_cpx, o);
    add("requirePluginResources entry that is not a resource name", "reported",
        plan_reports(plan, "Invalid", "True", "spec.verification.requirePluginResources[0]"));
  }
  {
    plan_options o;
    o.extra = R"(,"junk":")" + repeat('u', 1 << 20) + "\"";
    const auto plan = one_entry_plan("mib-unknown", selector_for("no-such-case"), healthy_cpx, o);
    add("1 MiB in an unknown field (pruned by the API server)", "reported", [&c, plan, plan_cond] {
      auto p = c.get(plans, plan);
      if (!p)
        return std::string("plan gone");
      if (kube::find_path(*p, {"spec", "junk"}) != nullptr)
        return std::string("spec.junk was stored");
      auto cond = plan_cond(plan, "NodesSelected");
      if (!cond || cond->status != "False")
        return "NodesSelected: " + describe(cond);
      return std::string();
    });
  }
  {
    // Plan named at the 253-character limit: <plan>-<node> cannot be an object name.
    const auto suffix = repeat('n', 253 - c.id.size() - 1);
    const auto plan = one_entry_plan(suffix, selector_for("long-plan"), healthy_cpx);
    add("plan named with 253 characters (its item's name would exceed 253)", "reported",
        plan_reports(plan, "Invalid", "True", node_of("v-long-plan")));
  }
  {
    // The longest plan name whose item name fits exactly: accepted; a dry run.
    const auto node = node_of("v-boundary");
    const auto suffix = repeat('b', 253 - 1 - node.size() - c.id.size() - 1);
    plan_options o;
    o.dry_run = true;
    const auto plan = one_entry_plan(suffix, selector_for("boundary"), healthy_cpx, o);
    add("plan name leaving its item name exactly 253 characters (dry run)", "reported",
        [&c, plan, node] {
          auto i = c.item(plan, node);
          if (!i)
            return std::string("no item");
          if (i->name.size() != 253)
            return "item name has " + std::to_string(i->name.size()) + " characters";
          if (i->preview.empty())
            return std::string("no preview yet");
          return std::string();
        });
  }
  {
    // One plan, two entries selecting the same node.
    plan_options o;
    o.entries = {entry_json("first", selector_for("two-entries"), healthy_cpx),
                 entry_json("second", selector_for("two-entries"), healthy_cpx)};
    const auto plan = plan_name("two-entries");
    c.create_plan("two-entries", plan_spec(o));
    add("two entries of one plan select one node", "reported",
        plan_reports(plan, "Conflict", "True", node_of("v-two-entries")));
  }
  {
    // Two plans select the same node; both paused until both report it.
    plan_options o;
    o.paused = true;
    const auto first = one_entry_plan("two-plans-a", selector_for("two-plans"), healthy_cpx, o);
    const auto second = one_entry_plan("two-plans-b", selector_for("two-plans"), healthy_cpx, o);
    add("two plans select one node", "reported", [&c, first, second, plan_cond, node_of] {
      for (const auto& p : {first, second}) {
        auto cond = plan_cond(p, "Conflict");
        if (!cond || cond->status != "True" || !contains(cond->message, node_of("v-two-plans")))
          return p + " Conflict: " + describe(cond);
        if (!c.plan_items(p).empty())
          return p + " has items";
      }
      // Both report it: running them must not touch the node either.
      c.patch(plans, first, R"({"spec":{"paused":false}})");
      c.patch(plans, second, R"({"spec":{"paused":false}})");
      return std::string();
    });
  }
  {
    // Only the control-plane node matches.
    const auto plan = one_entry_plan(
        "control-plane", R"({"matchLabels":{"kubernetes.io/hostname":)" + quoted(cp_node) + "}}",
        healthy_cpx);
    add("selector matching only a control-plane node", "reported",
        plan_reports(plan, "NodesSelected", "False", "control-plane"));
    const auto tainted = one_entry_plan(
        "control-plane-taint",
        R"({"matchLabels":{"kubernetes.io/hostname":)" + quoted(cp_taint_node) + "}}", healthy_cpx);
    add("selector matching only a node with the control-plane taint (no role label)", "reported",
        plan_reports(tainted, "NodesSelected", "False", "control-plane node " + cp_taint_node));
  }
  {
    // Only the CPU node matches, with a profile that has no targetSelector.
    profile_options o = healthy_profile;
    o.timeout = "60";
    o.gpu_target = false;
    const auto prof = profile("any-node", o);
    const auto plan = one_entry_plan(
        "cpu", R"({"matchLabels":{"kubernetes.io/hostname":)" + quoted(cpu_node) + "}}", prof);
    add("plan selecting a node without GPUs (profile without targetSelector)", "reported",
        preflight_fails(plan, cpu_node, "NotAGPUNode"));
  }
  {
    // A NodePartitioning made by hand: no owner, its plan does not exist.
    const auto ghost_plan = plan_name("ghost");
    const auto item = ghost_plan + "-" + node_of("v-ghost");
    auto made =
        api.create(items, "",
                   object_json("NodePartitioning", item,
                               R"({"planRef":{"name":)" + quoted(ghost_plan) +
                                   R"(,"uid":"00000000-0000-0000-0000-00000000dead"},"nodeName":)" +
                                   quoted(node_of("v-ghost")) + R"(,"desiredHash":"sha256:)" +
                                   repeat('0', 64) + R"(","profileRef":{"name":)" +
                                   quoted(healthy_cpx) + "}}"));
    BOOST_REQUIRE_MESSAGE(made.ok(), (made.ok() ? "" : made.error().describe()));
    extra.items.push_back(item);
    add("NodePartitioning created by hand with no owner plan", "reported", [&c, item] {
      auto i = c.get(items, item);
      if (!i)
        return std::string("item gone");
      auto cond = condition_of(*i, "Owned");
      if (!cond || cond->status != "False" || !contains(cond->message, "spec.planRef"))
        return "Owned: " + describe(cond);
      if (const auto* f = kube::find_path(*i, {"metadata", "finalizers"});
          f && f->IsArray() && !f->Empty())
        return std::string("a finalizer was added");
      if (!str(*i, {"status", "phase"}).empty() && str(*i, {"status", "phase"}) != "Pending")
        return "phase " + str(*i, {"status", "phase"});
      return std::string();
    });
  }
  // The profile of a node in flight is deleted: the node goes back to service.
  const auto deleted_profile = [&] {
    profile_options o = healthy_profile;
    o.timeout = "60";
    return profile("deleted-profile", o);
  }();
  const auto deleted_plan = [&] {
    plan_options o;
    o.drain_timeout = "60";
    return one_entry_plan("deleted-profile", selector_for("deleted-profile"), deleted_profile, o);
  }();
  bool profile_deleted = false;
  add("profile deleted while its node drains", "reported", [&] {
    auto i = c.item(deleted_plan, pinned_node);
    if (!profile_deleted) {
      if (!i || i->phase != "Draining")
        return "waiting for Draining: " + item_state(deleted_plan, pinned_node);
      (void)api.remove(profiles, "", deleted_profile);
      profile_deleted = true;
      return std::string("profile deleted");
    }
    if (!i || i->phase != "Failed" || !contains(i->last_error, deleted_profile))
      return "item: " + item_state(deleted_plan, pinned_node);
    const auto n = c.node(pinned_node);
    if (n.unschedulable || n.dcm_taint)
      return std::string("node not returned to service");
    return std::string();
  });

  const auto everything = plan_name("everything");

  // -- the sampler: victims are never touched, hostile items never start, the healthy
  // plan keeps its limits --
  std::set<std::string> victims;
  for (const auto& v : victim_cases)
    if (v != "deleted-profile")
      victims.insert(node_of("v-" + v));
  const std::set<std::string> healthy_set(healthy_nodes.begin(), healthy_nodes.end());
  auto peak_healthy_in_flight = std::make_shared<std::atomic<int>>(0);
  auto saw_healthy_in_flight = std::make_shared<std::atomic<bool>>(false);
  sampler watch(c, watched_plans, [=](const sample& s, std::vector<std::string>& v) {
    for (const auto& n : s.nodes)
      if (victims.count(n.name)) {
        const auto d = before.at(n.name).diff(node_mark::of(n));
        if (!d.empty())
          v.push_back("victim " + n.name + " touched:" + d);
      }
    int healthy_flying = 0;
    for (const auto& i : s.items) {
      if (i.plan == healthy_plan) {
        if (i.in_flight())
          ++healthy_flying;
        continue;
      }
      if (i.in_flight() && i.node != pinned_node)
        v.push_back("item " + i.name + " of a hostile plan went " + i.phase);
    }
    if (healthy_flying > 0)
      *saw_healthy_in_flight = true;
    if (healthy_flying > *peak_healthy_in_flight)
      *peak_healthy_in_flight = healthy_flying;
    if (healthy_flying > 1)
      v.push_back(std::to_string(healthy_flying) + " healthy items in flight, maxParallel 1");
  });

  // -- junk in the retry annotation of a healthy item in flight: cleared, no retry --
  std::string retried_item;
  auto junk_retry = [&] {
    if (!retried_item.empty())
      return;
    for (const auto& i : c.plan_items(healthy_plan))
      if (i.in_flight()) {
        auto done = api.patch(items, "", i.name, kube::patch_type::merge,
                              R"({"metadata":{"annotations":{"infrastructure.silogen.ai/retry":")" +
                                  std::string("\\u0007junk\\u202e ") + repeat('z', 4000) + "\"}}}");
        if (done.ok())
          retried_item = i.name;
        return;
      }
  };

  // -- wait for every reported entry --
  const auto applied_at = seconds_since(t0);
  const bool healthy_done_early = c.plan_phase(healthy_plan) == "Completed";
  const auto until = clock_type::now() + 90s;
  while (clock_type::now() < until) {
    junk_retry();
    bool all = true;
    for (auto& e : table)
      if (!e.held) {
        e.last = e.check();
        e.held = e.last.empty();
        all = all && e.held;
      }
    if (all && (!retried_item.empty() || c.plan_phase(healthy_plan) == "Completed"))
      break;
    std::this_thread::sleep_for(500ms);
  }
  HOSTILE_NOTE("every entry applied by "
               << applied_at << " s, reported by " << seconds_since(t0)
               << " s; the healthy plan was "
               << (healthy_done_early ? "already complete" : "still rolling out")
               << " when they were applied");
  BOOST_TEST(!healthy_done_early, "the healthy plan finished before the hostile objects came");
  // Still true a moment later (nothing flips back once reported).
  std::this_thread::sleep_for(1s);
  for (auto& e : table)
    if (e.held && e.name != "profile deleted while its node drains" &&
        e.name != "two plans select one node") {
      e.last = e.check();
      e.held = e.last.empty();
    }
  std::size_t held = 0;
  for (const auto& e : table) {
    BOOST_TEST(e.held, "[" << e.outcome << "] " << e.name << ": " << e.last);
    if (e.held)
      ++held;
  }
  HOSTILE_NOTE(held << "/" << table.size() << " entries as expected");

  // -- a plan selecting every node of the test, once the others are gone --
  // Paused first: a plan left alone by the removal of its rival would start for real.
  for (const auto& p : watched_plans)
    if (p != healthy_plan && p != everything)
      (void)api.patch(plans, "", p, kube::patch_type::merge, R"({"spec":{"paused":true}})");
  for (const auto& p : watched_plans)
    if (p != healthy_plan && p != everything)
      (void)api.remove(plans, "", p);
  BOOST_TEST(eventually(
      [&] {
        for (const auto& p : watched_plans)
          if (p != healthy_plan && p != c.id + "-ghost" && !c.plan_items(p).empty())
            return false;
        return true;
      },
      30s, 200ms));
  {
    // Created while a healthy node is in flight (h4, its drain held by a PDB): that node
    // stays with the healthy plan; the healthy plan's other nodes are a conflict until
    // this plan goes.
    std::string flying;
    E2E_CHECK(eventually(
                  [&] {
                    auto i = c.item(healthy_plan, node_of("h4"));
                    if (i && i->phase == "Draining")
                      flying = i->node;
                    return !flying.empty();
                  },
                  60s, 100ms),
              "h4 never drained: " << c.describe(healthy_plan));
    auto uid_of = [&](const std::string& node) {
      auto i = c.get(items, healthy_plan + "-" + node);
      return i ? str(*i, {"metadata", "uid"}) : std::string("(none)");
    };
    const std::string flying_uid = flying.empty() ? std::string() : uid_of(flying);
    plan_options o;
    o.max_parallel = "100";
    o.max_unavailable = "\"100%\"";
    o.entries = {entry_json("all", R"({"matchLabels":{"hostile-scope":)" + quoted(c.key) + "}}",
                            healthy_cpx)};
    BOOST_REQUIRE_EQUAL(c.create_plan("everything", plan_spec(o)), everything);
    auto everything_reported = [&] {
      std::string out;
      if (c.item(everything, cp_node) || c.item(everything, cp_taint_node))
        out += " an item for a control-plane node;";
      auto conflict = plan_cond(everything, "Conflict");
      if (!flying.empty() &&
          (!conflict ||
           !contains(conflict->message, flying + ": in flight for plan " + healthy_plan)))
        out += " Conflict: " + describe(conflict) + ";";
      auto cpu = c.item(everything, cpu_node);
      if (!cpu || cpu->phase != "Failed" || !contains(cpu->last_error, "TargetMismatch"))
        out += " CPU node item: " + item_state(everything, cpu_node) + ";";
      auto degraded = plan_cond(everything, "Degraded");
      if (!degraded || degraded->status != "True" || !contains(degraded->message, cpu_node))
        out += " Degraded: " + describe(degraded) + ";";
      return out;
    };
    std::string seen;
    BOOST_TEST(eventually(
                   [&] {
                     seen = everything_reported();
                     return seen.empty();
                   },
                   30s, 300ms),
               "selecting every node:" << seen);
    // Nothing of it starts: watch for a while.
    E2E_CHECK(!eventually(
                  [&] {
                    for (const auto& i : c.plan_items(everything))
                      if (i.in_flight())
                        return true;
                    return false;
                  },
                  3s, 200ms),
              c.describe(everything));
    HOSTILE_NOTE("selecting every node: " << c.plan_items(everything).size() << " items, "
                                          << describe(plan_cond(everything, "Conflict")));
    c.delete_plan(everything);
    BOOST_TEST(eventually([&] { return c.plan_items(everything).empty(); }, 30s, 200ms));
    // Let h4's drain finish: the node in flight was never taken from the healthy plan,
    // and its item lands.
    (void)api.remove(kube::resources::pod_disruption_budgets(), c.ns, "held");
    if (!flying.empty()) {
      BOOST_TEST(eventually(
                     [&] {
                       auto i = c.item(healthy_plan, flying);
                       return i && i->phase == "Succeeded";
                     },
                     60s, 200ms),
                 "the healthy node in flight: " << item_state(healthy_plan, flying));
      BOOST_TEST(uid_of(flying) == flying_uid, "the item in flight was deleted and made anew");
    }
  }

  // -- the healthy plan completes; the same operator process served everything --
  E2E_REQUIRE(c.await_plan_phase(healthy_plan, "Completed", 90s), c.describe(healthy_plan));
  for (const auto& n : healthy_nodes) {
    const auto v = c.node(n);
    BOOST_TEST_CONTEXT("healthy node " << n) {
      BOOST_TEST(!v.unschedulable);
      BOOST_TEST(!v.dcm_taint);
      BOOST_TEST(v.label(profile_label) == "cpx-nps4");
      BOOST_TEST(v.label(state_label) == "success");
      BOOST_TEST(v.gpus == 64);
      BOOST_TEST(!v.has_annotation(was_unschedulable));
      BOOST_TEST(!v.has_annotation(applied_hash));
    }
  }
  BOOST_TEST(*saw_healthy_in_flight);
  for (const auto& [ns, name] : imposters)
    (void)api.remove(kube::resources::events(), ns, name);
  if (!tenant_config_map.empty())
    (void)api.remove(kube::resources::config_maps(), "default", tenant_config_map);
  if (!retried_item.empty()) {
    auto i = c.get(items, retried_item);
    BOOST_TEST_REQUIRE(bool(i));
    BOOST_TEST(kube::find_path(
                   *i, {"metadata", "annotations", "infrastructure.silogen.ai/retry"}) == nullptr,
               "the junk retry annotation is still there");
    const auto v = to_item_view(*i);
    BOOST_TEST(std::count(v.reasons.begin(), v.reasons.end(), "Retry") == 0,
               "an item in flight was retried");
  } else {
    BOOST_TEST(false, "never saw a healthy item in flight to annotate");
  }
  // The control-plane and CPU nodes: never ours.
  for (const auto& n : {cp_node, cp_taint_node, cpu_node}) {
    const auto d = before.at(n).diff(node_mark::of(c.node(n)));
    BOOST_TEST(d.empty(), n << " touched:" << d);
  }
  const auto found = watch.stop();
  std::string all;
  for (const auto& v : found)
    all += "\n  " + v;
  BOOST_TEST(found.empty(), "the sampler saw:" << all);
  BOOST_TEST(watch.samples() > 0);

  expect_same_operator(c, operator_pid);
  const auto log = c.operator_log(1000000);
  // Control characters in names, messages and annotations reach the log escaped: one
  // record is one line, and no terminal escape is replayed.
  const auto raw = std::find_if(log.begin(), log.end(), [](char ch) {
    const auto u = static_cast<unsigned char>(ch);
    return (u < 0x20 && ch != '\n') || u == 0x7f;
  });
  BOOST_TEST((raw == log.end()),
             "a raw control character in the operator's log at byte " << (raw - log.begin()));
  const auto crashes = crash_lines(log);
  std::string crash_text;
  for (const auto& l : crashes)
    crash_text += "\n  " + l;
  BOOST_TEST(crashes.empty(), "crash lines in the operator's log:" << crash_text);
  HOSTILE_NOTE(table.size() << " entries and a plan selecting everything in " << seconds_since(t0)
                            << " s; healthy peak in flight " << *peak_healthy_in_flight
                            << "; operator pid " << operator_pid << " throughout");
}

// Scale as hostile input: a hundred plans created at once, each selecting every node of the
// test (50 played by gpu-sim, 70 bare Node objects: 120, more than a status lists). Each node
// is selected by a hundred plans, so each plan leaves every node alone and says so, paused
// or not: its conflicts name the first 100 nodes, count all 120, and its status stays
// small. No node is cordoned, tainted or labelled, the operator stays the same process, and
// deleting the plans leaves no NodePartitioning. Its peak memory and the API requests it
// made are printed, not asserted: benchmarks own those figures.
BOOST_AUTO_TEST_CASE(a_hundred_plans_selecting_every_node_are_each_reported_and_move_nothing,
                     *utf::timeout(300)) {
  constexpr int simulated = 50;
  constexpr int bare = 70;
  constexpr int node_count = simulated + bare;
  constexpr int plan_count = 100;
  constexpr std::size_t listed = 100;         // status.conflicts names the first 100
  constexpr std::size_t status_bound = 65536; // bytes of a plan's status
  const auto t0 = clock_type::now();
  e2e_cluster c;
  extra_objects extra{c.api, {}, {}, {}, {}};
  auto& api = c.api;
  const std::string scope_label = R"({"scale-scope":)" + quoted(c.key) + "}";

  // -- nodes: every one carries scale-scope=<key>, which every plan selects --
  std::vector<std::pair<std::string, node_spec>> specs;
  for (int i = 0; i < simulated; ++i) {
    node_spec s;
    s.labels = {{"scale-scope", c.key}};
    specs.push_back({"s" + std::to_string(100 + i).substr(1), s});
  }
  c.add_nodes(specs);
  for (int i = 0; i < bare; ++i) {
    const std::string name = c.id + "-b" + std::to_string(100 + i).substr(1);
    auto made = api.create(kube::resources::nodes(), "",
                           R"({"apiVersion":"v1","kind":"Node","metadata":{"name":)" +
                               quoted(name) + R"(,"labels":{"scale-scope":)" + quoted(c.key) +
                               R"(,"kubernetes.io/hostname":)" + quoted(name) + "}}}");
    BOOST_REQUIRE_MESSAGE(made.ok(), (made.ok() ? "" : made.error().describe()));
    extra.nodes.push_back(name);
  }
  profile_options po;
  po.payload = "dcm-profile-cpx-nps4"; // copied in by the fixture
  const auto profile = c.create_profile("scale", profile_spec(c, po));
  c.start_simulator();
  std::map<std::string, node_mark> before;
  for (const auto& n : c.test_nodes())
    before[n.name] = node_mark::of(n);
  for (const auto& n : extra.nodes)
    before[n] = node_mark::of(c.node(n));
  BOOST_REQUIRE_EQUAL(before.size(), std::size_t(node_count));

  const auto addresses = test_support::fresh_path("operator-addresses");
  c.start_operator_with({"--log-level", "info", "--metrics-addr", "127.0.0.1:0",
                         "--bound-addresses-file", addresses});
  const pid_t operator_pid = c.operator_process().pid();
  const int port = test_support::bound_port(addresses, "metrics", 60s,
                                            [&] { return c.operator_process().alive(); });
  E2E_REQUIRE(port != 0, "the operator reported no metrics port\n" << c.operator_log());
  E2E_REQUIRE(eventually([&] { return test_support::http_get(port, "/readyz", 5).code == 200; },
                         60s, 200ms),
              "the operator never became ready (caches synced):\n"
                  << c.operator_log(40));
  E2E_REQUIRE(eventually([&] { return !api_requests(port).empty(); }, 10s, 200ms),
              "no /metrics from the operator on port " << port);
  const auto requests_before = api_requests(port);
  const long long rss_before = vm_kib(operator_pid, "VmRSS");

  std::vector<std::string> names;
  for (int i = 0; i < plan_count; ++i)
    names.push_back(c.id + "-many-" + std::to_string(100 + i).substr(1));
  plans_to_remove made{api, names};

  // -- the sampler: no item of these plans ever starts, no simulated node is touched --
  sampler watch(c, names, [&before](const sample& s, std::vector<std::string>& v) {
    for (const auto& n : s.nodes)
      if (auto was = before.find(n.name); was != before.end())
        if (const auto d = was->second.diff(node_mark::of(n)); !d.empty())
          v.push_back("node " + n.name + " touched:" + d);
    for (const auto& i : s.items)
      if (i.in_flight())
        v.push_back("item " + i.name + " went " + i.phase);
  });

  // -- a hundred plans at once, paused: a plan alone for a moment must not start --
  plan_options o;
  o.paused = true;
  o.max_parallel = "100";
  o.max_unavailable = "\"100%\"";
  o.entries = {entry_json("all", R"({"matchLabels":)" + scope_label + "}", profile)};
  const auto creating = clock_type::now();
  auto refused = at_once(plan_count, [&](kube::client& client, int i) {
    auto r = client.create(
        plans, "",
        object_json("PartitioningPlan", names[i], plan_spec(o), R"(,"labels":)" + scope_label));
    return r.ok() ? std::string() : r.error().describe();
  });
  const double create_seconds = seconds_since(creating);
  E2E_REQUIRE(refused.empty(), "plans refused: " << refused.front());

  // What each plan's status must say: every node left alone, counted exactly, the first 100
  // named, each naming three other plans and counting the other 96; nothing to come.
  std::size_t largest_status = 0;
  auto report_of = [&](const rapidjson::Value& p, bool paused) -> std::string {
    const auto name = str(p, {"metadata", "name"});
    const auto* st = kube::find_path(p, {"status"});
    if (st == nullptr)
      return "no status";
    const auto bytes = json_text(*st).size();
    largest_status = std::max(largest_status, bytes);
    if (bytes >= status_bound)
      return "a status of " + std::to_string(bytes) + " bytes";
    if (number_at(p, {"status", "observedGeneration"}) != number_at(p, {"metadata", "generation"}))
      return "observedGeneration " + std::to_string(number_at(p, {"status", "observedGeneration"}));
    if (number_at(p, {"status", "conflictCount"}) != node_count)
      return "conflictCount " + std::to_string(number_at(p, {"status", "conflictCount"}));
    const auto* conflicts = kube::find_path(p, {"status", "conflicts"});
    if (conflicts == nullptr || !conflicts->IsArray() || conflicts->Size() != listed)
      return "conflicts: " + (conflicts ? json_text(*conflicts).substr(0, 200) : "(none)");
    std::vector<std::string> others;
    for (const auto& n : names)
      if (n != name)
        others.push_back(n);
    const std::string reason =
        "also selected by plan " + others[0] + ", " + others[1] + ", " + others[2] + " and 96 more";
    if (str((*conflicts)[0], {"reason"}) != reason)
      return "conflicts[0].reason " + str((*conflicts)[0], {"reason"});
    if (const auto* order = kube::find_path(p, {"status", "order"}); order != nullptr)
      return "order " + json_text(*order).substr(0, 200);
    if (number_at(p, {"status", "orderCount"}) != 0 ||
        number_at(p, {"status", "nodes", "total"}) != 0)
      return "orderCount " + std::to_string(number_at(p, {"status", "orderCount"})) + ", total " +
             std::to_string(number_at(p, {"status", "nodes", "total"}));
    const auto conflict = condition_of(p, "Conflict");
    if (!conflict || conflict->status != "True" ||
        conflict->message.rfind(std::to_string(node_count) + " node(s) left alone: ", 0) != 0 ||
        !contains(conflict->message, "... and " + std::to_string(node_count - 10) + " more"))
      return "Conflict: " + describe(conflict);
    const auto held = condition_of(p, "Paused");
    if (!held || held->status != (paused ? "True" : "False"))
      return "Paused: " + describe(held);
    return {};
  };
  // Every plan, as one list shows them: "" when each reports as it must.
  auto unreported = [&](bool paused) {
    std::size_t seen = 0;
    std::string out;
    for (const auto& p : list_objects(api, plans, "", "scale-scope=" + c.key)) {
      ++seen;
      if (const auto why = report_of(p, paused); !why.empty() && out.size() < 2000)
        out += "\n  " + str(p, {"metadata", "name"}) + ": " + why;
    }
    if (seen != std::size_t(plan_count))
      out += "\n  " + std::to_string(seen) + " plans listed";
    return out;
  };
  auto items_of_these = [&] {
    std::vector<std::string> out;
    const std::set<std::string> mine(names.begin(), names.end());
    for (const auto& i : list_objects(api, items, ""))
      if (mine.count(str(i, {"spec", "planRef", "name"})))
        out.push_back(str(i, {"metadata", "name"}));
    return out;
  };
  std::string missing;
  E2E_CHECK(eventually(
                [&] {
                  missing = unreported(true);
                  return missing.empty();
                },
                120s, 1s),
            "plans not reported as they must be:" << missing);
  const double report_seconds = seconds_since(creating);
  // A plan alone for a moment may have made items (paused, none started): all gone now.
  E2E_CHECK(eventually([&] { return items_of_these().empty(); }, 30s, 500ms),
            items_of_these().size() << " items of these plans are left");

  // -- resumed: live plans in conflict still start nothing --
  auto set_paused = [&](bool paused) {
    return at_once(plan_count, [&](kube::client& client, int i) {
      auto r =
          client.patch(plans, "", names[i], kube::patch_type::merge,
                       std::string(R"({"spec":{"paused":)") + (paused ? "true" : "false") + "}}");
      return r.ok() ? std::string() : r.error().describe();
    });
  };
  auto failed = set_paused(false);
  E2E_REQUIRE(failed.empty(), "resuming: " << failed.front());
  E2E_CHECK(eventually(
                [&] {
                  missing = unreported(false);
                  return missing.empty();
                },
                60s, 1s),
            "resumed plans not reported as they must be:" << missing);
  std::this_thread::sleep_for(5s);
  BOOST_TEST(items_of_these().empty(), "live plans in conflict made items");
  missing = unreported(false);
  BOOST_TEST(missing.empty(), "resumed plans, 5 s later:" << missing);

  // -- paused again (no plan is left to start alone as its rivals go), then deleted --
  failed = set_paused(true);
  E2E_REQUIRE(failed.empty(), "pausing: " << failed.front());
  E2E_CHECK(eventually(
                [&] {
                  missing = unreported(true);
                  return missing.empty();
                },
                60s, 1s),
            "paused plans not reported as they must be:" << missing);
  failed = at_once(plan_count, [&](kube::client& client, int i) {
    auto r = client.remove(plans, "", names[i]);
    return r.ok() ? std::string() : r.error().describe();
  });
  BOOST_TEST(failed.empty(), "deleting: " << (failed.empty() ? "" : failed.front()));
  BOOST_TEST(
      eventually([&] { return list_objects(api, plans, "", "scale-scope=" + c.key).empty(); }, 60s,
                 500ms),
      "plans left after deletion");
  E2E_CHECK(eventually([&] { return items_of_these().empty(); }, 30s, 500ms),
            items_of_these().size() << " NodePartitionings left after their plans went");

  // -- nothing moved; the same operator throughout --
  const auto found = watch.stop();
  std::string all;
  for (const auto& v : found)
    all += "\n  " + v;
  BOOST_TEST(found.empty(), "the sampler saw:" << all);
  BOOST_TEST(watch.samples() > 0);
  for (const auto& n : extra.nodes) {
    const auto d = before.at(n).diff(node_mark::of(c.node(n)));
    BOOST_TEST(d.empty(), n << " touched:" << d);
  }
  const auto requests_after = api_requests(port);
  const long long peak = vm_kib(operator_pid, "VmHWM");
  const long long rss_after = vm_kib(operator_pid, "VmRSS");
  expect_same_operator(c, operator_pid);
  const auto log = c.operator_log(1000000);
  const auto crashes = crash_lines(log);
  std::string crash_text;
  for (const auto& l : crashes)
    crash_text += "\n  " + l;
  BOOST_TEST(crashes.empty(), "crash lines in the operator's log:" << crash_text);

  auto delta = [&](const std::string& key) {
    auto a = requests_after.find(key);
    auto b = requests_before.find(key);
    return (a == requests_after.end() ? 0.0 : a->second) -
           (b == requests_before.end() ? 0.0 : b->second);
  };
  std::string by_kind;
  for (const auto& [key, value] : requests_after)
    if (key != "(all)" && delta(key) >= 1)
      by_kind +=
          (by_kind.empty() ? "" : ", ") + key + " " + std::to_string(std::lround(delta(key)));
  HOSTILE_NOTE(plan_count << " plans over " << node_count << " nodes (" << simulated
                          << " simulated): created in " << create_seconds
                          << " s, every status as it must be " << report_seconds
                          << " s after the first; largest status " << largest_status << " bytes");
  HOSTILE_NOTE("note: operator RSS "
               << rss_before << " KiB before the plans, " << rss_after
               << " KiB after, peak (VmHWM) " << peak << " KiB; " << std::lround(delta("(all)"))
               << " API requests from the first plan to the last "
                  "deletion: "
               << by_kind << "; the whole case took " << seconds_since(t0) << " s");
}

BOOST_AUTO_TEST_SUITE_END()
