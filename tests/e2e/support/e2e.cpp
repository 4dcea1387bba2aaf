#include "tests/e2e/support/e2e.hpp"

#include <boost/test/results_collector.hpp>
#include <boost/test/unit_test.hpp>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <yaml-cpp/yaml.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <sstream>

extern char** environ;

namespace gpu_partitioner::e2e {

using namespace std::chrono_literals;

const kube::resource plans{"infrastructure.silogen.ai", "v1alpha1", "partitioningplans", false};
const kube::resource profiles{"infrastructure.silogen.ai", "v1alpha1", "partitioningprofiles",
                              false};
const kube::resource items{"infrastructure.silogen.ai", "v1alpha1", "nodepartitionings", false};
const kube::resource deployments{"apps", "v1", "deployments", true};

// -- JSON and files --

std::string quoted(const std::string& s) {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
  return b.GetString();
}

std::string json_map(const std::map<std::string, std::optional<std::string>>& m) {
  std::string out = "{";
  for (const auto& [k, v] : m)
    out += (out.size() > 1 ? "," : "") + quoted(k) + ":" + (v ? quoted(*v) : "null");
  return out + "}";
}

rapidjson::Document parse_json(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  BOOST_REQUIRE_MESSAGE(!d.HasParseError(), "not JSON: " << text.substr(0, 200));
  return d;
}

std::string runfile(const std::string& path) {
  const char* dir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (dir != nullptr && workspace != nullptr)
    return std::string(dir) + "/" + workspace + "/" + path;
  return path;
}

std::string read_text(const std::string& path) {
  auto text = kube::read_file(path);
  BOOST_REQUIRE_MESSAGE(text.ok(),
                        "reading " << path << ": " << (text.ok() ? "" : text.error().describe()));
  return text.value();
}

namespace {

void yaml_to_json(const YAML::Node& n, rapidjson::Value& out,
                  rapidjson::Document::AllocatorType& a) {
  switch (n.Type()) {
  case YAML::NodeType::Map:
    out.SetObject();
    for (const auto& kv : n) {
      rapidjson::Value k(kv.first.Scalar().c_str(), a);
      rapidjson::Value v;
      yaml_to_json(kv.second, v, a);
      out.AddMember(k, v, a);
    }
    return;
  case YAML::NodeType::Sequence:
    out.SetArray();
    for (const auto& e : n) {
      rapidjson::Value v;
      yaml_to_json(e, v, a);
      out.PushBack(v, a);
    }
    return;
  case YAML::NodeType::Scalar: {
    const std::string& s = n.Scalar();
    if (n.Tag() != "!") { // plain (unquoted) scalars may be numbers, booleans, null
      if (s == "true" || s == "false") {
        out.SetBool(s == "true");
        return;
      }
      if (s == "null" || s == "~") {
        out.SetNull();
        return;
      }
      if (!s.empty() && s.find_first_not_of("0123456789-") == std::string::npos &&
          s.find('-', 1) == std::string::npos) {
        out.SetInt64(std::atoll(s.c_str()));
        return;
      }
    }
    out.SetString(s.c_str(), static_cast<rapidjson::SizeType>(s.size()), a);
    return;
  }
  default:
    out.SetNull();
  }
}

} // namespace

std::vector<std::string> yaml_documents_as_json(const std::string& path) {
  std::vector<std::string> out;
  for (const auto& doc : YAML::LoadAllFromFile(path)) {
    if (!doc.IsMap())
      continue;
    rapidjson::Document d;
    yaml_to_json(doc, d, d.GetAllocator());
    out.push_back(kube::to_json(d));
  }
  return out;
}

std::string str(const rapidjson::Value& v, std::initializer_list<const char*> path) {
  const auto* x = kube::find_path(v, path);
  return x != nullptr && x->IsString() ? x->GetString() : "";
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                std::chrono::milliseconds interval) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (condition())
      return true;
    std::this_thread::sleep_for(interval);
  }
  return condition();
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// -- child processes --

