// kubectl-partitioning: a kubectl plugin (kubectl finds it on PATH as
// `kubectl partitioning ...`). It reads plans and items with the operator's own client
// and codecs, and writes only what a user would: spec.paused of a plan, the retry
// annotation of a Failed item, and the promote-canary annotation of a plan whose canary
// awaits promotion. Like kubectl, it exits 1 on any error (usage, kubeconfig, API) and 0
// otherwise, a watch ended by Ctrl-C or SIGTERM included.
#include "actors/crd_resources.hpp"
#include "cli/object_output.hpp"
#include "cli/partitioning_cli.hpp"
#include "controller/item_name.hpp"
#include "controller/rollout_gate.hpp"
#include "kube/client.hpp"
#include "kube/config.hpp"
#include "kube/credentials.hpp"
#include "kube/http_client.hpp"
#include "protocol/json.hpp"
#include "protocol/printable.hpp"
#include "protocol/version.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <thread>
#include <unistd.h>

namespace cli = gpu_partitioner::cli;
namespace kube = gpu_partitioner::kube;
namespace protocol = gpu_partitioner::protocol;
namespace actors = gpu_partitioner::actors;
namespace controller = gpu_partitioner::controller;

namespace {

const kube::resource& plans = actors::plans_resource;
const kube::resource& items = actors::items_resource;

/// Errors quote the API server and the objects: printed escaped, as the tables are.
int fail(const std::string& message) {
  std::cerr << "error: " << protocol::printable(message) << "\n";
  return 1;
}

/// The connection kubectl would make with these flags: its kubeconfig order and merge,
/// --context/--cluster/--user, and --as/--as-group/--as-uid replacing the kubeconfig's
/// impersonation.
kube::result<kube::connection_config> connection_for(const cli::command& c) {
  auto config = kube::kubectl_config(c.kubeconfig, {c.context, c.cluster, c.user},
                                     [](const char* name) { return std::getenv(name); });
  if (!config)
    return config;
  if (!c.as.empty())
    config.value().impersonate = kube::impersonation{c.as, c.as_groups, c.as_uid, {}};
  config.value().user_agent = std::string("kubectl-partitioning/") + gpu_partitioner::version;
  return config;
}

/// What one read of the objects gave: the answers as the server sent them, and the
/// objects decoded for the tables.
template <class T>
struct fetched {
  rapidjson::Document raw;
  std::vector<T> objects;
};

template <class T>
kube::result<fetched<T>> list_all(kube::client& client, const kube::resource& r,
                                  const kube::list_options& options = {}) {
  auto list = client.list(r, {}, options);
  if (!list)
    return list.error();
  fetched<T> out;
  out.raw = std::move(list).value();
  const auto* array = kube::find_path(out.raw, {"items"});
  if (array == nullptr || !array->IsArray())
    return out;
  for (const auto& v : array->GetArray()) {
    auto decoded = protocol::from_json_value<T>(v);
    if (decoded)
      out.objects.push_back(std::move(decoded).value());
    else
      std::cerr << "warning: "
                << protocol::printable(r.plural + " " +
                                       kube::string_at(kube::find_path(v, {"metadata"}), "name") +
                                       " could not be read: " + decoded.error().message())
                << "\n";
  }
  return out;
}

kube::result<protocol::partitioning_plan> get_plan(kube::client& client, const std::string& name,
                                                   rapidjson::Document* raw = nullptr) {
  auto doc = client.get(plans, {}, name);
  if (!doc)
    return doc.error();
  auto plan = protocol::from_json_value<protocol::partitioning_plan>(doc.value());
  if (!plan)
    return kube::make_error(kube::error_kind::decode,
                            "plan " + name + " could not be read: " + plan.error().message());
  if (raw != nullptr)
    *raw = std::move(doc).value();
  return std::move(plan).value();
}

std::string api_version_of(const kube::resource& r) {
  return r.group + "/" + r.version;
}

// -- watching --

std::atomic<bool> stopping{false};

extern "C" void on_stop_signal(int) {
  stopping = true;
}

/// Ctrl-C and SIGTERM end a watch with exit 0, as they end kubectl's.
void stop_on_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

/// How often a watch reads the objects again.
constexpr auto watch_period = std::chrono::seconds(2);

/// Waits for the next read; false once a signal asked to stop.
bool wait_for_next_read() {
  const auto until = std::chrono::steady_clock::now() + watch_period;
  while (std::chrono::steady_clock::now() < until) {
    if (stopping)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return !stopping;
}

/// The objects of one read, with the resourceVersion each had when last printed: a
/// watch prints again only when one of them changed (or is new).
class version_memory {
public:
  /// Whether `o` is new or changed since the last call with it; remembers it.
  bool changed(const cli::api_object& o) {
    const std::string key =
        o.kind + "/" + kube::string_at(kube::find_path(*o.value, {"metadata"}), "name");
    const std::string rv =
        kube::string_at(kube::find_path(*o.value, {"metadata"}), "resourceVersion");
    auto [it, inserted] = seen_.emplace(key, rv);
    if (inserted)
      return true;
    if (it->second == rv)
      return false;
    it->second = rv;
    return true;
  }

private:
  std::map<std::string, std::string> seen_;
};

/// Prints one read: a table, or the objects. Without --watch, -o json|yaml prints one v1
/// List; with it, each object that changed, one after another, as kubectl get -w does.
class printer {
public:
  explicit printer(const cli::command& c) : c_(c), tty_(::isatty(STDOUT_FILENO) != 0) {}

  void print(const std::vector<cli::api_object>& objects, const std::string& table) {
    std::vector<cli::api_object> changed;
    for (const auto& o : objects)
      if (versions_.changed(o))
        changed.push_back(o);
    if (!first_ && changed.empty())
      return;
    switch (c_.output) {
    case cli::output_format::text:
    case cli::output_format::wide:
      // A terminal shows the latest state in place, as `get rollout --watch` does; a pipe
      // or a file gets each state after the last.
      if (c_.watch && tty_)
        std::cout << "\033[H\033[2J";
      else if (!first_)
        std::cout << "\n";
      std::cout << table;
      break;
    case cli::output_format::json:
    case cli::output_format::yaml:
      if (!c_.watch) {
        emit(cli::list_of(objects));
      } else {
        for (const auto& o : changed)
          emit(cli::object_of(o));
      }
      break;
    }
    std::cout.flush();
    first_ = false;
  }

private:
  void emit(const rapidjson::Value& v) {
    if (c_.output == cli::output_format::json) {
      std::cout << cli::json_text(v);
    } else {
      if (documents_++ > 0)
        std::cout << "---\n";
      std::cout << cli::yaml_text(v);
    }
  }

  const cli::command& c_;
  const bool tty_;
  bool first_ = true;
  int documents_ = 0;
  version_memory versions_;
};

int show_plans(const cli::command& c, kube::client& client) {
  printer out(c);
  const bool wide = c.output == cli::output_format::wide;
  do {
    auto all = list_all<protocol::partitioning_plan>(client, plans);
    if (!all)
      return fail(all.error().describe());
    std::vector<cli::api_object> objects;
    if (const auto* items = kube::find_path(all.value().raw, {"items"}); items && items->IsArray())
      for (const auto& v : items->GetArray())
        objects.push_back({&v, api_version_of(plans), "PartitioningPlan"});
    out.print(objects, cli::render_plans(all.value().objects, protocol::wall_clock::now(), wide));
  } while (c.watch && wait_for_next_read());
  return 0;
}

int show_status(const cli::command& c, kube::client& client) {
  printer out(c);
  const bool wide = c.output == cli::output_format::wide;
  // A watch reads every NodePartitioning once; when each of the plan's carries the plan
  // label, later reads ask for those alone (a plan among thousands of items). Items an
  // operator before the labels made, or a plan name no label value holds, keep it reading
  // all.
  kube::list_options which;
  while (true) {
    rapidjson::Document raw_plan;
    auto plan = get_plan(client, c.plan, &raw_plan);
    if (!plan)
      return fail(plan.error().describe());
    auto all = list_all<protocol::node_partitioning>(client, items, which);
    if (!all)
      return fail(all.error().describe());
    const auto mine = cli::items_of_plan(plan.value(), all.value().objects);
    const auto labels = controller::item_labels_of(c.plan, "");
    if (const auto label = labels.find(controller::item_plan_label);
        label != labels.end() &&
        std::all_of(mine.begin(), mine.end(), [&](const protocol::node_partitioning& item) {
          auto it = item.metadata.labels.find(label->first);
          return it != item.metadata.labels.end() && it->second == label->second;
        }))
      which.label_selector = label->first + "=" + label->second;
    else
      which.label_selector.clear();
    // The plan first, then its items in rollout order, as the server returned them.
    std::map<std::string, const rapidjson::Value*> raw_items;
    if (const auto* list = kube::find_path(all.value().raw, {"items"}); list && list->IsArray())
      for (const auto& v : list->GetArray())
        raw_items.emplace(kube::string_at(kube::find_path(v, {"metadata"}), "name"), &v);
    std::vector<cli::api_object> objects{{&raw_plan, api_version_of(plans), "PartitioningPlan"}};
    for (const auto& item : mine)
      if (auto it = raw_items.find(item.metadata.name); it != raw_items.end())
        objects.push_back({it->second, api_version_of(items), "NodePartitioning"});
    out.print(objects, cli::render_status(plan.value(), mine, protocol::wall_clock::now(),
                                          c.all_nodes, wide));
    if (!c.watch || cli::watch_is_over(plan.value()) || !wait_for_next_read())
      return 0;
  }
}

int run(const cli::command& c, kube::client& client) {
  auto now = protocol::wall_clock::now();
  switch (c.kind) {
  case cli::command_kind::list:
    return show_plans(c, client);
  case cli::command_kind::status:
    return show_status(c, client);
  case cli::command_kind::pause:
  case cli::command_kind::resume: {
    bool paused = c.kind == cli::command_kind::pause;
    auto done = client.patch(plans, {}, c.plan, kube::patch_type::merge, cli::pause_patch(paused),
                             {"kubectl-partitioning", false, {}});
    if (!done)
      return fail(done.error().describe());
    std::cout << "partitioningplan/" << c.plan << (paused ? " paused" : " resumed") << "\n";
    return 0;
  }
  case cli::command_kind::retry: {
    auto plan = get_plan(client, c.plan);
    if (!plan)
      return fail(plan.error().describe());
    // Found by plan and node: its name is <plan>-<node> unless another object held that.
    auto all = list_all<protocol::node_partitioning>(client, items);
    if (!all)
      return fail(all.error().describe());
    auto item = cli::item_of_node(plan.value(), all.value().objects, c.node);
    if (!item)
      return fail("plan " + c.plan + " has no NodePartitioning for node " + c.node);
    const std::string name = item->metadata.name;
    if (auto refusal = cli::retry_refusal(*item))
      return fail("not retrying node " + c.node + " of plan " + c.plan + ": " + *refusal);
    auto done = client.patch(items, {}, name, kube::patch_type::merge, cli::retry_patch(now),
                             {"kubectl-partitioning", false, {}});
    if (!done)
      return fail(done.error().describe());
    std::cout << "nodepartitioning/" << name << " will be retried\n";
    if (auto note = cli::retry_note(*item, now))
      std::cout << "note: " << *note << "\n";
    return 0;
  }
  case cli::command_kind::promote: {
    auto plan = get_plan(client, c.plan);
    if (!plan)
      return fail(plan.error().describe());
    if (auto refusal = cli::promote_refusal(plan.value()))
      return fail("not promoting the canary of plan " + c.plan + ": " + *refusal);
    const auto& canary = *plan.value().status.canary;
    const std::string key = controller::promotion_of(canary.key, canary.generation);
    auto done = client.patch(plans, {}, c.plan, kube::patch_type::merge, cli::promote_patch(key),
                             {"kubectl-partitioning", false, {}});
    if (!done)
      return fail(done.error().describe());
    std::cout << "partitioningplan/" << c.plan << " annotated "
              << protocol::promote_canary_annotation << "=" << protocol::printable(key)
              << ": its canary is promoted and its other nodes may start\n";
    return 0;
  }
  case cli::command_kind::help:
  case cli::command_kind::version:
    break;
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = cli::parse_arguments(args);
  if (auto* error = std::get_if<cli::usage_error>(&parsed)) {
    // kubectl's: the error, a pointer to the help, exit 1 (cmdutil.DefaultErrorExitCode).
    std::cerr << "error: " << protocol::printable(error->message) << "\n"
              << cli::usage_hint(error->command) << "\n";
    return 1;
  }
  const auto& c = std::get<cli::command>(parsed);
  if (c.kind == cli::command_kind::help) {
    std::cout << (c.help_of ? cli::usage_of(*c.help_of) : cli::usage());
    return 0;
  }
  if (c.kind == cli::command_kind::version) {
    std::cout << "kubectl-partitioning " << gpu_partitioner::version << "\n";
    return 0;
  }
  auto connection = connection_for(c);
  if (!connection)
    return fail(connection.error().describe());
  const auto& config = connection.value();
  if (c.verbosity >= 6)
    std::cerr << cli::log_line(protocol::wall_clock::now(), ::getpid(),
                               "Config loaded from " + config.origin)
              << "\n";
  // A request that ran out of --request-timeout is not tried again: the flag bounds how
  // long the command waits for each answer, as kubectl's does.
  kube::retry_policy policy;
  if (c.request_timeout)
    policy.max_attempts = 1;
  kube::http_client http(config, kube::credentials_for(config), policy);
  if (c.request_timeout)
    http.set_request_timeout(*c.request_timeout);
  if (c.verbosity >= 6)
    http.set_observer([server = config.server](const kube::request_record& r) {
      std::cerr << cli::request_log_line(protocol::wall_clock::now(), ::getpid(),
                                         kube::to_string(r.method), server + r.path, r.code,
                                         r.latency)
                << "\n";
    });
  kube::client client(http);
  if (c.watch)
    stop_on_signals();
  return run(c, client);
}
