// gpu-sim against the real local control plane: DCM's label-driven runs and their
// answers (state label and Events), DCM's validation, injected faults, the device plugin
// under the amd-dcm taint, AMD's DRA driver (its ResourceSlice, kubelet's wipe, pods whose
// claims the real scheduler allocates), GPU pods blocking a run, kubelet for pods that the
// real kube-scheduler places, and kubelet's heartbeats for the node-lifecycle controller. Each case
// runs its own gpu-sim (posix_spawn, SIGTERM at the end) over its own nodes (label simtest=<id>,
// kept to themselves by a simtest=<id>:NoSchedule taint) and its own DCM ConfigMap in its own
// namespace, so cases can run side by side with anything else on the cluster.
#include "kube/list_watch.hpp"
#include "tests/integration/support/cluster.hpp"
#include "tests/support/checks.hpp"

#include <boost/test/results_collector.hpp>
#include <boost/test/unit_test.hpp>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

extern char** environ;

using namespace gpu_partitioner;
using namespace gpu_partitioner::testing;
using namespace std::chrono_literals;

namespace {

// -- what the real AMD stack reads and writes --
const std::string profile_label = "dcm.amd.com/gpu-config-profile";
const std::string state_label = "dcm.amd.com/gpu-config-profile-state";
const std::string ready_label = "amd.com/gpu.ready";
const std::string partition_label = "amd.com/gpu.compute-memory-partition";
const std::string fault_label = "sim.gpu-partitioner.io/fault";
const std::string partition_annotation = "sim.gpu-partitioner.io/partition";
const std::string dcm_component = "amd-device-config-manager";
const std::string dcm_config_name = "default-dcm-config";
const std::string gpu_api_label = "sim.gpu-partitioner.io/gpu-api";
const std::string dra_driver = "gpu.amd.com";

// At --time-scale 0.02: a memory change 2.8 s, a compute change 0.2 s, the plugin's
// restart 0.1 s (1 s when slow), DCM's retry period 1.2 s.
const char* time_scale = "0.02";
// kubelet's delivery of DCM's file, in seconds before the time scale: none for the cases
// that are not about it.
const char* config_lag = "0";
const auto memory_run = 2800ms;

const kube::resource deployments{"apps", "v1", "deployments", true};
const kube::resource claim_templates{"resource.k8s.io", "v1", "resourceclaimtemplates", true};

std::string runfile(const std::string& path) {
  const char* dir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (dir != nullptr && workspace != nullptr)
    return std::string(dir) + "/" + workspace + "/" + path;
  return path;
}

std::string quoted(const std::string& s) {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
  return b.GetString();
}

/// {"k":"v","gone":null}
std::string json_map(const std::map<std::string, std::optional<std::string>>& m) {
  std::string out = "{";
  for (const auto& [k, v] : m)
    out += (out.size() > 1 ? "," : "") + quoted(k) + ":" + (v ? quoted(*v) : "null");
  return out + "}";
}

/// The repo's DCM config plus `bad-count`, a profile that assigns 7 of 8 GPUs.
std::string dcm_config_json() {
  auto text = kube::read_file(runfile("tools/simulator/dcm-config.json"));
  BOOST_REQUIRE_MESSAGE(text.ok(), (text.ok() ? "" : text.error().describe()));
  rapidjson::Document doc;
  doc.Parse(text.value().c_str());
  BOOST_REQUIRE(!doc.HasParseError() && doc.HasMember("gpu-config-profiles"));
  rapidjson::Document bad(&doc.GetAllocator());
  bad.Parse(R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX",)"
            R"("memoryPartition":"NPS4","numGPUsAssigned":7}]})");
  doc["gpu-config-profiles"].AddMember("bad-count", bad.Move(), doc.GetAllocator());
  return kube::to_json(doc);
}

std::string config_map_body(const std::string& ns, const std::string& config_json,
                            const std::string& name = dcm_config_name) {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":)" + quoted(name) +
         R"(,"namespace":)" + quoted(ns) + R"(},"data":{"config.json":)" + quoted(config_json) +
         "}}";
}

/// gpu-sim as a child of the test, stopped with SIGTERM when it goes out of scope.
class simulator_process {
public:
  simulator_process(const std::vector<std::string>& args, std::string log_path)
      : log_path_(std::move(log_path)) {
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log_path_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
    std::vector<char*> argv;
    for (const auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, argv[0], &files, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    BOOST_REQUIRE_MESSAGE(rc == 0, "cannot start " << args[0] << ": " << std::strerror(rc));
  }
  simulator_process(const simulator_process&) = delete;
  simulator_process& operator=(const simulator_process&) = delete;
  ~simulator_process() { stop(); }

  /// Still running (not exited, not yet reaped).
  bool alive() {
    if (pid_ <= 0)
      return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      status_ = status;
      return false;
    }
    return true;
  }

  /// SIGTERM, then up to 10 s for a clean exit, then SIGKILL. The wait status.
  int stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      const auto until = std::chrono::steady_clock::now() + 10s;
      int status = 0;
      pid_t got = 0;
      while ((got = ::waitpid(pid_, &status, WNOHANG)) == 0 &&
             std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(20ms);
      if (got == 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
      }
      status_ = status;
      pid_ = -1;
    }
    return status_;
  }

  std::string log() const {
    std::ifstream in(log_path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

private:
  std::string log_path_;
  pid_t pid_ = -1;
  int status_ = -1;
};

bool current_test_passed() {
  using namespace boost::unit_test;
  return results_collector.results(framework::current_test_case().p_id).passed();
}

bool pod_ready(const rapidjson::Value& pod) {
  const auto* status = kube::find_path(pod, {"status"});
  if (status == nullptr || kube::string_at(*status, "phase") != "Running")
    return false;
  if (const auto* conds = kube::find_path(*status, {"conditions"}); conds && conds->IsArray())
    for (const auto& c : conds->GetArray())
      if (kube::string_at(c, "type") == "Ready")
        return kube::string_at(c, "status") == "True";
  return false;
}

/// DCM's DaemonSet: pods labelled `pod_label` (key, value) on the nodes labelled
/// simtest=<selector>, mounting the ConfigMap `config_map` at /etc/config-manager/ as the GPU
/// operator does (volume config-manager-config-volume); the image's tag is DCM's version.
std::string dcm_daemon_set(const std::string& name,
                           const std::pair<std::string, std::string>& pod_label,
                           const std::string& selector, const std::string& config_map,
                           const std::string& version = "v1.3.0") {
  const std::string labels = "{" + quoted(pod_label.first) + ":" + quoted(pod_label.second) + "}";
  return R"({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":)" + quoted(name) +
         R"(},"spec":{"selector":{"matchLabels":)" + labels +
         R"(},"template":{"metadata":{"labels":)" + labels +
         R"(},"spec":{"nodeSelector":{"simtest":)" + quoted(selector) +
         R"(},"tolerations":[{"operator":"Exists"}],"automountServiceAccountToken":false,)"
         R"("terminationGracePeriodSeconds":1,)"
         R"("volumes":[{"name":"config-manager-config-volume","configMap":{"name":)" +
         quoted(config_map) +
         R"(}}],"containers":[{"name":"device-config-manager-container",)"
         R"("image":"rocm/device-config-manager:)" +
         version +
         R"(","volumeMounts":[{"name":"config-manager-config-volume",)"
         R"("mountPath":"/etc/config-manager/"}]}]}}}})";
}

/// One test's simulated GPU cluster: a namespace with DCM's ConfigMap, nodes that only
/// this test's gpu-sim plays, and the gpu-sim process. Removed again at the end.
struct sim_cluster {
  connection conn{cluster::admin()};
  kube::client& api = conn.api;
  std::string id = unique_name("simtest"); // simtest-<random>
  std::string selector_value = id.substr(std::string("simtest-").size());
  std::string ns = id;
  std::vector<std::string> nodes;
  std::unique_ptr<simulator_process> sim;

  /// One node per entry, with that value of the fault label ("" for none).
  std::string lag;
  std::vector<std::string> extra;
  /// Per node, its gpu-api label ("" or missing: none, gpu-sim's --gpu-api decides).
  std::vector<std::string> apis;
  /// DCM deployed by its standalone chart (pods app=amdgpu-device-config-manager, mounting
  /// the ConfigMap dcm-st) instead of by the GPU operator.
  bool standalone_dcm = false;
  std::vector<std::string> args;
  std::string log_base;