child_process::child_process(std::vector<std::string> args, std::string log_path)
    : args_(std::move(args)), log_path_(std::move(log_path)) {
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> argv;
  for (auto& a : args_)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = ::posix_spawn(&pid_, argv[0], &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  BOOST_REQUIRE_MESSAGE(rc == 0, "cannot start " << args_[0] << ": " << std::strerror(rc));
}

child_process::~child_process() {
  stop();
}

bool child_process::alive() {
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

// The process may have ended already (not reaped yet): alive() reaps it first, so that a
// signal sent after an end of its own does not count as the test's doing.
void child_process::signal(int sig) {
  if (!alive())
    return;
  if (sig != SIGSTOP && sig != SIGCONT && sig != 0)
    asked_to_end_ = true;
  ::kill(pid_, sig);
}

void child_process::kill_now() {
  if (!alive())
    return;
  asked_to_end_ = true;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  status_ = status;
  pid_ = -1;
}

int child_process::stop() {
  if (alive()) {
    asked_to_end_ = true;
    ::kill(pid_, SIGCONT); // in case a test stopped it
    ::kill(pid_, SIGTERM);
    const auto until = std::chrono::steady_clock::now() + 5s;
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

std::string child_process::state() {
  if (alive())
    return "running (pid " + std::to_string(pid_) + ")";
  if (status_ == -1)
    return "not started";
  if (WIFSIGNALED(status_))
    return "killed by signal " + std::to_string(WTERMSIG(status_));
  return "exited with status " + std::to_string(WEXITSTATUS(status_));
}

bool child_process::ended_unasked() {
  return !alive() && status_ != -1 && !asked_to_end_;
}

std::string child_process::dump_stacks() {
  if (!alive() || ::access("/usr/bin/gdb", X_OK) != 0)
    return {};
  const std::string path = log_path_ + ".stacks";
  const std::string command = "timeout 60 /usr/bin/gdb -batch -nx -p " + std::to_string(pid_) +
                              " -ex 'thread apply all bt 30' >'" + path + "' 2>&1";
  return std::system(command.c_str()) == 0 ? path : std::string{};
}

std::string sanitizer_report(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line, report;
  int taken = 0;
  while (taken < 40 && std::getline(in, line)) {
    if (report.empty() && line.find("ERROR: AddressSanitizer") == std::string::npos &&
        line.find("ERROR: LeakSanitizer") == std::string::npos &&
        line.find(": runtime error: ") == std::string::npos &&
        line.find("WARNING: ThreadSanitizer") == std::string::npos)
      continue;
    report += line + "\n";
    ++taken;
  }
  return report;
}

std::string child_process::tail(std::size_t lines) const {
  std::ifstream in(log_path_);
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (last.size() > lines)
      last.pop_front();
  }
  std::string out;
  for (const auto& l : last)
    out += l + "\n";
  return out;
}

// -- the API server's audit log --

bool audit_event::mutating() const {
  // A review (may I? who am I?) is created as a question: it stores and changes nothing,
  // and a standby asks one at start (the operator asks whether it may delete pods).
  if (verb == "create" && resource.size() > 7 &&
      resource.compare(resource.size() - 7, 7, "reviews") == 0)
    return false;
  return verb == "create" || verb == "update" || verb == "patch" || verb == "delete" ||
         verb == "deletecollection";
}

long long parse_micro_time(const std::string& text) {
  // 2026-11-29T18:16:02.123456Z (the fraction may be shorter or absent)
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &year, &month, &day, &hour, &minute,
                  &second) != 6)
    return 0;
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  long long us = static_cast<long long>(::timegm(&tm)) * 1000000LL;
  const auto dot = text.find('.');
  if (dot != std::string::npos) {
    long long fraction = 0;
    int digits = 0;
    for (std::size_t i = dot + 1;
         i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
      if (digits < 6) {
        fraction = fraction * 10 + (text[i] - '0');
        ++digits;
      }
    }
    for (; digits < 6; ++digits)
      fraction *= 10;
    us += fraction;
  }
  return us;
}

audit_log::audit_log() {
  const char* dir = std::getenv("GPU_PARTITIONER_CLUSTER_DIR");
  if (dir == nullptr || *dir == '\0')
    BOOST_FAIL("GPU_PARTITIONER_CLUSTER_DIR is not set: run the test with "
               "--test_env=GPU_PARTITIONER_CLUSTER_DIR=... or through tools/test");
  path_ = std::string(dir) + "/logs/audit.log";
  std::ifstream in(path_, std::ios::ate | std::ios::binary);
  offset_ = in ? static_cast<long long>(in.tellg()) : 0;
}

std::vector<audit_event> audit_log::read() const {
  std::vector<audit_event> out;
  std::ifstream in(path_, std::ios::binary);
  BOOST_REQUIRE_MESSAGE(in, "cannot read the audit log " << path_);
  in.seekg(offset_);
  std::string line;
  while (std::getline(in, line)) {
    rapidjson::Document d;
    d.Parse(line.c_str());
    if (d.HasParseError() || !d.IsObject())
      continue; // a line being written right now
    audit_event e;
    using kube::string_at;
    e.verb = string_at(d, "verb");
    e.user_agent = string_at(d, "userAgent");
    if (auto u = d.FindMember("user"); u != d.MemberEnd())
      e.user = string_at(u->value, "username");
    if (auto r = d.FindMember("objectRef"); r != d.MemberEnd()) {
      e.group = string_at(r->value, "apiGroup");
      e.resource = string_at(r->value, "resource");
      e.subresource = string_at(r->value, "subresource");
      e.ns = string_at(r->value, "namespace");
      e.name = string_at(r->value, "name");
    }
    if (auto s = d.FindMember("responseStatus"); s != d.MemberEnd() && s->value.IsObject())
      if (auto c = s->value.FindMember("code"); c != s->value.MemberEnd() && c->value.IsInt())
        e.code = c->value.GetInt();
    e.received_us = parse_micro_time(string_at(d, "requestReceivedTimestamp"));
    e.completed_us = parse_micro_time(string_at(d, "stageTimestamp"));
    out.push_back(std::move(e));
  }
  return out;
}

// -- views --

namespace {

std::map<std::string, std::string> string_map(const rapidjson::Value* v) {
  std::map<std::string, std::string> out;
  if (v != nullptr && v->IsObject())
    for (const auto& m : v->GetObject())
      if (m.value.IsString())
        out[m.name.GetString()] = m.value.GetString();
  return out;
}

std::string json_of(const rapidjson::Value* v) {
  return v == nullptr ? std::string{} : kube::to_json(*v);
}

bool current_test_passed() {
  using namespace boost::unit_test;
  return results_collector.results(framework::current_test_case().p_id).passed();
}

std::string random_key() {
  static std::mt19937_64 rng(std::random_device{}());
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 8; ++i)
    out.push_back(digits[rng() % 16]);
  return out;
}

std::vector<rapidjson::Document> list_items(kube::client& api, const kube::resource& r,
                                            const std::string& ns, const std::string& selector,
                                            const std::string& field_selector = {}) {
  kube::list_options o;
  o.label_selector = selector;
  o.field_selector = field_selector;
  std::vector<rapidjson::Document> out;
  auto list = api.list(r, ns, o);
  if (!list)
    return out;
  for (const auto& item : list.value()["items"].GetArray()) {
    rapidjson::Document d;
    d.CopyFrom(item, d.GetAllocator());
    out.push_back(std::move(d));
  }
  return out;
}

} // namespace

std::vector<rapidjson::Document> list_objects(kube::client& api, const kube::resource& r,
                                              const std::string& ns,
                                              const std::string& label_selector) {
  return list_items(api, r, ns, label_selector);
}

std::string node_view::label(const std::string& key) const {
  auto it = labels.find(key);
  return it == labels.end() ? std::string{} : it->second;
}

std::string node_view::fingerprint() const {
  std::string out = "unschedulable=" + std::string(unschedulable ? "true" : "false") + "\nlabels:";
  for (const auto& [k, v] : labels)
    out += " " + k + "=" + v;
  out += "\nannotations:";
  for (const auto& [k, v] : annotations)
    out += " " + k + "=" + v;
  out += "\ntaints:";
  for (const auto& t : taints)
    out += " " + t;
  return out;
}

node_view to_node_view(const rapidjson::Value& node) {
  node_view n;
  n.name = str(node, {"metadata", "name"});
  n.resource_version = str(node, {"metadata", "resourceVersion"});
  n.labels = string_map(kube::find_path(node, {"metadata", "labels"}));
  n.annotations = string_map(kube::find_path(node, {"metadata", "annotations"}));
  if (const auto* u = kube::find_path(node, {"spec", "unschedulable"}); u && u->IsBool())
    n.unschedulable = u->GetBool();
  if (const auto* taints = kube::find_path(node, {"spec", "taints"}); taints && taints->IsArray())
    for (const auto& t : taints->GetArray()) {
      const std::string key = kube::string_at(t, "key");
      const std::string effect = kube::string_at(t, "effect");
      n.taints.push_back(key + "=" + kube::string_at(t, "value") + ":" + effect);
      if (key == "amd-dcm" && effect == "NoExecute")
        n.dcm_taint = true;
    }
  if (const auto* g = kube::find_path(node, {"status", "allocatable", "amd.com/gpu"});
      g && g->IsString())
    n.gpus = std::atoll(g->GetString());
  return n;
}

