#pragma once

// End-to-end test support: one test's own slice of a real cluster (a namespace with
// DCM's ConfigMap and the payload ConfigMaps, uniquely named simulated nodes that only
// this test's gpu-sim plays), the operator and gpu-sim as child processes, black-box
// views of nodes, NodePartitionings and plans, the API server's audit log (who wrote
// what, and when), and a sampler thread that checks invariants every 100 ms. Everything
// is removed again when the cluster object goes.
//
// The operator is driven only through the API, as a user would: JSON in, JSON out, no
// use of the operator's own types.

#include "kube/client.hpp"
#include "kube/config.hpp"
#include "kube/credentials.hpp"
#include "kube/http_client.hpp"
#include "tests/support/checks.hpp"

#include <rapidjson/document.h>

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace gpu_partitioner::e2e {

// -- names --
inline constexpr const char* profile_label = "dcm.amd.com/gpu-config-profile";
inline constexpr const char* state_label = "dcm.amd.com/gpu-config-profile-state";
inline constexpr const char* ready_label = "amd.com/gpu.ready";
inline constexpr const char* fault_label = "sim.gpu-partitioner.io/fault";
/// gpu-sim's node label: device-plugin (the default), dra, or dra-dynamic (AMD's DRA
/// driver, partitioning the GPUs itself in the last).
inline constexpr const char* gpu_api_label = "sim.gpu-partitioner.io/gpu-api";
inline constexpr const char* partition_annotation = "sim.gpu-partitioner.io/partition";
inline constexpr const char* was_unschedulable = "infrastructure.silogen.ai/was-unschedulable";
inline constexpr const char* applied_hash = "infrastructure.silogen.ai/applied-hash";
inline constexpr const char* item_finalizer = "infrastructure.silogen.ai/node-partitioning";
/// DCM's ConfigMap as AMD's docs name it; the fixture's DeviceConfig names it and DCM's pods
/// mount it.
inline constexpr const char* dcm_config_name = "config-manager-config";

extern const kube::resource plans;
extern const kube::resource profiles;
extern const kube::resource items;
extern const kube::resource deployments;

// -- JSON and files --
std::string quoted(const std::string& s);
/// {"k":"v","gone":null}
std::string json_map(const std::map<std::string, std::optional<std::string>>& m);
rapidjson::Document parse_json(const std::string& text);
/// A file of this test's runfiles ("tools/simulator/gpu-sim").
std::string runfile(const std::string& path);
std::string read_text(const std::string& path);
/// Every document of a YAML file, as JSON (quoted scalars stay strings).
std::vector<std::string> yaml_documents_as_json(const std::string& path);
/// The string at `path`, "" if absent or not a string.
std::string str(const rapidjson::Value& v, std::initializer_list<const char*> path);
/// Every object of `r` in `ns` ("" : all, or cluster-scoped) matching `label_selector`.
std::vector<rapidjson::Document> list_objects(kube::client& api, const kube::resource& r,
                                              const std::string& ns,
                                              const std::string& label_selector = {});

/// Polls `condition` every `interval` until it holds or `timeout` passes.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                std::chrono::milliseconds interval = std::chrono::milliseconds(50));

/// Seconds since `start`, for wall-time messages.
double seconds_since(std::chrono::steady_clock::time_point start);

// -- child processes --

/// A child process (posix_spawn) with stdout and stderr appended to a log file; SIGTERM
/// at the end, SIGKILL after 5 s.
class child_process {
public:
  child_process(std::vector<std::string> args, std::string log_path);
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  ~child_process();

  bool alive();
  /// Sends `sig`; any but SIGSTOP and SIGCONT counts as asking the process to end.
  void signal(int sig);
  /// SIGKILL and reap.
  void kill_now();
  /// SIGTERM, up to 5 s, then SIGKILL. The wait status.
  int stop();
  pid_t pid() const { return pid_; }
  /// "running (pid N)", "exited with status N", "killed by signal N" or "not started".
  std::string state();
  /// It has ended, and nobody asked it to (neither stop(), kill_now() nor a signal that
  /// ends it): a crash, or an exit of its own.
  bool ended_unasked();
  /// Every thread's stack of a running process (gdb, when installed), for a failure report:
  /// written next to the log; returns that file's path, or "" when it could not be taken.
  std::string dump_stacks();
  const std::string& log_path() const { return log_path_; }
  /// The last `lines` lines of the log.
  std::string tail(std::size_t lines = 80) const;

private:
  std::vector<std::string> args_;
  std::string log_path_;
  pid_t pid_ = -1;
  int status_ = -1;
  bool asked_to_end_ = false;
};

/// The first lines of an AddressSanitizer, LeakSanitizer, UndefinedBehaviorSanitizer or
/// ThreadSanitizer report in a child's log; "" when there is none.
std::string sanitizer_report(const std::string& log_path);

// -- the API server's audit log --

/// One completed request, as the API server's audit log records it (tools/cluster logs
/// every request that can change something, at Metadata level).
struct audit_event {
  std::string verb;
  std::string user_agent;
  std::string user;
  std::string group; // objectRef.apiGroup, "" for the core group
  std::string resource;
  std::string subresource;
  std::string ns;
  std::string name;
  int code = 0;
  /// requestReceivedTimestamp and stageTimestamp as microseconds since the epoch.
  long long received_us = 0;
  long long completed_us = 0;

  bool mutating() const;
  bool succeeded() const { return code >= 200 && code < 300; }
};

/// The audit log from the moment of construction on
/// ($GPU_PARTITIONER_CLUSTER_DIR/logs/audit.log).
class audit_log {
public:
  audit_log();
  /// Every event logged since construction, in file order.
  std::vector<audit_event> read() const;
  const std::string& path() const { return path_; }

private:
  std::string path_;
  long long offset_ = 0;
};

/// "2026-11-29T18:16:02.123456Z" as microseconds since the epoch; 0 if it does not parse.
long long parse_micro_time(const std::string& text);

// -- black-box views --

struct node_view {
  std::string name;
  std::string resource_version;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  /// "key=value:effect" per taint.
  std::vector<std::string> taints;
  bool unschedulable = false;
  bool dcm_taint = false;
  /// status.allocatable["amd.com/gpu"], -1 if absent.
  long long gpus = -1;

  std::string label(const std::string& key) const;
  bool has_annotation(const std::string& key) const { return annotations.count(key) > 0; }
  /// Cordoned or carrying amd-dcm=up:NoExecute.
  bool unavailable() const { return unschedulable || dcm_taint; }
  /// What a dry run must not change: labels, annotations, taints, unschedulable.
  std::string fingerprint() const;
};
node_view to_node_view(const rapidjson::Value& node);

struct item_view {
  std::string name;
  std::string plan;
  std::string node;
  std::string phase; // "" until the operator writes a status
  std::string last_error;
  std::string started_at;
  std::string completed_at;
  /// status.dcmMayChangeUntil: the taint stays while DCM may still retry a failed run.
  std::string dcm_may_change_until;
  std::string desired_hash;
  std::string observed_hash;
  bool deleting = false;
  /// metadata.labels.
  std::map<std::string, std::string> labels;
  /// history[].reason, oldest first.
  std::vector<std::string> reasons;
  /// history[].phase, oldest first.
  std::vector<std::string> phases;
  /// status.preview as JSON, "" if none.
  std::string preview;
  /// status.drain as JSON, "" if none.
  std::string drain;
  /// status.conditions: type -> "Status/Reason: message".
  std::map<std::string, std::string> conditions;

  bool in_flight() const;
  /// Phase or Pending when no status yet.
  std::string phase_or_pending() const { return phase.empty() ? "Pending" : phase; }
};
item_view to_item_view(const rapidjson::Value& item);

struct pod_view {
  std::string name;
  std::string node;
  std::map<std::string, std::string> labels;
  bool ready = false;
  bool deleting = false;
  /// Ready and not being deleted: what a PodDisruptionBudget counts as healthy.
  bool healthy() const { return ready && !deleting; }
};
pod_view to_pod_view(const rapidjson::Value& pod);

/// A client with its own connection, for one thread.
struct connection {
  explicit connection(const kube::connection_config& config)
      : http(config, std::make_shared<kube::credentials>(config)), api(http) {}
  kube::http_client http;
  kube::client api;
};

/// The admin kubeconfig from $KUBECONFIG; fails the test if there is none.
kube::connection_config admin_config();

// -- one test's cluster --

struct node_spec {
  std::string pool = "training-gpu";
  /// The value of sim.gpu-partitioner.io/fault ("" for none).
  std::string fault;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  /// Cordoned by an admin before anything else happens.
  bool cordoned = false;
};

class e2e_cluster {
public:
  /// Creates the namespace e2e-<random> with DCM's ConfigMap (tools/simulator/dcm-config.json)
  /// and the sample payload ConfigMaps (manifests/samples/dcm-payload-configmaps.yaml).
  e2e_cluster();
  e2e_cluster(const e2e_cluster&) = delete;
  e2e_cluster& operator=(const e2e_cluster&) = delete;
  ~e2e_cluster();

  connection conn;
  kube::client& api;
  std::string key; // 8 hex digits: label e2e=<key>, taint e2e=<key>:NoSchedule
  std::string id;  // e2e-<key>: namespace, and prefix of every name
  std::string ns;
  std::vector<std::string> nodes;

  /// Creates the nodes, named <id>-<suffix> (in this order; names sort as given).
  void add_nodes(const std::vector<std::pair<std::string, node_spec>>& specs);
  /// gpu-sim over this test's nodes; waits until each reports amd.com/gpu and is ready, and
  /// the node-lifecycle controller has lifted its not-ready taint.
  void start_simulator(const std::string& time_scale = "0.02",
                       const std::vector<std::string>& extra_args = {});
  /// The operator's --dcm-config-sync for the simulator's time scale: gpu-sim's 60 s
  /// delivery of DCM's file, scaled, plus the default's 30 s of margin scaled or 2 s,
  /// whichever is longer. The margin covers gpu-sim's watch seeing the ConfigMap change
  /// later than the operator's does: scaled to 0.6 s alone, a loaded machine exceeds it.
  std::string dcm_config_sync() const;
  child_process& simulator() { return *sim_; }
  /// The operator; its output goes to $TEST_UNDECLARED_OUTPUTS_DIR/operator-<id>.log.
  void start_operator();
  /// The operator with these arguments instead of the defaults (the admin kubeconfig,
  /// this test's DCM ConfigMap, debug logs, no metrics or health endpoint); a restart at
  /// teardown uses them too.
  void start_operator(const std::vector<std::string>& args);
  /// The default command line plus `extra_args` (a flag given twice: the later value wins).
  void start_operator_with(const std::vector<std::string>& extra_args);
  /// The operator's default command line: the binary, this cluster's kubeconfig and DCM
  /// ConfigMap, debug logs, no metrics or health endpoint (each would take a fixed port
  /// by default), then `extra_args`.
  std::vector<std::string> operator_command(const std::vector<std::string>& extra_args = {}) const;
  /// The operator binary in the runfiles.
  std::string operator_binary() const;
  void kill_operator();
  child_process& operator_process() { return *op_; }
  std::string operator_log(std::size_t lines = 120) const;
  /// The reportingInstance of every Event the operator wrote about this test's objects
  /// (each process has an identity of its own: "<host>_<pid>_<random>").
  std::set<std::string> operator_instances();

  // -- the API objects the test creates (removed at the end) --
  /// A PartitioningProfile named <id>-<suffix>, spec as JSON.
  std::string create_profile(const std::string& suffix, const std::string& spec_json);
  /// A sample profile (manifests/samples/<file>) renamed to <id>-<suffix>, its payload in
  /// this namespace; `edit` may change the JSON document before it is created.
  std::string create_sample_profile(const std::string& suffix, const std::string& file,
                                    const std::function<void(rapidjson::Document&)>& edit = {});
  /// A payload ConfigMap in this namespace holding `profile_json` as profile.json.
  void create_payload(const std::string& name, const std::string& profile_json);
  /// A PartitioningPlan named <id>-<suffix>, spec as JSON.
  std::string create_plan(const std::string& suffix, const std::string& spec_json);
  /// The sample plan renamed, its partitionings restricted to e2e=<key> and pointed at
  /// the given profiles (sample profile name -> ours); `edit` may change more.
  std::string create_sample_plan(const std::string& suffix,
                                 const std::map<std::string, std::string>& profile_names,
                                 const std::function<void(rapidjson::Document&)>& edit = {});
  void patch(const kube::resource& r, const std::string& name, const std::string& merge_patch,
             const std::string& ns = {});
  void delete_plan(const std::string& name);

  /// A selector JSON {"matchLabels":{"e2e":<key>, ...extra}}.
  std::string selector(const std::map<std::string, std::string>& extra = {}) const;

  // -- reading --
  std::optional<rapidjson::Document> get(const kube::resource& r, const std::string& name,
                                         const std::string& ns = {});
  node_view node(const std::string& name);
  /// Waits for `name` to be neither cordoned nor tainted. The operator writes a run's end
  /// to the item's status before it uncordons (write-ahead), so a test that has just seen
  /// the status waits for the node change that follows it.
  bool back_in_service(const std::string& name,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10));
  std::vector<node_view> test_nodes();
  std::vector<item_view> plan_items(const std::string& plan);
  /// The item of `node` in `plan`, under whatever name it has.
  std::optional<item_view> item(const std::string& plan, const std::string& node);
  /// status.phase of a plan, "" if none.
  std::string plan_phase(const std::string& plan);
  /// The plan's condition `type` as "Status/Reason: message", "" if absent.
  std::string plan_condition(const std::string& plan, const std::string& type);
  /// The plan's status was written for its current spec: status.observedGeneration is
  /// metadata.generation. What the status says is then the operator's decision on it.
  bool plan_status_current(const std::string& plan);
  std::vector<pod_view> pods(const std::string& label_selector = {});
  /// Waits for every item of `plan` (expected `count`) to be in `phase`.
  bool await_items(const std::string& plan, std::size_t count, const std::string& phase,
                   std::chrono::milliseconds timeout);
  bool await_plan_phase(const std::string& plan, const std::string& phase,
                        std::chrono::milliseconds timeout);
  /// One line per item and node, for failure messages.
  std::string describe(const std::string& plan);

  // -- workloads --
  void await_default_service_account();
  /// A Deployment of `replicas` pods requesting amd.com/gpu: 1, kept on this test's nodes
  /// (plus `node_selector`), tolerating the test's own taint.
  void create_deployment(const std::string& name, int replicas,
                         const std::map<std::string, std::string>& node_selector = {},
                         int grace_seconds = 5);
  void create_pdb(const std::string& name, const std::string& app, int min_available);
  /// Pods of `app` that are Ready and not being deleted.
  int healthy_pods(const std::string& app);
  /// The ResourceSlices naming `node` (spec.nodeName), any driver.
  std::vector<rapidjson::Document> resource_slices(const std::string& node);
  /// DCM's Events from `node` (about its pod there), oldest first: "Reason SelectedProfile".
  std::vector<std::string> dcm_events(const std::string& node);

private:
  void set_up();
  void tear_down();
  /// Fails the case, once per process, if the operator ended without the test asking.
  void check_operator_end(const std::string& when);

  std::unique_ptr<child_process> sim_;
  std::unique_ptr<child_process> op_;
  bool op_end_checked_ = false;
  std::string op_log_;
  std::string time_scale_ = "0.02";
  std::vector<std::string> op_args_;
  std::vector<std::string> plans_;
  std::vector<std::string> profiles_;
  std::string kubeconfig_;
};