  sim_cluster(std::initializer_list<std::string> node_faults, std::string lag_seconds = config_lag,
              std::vector<std::string> extra_args = {}, std::vector<std::string> node_apis = {},
              bool standalone = false)
      : lag(std::move(lag_seconds)), extra(std::move(extra_args)), apis(std::move(node_apis)),
        standalone_dcm(standalone) {
    try {
      set_up(node_faults);
    } catch (...) {
      tear_down();
      throw;
    }
  }

  ~sim_cluster() { tear_down(); }

  void set_up(const std::vector<std::string>& faults) {
    auto made = api.create(kube::resources::namespaces(), "",
                           R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":)" +
                               quoted(ns) + "}}");
    BOOST_REQUIRE_MESSAGE(made.ok(), (made.ok() ? "" : made.error().describe()));
    auto cm =
        api.create(kube::resources::config_maps(), ns, config_map_body(ns, dcm_config_json()));
    BOOST_REQUIRE_MESSAGE(cm.ok(), (cm.ok() ? "" : cm.error().describe()));
    // DCM's DaemonSet, as the GPU operator deploys it: gpu-sim plays DCM where its pod runs,
    // reading the ConfigMap the pod mounts. Standalone DCM's chart names its pods and its
    // ConfigMap otherwise.
    const kube::resource daemon_sets{"apps", "v1", "daemonsets", true};
    auto version = std::find(extra.begin(), extra.end(), "--dcm-version");
    const std::string tag = version != extra.end() && version + 1 != extra.end()
                                ? "v" + *(version + 1) + ".0"
                                : "v1.3.0";
    if (!standalone_dcm) {
      auto ds = api.create(daemon_sets, ns,
                           dcm_daemon_set("default-device-config-manager",
                                          {"app.kubernetes.io/name", "device-config-manager"},
                                          selector_value, dcm_config_name, tag));
      BOOST_REQUIRE_MESSAGE(ds.ok(), (ds.ok() ? "" : ds.error().describe()));
    } else {
      auto st = api.create(kube::resources::config_maps(), ns,
                           config_map_body(ns, dcm_config_json(), "dcm-st"));
      BOOST_REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().describe()));
      auto ds = api.create(daemon_sets, ns,
                           dcm_daemon_set("amdgpu-device-config-manager",
                                          {"app", "amdgpu-device-config-manager"}, selector_value,
                                          "dcm-st", tag));
      BOOST_REQUIRE_MESSAGE(ds.ok(), (ds.ok() ? "" : ds.error().describe()));
    }
    for (std::size_t i = 0; i < faults.size(); ++i) {
      const std::string name = id + "-" + std::to_string(i + 1);
      std::map<std::string, std::optional<std::string>> labels{
          {"simtest", selector_value},
          {"kubernetes.io/hostname", name},
          {"kubernetes.io/os", "linux"},
      };
      if (!faults[i].empty())
        labels[fault_label] = faults[i];
      if (i < apis.size() && !apis[i].empty())
        labels[gpu_api_label] = apis[i];
      auto node = api.create(kube::resources::nodes(), "",
                             R"({"apiVersion":"v1","kind":"Node","metadata":{"name":)" +
                                 quoted(name) + R"(,"labels":)" + json_map(labels) +
                                 R"(},"spec":{"taints":)" + taints(false) + "}}");
      BOOST_REQUIRE_MESSAGE(node.ok(), (node.ok() ? "" : node.error().describe()));
      nodes.push_back(name);
    }
    const char* kubeconfig = std::getenv("KUBECONFIG");
    BOOST_REQUIRE_MESSAGE(kubeconfig != nullptr, "KUBECONFIG is not set");
    const char* outputs = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR");
    log_base = std::string(outputs != nullptr ? outputs : "/tmp") + "/gpu-sim-" + id;
    args = {runfile("tools/simulator/gpu-sim"),
            "--node-selector",
            "simtest=" + selector_value,
            "--dcm-namespace",
            ns,
            "--time-scale",
            time_scale,
            "--kubeconfig",
            kubeconfig,
            "--ready-label",
            std::string(ready_label) + "=true",
            "--dcm-config-lag",
            lag};
    args.insert(args.end(), extra.begin(), extra.end());
    sim = std::make_unique<simulator_process>(args, log_base + ".log");
    // kubelet registers each node, then the plugin reports SPX: 8 GPUs (amd.com/gpu, or
    // amd.com/spx_nps1 under the mixed strategy), ready; on a DRA node the driver publishes
    // its slice instead.
    const bool mixed = std::find(extra.begin(), extra.end(), "mixed") != extra.end();
    const char* resource = mixed ? "amd.com/spx_nps1" : "amd.com/gpu";
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const auto& n = nodes[i];
      if (node_api(i) == "device-plugin")
        BOOST_REQUIRE_MESSAGE(
            eventually([&] { return gpus(n, resource) == 8 && label(n, ready_label); }, 60s),
            "node " << n << " never reported " << resource << "=8\n"
                    << sim->log());
      else
        BOOST_REQUIRE_MESSAGE(
            eventually([&] { return !slices(n).empty() && label(n, ready_label); }, 60s),
            "node " << n << " never published a ResourceSlice\n"
                    << sim->log());
    }
  }

  /// The GPU API of our i-th node: its label, else gpu-sim's flag, else the device plugin.
  std::string node_api(std::size_t i) const {
    if (i < apis.size() && !apis[i].empty())
      return apis[i];
    auto flag = std::find(extra.begin(), extra.end(), "--gpu-api");
    return flag != extra.end() && flag + 1 != extra.end() ? *(flag + 1) : "device-plugin";
  }

  /// Stops gpu-sim and starts a new one with the same flags (the API server's objects stay).
  void restart_simulator() {
    const int status = sim->stop();
    BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    sim = std::make_unique<simulator_process>(args, log_base + "-restarted.log");
  }

  void tear_down() {
    // Pods end while gpu-sim still plays kubelet; then gpu-sim stops; then the nodes go.
    (void)api.remove(kube::resources::namespaces(), "", ns);
    eventually(
        [&] {
          kube::list_options o;
          o.field_selector = "metadata.namespace=" + ns;
          auto pods = api.list(kube::resources::pods(), "", o);
          return pods.ok() && pods.value()["items"].Empty();
        },
        15s);
    if (sim) {
      const int status = sim->stop();
      BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0),
                 "gpu-sim did not exit cleanly on SIGTERM (wait status " << status << ")");
      if (!current_test_passed())
        std::cerr << "---- gpu-sim log (" << id << ") ----\n" << sim->log() << "----\n";
      sim.reset();
    }
    for (const auto& n : nodes) {
      kube::list_options o;
      o.field_selector = "involvedObject.name=" + n;
      if (auto events = api.list(kube::resources::events(), "default", o); events.ok())
        for (const auto& e : events.value()["items"].GetArray())
          (void)api.remove(kube::resources::events(), "default",
                           kube::string_at(e["metadata"], "name"));
      (void)api.remove(kube::resources::nodes(), "", n);
    }
    nodes.clear();
  }

  // -- nodes --

  /// Our own NoSchedule taint keeps other tests' pods off these nodes.
  std::string taints(bool dcm) const {
    std::string out =
        R"([{"key":"simtest","value":)" + quoted(selector_value) + R"(,"effect":"NoSchedule"})";
    if (dcm)
      out += R"(,{"key":"amd-dcm","value":"up","effect":"NoExecute"})";
    return out + "]";
  }

  std::optional<rapidjson::Document> node(const std::string& name) {
    auto got = api.get(kube::resources::nodes(), "", name);
    if (!got)
      return std::nullopt;
    return std::move(got.value());
  }

  std::optional<std::string> label(const std::string& name, const std::string& key) {
    auto n = node(name);
    const auto* v = n ? kube::find_path(*n, {"metadata", "labels", key.c_str()}) : nullptr;
    if (v == nullptr || !v->IsString())
      return std::nullopt;
    return std::string(v->GetString());
  }

  std::string annotation(const std::string& name, const std::string& key) {
    auto n = node(name);
    const auto* v = n ? kube::find_path(*n, {"metadata", "annotations", key.c_str()}) : nullptr;
    return v != nullptr && v->IsString() ? v->GetString() : "";
  }

  /// status.allocatable[resource], -1 if absent.
  long long gpus(const std::string& name, const char* resource = "amd.com/gpu") {
    auto n = node(name);
    const auto* v = n ? kube::find_path(*n, {"status", "allocatable", resource}) : nullptr;
    return v != nullptr && v->IsString() ? std::atoll(v->GetString()) : -1;
  }

  std::string state(const std::string& name) { return label(name, state_label).value_or(""); }

  // -- the DRA driver's ResourceSlices --

  /// The node's slices of gpu.amd.com, by name.
  std::vector<rapidjson::Document> slices(const std::string& name) {
    kube::list_options o;
    o.field_selector = "spec.driver=" + dra_driver + ",spec.nodeName=" + name;
    auto list = api.list(kube::resources::resource_slices(), "", o);
    std::vector<rapidjson::Document> out;
    if (!list)
      return out;
    for (const auto& item : list.value()["items"].GetArray()) {
      rapidjson::Document d;
      d.CopyFrom(item, d.GetAllocator());
      out.push_back(std::move(d));
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
      return kube::string_at(a["metadata"], "name") < kube::string_at(b["metadata"], "name");
    });
    return out;
  }

  /// The node's only slice; fails the test if it has not exactly one.
  rapidjson::Document only_slice(const std::string& name) {
    auto all = slices(name);
    BOOST_REQUIRE_EQUAL(all.size(), 1u);
    return std::move(all.front());
  }

  /// The devices of the node's slices.
  std::size_t devices(const std::string& name) {
    std::size_t n = 0;
    for (const auto& s : slices(name))
      if (const auto* d = kube::find_path(s, {"spec", "devices"}); d != nullptr && d->IsArray())
        n += d->Size();
    return n;
  }

  void patch_node(const std::string& name, const std::string& body) {
    auto r = api.patch(kube::resources::nodes(), "", name, kube::patch_type::merge, body);
    BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().describe()));
  }

  void set_labels(const std::string& name,
                  const std::map<std::string, std::optional<std::string>>& labels) {
    patch_node(name, R"({"metadata":{"labels":)" + json_map(labels) + "}}");
  }

  /// The operator's one patch: the profile, and no stale state.
  void request(const std::string& name, const std::string& profile) {
    set_labels(name, {{profile_label, profile}, {state_label, std::nullopt}});
  }

  void set_dcm_taint(const std::string& name, bool on) {
    patch_node(name, R"({"spec":{"taints":)" + taints(on) + "}}");
  }

  /// Taints the node as the operator does before the profile, and waits for the
  /// plugin to go down.
  void taint_and_wait_for_plugin_down(const std::string& name) {
    set_dcm_taint(name, true);
    BOOST_REQUIRE_MESSAGE(eventually([&] { return !label(name, ready_label); }),
                          "the ready label stayed on tainted node " << name);
  }

  /// Waits for DCM's answer; "" if none came in `timeout`.
  std::string await_state(const std::string& name, std::chrono::milliseconds timeout = 30s) {
    std::string s;
    eventually(
        [&] {
          s = state(name);
          return !s.empty();
        },
        timeout);
    return s;
  }

  /// DCM's Events from the node: reason -> occurrences (aggregated counts summed). As DCM
  /// writes them: about its own pod (in DCM's namespace), from the node as source host.
  std::map<std::string, long long> dcm_events(const std::string& name) {
    kube::list_options o;
    o.field_selector = "involvedObject.kind=Pod,source=" + std::string(dcm_component);
    auto events = api.list(kube::resources::events(), ns, o);
    BOOST_REQUIRE_MESSAGE(events.ok(), (events.ok() ? "" : events.error().describe()));
    std::map<std::string, long long> out;
    for (const auto& e : events.value()["items"].GetArray()) {
      const auto* source = kube::find_path(e, {"source"});
      if (source == nullptr || kube::string_at(*source, "host") != name)
        continue;
      const auto* count = kube::find_path(e, {"count"});
      out[kube::string_at(e, "reason")] += count != nullptr && count->IsInt() ? count->GetInt() : 1;
    }
    return out;
  }

  bool has_event(const std::string& name, const std::string& reason) {
    return eventually([&] { return dcm_events(name).count(reason) > 0; }, 10s);
  }

  // -- the DCM ConfigMap --

  void replace_config(const std::string& config_json) {
    auto r = api.patch(kube::resources::config_maps(), ns, dcm_config_name, kube::patch_type::merge,
                       R"({"data":{"config.json":)" + quoted(config_json) + "}}");
    BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().describe()));
  }

  // -- workloads --

  void await_default_service_account() {
    BOOST_REQUIRE(eventually(
        [&] { return bool(api.get(kube::resources::service_accounts(), ns, "default")); }));
  }

  std::vector<rapidjson::Document> pods_with(const std::string& selector) {
    kube::list_options o;
    o.label_selector = selector;
    auto list = api.list(kube::resources::pods(), ns, o);
    std::vector<rapidjson::Document> out;
    if (!list)
      return out;
    for (const auto& item : list.value()["items"].GetArray()) {
      rapidjson::Document d;
      d.CopyFrom(item, d.GetAllocator());
      out.push_back(std::move(d));
    }
    return out;
  }
};