bool item_view::in_flight() const {
  return phase == "Draining" || phase == "Applying" || phase == "WaitingOperator" ||
         phase == "Verifying";
}

item_view to_item_view(const rapidjson::Value& item) {
  item_view v;
  v.name = str(item, {"metadata", "name"});
  v.plan = str(item, {"spec", "planRef", "name"});
  v.node = str(item, {"spec", "nodeName"});
  v.desired_hash = str(item, {"spec", "desiredHash"});
  v.deleting = kube::find_path(item, {"metadata", "deletionTimestamp"}) != nullptr;
  if (const auto* labels = kube::find_path(item, {"metadata", "labels"});
      labels && labels->IsObject())
    for (const auto& l : labels->GetObject())
      if (l.value.IsString())
        v.labels[l.name.GetString()] = l.value.GetString();
  if (const auto* st = kube::find_path(item, {"status"}); st && st->IsObject()) {
    v.phase = kube::string_at(*st, "phase");
    v.last_error = kube::string_at(*st, "lastError");
    v.started_at = kube::string_at(*st, "startedAt");
    v.completed_at = kube::string_at(*st, "completedAt");
    v.dcm_may_change_until = kube::string_at(*st, "dcmMayChangeUntil");
    v.observed_hash = kube::string_at(*st, "observedHash");
    if (const auto* h = kube::find_path(*st, {"history"}); h && h->IsArray())
      for (const auto& e : h->GetArray()) {
        v.reasons.push_back(kube::string_at(e, "reason"));
        v.phases.push_back(kube::string_at(e, "phase"));
      }
    v.preview = json_of(kube::find_path(*st, {"preview"}));
    v.drain = json_of(kube::find_path(*st, {"drain"}));
    if (const auto* cs = kube::find_path(*st, {"conditions"}); cs && cs->IsArray())
      for (const auto& c : cs->GetArray())
        v.conditions[kube::string_at(c, "type")] = kube::string_at(c, "status") + "/" +
                                                   kube::string_at(c, "reason") + ": " +
                                                   kube::string_at(c, "message");
  }
  return v;
}

pod_view to_pod_view(const rapidjson::Value& pod) {
  pod_view p;
  p.name = str(pod, {"metadata", "name"});
  p.node = str(pod, {"spec", "nodeName"});
  p.labels = string_map(kube::find_path(pod, {"metadata", "labels"}));
  p.deleting = kube::find_path(pod, {"metadata", "deletionTimestamp"}) != nullptr;
  if (str(pod, {"status", "phase"}) == "Running")
    if (const auto* conds = kube::find_path(pod, {"status", "conditions"});
        conds && conds->IsArray())
      for (const auto& c : conds->GetArray())
        if (kube::string_at(c, "type") == "Ready")
          p.ready = kube::string_at(c, "status") == "True";
  return p;
}

kube::connection_config admin_config() {
  const char* path = std::getenv("KUBECONFIG");
  if (path == nullptr || *path == '\0')
    BOOST_FAIL("KUBECONFIG is not set: run the e2e tests with --test_env=KUBECONFIG=... or "
               "through tools/test");
  auto config = kube::load_kubeconfig(path);
  if (!config)
    BOOST_FAIL(config.error().message);
  return config.value();
}

// -- e2e_cluster --

e2e_cluster::e2e_cluster()
    : conn(admin_config()), api(conn.api), key(random_key()), id("e2e-" + key), ns(id) {
  kubeconfig_ = std::getenv("KUBECONFIG");
  try {
    set_up();
  } catch (...) {
    tear_down();
    throw;
  }
}

e2e_cluster::~e2e_cluster() {
  tear_down();
}

void e2e_cluster::set_up() {
  // Other plans in the cluster would conflict with ours over nodepool=... labels.
  if (auto existing = api.list(plans, ""); existing.ok())
    for (const auto& p : existing.value()["items"].GetArray())
      std::cerr << "e2e: note: PartitioningPlan " << str(p, {"metadata", "name"})
                << " exists; a plan selecting nodepool=... would conflict with this test's nodes\n";
  auto made = api.create(kube::resources::namespaces(), "",
                         R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":)" +
                             quoted(ns) + R"(,"labels":{"e2e":)" + quoted(key) + "}}}");
  BOOST_REQUIRE_MESSAGE(made.ok(), (made.ok() ? "" : made.error().describe()));
  const std::string config = read_text(runfile("tools/simulator/dcm-config.json"));
  auto cm = api.create(kube::resources::config_maps(), ns,
                       R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":)" +
                           quoted(dcm_config_name) + R"(},"data":{"config.json":)" +
                           quoted(config) + "}}");
  BOOST_REQUIRE_MESSAGE(cm.ok(), (cm.ok() ? "" : cm.error().describe()));
  // AMD's GPU operator names DCM's ConfigMap in its DeviceConfig. A cluster without AMD's
  // CRD (tools/simulator/deviceconfig-crd.yaml) gets none.
  const kube::resource device_configs{"amd.com", "v1alpha1", "deviceconfigs", true};
  (void)api.create(
      device_configs, ns,
      R"({"apiVersion":"amd.com/v1alpha1","kind":"DeviceConfig","metadata":{"name":"default"},)"
      R"("spec":{"configManager":{"enable":true,"config":{"name":)" +
          quoted(dcm_config_name) + "}}}}");
  // DCM as the GPU operator deploys it: a DaemonSet on the test's nodes, tolerating every
  // taint (the real one tolerates amd-dcm=up:NoExecute; these nodes also carry e2e=<key>),
  // reading config.json from its ConfigMap mounted at /etc/config-manager/. gpu-sim plays
  // DCM on a node only while its pod runs there; the image's tag is DCM's version.
  const kube::resource daemon_sets{"apps", "v1", "daemonsets", true};
  auto ds = api.create(
      daemon_sets, ns,
      R"({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"default-device-config-manager"},)"
      R"("spec":{"selector":{"matchLabels":{"app.kubernetes.io/name":"device-config-manager"}},)"
      R"("template":{"metadata":{"labels":{"app.kubernetes.io/name":"device-config-manager"}},)"
      R"("spec":{"nodeSelector":{"e2e":)" +
          quoted(key) +
          R"(},"tolerations":[{"operator":"Exists"}],"automountServiceAccountToken":false,)"
          R"("terminationGracePeriodSeconds":1,)"
          R"("volumes":[{"name":"config-manager-config-volume","configMap":{"name":)" +
          quoted(dcm_config_name) +
          R"(}}],"containers":[{"name":"device-config-manager-container",)"
          R"("image":"rocm/device-config-manager:v1.3.0","volumeMounts":)"
          R"([{"name":"config-manager-config-volume","mountPath":"/etc/config-manager/"}]}]}}}})");
  BOOST_REQUIRE_MESSAGE(ds.ok(), (ds.ok() ? "" : ds.error().describe()));
  // The sample payloads, moved into this namespace.
  for (const auto& text :
       yaml_documents_as_json(runfile("manifests/samples/dcm-payload-configmaps.yaml"))) {
    auto doc = parse_json(text);
    if (str(doc, {"kind"}) != "ConfigMap")
      continue;
    doc["metadata"]["namespace"].SetString(ns.c_str(), doc.GetAllocator());
    auto r = api.create(kube::resources::config_maps(), ns, kube::to_json(doc));
    BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().describe()));
  }
  const char* outputs = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR");
  op_log_ = std::string(outputs != nullptr ? outputs : "/tmp") + "/operator-" + id + ".log";
}

