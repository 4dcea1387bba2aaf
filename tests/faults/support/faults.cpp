#include "tests/faults/support/faults.hpp"

#include "kube/client.hpp"
#include "kube/config.hpp"
#include "kube/credentials.hpp"
#include "kube/http_client.hpp"

#include <boost/test/unit_test.hpp>

#include <rapidjson/document.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gpu_partitioner::faults {

using namespace std::chrono_literals;

long long env_number(const char* name, long long fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0')
    return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  return end != nullptr && *end == '\0' ? n : fallback;
}

bool cluster_request(const std::string& words) {
  const char* ctl = std::getenv("GPU_PARTITIONER_CLUSTER_CTL");
  if (ctl == nullptr || *ctl == '\0')
    BOOST_FAIL("GPU_PARTITIONER_CLUSTER_CTL is not set: run the fault suite through tools/test "
               "or tools/faults");
  const std::string command = std::string(ctl) + " " + words + " >&2";
  return std::system(command.c_str()) == 0;
}

namespace {

std::string cluster_dir() {
  const char* dir = std::getenv("GPU_PARTITIONER_CLUSTER_DIR");
  if (dir == nullptr || *dir == '\0')
    BOOST_FAIL("GPU_PARTITIONER_CLUSTER_DIR is not set: run the fault suite through tools/test "
               "or tools/faults");
  return dir;
}

} // namespace

pid_t component_pid(const std::string& component) {
  std::ifstream in(cluster_dir() + "/run/" + component + ".pid");
  long pid = -1;
  if (!(in >> pid))
    return -1;
  return static_cast<pid_t>(pid);
}

// -- node history --

node_changes count_changes(const std::vector<node_state>& states) {
  node_changes c;
  for (std::size_t i = 1; i < states.size(); ++i) {
    const auto& a = states[i - 1];
    const auto& b = states[i];
    if (!a.exists || !b.exists)
      continue;
    c.cordons += !a.cordoned && b.cordoned;
    c.uncordons += a.cordoned && !b.cordoned;
    c.taints += !a.tainted && b.tainted;
    c.untaints += a.tainted && !b.tainted;
    c.relabels += !b.profile.empty() && b.profile != a.profile;
  }
  return c;
}

node_history::node_history(const std::string& label_selector) : selector_(label_selector) {
  const char* path = std::getenv("KUBECONFIG");
  BOOST_REQUIRE_MESSAGE(path != nullptr, "KUBECONFIG is not set");
  auto config = kube::load_kubeconfig(path);
  BOOST_REQUIRE_MESSAGE(config.ok(), (config.ok() ? "" : config.error().message));
  thread_ = std::thread([this, c = config.value()] {
    kube::http_client http(c, std::make_shared<kube::credentials>(c));
    kube::client api(http);
    kube::list_watch_options o;
    o.what = kube::resources::nodes();
    o.label_selector = selector_;
    o.idle_timeout = 20s;
    kube::list_watch loop(api, o, *this);
    loop.run(stop_);
  });
}

node_history::~node_history() {
  stop_ = true;
  if (thread_.joinable())
    thread_.join();
}

std::map<std::string, std::vector<node_state>> node_history::states() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return states_;
}

void node_history::on_change(const kube::watch_delivery& change) {
  node_state s;
  if (change.type == kube::event_type::deleted || change.object == nullptr) {
    s.exists = false;
  } else {
    const auto& n = *change.object;
    if (const auto* u = kube::find_path(n, {"spec", "unschedulable"}); u && u->IsBool())
      s.cordoned = u->GetBool();
    if (const auto* taints = kube::find_path(n, {"spec", "taints"}); taints && taints->IsArray())
      for (const auto& t : taints->GetArray())
        if (kube::string_at(t, "key") == "amd-dcm" && kube::string_at(t, "effect") == "NoExecute")
          s.tainted = true;
    if (const auto* l =
            kube::find_path(n, {"metadata", "labels", "dcm.amd.com/gpu-config-profile"});
        l && l->IsString())
      s.profile = l->GetString();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto& seen = states_[change.key.name];
  if (seen.empty() || !(seen.back() == s))
    seen.push_back(s);
}

void node_history::on_restart(const std::string&, bool) {
  ++restarts_;
}

// -- the operator process --

std::string http_get(int port, const std::string& path) {
  const auto r = test_support::http_get(port, path, 5);
  return r.code == 200 ? r.body : std::string();
}

double metric_sum(const std::string& exposition, const std::string& name,
                  const std::map<std::string, std::string>& labels) {
  double sum = 0;
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind(name, 0) != 0)
      continue;
    const char after = line.size() > name.size() ? line[name.size()] : '\0';
    if (after != '{' && after != ' ')
      continue;
    bool all = true;
    for (const auto& [k, v] : labels)
      all = all && line.find(k + "=\"" + v + "\"") != std::string::npos;
    if (!all)
      continue;
    const auto space = line.rfind(' ');
    sum += std::strtod(line.c_str() + space + 1, nullptr);
  }
  return sum;
}

long long rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::atoll(line.c_str() + 6);
  return -1;
}

std::string seconds_text(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", s);
  return b;
}

} // namespace gpu_partitioner::faults