std::string name_of(const rapidjson::Value& object) {
  return kube::string_at(object["metadata"], "name");
}

std::string node_of(const rapidjson::Value& pod) {
  const auto* n = kube::find_path(pod, {"spec", "nodeName"});
  return n != nullptr && n->IsString() ? n->GetString() : "";
}

bool deleting(const rapidjson::Value& object) {
  return kube::find_path(object, {"metadata", "deletionTimestamp"}) != nullptr;
}

std::string describe(const std::map<std::string, long long>& events) {
  std::string out;
  for (const auto& [reason, count] : events)
    out += reason + "x" + std::to_string(count) + " ";
  return out.empty() ? "none" : out;
}

/// Requests `profile` until DCM answers failure (a success means gpu-sim had not yet
/// seen the ConfigMap change: request another profile), at most a few times.
std::string request_until_failure(sim_cluster& c, const std::string& node) {
  const char* profiles[] = {"qpx-nps1", "cpx-nps1", "spx-nps1", "qpx-nps1", "cpx-nps1"};
  for (const char* p : profiles) {
    c.request(node, p);
    const std::string s = c.await_state(node);
    if (s != "success")
      return s;
    BOOST_TEST_MESSAGE("gpu-sim had not seen the ConfigMap change yet; requesting again");
  }
  return "success";
}

} // namespace

BOOST_AUTO_TEST_SUITE(simulator)

// -- DCM runs and the device plugin --

BOOST_AUTO_TEST_CASE(a_profile_run_under_the_taint_succeeds_and_untainting_brings_cpx_counts,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c{""};
  const auto& n = c.nodes[0];
  // AMD's labeller as the GPU operator runs it: no partition labels.
  BOOST_TEST(!c.label(n, partition_label));
  BOOST_TEST(!c.label(n, "amd.com/gpu.compute-partitioning-supported"));
  c.taint_and_wait_for_plugin_down(n);
  // kubelet marks a stopped plugin's devices unhealthy at once: gpu-sim writes it with the
  // label's removal, in a write of the node's status after the label's.
  BOOST_TEST(eventually([&] { return c.gpus(n) == 0; }), "amd.com/gpu=" << c.gpus(n));

  c.request(n, "cpx-nps4");
  BOOST_REQUIRE_EQUAL(c.await_state(n), "success");
  E2E_CHECK(c.has_event(n, "SuccessfullyPartitioned"), describe(c.dcm_events(n)));
  BOOST_TEST(c.annotation(n, partition_annotation) == "CPX/NPS4");
  BOOST_TEST(!c.label(n, ready_label)); // still tainted: still down
  BOOST_TEST(c.gpus(n) == 0);

  c.set_dcm_taint(n, false);
  E2E_CHECK(
      eventually([&] { return c.gpus(n) == 64 && c.label(n, ready_label).value_or("") == "true"; }),
      "after untaint: amd.com/gpu=" << c.gpus(n));
}