void e2e_cluster::tear_down() {
  const bool passed = current_test_passed();
  if (!passed) {
    if (op_ || !op_log_.empty())
      std::cerr << "---- operator log (" << op_log_ << "), last lines ----\n"
                << operator_log(150) << "----\n";
    if (op_) {
      // Whether it still runs, and if so where each thread is: a stalled operator and a
      // crashed one leave the same log.
      std::cerr << "---- operator process: " << op_->state() << "\n";
      if (auto stacks = op_->dump_stacks(); !stacks.empty())
        std::cerr << "---- its threads' stacks: " << stacks << "\n";
    }
    if (sim_)
      std::cerr << "---- gpu-sim log (" << sim_->log_path() << "), last lines ----\n"
                << sim_->tail(60) << "----\n";
  }
  // An operator that ended on its own fails the case, before it is started again.
  check_operator_end("at teardown");
  // Plans first, while the operator still runs: their items' finalizers return nodes.
  if (op_ && !op_->alive() && !plans_.empty())
    start_operator(op_args_);
  for (const auto& p : plans_)
    (void)api.remove(plans, "", p);
  // Each of this test's items, with its finalizers.
  auto ours = [&] {
    std::vector<std::pair<item_view, std::string>> left;
    if (auto list = api.list(items, ""); list.ok())
      for (const auto& i : list.value()["items"].GetArray()) {
        auto v = to_item_view(i);
        if (v.name.rfind(id, 0) != 0)
          continue;
        std::string finalizers;
        if (const auto* f = kube::find_path(i, {"metadata", "finalizers"}); f && f->IsArray())
          for (const auto& x : f->GetArray())
            finalizers +=
                std::string(finalizers.empty() ? "" : ",") + (x.IsString() ? x.GetString() : "?");
        left.emplace_back(std::move(v), finalizers);
      }
    return left;
  };
  if (!eventually([&] { return ours().empty(); }, 30s, 100ms)) {
    // The operator did not release them: that fails the case. They are still removed by
    // hand, or the next case would find them.
    const auto left = ours();
    std::ostringstream what;
    for (const auto& [i, finalizers] : left) {
      what << "\n  " << i.name << " (plan " << i.plan << ", node " << i.node
           << "): " << i.phase_or_pending() << (i.deleting ? ", being deleted" : ", not deleted")
           << ", finalizers [" << finalizers << "]";
      if (!i.last_error.empty())
        what << ", lastError " << i.last_error;
      what << ", history:";
      for (std::size_t k = 0; k < i.phases.size(); ++k)
        what << " " << i.phases[k] << "/" << i.reasons[k];
    }
    if (!left.empty())
      BOOST_ERROR("teardown: " << left.size()
                               << " item(s) still there 30 s after their plans were deleted; "
                                  "removing their finalizers by hand (the operator: "
                               << (op_ ? op_->state() : std::string("never started")) << "):"
                               << what.str() << "\nthe operator's last lines (" << op_log_ << "):\n"
                               << operator_log(40));
    for (const auto& [i, finalizers] : left) {
      (void)api.patch(items, "", i.name, kube::patch_type::merge,
                      R"({"metadata":{"finalizers":null}})");
      (void)api.remove(items, "", i.name);
    }
  }
  plans_.clear();
  for (const auto& p : profiles_)
    (void)api.remove(profiles, "", p);
  profiles_.clear();
  if (op_) {
    // Ended on its own (the plans' deletion above stops every worker at once) fails the
    // test; so does a crash on the way out. A SIGKILL is a test's own doing.
    check_operator_end("at teardown, after the plans were deleted");
    const bool said = op_end_checked_;
    const int status = op_->stop();
    if (!said && status != -1 && WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL &&
        WTERMSIG(status) != SIGTERM)
      BOOST_ERROR("the operator died of signal " << WTERMSIG(status) << " ("
                                                 << ::strsignal(WTERMSIG(status))
                                                 << "); its log: " << op_log_ << "\n"
                                                 << operator_log(20));
    else if (!said && !(WIFEXITED(status) && WEXITSTATUS(status) == 0) && status != -1)
      BOOST_TEST_MESSAGE("note: the operator did not exit cleanly on SIGTERM (wait status "
                         << status << ")");
    op_.reset();
  }
  // In the sanitizer build (tools/test) a finding in the operator fails the test.
  if (!op_log_.empty())
    if (const auto report = sanitizer_report(op_log_); !report.empty())
      BOOST_ERROR("the operator's log (" << op_log_ << ") holds a sanitizer report:\n" << report);
  // The namespace goes first: once it is terminating, no controller can make a pod in it.
  // Its pods are then deleted at once (grace 0) rather than waited for: the kubelet that
  // gpu-sim plays need not confirm them, and the namespace controller's own pass takes
  // seconds a case. Then gpu-sim stops; then the nodes go.
  (void)api.remove(kube::resources::namespaces(), "", ns);
  {
    kube::delete_options now;
    now.grace_period_seconds = 0;
    kube::list_options o;
    o.field_selector = "metadata.namespace=" + ns;
    if (auto pods = api.list(kube::resources::pods(), "", o); pods.ok())
      for (const auto& p : pods.value()["items"].GetArray())
        (void)api.remove(kube::resources::pods(), ns, str(p, {"metadata", "name"}), now);
  }
  eventually(
      [&] {
        kube::list_options o;
        o.field_selector = "metadata.namespace=" + ns;
        auto pods = api.list(kube::resources::pods(), "", o);
        return pods.ok() && pods.value()["items"].Empty();
      },
      20s, 100ms);
  if (sim_) {
    sim_->stop();
    if (const auto report = sanitizer_report(sim_->log_path()); !report.empty())
      BOOST_ERROR("gpu-sim's log (" << sim_->log_path() << ") holds a sanitizer report:\n"
                                    << report);
    sim_.reset();
  }
  for (const auto& n : nodes)
    (void)api.remove(kube::resources::nodes(), "", n);
  nodes.clear();
  // Events about our nodes, items and plans (the operator's and DCM's).
  if (auto events = api.list(kube::resources::events(), ""); events.ok())
    for (const auto& e : events.value()["items"].GetArray()) {
      const std::string about = str(e, {"involvedObject", "name"});
      if (about.rfind(id, 0) == 0)
        (void)api.remove(kube::resources::events(), str(e, {"metadata", "namespace"}),
                         str(e, {"metadata", "name"}));
    }
}