/// The operator has been one process since it started as `pid`: it still runs as `pid`,
/// and every Event it wrote about this test's objects names that process (a restart, in
/// place or not, would write under another identity). Needs at least one such Event.
void expect_same_operator(e2e_cluster& c, pid_t pid);

/// What the sampler saw at one instant.
struct sample {
  std::chrono::steady_clock::time_point at;
  std::vector<node_view> nodes;
  std::vector<item_view> items;
  std::vector<pod_view> pods;
};

/// Lists the test's nodes, its plans' items and (optionally) its pods every 100 ms on its
/// own connection, and hands each sample to `check`, which records violations.
class sampler {
public:
  using check_fn = std::function<void(const sample&, std::vector<std::string>& violations)>;
  sampler(const e2e_cluster& cluster, std::vector<std::string> plans, check_fn check,
          bool with_pods = false,
          std::chrono::milliseconds interval = std::chrono::milliseconds(100));
  sampler(const sampler&) = delete;
  sampler& operator=(const sampler&) = delete;
  ~sampler();
  /// Stops the thread; the violations (the first 20, and a count of the rest).
  std::vector<std::string> stop();
  int samples() const { return samples_; }

private:
  void run();

  kube::connection_config config_;
  std::string key_;
  std::string ns_;
  std::vector<std::string> plans_;
  check_fn check_;
  bool with_pods_;
  std::chrono::milliseconds interval_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> samples_{0};
  std::vector<std::string> violations_;
  std::thread thread_;
};

} // namespace gpu_partitioner::e2e