BOOST_AUTO_TEST_CASE(standalone_dcm_reads_the_dcm_st_configmap_its_pods_mount,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c({""}, config_lag, {}, {}, true);
  const auto& n = c.nodes[0];
  // The GPU operator's default ConfigMap lacks the profile: only dcm-st, which standalone
  // DCM's pods mount, may answer.
  BOOST_REQUIRE(c.api.remove(kube::resources::config_maps(), c.ns, dcm_config_name));
  c.taint_and_wait_for_plugin_down(n);
  c.request(n, "cpx-nps4");
  BOOST_REQUIRE_EQUAL(c.await_state(n), "success");
  E2E_CHECK(c.has_event(n, "SuccessfullyPartitioned"), describe(c.dcm_events(n)));
  BOOST_TEST(c.annotation(n, partition_annotation) == "CPX/NPS4");
}

BOOST_AUTO_TEST_CASE(writing_the_same_profile_again_starts_no_second_run,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c{""};
  const auto& n = c.nodes[0];
  c.request(n, "qpx-nps1");
  BOOST_REQUIRE_EQUAL(c.await_state(n), "success");
  BOOST_REQUIRE(c.has_event(n, "SuccessfullyPartitioned"));
  const auto before = c.dcm_events(n);

  // Same value, stale state dropped: DCM sees no change and stays silent for well over
  // several runs' worth of time.
  c.request(n, "qpx-nps1");
  E2E_CHECK(!eventually([&] { return !c.state(n).empty(); }, 4 * memory_run),
            "a state label came back: " << c.state(n));
  E2E_CHECK(c.dcm_events(n) == before, describe(c.dcm_events(n)));

  // Removing the label and setting the same value again is a new request.
  c.set_labels(n, {{profile_label, std::nullopt}});
  std::this_thread::sleep_for(1s); // let gpu-sim see the removal on its own
  c.request(n, "qpx-nps1");
  BOOST_TEST(c.await_state(n) == "success");
  E2E_CHECK(c.has_event(n, "RequestedPartitionConfigAlreadyExists"), describe(c.dcm_events(n)));
}

// -- DCM's validation --

BOOST_AUTO_TEST_CASE(an_unknown_profile_fails_with_NonExistentProfile,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c{""};
  const auto& n = c.nodes[0];
  c.request(n, "no-such-profile");
  BOOST_TEST(c.await_state(n) == "failure");
  E2E_CHECK(c.has_event(n, "NonExistentProfile"), describe(c.dcm_events(n)));
  BOOST_TEST(c.annotation(n, partition_annotation) == "SPX/NPS1");
}

BOOST_AUTO_TEST_CASE(a_profile_with_bad_counts_fails_with_InvalidProfileInfo,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c{""};
  const auto& n = c.nodes[0];
  c.request(n, "bad-count");
  BOOST_TEST(c.await_state(n) == "failure");
  E2E_CHECK(c.has_event(n, "InvalidProfileInfo"), describe(c.dcm_events(n)));
  BOOST_TEST(c.annotation(n, partition_annotation) == "SPX/NPS1");
}

BOOST_AUTO_TEST_CASE(a_config_map_made_invalid_fails_runs_with_InvalidJSONInConfigMap,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c{""};
  const auto& n = c.nodes[0];
  c.request(n, "spx-nps1"); // the config is read and good
  BOOST_REQUIRE_EQUAL(c.await_state(n), "success");
  c.replace_config(R"({"gpu-config-profiles": {"cpx-nps4": )");
  BOOST_TEST(request_until_failure(c, n) == "failure");
  E2E_CHECK(c.has_event(n, "InvalidJSONInConfigMap"), describe(c.dcm_events(n)));
}

BOOST_AUTO_TEST_CASE(a_deleted_config_map_fails_runs_with_ConfigMapNotPresent,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c{""};
  const auto& n = c.nodes[0];
  c.request(n, "spx-nps1");
  BOOST_REQUIRE_EQUAL(c.await_state(n), "success");
  BOOST_REQUIRE(c.api.remove(kube::resources::config_maps(), c.ns, dcm_config_name));
  BOOST_TEST(request_until_failure(c, n) == "failure");
  E2E_CHECK(c.has_event(n, "ConfigMapNotPresent"), describe(c.dcm_events(n)));
}

// -- injected faults --

BOOST_AUTO_TEST_CASE(dcm_failure_fails_the_run_with_AMDSMIAPIFailure,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c{"dcm-failure"};
  const auto& n = c.nodes[0];
  c.request(n, "cpx-nps4");
  BOOST_TEST(c.await_state(n) == "failure");
  E2E_CHECK(c.has_event(n, "AMDSMIAPIFailure"), describe(c.dcm_events(n)));
  BOOST_TEST(c.annotation(n, partition_annotation) == "SPX/NPS1");
  // amd-smi's init failure passes no error: DCM's Event is Normal.
  kube::list_options o;
  o.field_selector = "reason=AMDSMIAPIFailure";
  auto events = c.api.list(kube::resources::events(), c.ns, o);
  BOOST_REQUIRE(events.ok());
  BOOST_REQUIRE(!events.value()["items"].Empty());
  for (const auto& e : events.value()["items"].GetArray())
    BOOST_TEST(kube::string_at(e, "type") == "Normal");
}

BOOST_AUTO_TEST_CASE(dcm_stuck_never_writes_a_state_label_while_a_healthy_node_succeeds,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c{"dcm-stuck", ""};
  const auto& stuck = c.nodes[0];
  const auto& healthy = c.nodes[1];
  c.request(stuck, "cpx-nps4");
  c.request(healthy, "cpx-nps4");
  BOOST_REQUIRE_EQUAL(c.await_state(healthy), "success");
  E2E_CHECK(!eventually([&] { return !c.state(stuck).empty(); }, 3 * memory_run),
            "stuck node answered " << c.state(stuck));
  E2E_CHECK(c.dcm_events(stuck).empty(), describe(c.dcm_events(stuck)));
}

BOOST_AUTO_TEST_CASE(wrong_count_reports_63_instead_of_64_for_cpx,
                     *boost::unit_test::timeout(150)) {
  // With the labeller's opt-in partition labels.
  sim_cluster c({"wrong-count"}, config_lag, {"--labeller-partition-labels"});
  const auto& n = c.nodes[0];
  c.taint_and_wait_for_plugin_down(n);
  c.request(n, "cpx-nps4");
  BOOST_REQUIRE_EQUAL(c.await_state(n), "success");
  c.set_dcm_taint(n, false);
  // Labels and resources are separate writes: wait for both.
  // (allocatable is 0 until the plugin's status write, after its labels)
  BOOST_TEST(eventually([&] {
    return c.label(n, ready_label).value_or("") == "true" && c.gpus(n) != 8 && c.gpus(n) != 0;
  }));
  BOOST_TEST(c.gpus(n) == 63);
  BOOST_TEST(c.label(n, partition_label).value_or("") == "cpx_nps4");
}

BOOST_AUTO_TEST_CASE(slow_plugin_comes_back_after_a_normal_plugin_untainted_later,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c{"slow-plugin", ""};
  const auto& slow = c.nodes[0];
  const auto& normal = c.nodes[1];
  for (const auto& n : c.nodes) {
    c.taint_and_wait_for_plugin_down(n);
    c.request(n, "cpx-nps4");
  }
  for (const auto& n : c.nodes)
    BOOST_REQUIRE_EQUAL(c.await_state(n), "success");
  // The slow one is untainted first, and takes ten times a normal plugin's restart
  // (1 s instead of 0.1 s). Load on the machine only lengthens either, so the test bounds
  // the slow one from below rather than racing the two.
  const auto untainted = std::chrono::steady_clock::now();
  c.set_dcm_taint(slow, false);
  c.set_dcm_taint(normal, false);
  BOOST_REQUIRE(eventually([&] { return c.gpus(slow) == 64 && c.label(slow, ready_label); }));
  const auto slow_took = std::chrono::steady_clock::now() - untainted;
  const auto slow_ms = std::chrono::duration_cast<std::chrono::milliseconds>(slow_took).count();
  BOOST_TEST(slow_ms >= 900,
             "the slow plugin was back after " << slow_ms << " ms, as early as a normal one");
  BOOST_TEST(eventually([&] { return c.gpus(normal) == 64 && c.label(normal, ready_label); }));
}