void e2e_cluster::add_nodes(const std::vector<std::pair<std::string, node_spec>>& specs) {
  for (const auto& [suffix, spec] : specs) {
    const std::string name = id + "-" + suffix;
    std::map<std::string, std::optional<std::string>> labels{
        {"e2e", key},
        {"kubernetes.io/hostname", name},
        {"kubernetes.io/os", "linux"},
        {"kubernetes.io/arch", "amd64"},
        {"gpu.vendor", "amd"},
        {"gpu.family", "mi300x"},
        {"nodepool", spec.pool},
    };
    if (!spec.fault.empty())
      labels[fault_label] = spec.fault;
    for (const auto& [k, v] : spec.labels)
      labels[k] = v;
    std::map<std::string, std::optional<std::string>> annotations;
    for (const auto& [k, v] : spec.annotations)
      annotations[k] = v;
    const std::string body =
        R"({"apiVersion":"v1","kind":"Node","metadata":{"name":)" + quoted(name) + R"(,"labels":)" +
        json_map(labels) + R"(,"annotations":)" + json_map(annotations) +
        R"(},"spec":{"unschedulable":)" + (spec.cordoned ? "true" : "false") +
        R"(,"taints":[{"key":"e2e","value":)" + quoted(key) + R"(,"effect":"NoSchedule"}]}})";
    auto made = api.create(kube::resources::nodes(), "", body);
    BOOST_REQUIRE_MESSAGE(made.ok(), (made.ok() ? "" : made.error().describe()));
    nodes.push_back(name);
  }
}

std::string e2e_cluster::dcm_config_sync() const {
  const double scale = std::stod(time_scale_);
  return std::to_string(60 * scale + std::max(30 * scale, 2.0));
}

