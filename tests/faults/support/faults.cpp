#include "tests/faults/support/faults.hpp"

#include "kube/client.hpp"
#include "kube/config.hpp"
#include "kube/credentials.hpp"
#include "kube/http_client.hpp"

#include <boost/test/unit_test.hpp>

#include <rapidjson/document.h>

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
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

// -- the audit log --

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

audit_log::audit_log() : path_(cluster_dir() + "/logs/audit.log") {
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