// DCM reads a mounted file that kubelet refreshes a minute after a change: a profile
// added to the ConfigMap is unknown to DCM until then, and its arrival runs the label
// again, unasked.
BOOST_AUTO_TEST_CASE(a_profile_added_to_the_config_map_reaches_dcm_only_after_the_lag,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c({""}, "100"); // 100 s at time scale 0.02: 2 s
  const auto& n = c.nodes[0];
  c.replace_config(
      R"({"gpu-config-profiles":{"late-cpx":{"skippedGPUs":{"ids":[]},"profiles":[)"
      R"({"computePartition":"CPX","memoryPartition":"NPS1","numGPUsAssigned":8}]}}})");
  c.request(n, "late-cpx");
  BOOST_TEST(c.await_state(n) == "failure");
  E2E_CHECK(c.has_event(n, "NonExistentProfile"), describe(c.dcm_events(n)));
  E2E_CHECK(eventually([&] { return c.state(n) == "success"; }, 20s),
            "state " << c.state(n) << ", events " << describe(c.dcm_events(n)));
  BOOST_TEST(c.annotation(n, partition_annotation) == "CPX/NPS1");
}

BOOST_AUTO_TEST_CASE(a_node_whose_dcm_pod_never_starts_gets_no_answer,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c{"dcm-missing", ""};
  const auto& missing = c.nodes[0];
  const auto& healthy = c.nodes[1];
  c.request(missing, "cpx-nps1");
  c.request(healthy, "cpx-nps1");
  BOOST_TEST(c.await_state(healthy) == "success");
  std::this_thread::sleep_for(2s);
  BOOST_TEST(c.state(missing).empty());
  BOOST_TEST(c.dcm_events(missing).empty());
}

// Every change of DCM's file runs the label again on every node that has one: a no-op
// run answers with a Warning; a node without a label does not run.
BOOST_AUTO_TEST_CASE(
    a_config_change_runs_every_labelled_node_again_with_a_warning_when_nothing_changes,
    *boost::unit_test::timeout(150)) {
  sim_cluster c{"", ""};
  const auto& labelled = c.nodes[0];
  const auto& bare = c.nodes[1];
  c.request(labelled, "spx-nps1");
  BOOST_REQUIRE_EQUAL(c.await_state(labelled), "success");
  BOOST_REQUIRE(c.has_event(labelled, "RequestedPartitionConfigAlreadyExists"));
  const auto before = c.dcm_events(labelled).at("RequestedPartitionConfigAlreadyExists");
  // Any change of the file: a profile added.
  c.replace_config(R"({"gpu-config-profiles":{"spx-nps1":{"profiles":[{"computePartition":)"
                   R"("SPX","memoryPartition":"NPS1","numGPUsAssigned":8}]},"extra":{}}})");
  E2E_CHECK(
      eventually(
          [&] { return c.dcm_events(labelled)["RequestedPartitionConfigAlreadyExists"] > before; },
          20s),
      describe(c.dcm_events(labelled)));
  BOOST_TEST(c.dcm_events(bare).empty(), describe(c.dcm_events(bare)));
}

// DCM's Events are about its pod on the node, with its PartitionStatus as JSON.
BOOST_AUTO_TEST_CASE(dcms_events_are_about_its_pod_and_name_the_profile_they_served,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c{""};
  const auto& n = c.nodes[0];
  // The node's clock is an hour behind: DCM stamps its Events with it.
  c.set_labels(n, {{"sim.gpu-partitioner.io/clock-skew-seconds", "n3600"}});
  c.request(n, "cpx-nps1");
  BOOST_REQUIRE_EQUAL(c.await_state(n), "success");
  BOOST_REQUIRE(c.has_event(n, "SuccessfullyPartitioned"));
  kube::list_options o;
  o.field_selector = "reason=SuccessfullyPartitioned";
  auto events = c.api.list(kube::resources::events(), c.ns, o);
  BOOST_REQUIRE(events.ok());
  bool found = false;
  for (const auto& e : events.value()["items"].GetArray()) {
    if (kube::string_at(e["source"], "host") != n)
      continue;
    found = true;
    // A new object per Event, named after its reason; no reportingComponent.
    BOOST_TEST(kube::string_at(e["metadata"], "generateName") == "SuccessfullyPartitioned");
    BOOST_TEST(kube::string_at(e, "reportingComponent").empty());
    BOOST_TEST(kube::string_at(e["source"], "component") == dcm_component);
    std::tm tm{};
    BOOST_REQUIRE(::strptime(kube::string_at(e, "lastTimestamp").c_str(), "%Y-%m-%dT%H:%M:%SZ",
                             &tm) != nullptr);
    const auto skew = ::timegm(&tm) - std::time(nullptr);
    BOOST_TEST((skew < -3400 && skew > -3800), "lastTimestamp off by " << skew << " s");
    BOOST_TEST(kube::string_at(e["involvedObject"], "kind") == "Pod");
    BOOST_TEST(kube::string_at(e["involvedObject"], "namespace") == c.ns);
    rapidjson::Document m;
    m.Parse(kube::string_at(e, "message").c_str());
    BOOST_REQUIRE(!m.HasParseError());
    BOOST_TEST(kube::string_at(m, "SelectedProfile") == "cpx-nps1");
    BOOST_TEST(kube::string_at(m, "FinalStatus") == "Success");
    BOOST_TEST(m["GPUStatus"].Size() == 8u);
  }
  BOOST_TEST(found);
}

BOOST_AUTO_TEST_CASE(state_lost_writes_the_event_but_no_state, *boost::unit_test::timeout(150)) {
  sim_cluster c{"state-lost"};
  const auto& n = c.nodes[0];
  c.request(n, "cpx-nps1");
  E2E_CHECK(c.has_event(n, "SuccessfullyPartitioned"), describe(c.dcm_events(n)));
  BOOST_TEST(c.state(n).empty());
}

BOOST_AUTO_TEST_CASE(gpu_held_is_busy_and_retried, *boost::unit_test::timeout(150)) {
  sim_cluster c{"gpu-held"};
  const auto& n = c.nodes[0];
  c.request(n, "cpx-nps1");
  BOOST_TEST(c.await_state(n) == "failure");
  E2E_CHECK(c.has_event(n, "PartitionRetrying"), describe(c.dcm_events(n)));
}

// Newer DCM (1.4 and 1.5 alike) writes failure, not an in-progress state no source has.
BOOST_AUTO_TEST_CASE(dcm_1_4_says_failure_while_busy_gpus_are_retried,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c({"gpu-held"}, config_lag, {"--dcm-version", "1.4"});
  const auto& n = c.nodes[0];
  c.request(n, "cpx-nps1");
  BOOST_TEST(c.await_state(n) == "failure");
}

BOOST_AUTO_TEST_CASE(a_crash_looping_plugin_reports_nothing_after_the_untaint,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c{"plugin-crashloop", ""};
  const auto& looping = c.nodes[0];
  const auto& healthy = c.nodes[1];
  for (const auto& n : {looping, healthy})
    c.taint_and_wait_for_plugin_down(n);
  for (const auto& n : {looping, healthy})
    c.set_dcm_taint(n, false);
  BOOST_REQUIRE(eventually([&] { return c.gpus(healthy) == 8; }));
  std::this_thread::sleep_for(1s);
  BOOST_TEST(c.gpus(looping) == 0);
}

BOOST_AUTO_TEST_CASE(the_mixed_strategy_names_resources_by_style, *boost::unit_test::timeout(150)) {
  sim_cluster c({""}, config_lag, {"--resource-strategy", "mixed"});
  const auto& n = c.nodes[0];
  auto style = [&](const char* name) { return c.gpus(n, name); };
  BOOST_REQUIRE(eventually([&] { return style("amd.com/spx_nps1") == 8; }));
  c.taint_and_wait_for_plugin_down(n);
  c.request(n, "cpx-nps4");
  BOOST_REQUIRE_EQUAL(c.await_state(n), "success");
  c.set_dcm_taint(n, false);
  E2E_CHECK(eventually([&] { return style("amd.com/cpx_nps4") == 64; }),
            "amd.com/cpx_nps4=" << style("amd.com/cpx_nps4"));
  BOOST_TEST(style("amd.com/spx_nps1") == 0);
}