void e2e_cluster::start_simulator(const std::string& time_scale,
                                  const std::vector<std::string>& extra_args) {
  time_scale_ = time_scale;
  const char* outputs = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR");
  const std::string log =
      std::string(outputs != nullptr ? outputs : "/tmp") + "/gpu-sim-" + id + ".log";
  std::vector<std::string> args{runfile("tools/simulator/gpu-sim"), "--node-selector", "e2e=" + key,
                                "--dcm-namespace", ns, "--time-scale", time_scale, "--kubeconfig",
                                kubeconfig_,
                                // The samples' ready label, as a site's labeller sets it.
                                "--ready-label", std::string(ready_label) + "=true"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  // DCM's image names the version gpu-sim plays (the operator reads it from the tag). A
  // merge patch replaces the container list: the patch repeats the mount.
  if (auto v = std::find(extra_args.begin(), extra_args.end(), "--dcm-version");
      v != extra_args.end() && v + 1 != extra_args.end())
    patch(kube::resource{"apps", "v1", "daemonsets", true}, "default-device-config-manager",
          R"({"spec":{"template":{"spec":{"containers":[{"name":"device-config-manager-container",)"
          R"("image":"rocm/device-config-manager:v)" +
              *(v + 1) +
              R"(.0","volumeMounts":[{"name":"config-manager-config-volume",)"
              R"("mountPath":"/etc/config-manager/"}]}]}}}})",
          ns);
  sim_ = std::make_unique<child_process>(args, log);
  for (const auto& n : nodes)
    BOOST_REQUIRE_MESSAGE(
        eventually(
            [&] {
              auto v = node(n);
              // A node whose kubelet is stopped reports nothing more.
              if (v.label(fault_label).find("kubelet-stopped") != std::string::npos)
                return true;
              // Schedulable: the node-lifecycle controller has lifted the not-ready taint
              // the API server gives every new node (TaintNodesByCondition).
              if (std::any_of(v.taints.begin(), v.taints.end(), [](const std::string& t) {
                    return t.rfind("node.kubernetes.io/not-ready=", 0) == 0;
                  }))
                return false;
              // A node in DRA mode publishes its GPUs as devices.
              if (v.label(gpu_api_label).rfind("dra", 0) == 0)
                return !resource_slices(n).empty() && !v.label(ready_label).empty();
              return v.gpus > 0 && !v.label(ready_label).empty();
            },
            60s, 100ms),
        "node " << n
                << " never reported amd.com/gpu or ResourceSlices, or is still tainted not-ready\n"
                << sim_->tail());
  // DCM's pod runs on every node (but where a fault keeps it away): the operator's
  // preflight looks for it.
  for (const auto& n : nodes) {
    const auto faults = node(n).label(fault_label);
    if (faults.find("dcm-missing") != std::string::npos ||
        faults.find("kubelet-stopped") != std::string::npos)
      continue;
    BOOST_REQUIRE_MESSAGE(eventually(
                              [&] {
                                // The GPU operator's DCM, or standalone DCM's chart's.
                                for (const char* dcm :
                                     {"app.kubernetes.io/name=device-config-manager",
                                      "app=amdgpu-device-config-manager"})
                                  for (const auto& p : pods(dcm))
                                    if (p.node == n && p.ready)
                                      return true;
                                return false;
                              },
                              60s, 100ms),
                          "DCM's pod never ran on node " << n << "\n"
                                                         << sim_->tail());
  }
}

std::vector<rapidjson::Document> e2e_cluster::resource_slices(const std::string& node_name) {
  return list_items(api, kube::resources::resource_slices(), "", "", "spec.nodeName=" + node_name);
}

void e2e_cluster::start_operator() {
  start_operator_with({});
}

void e2e_cluster::start_operator_with(const std::vector<std::string>& extra_args) {
  auto command = operator_command(extra_args);
  start_operator(std::vector<std::string>(command.begin() + 1, command.end()));
}

void e2e_cluster::start_operator(const std::vector<std::string>& args) {
  check_operator_end("when the test started it again");
  op_.reset();
  op_end_checked_ = false;
  op_args_ = args;
  {
    std::ofstream mark(op_log_, std::ios::app);
    mark << "==== e2e: starting the operator ====\n";
  }
  std::vector<std::string> argv{operator_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  op_ = std::make_unique<child_process>(argv, op_log_);
}

void e2e_cluster::check_operator_end(const std::string& when) {
  if (!op_ || op_end_checked_ || !op_->ended_unasked())
    return;
  op_end_checked_ = true;
  BOOST_ERROR("the operator ended without the test asking it to (seen "
              << when << "): " << op_->state() << "; the last lines of its log (" << op_log_
              << "):\n"
              << operator_log(40));
}

std::string e2e_cluster::operator_binary() const {
  // //:gpu-partitioner if the root package lets us see it, else this package's copy.
  std::string binary = runfile("gpu-partitioner");
  if (::access(binary.c_str(), X_OK) != 0)
    binary = runfile("tests/e2e/gpu-partitioner");
  return binary;
}

std::vector<std::string>
e2e_cluster::operator_command(const std::vector<std::string>& extra_args) const {
  std::vector<std::string> args{operator_binary(), "--kubeconfig", kubeconfig_, "--dcm-namespace",
                                ns, "--dcm-config-sync", dcm_config_sync(),
                                // DCM's 30 minutes of retries, at gpu-sim's time scale.
                                "--dcm-retry-seconds",
                                std::to_string(2400 * std::stod(time_scale_)), "--log-level",
                                "debug", "--metrics-addr", "0", "--health-addr", "0"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  return args;
}

void e2e_cluster::kill_operator() {
  if (op_) {
    op_->kill_now();
    std::ofstream mark(op_log_, std::ios::app);
    mark << "==== e2e: operator killed with SIGKILL ====\n";
  }
}

std::string e2e_cluster::operator_log(std::size_t lines) const {
  std::ifstream in(op_log_);
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (last.size() > lines)
      last.pop_front();
  }
  std::string out;
  for (const auto& l : last)
    out += l + "\n";
  return out;
}

std::set<std::string> e2e_cluster::operator_instances() {
  std::set<std::string> out;
  for (const auto& e : list_items(api, kube::resources::events(), "", "", "source=gpu-partitioner"))
    if (str(e, {"involvedObject", "name"}).rfind(id, 0) == 0)
      out.insert(str(e, {"reportingInstance"}));
  return out;
}

std::string e2e_cluster::create_profile(const std::string& suffix, const std::string& spec_json) {
  const std::string name = id + "-" + suffix;
  auto r = api.create(profiles, "",
                      R"({"apiVersion":"infrastructure.silogen.ai/v1alpha1","kind":)"
                      R"("PartitioningProfile","metadata":{"name":)" +
                          quoted(name) + R"(},"spec":)" + spec_json + "}");
  BOOST_REQUIRE_MESSAGE(r.ok(), "profile " << name << ": " << (r.ok() ? "" : r.error().describe()));
  profiles_.push_back(name);
  return name;
}

std::string
e2e_cluster::create_sample_profile(const std::string& suffix, const std::string& file,
                                   const std::function<void(rapidjson::Document&)>& edit) {
  auto docs = yaml_documents_as_json(runfile("manifests/samples/" + file));
  BOOST_REQUIRE_EQUAL(docs.size(), 1u);
  auto doc = parse_json(docs[0]);
  auto& a = doc.GetAllocator();
  const std::string name = id + "-" + suffix;
  doc["metadata"]["name"].SetString(name.c_str(), a);
  doc["spec"]["operatorPayload"]["namespace"].SetString(ns.c_str(), a);
  if (edit)
    edit(doc);
  auto r = api.create(profiles, "", kube::to_json(doc));
  BOOST_REQUIRE_MESSAGE(r.ok(), "profile " << name << ": " << (r.ok() ? "" : r.error().describe()));
  profiles_.push_back(name);
  return name;
}

void e2e_cluster::create_payload(const std::string& name, const std::string& profile_json) {
  auto r =
      api.create(kube::resources::config_maps(), ns,
                 R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":)" + quoted(name) +
                     R"(},"data":{"profile.json":)" + quoted(profile_json) + "}}");
  BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().describe()));
}

std::string e2e_cluster::create_plan(const std::string& suffix, const std::string& spec_json) {
  const std::string name = id + "-" + suffix;
  auto r = api.create(plans, "",
                      R"({"apiVersion":"infrastructure.silogen.ai/v1alpha1","kind":)"
                      R"("PartitioningPlan","metadata":{"name":)" +
                          quoted(name) + R"(},"spec":)" + spec_json + "}");
  BOOST_REQUIRE_MESSAGE(r.ok(), "plan " << name << ": " << (r.ok() ? "" : r.error().describe()));
  plans_.push_back(name);
  return name;
}

std::string e2e_cluster::create_sample_plan(const std::string& suffix,
                                            const std::map<std::string, std::string>& profile_names,
                                            const std::function<void(rapidjson::Document&)>& edit) {
  auto docs =
      yaml_documents_as_json(runfile("manifests/samples/plan-training-pool-partition.yaml"));
  BOOST_REQUIRE_EQUAL(docs.size(), 1u);
  auto doc = parse_json(docs[0]);
  auto& a = doc.GetAllocator();
  const std::string name = id + "-" + suffix;
  doc["metadata"]["name"].SetString(name.c_str(), a);
  for (auto& entry : doc["spec"]["partitionings"].GetArray()) {
    entry["selector"]["matchLabels"].AddMember("e2e", rapidjson::Value(key.c_str(), a), a);
    auto& ref = entry["profileRef"]["name"];
    auto mapped = profile_names.find(ref.GetString());
    BOOST_REQUIRE_MESSAGE(mapped != profile_names.end(), "no profile for " << ref.GetString());
    ref.SetString(mapped->second.c_str(), a);
  }
  if (edit)
    edit(doc);
  auto r = api.create(plans, "", kube::to_json(doc));
  BOOST_REQUIRE_MESSAGE(r.ok(), "plan " << name << ": " << (r.ok() ? "" : r.error().describe()));
  plans_.push_back(name);
  return name;
}

void e2e_cluster::patch(const kube::resource& r, const std::string& name,
                        const std::string& merge_patch, const std::string& in_ns) {
  auto done = api.patch(r, in_ns, name, kube::patch_type::merge, merge_patch);
  BOOST_REQUIRE_MESSAGE(done.ok(),
                        "patching " << name << ": " << (done.ok() ? "" : done.error().describe()));
}