// kubelet's heartbeats on the real control plane: each node's Lease in kube-node-lease,
// held by the node, owned by it and renewed. When the kubelet stops, the node-lifecycle
// controller marks the node Unknown after its grace period and taints it unreachable
// (NoSchedule at once, NoExecute through its eviction queue: the second node, Ready, keeps
// the zone out of full disruption, where that queue stops). When the kubelet is back, the
// node is Ready again and the taints go.
BOOST_AUTO_TEST_CASE(a_stopped_kubelet_makes_the_node_unreachable,
                     *boost::unit_test::timeout(240)) {
  sim_cluster c{"", ""};
  const auto& n = c.nodes[0];
  auto ready = [&](const std::string& name) {
    auto v = c.node(name);
    const auto* conds = v ? kube::find_path(*v, {"status", "conditions"}) : nullptr;
    if (conds != nullptr && conds->IsArray())
      for (const auto& cond : conds->GetArray())
        if (kube::string_at(cond, "type") == "Ready")
          return kube::string_at(cond, "status");
    return std::string();
  };
  auto taints = [&] {
    std::set<std::string> out;
    auto v = c.node(n);
    const auto* list = v ? kube::find_path(*v, {"spec", "taints"}) : nullptr;
    if (list != nullptr && list->IsArray())
      for (const auto& t : list->GetArray())
        out.insert(kube::string_at(t, "key") + ":" + kube::string_at(t, "effect"));
    return out;
  };
  auto shown = [&] {
    std::string out;
    for (const auto& t : taints())
      out += (out.empty() ? "" : ", ") + t;
    return out;
  };
  auto lease = [&] { return c.api.get(kube::resources::leases(), "kube-node-lease", n); };
  auto renewed_at = [&] {
    auto l = lease();
    return l ? kube::string_at(l.value()["spec"], "renewTime") : std::string();
  };
  E2E_REQUIRE(eventually([&] { return lease().ok(); }, 30s), "no Lease for " << n);
  {
    auto l = lease();
    BOOST_REQUIRE(l);
    const auto& spec = l.value()["spec"];
    BOOST_TEST(kube::string_at(spec, "holderIdentity") == n);
    BOOST_TEST(spec["leaseDurationSeconds"].GetInt64() == 40);
    const auto* owners = kube::find_path(l.value(), {"metadata", "ownerReferences"});
    BOOST_REQUIRE((owners != nullptr && owners->IsArray() && owners->Size() == 1u));
    const auto& owner = (*owners)[0];
    BOOST_TEST(kube::string_at(owner, "kind") == "Node");
    BOOST_TEST(kube::string_at(owner, "name") == n);
    auto node = c.node(n);
    BOOST_REQUIRE(node);
    BOOST_TEST(kube::string_at(owner, "uid") == kube::string_at((*node)["metadata"], "uid"));
  }
  const auto first = renewed_at();
  E2E_CHECK(eventually([&] { return renewed_at() != first; }, 15s),
            "the Lease was not renewed within 15 s: " << first);
  BOOST_TEST(ready(n) == "True");
  BOOST_TEST(!taints().count("node.kubernetes.io/not-ready:NoSchedule"),
             "TaintNodesByCondition's taint, lifted once the node reported Ready");

  c.set_labels(n, {{fault_label, "kubelet-stopped"}});
  const auto stopped = std::chrono::steady_clock::now();
  const auto unreachable = [&] {
    const auto t = taints();
    return ready(n) == "Unknown" && t.count("node.kubernetes.io/unreachable:NoSchedule") &&
           t.count("node.kubernetes.io/unreachable:NoExecute");
  };
  E2E_CHECK(eventually(unreachable, 90s), "Ready=" << ready(n) << ", taints: " << shown() << "\n"
                                                   << c.sim->log());
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();
  BOOST_TEST(took > 20.0, "Unknown only once the grace period has passed: " << took << " s");
  BOOST_TEST(ready(c.nodes[1]) == "True", "the other node renews on");

  c.set_labels(n, {{fault_label, std::nullopt}});
  E2E_CHECK(eventually(
                [&] {
                  const auto t = taints();
                  return ready(n) == "True" &&
                         !t.count("node.kubernetes.io/unreachable:NoSchedule") &&
                         !t.count("node.kubernetes.io/unreachable:NoExecute");
                },
                60s),
            "Ready=" << ready(n) << ", taints: " << shown());
  E2E_NOTE("a stopped kubelet's node Unknown and tainted unreachable " << took << " s after");
}

// -- GPU pods --
// -- GPU pods --

BOOST_AUTO_TEST_CASE(gpu_pods_on_the_node_fail_the_run_until_they_are_gone,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c{""};
  const auto& n = c.nodes[0];
  c.await_default_service_account();
  const std::string pod =
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"gpu-user","labels":{"app":"gpu-user"}},)"
      R"("spec":{"nodeName":)" +
      quoted(n) +
      R"(,"automountServiceAccountToken":false,"terminationGracePeriodSeconds":5,)"
      R"("containers":[{"name":"c","image":"rocm/pytorch:sim",)"
      R"("resources":{"requests":{"amd.com/gpu":"1"},"limits":{"amd.com/gpu":"1"}}}]}})";
  auto created = c.api.create(kube::resources::pods(), c.ns, pod);
  BOOST_REQUIRE_MESSAGE(created.ok(), (created.ok() ? "" : created.error().describe()));
  BOOST_REQUIRE(eventually([&] {
    auto p = c.api.get(kube::resources::pods(), c.ns, "gpu-user");
    return p.ok() && pod_ready(p.value());
  }));

  c.request(n, "qpx-nps1");
  BOOST_TEST(c.await_state(n) == "failure");
  // Busy GPUs are retried: failure now, PartitionRetrying, then success once free.
  E2E_CHECK(c.has_event(n, "PartitionRetrying"), describe(c.dcm_events(n)));
  // Busy is per GPU: the held GPU 0 stays, the idle ones change.
  BOOST_TEST(c.annotation(n, partition_annotation) ==
             "SPX/NPS1,QPX/NPS1,QPX/NPS1,QPX/NPS1,QPX/NPS1,QPX/NPS1,QPX/NPS1,QPX/NPS1");

  // DCM retries; once the pod has terminated, a retry succeeds.
  BOOST_REQUIRE(c.api.remove(kube::resources::pods(), c.ns, "gpu-user"));
  E2E_CHECK(eventually([&] { return c.state(n) == "success"; }),
            "state " << c.state(n) << ", events " << describe(c.dcm_events(n)));
  BOOST_TEST(c.annotation(n, partition_annotation) == "QPX/NPS1");
}

// -- workloads with the real scheduler --

BOOST_AUTO_TEST_CASE(a_deployment_runs_and_an_evicted_pod_moves_to_another_schedulable_node,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c{"", "", ""};
  c.await_default_service_account();
  const std::string deployment =
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"gpu-work"},)"
      R"("spec":{"replicas":2,"selector":{"matchLabels":{"app":"gpu-work"}},)"
      R"("template":{"metadata":{"labels":{"app":"gpu-work"}},"spec":{)"
      R"("automountServiceAccountToken":false,"terminationGracePeriodSeconds":5,)"
      R"("nodeSelector":{"simtest":)" +
      quoted(c.selector_value) +
      R"(},"tolerations":[{"key":"simtest","operator":"Equal","value":)" +
      quoted(c.selector_value) +
      R"(,"effect":"NoSchedule"}],)"
      R"("containers":[{"name":"worker","image":"rocm/pytorch:sim",)"
      R"("resources":{"requests":{"amd.com/gpu":"1"},"limits":{"amd.com/gpu":"1"}}}]}}}})";
  auto created = c.api.create(deployments, c.ns, deployment);
  BOOST_REQUIRE_MESSAGE(created.ok(), (created.ok() ? "" : created.error().describe()));

  auto ready_pods = [&] {
    std::vector<rapidjson::Document> out;
    for (auto& p : c.pods_with("app=gpu-work"))
      if (!deleting(p) && pod_ready(p))
        out.push_back(std::move(p));
    return out;
  };
  auto ready_replicas = [&] {
    auto d = c.api.get(deployments, c.ns, "gpu-work");
    const auto* r = d.ok() ? kube::find_path(d.value(), {"status", "readyReplicas"}) : nullptr;
    return r != nullptr && r->IsInt() ? r->GetInt() : 0;
  };
  BOOST_REQUIRE_MESSAGE(eventually([&] { return ready_pods().size() == 2u; }, 60s),
                        "the Deployment's pods did not become Running and Ready");
  BOOST_TEST(eventually([&] { return ready_replicas() == 2; }));
  const std::set<std::string> ours(c.nodes.begin(), c.nodes.end());
  std::set<std::string> first_pods;
  for (const auto& p : ready_pods()) {
    BOOST_TEST(ours.count(node_of(p)) == 1u, "pod scheduled on " << node_of(p));
    first_pods.insert(name_of(p));
  }

  // Cordon the node of one pod and evict that pod: its replacement goes elsewhere.
  const auto victims = ready_pods();
  BOOST_REQUIRE(!victims.empty());
  const std::string victim = name_of(victims[0]);
  const std::string cordoned = node_of(victims[0]);
  c.patch_node(cordoned, R"({"spec":{"unschedulable":true}})");
  auto evicted = c.api.evict(c.ns, victim);
  BOOST_REQUIRE_MESSAGE(evicted.ok(), (evicted.ok() ? "" : evicted.error().describe()));
  BOOST_REQUIRE((evicted->outcome == kube::eviction_outcome::evicted));

  std::string replacement, placed_on;
  BOOST_TEST(eventually(
                 [&] {
                   for (const auto& p : ready_pods())
                     if (!first_pods.count(name_of(p))) {
                       replacement = name_of(p);
                       placed_on = node_of(p);
                       return true;
                     }
                   return false;
                 },
                 60s),
             "no replacement pod became Ready");
  BOOST_TEST(!replacement.empty());
  BOOST_TEST(placed_on != cordoned);
  BOOST_TEST(ours.count(placed_on) == 1u, "replacement scheduled on " << placed_on);
  // The evicted pod finished terminating (gpu-sim's kubelet) and the Deployment is whole.
  BOOST_TEST(eventually([&] {
    return !c.api.get(kube::resources::pods(), c.ns, victim).ok() && ready_replicas() == 2;
  }));
}

// -- AMD's DRA driver (gpu.amd.com) --

namespace {

/// A device of a slice by name; nullptr if it has none of that name.
const rapidjson::Value* device_named(const rapidjson::Value& slice, const std::string& name) {
  const auto* devices = kube::find_path(slice, {"spec", "devices"});
  if (devices != nullptr && devices->IsArray())
    for (const auto& d : devices->GetArray())
      if (kube::string_at(d, "name") == name)
        return &d;
  return nullptr;
}

/// attributes[name][kind] as text ("" if absent): kind is string, version or int.
std::string attribute(const rapidjson::Value& device, const char* name, const char* kind) {
  const auto* v = kube::find_path(device, {"attributes", name, kind});
  if (v == nullptr)
    return "";
  if (v->IsInt64())
    return std::to_string(v->GetInt64());
  return v->IsString() ? v->GetString() : "";
}

std::string capacity(const rapidjson::Value& device, const char* name) {
  const auto* v = kube::find_path(device, {"capacity", name, "value"});
  return v != nullptr && v->IsString() ? v->GetString() : "";
}

long long pool_field(const rapidjson::Value& slice, const char* field) {
  const auto* v = kube::find_path(slice, {"spec", "pool", field});
  return v != nullptr && v->IsInt64() ? v->GetInt64() : -1;
}

std::string slice_name(const rapidjson::Value& slice) {
  return kube::string_at(slice["metadata"], "name");
}

std::string slice_version(const rapidjson::Value& slice) {
  return kube::string_at(slice["metadata"], "resourceVersion");
}

} // namespace

BOOST_AUTO_TEST_CASE(a_dra_node_publishes_one_slice_with_the_drivers_attributes_and_no_amd_gpu,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c({"", ""}, config_lag, {}, {"dra", "device-plugin"});
  const auto& dra = c.nodes[0];
  const auto& plugin = c.nodes[1];
  BOOST_TEST(c.gpus(dra) == -1); // no device plugin there: no amd.com/gpu at all
  BOOST_TEST(c.gpus(plugin) == 8);
  BOOST_TEST(c.slices(plugin).empty());

  const auto slice = c.only_slice(dra);
  const auto& spec = slice["spec"];
  BOOST_TEST(kube::string_at(spec, "driver") == dra_driver);
  BOOST_TEST(kube::string_at(spec, "nodeName") == dra);
  BOOST_TEST(kube::string_at(spec["pool"], "name") == dra);
  BOOST_TEST(pool_field(slice, "generation") == 1);
  BOOST_TEST(pool_field(slice, "resourceSliceCount") == 1);
  BOOST_TEST(kube::string_at(slice["metadata"], "generateName") == dra + "-gpu.amd.com-");
  const auto* owner = kube::find_path(slice, {"metadata", "ownerReferences"});
  BOOST_REQUIRE(owner != nullptr && owner->IsArray() && owner->Size() == 1u);
  BOOST_TEST(kube::string_at((*owner)[0], "kind") == "Node");
  BOOST_TEST(kube::string_at((*owner)[0], "name") == dra);
  auto node = c.node(dra);
  BOOST_REQUIRE(node.has_value());
  BOOST_TEST(kube::string_at((*owner)[0], "uid") == kube::string_at((*node)["metadata"], "uid"));
  BOOST_TEST(spec["devices"].Size() == 8u);

  const auto* gpu = device_named(slice, "gpu-1-128");
  BOOST_REQUIRE(gpu != nullptr);
  BOOST_TEST(attribute(*gpu, "type", "string") == "amdgpu");
  BOOST_TEST(attribute(*gpu, "pciAddr", "string") == "0000:0c:00.0");
  BOOST_TEST(attribute(*gpu, "cardIndex", "int") == "1");
  BOOST_TEST(attribute(*gpu, "renderIndex", "int") == "128");
  BOOST_TEST(attribute(*gpu, "deviceID", "string") == "0x74a1");
  BOOST_TEST(attribute(*gpu, "family", "string") == "AI");
  BOOST_TEST(attribute(*gpu, "productName", "string") == "AMD_Instinct_MI300X_OAM");
  BOOST_TEST(attribute(*gpu, "driverVersion", "version") == "6.10.5");
  BOOST_TEST(!attribute(*gpu, "driverSrcVersion", "string").empty());
  BOOST_TEST(attribute(*gpu, "partitionProfile", "string") == "spx_nps1");
  BOOST_TEST(capacity(*gpu, "memory") == "192Gi");
  BOOST_TEST(capacity(*gpu, "computeUnits") == "304");
  BOOST_TEST(capacity(*gpu, "simdUnits") == "1216");
  BOOST_TEST(device_named(slice, "gpu-8-135") != nullptr);

  // A restarted gpu-sim is not a restarted driver: it adopts the slice and writes nothing.
  c.restart_simulator();
  std::this_thread::sleep_for(2s);
  const auto after = c.only_slice(dra);
  BOOST_TEST(slice_name(after) == slice_name(slice));
  BOOST_TEST(slice_version(after) == slice_version(slice));
  BOOST_TEST(c.gpus(plugin) == 8);
}

BOOST_AUTO_TEST_CASE(a_repartition_under_the_taint_publishes_the_new_partitions,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c({""}, config_lag, {"--gpu-api", "dra"});
  const auto& n = c.nodes[0];
  const auto first = slice_name(c.only_slice(n));
  c.taint_and_wait_for_plugin_down(n);
  c.request(n, "cpx-nps4");
  BOOST_REQUIRE_EQUAL(c.await_state(n), "success");
  c.set_dcm_taint(n, false);
  E2E_CHECK(eventually([&] { return c.devices(n) == 64u; }), "devices " << c.devices(n));
  const auto slice = c.only_slice(n);
  // The run took longer than kubelet's wipe delay: the driver came back to no slice.
  BOOST_TEST(slice_name(slice) != first);
  BOOST_TEST(pool_field(slice, "generation") == 1);
  const auto* part = device_named(slice, "gpu-1-128");
  BOOST_REQUIRE(part != nullptr);
  BOOST_TEST(attribute(*part, "type", "string") == "amdgpu-partition");
  BOOST_TEST(attribute(*part, "partitionProfile", "string") == "cpx_nps4");
  BOOST_TEST(attribute(*part, "parentPciAddr", "string") == "0000:0c:00.0");
  BOOST_TEST(attribute(*part, "parentDeviceID", "string") == "0x74a1");
  BOOST_TEST(attribute(*part, "pciAddr", "string").empty());
  BOOST_TEST(capacity(*part, "memory") == "24Gi");
  BOOST_TEST(capacity(*part, "computeUnits") == "38");
  BOOST_TEST(capacity(*part, "simdUnits") == "152");
  BOOST_TEST(device_named(slice, "gpu-64-191") != nullptr);
  BOOST_TEST(c.gpus(n) == -1);
}