void e2e_cluster::delete_plan(const std::string& name) {
  auto done = api.remove(plans, "", name);
  BOOST_REQUIRE_MESSAGE(done.ok(), "deleting plan " << name << ": "
                                                    << (done.ok() ? "" : done.error().describe()));
}

std::string e2e_cluster::selector(const std::map<std::string, std::string>& extra) const {
  std::map<std::string, std::optional<std::string>> labels{{"e2e", key}};
  for (const auto& [k, v] : extra)
    labels[k] = v;
  return R"({"matchLabels":)" + json_map(labels) + "}";
}

std::optional<rapidjson::Document>
e2e_cluster::get(const kube::resource& r, const std::string& name, const std::string& in_ns) {
  auto got = api.get(r, in_ns, name);
  if (!got)
    return std::nullopt;
  return std::move(got.value());
}

node_view e2e_cluster::node(const std::string& name) {
  auto n = get(kube::resources::nodes(), name);
  if (!n) {
    node_view missing;
    missing.name = name;
    return missing;
  }
  return to_node_view(*n);
}

bool e2e_cluster::back_in_service(const std::string& name, std::chrono::milliseconds timeout) {
  return eventually([&] { return !node(name).unavailable(); }, timeout, 100ms);
}

std::vector<node_view> e2e_cluster::test_nodes() {
  std::vector<node_view> out;
  for (const auto& n : list_items(api, kube::resources::nodes(), "", "e2e=" + key))
    out.push_back(to_node_view(n));
  return out;
}

std::vector<item_view> e2e_cluster::plan_items(const std::string& plan) {
  std::vector<item_view> out;
  for (const auto& i : list_items(api, items, "", "")) {
    auto v = to_item_view(i);
    if (v.plan == plan)
      out.push_back(v);
  }
  return out;
}

std::optional<item_view> e2e_cluster::item(const std::string& plan, const std::string& node) {
  // Named <plan>-<node> unless another plan's item held that name when it was made: then
  // found by plan and node (controller/item_name.hpp).
  if (auto got = get(items, plan + "-" + node)) {
    auto v = to_item_view(*got);
    if (v.plan == plan && v.node == node)
      return v;
  }
  for (auto& v : plan_items(plan))
    if (v.node == node)
      return v;
  return std::nullopt;
}

std::string e2e_cluster::plan_phase(const std::string& plan) {
  auto p = get(plans, plan);
  return p ? str(*p, {"status", "phase"}) : std::string{};
}

std::string e2e_cluster::plan_condition(const std::string& plan, const std::string& type) {
  auto p = get(plans, plan);
  if (!p)
    return {};
  const auto* conditions = kube::find_path(*p, {"status", "conditions"});
  if (conditions == nullptr || !conditions->IsArray())
    return {};
  for (const auto& x : conditions->GetArray())
    if (kube::string_at(x, "type") == type)
      return kube::string_at(x, "status") + "/" + kube::string_at(x, "reason") + ": " +
             kube::string_at(x, "message");
  return {};
}

bool e2e_cluster::plan_status_current(const std::string& plan) {
  auto p = get(plans, plan);
  if (!p)
    return false;
  const auto* generation = kube::find_path(*p, {"metadata", "generation"});
  const auto* observed = kube::find_path(*p, {"status", "observedGeneration"});
  return generation != nullptr && observed != nullptr && generation->IsInt64() &&
         observed->IsInt64() && generation->GetInt64() == observed->GetInt64();
}

// DCM's DaemonSet shares the test's namespace (as DCM's namespace): the workloads are the
// other pods.
const char* const not_dcm = "app.kubernetes.io/name!=device-config-manager";

std::vector<pod_view> e2e_cluster::pods(const std::string& label_selector) {
  std::vector<pod_view> out;
  for (const auto& p : list_items(api, kube::resources::pods(), ns,
                                  label_selector.empty() ? not_dcm : label_selector))
    out.push_back(to_pod_view(p));
  return out;
}

bool e2e_cluster::await_items(const std::string& plan, std::size_t count, const std::string& phase,
                              std::chrono::milliseconds timeout) {
  return eventually(
      [&] {
        auto all = plan_items(plan);
        if (all.size() != count)
          return false;
        for (const auto& i : all)
          if (i.phase != phase)
            return false;
        return true;
      },
      timeout, 200ms);
}

bool e2e_cluster::await_plan_phase(const std::string& plan, const std::string& phase,
                                   std::chrono::milliseconds timeout) {
  return eventually([&] { return plan_phase(plan) == phase; }, timeout, 200ms);
}

std::string e2e_cluster::describe(const std::string& plan) {
  std::ostringstream out;
  out << "plan " << plan << ": phase " << plan_phase(plan) << "\n";
  for (const auto& i : plan_items(plan)) {
    out << "  item " << i.name << ": " << i.phase_or_pending();
    if (!i.last_error.empty())
      out << " (" << i.last_error << ")";
    out << " history:";
    for (std::size_t k = 0; k < i.phases.size(); ++k)
      out << " " << i.phases[k] << "/" << i.reasons[k];
    // What a Pending node waits for.
    if (i.phase_or_pending() == "Pending")
      for (const char* type : {"Started", "Preflight"})
        if (auto c = i.conditions.find(type); c != i.conditions.end())
          out << "; " << type << " " << c->second.substr(0, 200);
    out << "\n";
  }
  // Each object as a LIST shows it and, where a GET (read from etcd) shows another
  // version, as the GET does: a stale answer from the API server's cache is told apart
  // from a stalled operator.
  auto node_line = [](const node_view& n) {
    std::ostringstream line;
    line << "unschedulable=" << n.unschedulable << " dcm-taint=" << n.dcm_taint
         << " gpus=" << n.gpus << " profile=" << n.label(profile_label)
         << " state=" << n.label(state_label) << " resourceVersion=" << n.resource_version;
    return line.str();
  };
  for (const auto& n : test_nodes()) {
    out << "  node " << n.name << ": " << node_line(n) << "\n";
    if (auto got = get(kube::resources::nodes(), n.name))
      if (auto direct = to_node_view(*got); direct.resource_version != n.resource_version)
        out << "    (a GET shows: " << node_line(direct) << ")\n";
  }
  for (const auto& i : plan_items(plan))
    if (auto got = get(items, i.name)) {
      const auto direct = to_item_view(*got);
      const std::string direct_rv = str(*got, {"metadata", "resourceVersion"});
      if (direct.phase != i.phase || direct.phases.size() != i.phases.size())
        out << "  (a GET shows item " << i.name << " " << direct.phase_or_pending() << " with "
            << direct.phases.size() << " history entries, resourceVersion " << direct_rv << ")\n";
    }
  return out.str();
}