// The publishing helper updates a one-slice pool in place: consumers see new devices and a
// new resourceVersion under the same pool generation.
BOOST_AUTO_TEST_CASE(
    a_driver_back_before_the_wipe_updates_its_slice_in_place_keeping_the_generation,
    *boost::unit_test::timeout(150)) {
  // At time scale 0.5: kubelet wipes 15 s after the driver went; a compute change without
  // host services takes 5 s, the plugin's restart 2.5 s.
  sim_cluster c({""}, config_lag, {"--gpu-api", "dra", "--time-scale", "0.5"});
  const auto& n = c.nodes[0];
  c.replace_config(R"({"gpu-config-profiles":{"cpx-nps1":{"profiles":[{"computePartition":)"
                   R"("CPX","memoryPartition":"NPS1","numGPUsAssigned":8}]}}})");
  std::this_thread::sleep_for(1s); // gpu-sim has read it (no lag here)
  const auto before = c.only_slice(n);
  const auto tainted = std::chrono::steady_clock::now();
  c.taint_and_wait_for_plugin_down(n);
  c.request(n, "cpx-nps1");
  BOOST_REQUIRE_EQUAL(c.await_state(n), "success");
  c.set_dcm_taint(n, false);
  E2E_CHECK(eventually([&] { return c.devices(n) == 64u; }), "devices " << c.devices(n));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - tainted)
                        .count();
  BOOST_TEST_REQUIRE(took < 15000, "the driver was down " << took << " ms: past the wipe");
  const auto after = c.only_slice(n);
  BOOST_TEST(slice_name(after) == slice_name(before));
  BOOST_TEST(pool_field(after, "generation") == pool_field(before, "generation"));
  BOOST_TEST(slice_version(after) != slice_version(before));
  BOOST_TEST(attribute(after["spec"]["devices"][0], "partitionProfile", "string") == "cpx_nps1");
}

BOOST_AUTO_TEST_CASE(kubelet_wipes_the_slice_30_s_scaled_after_the_taint_takes_the_driver_down,
                     *boost::unit_test::timeout(150)) {
  // At time scale 0.1 the wipe comes 3 s after the driver's plugin went.
  sim_cluster c({""}, config_lag, {"--gpu-api", "dra", "--time-scale", "0.1"});
  const auto& n = c.nodes[0];
  const auto first = slice_name(c.only_slice(n));
  const auto tainted = std::chrono::steady_clock::now();
  c.taint_and_wait_for_plugin_down(n);
  std::this_thread::sleep_for(1500ms);
  BOOST_TEST(c.slices(n).size() == 1u); // kubelet waits for the driver to come back
  BOOST_REQUIRE_MESSAGE(eventually([&] { return c.slices(n).empty(); }, 20s),
                        "the slice was never wiped\n"
                            << c.sim->log());
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - tainted)
                        .count();
  BOOST_TEST(took >= 3000, "wiped " << took << " ms after the taint");
  // Back with the untaint: a new slice, its pool starting again at generation 1.
  c.set_dcm_taint(n, false);
  BOOST_REQUIRE(eventually([&] { return c.slices(n).size() == 1u; }));
  const auto again = c.only_slice(n);
  BOOST_TEST(slice_name(again) != first);
  BOOST_TEST(pool_field(again, "generation") == 1);
}

// The real kube-scheduler allocates the claim from the node's slice and reserves it before
// binding; gpu-sim's kubelet starts the pod, and DCM finds its GPU busy until it is gone.
BOOST_AUTO_TEST_CASE(a_pod_claiming_a_gpu_is_scheduled_started_and_keeps_dcm_busy,
                     *boost::unit_test::timeout(150)) {
  sim_cluster c({""}, config_lag, {"--gpu-api", "dra"});
  const auto& n = c.nodes[0];
  c.await_default_service_account();
  // AMD's chart's DeviceClass; cluster-wide, so other cases may have made it already (and
  // may still use it: it stays).
  auto made = c.api.create(
      kube::resources::device_classes(), "",
      R"({"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":)" +
          quoted(dra_driver) + R"(},"spec":{"selectors":[{"cel":{"expression":)" +
          quoted("device.driver == '" + dra_driver + "'") + "}}]}}");
  BOOST_REQUIRE_MESSAGE(made.ok() || made.error().kind == kube::error_kind::already_exists,
                        (made.ok() ? "" : made.error().describe()));
  auto tmpl =
      c.api.create(claim_templates, c.ns,
                   R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate",)"
                   R"("metadata":{"name":"one-amd-gpu"},"spec":{"spec":{"devices":{"requests":[)"
                   R"({"name":"gpu","exactly":{"deviceClassName":)" +
                       quoted(dra_driver) + R"(,"count":1}}]}}}})");
  BOOST_REQUIRE_MESSAGE(tmpl.ok(), (tmpl.ok() ? "" : tmpl.error().describe()));
  const std::string pod =
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"gpu-claimer"},"spec":{)"
      R"("automountServiceAccountToken":false,"terminationGracePeriodSeconds":5,)"
      R"("nodeSelector":{"simtest":)" +
      quoted(c.selector_value) +
      R"(},"tolerations":[{"key":"simtest","operator":"Equal","value":)" +
      quoted(c.selector_value) +
      R"(,"effect":"NoSchedule"}],)"
      R"("resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"one-amd-gpu"}],)"
      R"("containers":[{"name":"c","image":"rocm/pytorch:sim",)"
      R"("resources":{"claims":[{"name":"gpu"}]}}]}})";
  auto created = c.api.create(kube::resources::pods(), c.ns, pod);
  BOOST_REQUIRE_MESSAGE(created.ok(), (created.ok() ? "" : created.error().describe()));
  std::string uid;
  BOOST_REQUIRE_MESSAGE(eventually(
                            [&] {
                              auto p = c.api.get(kube::resources::pods(), c.ns, "gpu-claimer");
                              if (!p.ok() || !pod_ready(p.value()))
                                return false;
                              uid = kube::string_at(p.value()["metadata"], "uid");
                              return node_of(p.value()) == n;
                            },
                            60s),
                        "the pod with a claim never ran on " << n << "\n"
                                                             << c.sim->log());
  auto claims = c.api.list(kube::resources::resource_claims(), c.ns);
  BOOST_REQUIRE(claims.ok());
  BOOST_REQUIRE_EQUAL(claims.value()["items"].Size(), 1u);
  const auto& claim = claims.value()["items"][0];
  const auto* result = kube::find_path(claim, {"status", "allocation", "devices", "results"});
  BOOST_REQUIRE(result != nullptr && result->IsArray() && result->Size() == 1u);
  BOOST_TEST(kube::string_at((*result)[0], "driver") == dra_driver);
  BOOST_TEST(kube::string_at((*result)[0], "pool") == n);
  BOOST_TEST(device_named(c.only_slice(n), kube::string_at((*result)[0], "device")) != nullptr);
  const auto* reserved = kube::find_path(claim, {"status", "reservedFor"});
  BOOST_REQUIRE(reserved != nullptr && reserved->IsArray() && reserved->Size() == 1u);
  BOOST_TEST(kube::string_at((*reserved)[0], "uid") == uid);

  c.request(n, "qpx-nps1");
  BOOST_TEST(c.await_state(n) == "failure");
  E2E_CHECK(c.has_event(n, "PartitionRetrying"), describe(c.dcm_events(n)));
  // Busy is per GPU: the held GPU 0 stays, the idle ones change.
  BOOST_TEST(c.annotation(n, partition_annotation) ==
             "SPX/NPS1,QPX/NPS1,QPX/NPS1,QPX/NPS1,QPX/NPS1,QPX/NPS1,QPX/NPS1,QPX/NPS1");

  // The pod goes: kubelet unprepares its claim and DCM's next retry succeeds.
  BOOST_REQUIRE(c.api.remove(kube::resources::pods(), c.ns, "gpu-claimer"));
  E2E_CHECK(eventually([&] { return c.state(n) == "success"; }),
            "state " << c.state(n) << ", events " << describe(c.dcm_events(n)));
  BOOST_TEST(c.annotation(n, partition_annotation) == "QPX/NPS1");
}

BOOST_AUTO_TEST_SUITE_END()