void e2e_cluster::await_default_service_account() {
  BOOST_REQUIRE_MESSAGE(
      eventually([&] { return bool(api.get(kube::resources::service_accounts(), ns, "default")); },
                 30s),
      "no default ServiceAccount in " << ns);
}

void e2e_cluster::create_deployment(const std::string& name, int replicas,
                                    const std::map<std::string, std::string>& node_selector,
                                    int grace_seconds) {
  std::map<std::string, std::optional<std::string>> selector{{"e2e", key}};
  for (const auto& [k, v] : node_selector)
    selector[k] = v;
  const std::string body =
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":)" + quoted(name) +
      R"(},"spec":{"replicas":)" + std::to_string(replicas) +
      R"(,"selector":{"matchLabels":{"app":)" + quoted(name) +
      R"(}},"template":{"metadata":{"labels":{"app":)" + quoted(name) +
      R"(}},"spec":{"automountServiceAccountToken":false,"terminationGracePeriodSeconds":)" +
      std::to_string(grace_seconds) + R"(,"nodeSelector":)" + json_map(selector) +
      R"(,"tolerations":[{"key":"e2e","operator":"Equal","value":)" + quoted(key) +
      R"(,"effect":"NoSchedule"}],)"
      R"("containers":[{"name":"worker","image":"rocm/pytorch:sim",)"
      R"("resources":{"requests":{"amd.com/gpu":"1"},"limits":{"amd.com/gpu":"1"}}}]}}}})";
  auto r = api.create(deployments, ns, body);
  BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().describe()));
}

void e2e_cluster::create_pdb(const std::string& name, const std::string& app, int min_available) {
  auto r =
      api.create(kube::resources::pod_disruption_budgets(), ns,
                 R"({"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":)"
                 R"({"name":)" +
                     quoted(name) + R"(},"spec":{"minAvailable":)" + std::to_string(min_available) +
                     R"(,"selector":{"matchLabels":{"app":)" + quoted(app) + "}}}}");
  BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().describe()));
}

std::vector<std::string> e2e_cluster::dcm_events(const std::string& node_name) {
  std::vector<std::pair<std::string, std::string>> timed;
  for (const auto& e : list_items(api, kube::resources::events(), ns, "")) {
    if (str(e, {"source", "component"}) != "amd-device-config-manager" ||
        str(e, {"source", "host"}) != node_name)
      continue;
    rapidjson::Document m;
    const std::string message = str(e, {"message"});
    m.Parse(message.c_str());
    const std::string profile =
        !m.HasParseError() && m.IsObject() ? kube::string_at(m, "SelectedProfile") : "";
    timed.emplace_back(str(e, {"lastTimestamp"}), str(e, {"reason"}) + " " + profile);
  }
  std::stable_sort(timed.begin(), timed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (const auto& t : timed)
    out.push_back(t.second);
  return out;
}

int e2e_cluster::healthy_pods(const std::string& app) {
  int n = 0;
  for (const auto& p : pods("app=" + app))
    if (p.healthy())
      ++n;
  return n;
}

void expect_same_operator(e2e_cluster& c, pid_t pid) {
  auto& op = c.operator_process();
  BOOST_TEST(op.alive(), "the operator exited: " << op.state());
  BOOST_TEST(op.pid() == pid, "the operator runs as pid " << op.pid() << ", not " << pid);
  const auto instances = c.operator_instances();
  BOOST_TEST(!instances.empty(), "no Event of the operator about this test's objects");
  const std::string mark = "_" + std::to_string(pid) + "_";
  for (const auto& instance : instances)
    BOOST_TEST(instance.find(mark) != std::string::npos,
               "an Event about this test's objects from operator " << instance << ", not pid "
                                                                   << pid);
  BOOST_TEST(instances.size() <= 1u, instances.size() << " operator identities wrote Events");
}

// -- sampler --

sampler::sampler(const e2e_cluster& cluster, std::vector<std::string> plans_to_watch,
                 check_fn check, bool with_pods, std::chrono::milliseconds interval)
    : config_(admin_config()), key_(cluster.key), ns_(cluster.ns),
      plans_(std::move(plans_to_watch)), check_(std::move(check)), with_pods_(with_pods),
      interval_(interval) {
  thread_ = std::thread([this] { run(); });
}

sampler::~sampler() {
  stop();
}

std::vector<std::string> sampler::stop() {
  stopping_ = true;
  if (thread_.joinable())
    thread_.join();
  std::vector<std::string> out;
  for (std::size_t i = 0; i < violations_.size() && i < 20; ++i)
    out.push_back(violations_[i]);
  if (violations_.size() > 20)
    out.push_back("... and " + std::to_string(violations_.size() - 20) + " more");
  return out;
}

void sampler::run() {
  connection c(config_);
  const std::set<std::string> watched(plans_.begin(), plans_.end());
  while (!stopping_) {
    const auto started = std::chrono::steady_clock::now();
    sample s;
    s.at = started;
    bool ok = true;
    // Items first, then nodes: a node seen cordoned after its item was seen is a
    // conservative reading for "unavailable" checks.
    kube::list_options all;
    if (auto list = c.api.list(items, "", all); list.ok()) {
      for (const auto& i : list.value()["items"].GetArray()) {
        auto v = to_item_view(i);
        if (watched.count(v.plan))
          s.items.push_back(v);
      }
    } else {
      ok = false;
    }
    kube::list_options by_label;
    by_label.label_selector = "e2e=" + key_;
    if (auto list = c.api.list(kube::resources::nodes(), "", by_label); list.ok()) {
      for (const auto& n : list.value()["items"].GetArray())
        s.nodes.push_back(to_node_view(n));
    } else {
      ok = false;
    }
    if (with_pods_) {
      kube::list_options workloads;
      workloads.label_selector = not_dcm;
      if (auto list = c.api.list(kube::resources::pods(), ns_, workloads); list.ok()) {
        for (const auto& p : list.value()["items"].GetArray())
          s.pods.push_back(to_pod_view(p));
      } else {
        ok = false;
      }
    }
    if (ok) {
      check_(s, violations_);
      ++samples_;
    }
    const auto next = started + interval_;
    while (!stopping_ && std::chrono::steady_clock::now() < next)
      std::this_thread::sleep_for(10ms);
  }
}

} // namespace gpu_partitioner::e2e
