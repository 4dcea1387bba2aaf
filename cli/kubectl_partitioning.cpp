// kubectl-partitioning: a kubectl plugin (kubectl finds it on PATH as
// `kubectl partitioning ...`). It reads plans and items with the operator's own client
// and codecs, and writes only what a user would: spec.paused of a plan, the retry
// annotation of a Failed item, and the promote-canary annotation of a plan whose canary
// awaits promotion.
#include "actors/crd_resources.hpp"
#include "cli/partitioning_cli.hpp"
#include "controller/rollout_gate.hpp"
#include "kube/client.hpp"
#include "kube/config.hpp"
#include "kube/credentials.hpp"
#include "kube/http_client.hpp"
#include "protocol/json.hpp"
#include "protocol/printable.hpp"
#include "protocol/version.hpp"

#include <cstdlib>
#include <iostream>
#include <memory>

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

kube::result<kube::connection_config> connection_for(const cli::command& c) {
  if (c.context.empty())
    return kube::default_config(c.kubeconfig);
  // A context names an entry of a kubeconfig file: the flag's, else $KUBECONFIG's first
  // existing file, else ~/.kube/config.
  std::string path = c.kubeconfig;
  if (path.empty()) {
    if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
      std::string list = env;
      std::size_t start = 0;
      while (start <= list.size()) {
        auto end = list.find(':', start);
        std::string candidate = list.substr(start, end - start);
        if (!candidate.empty() && kube::read_file(candidate)) {
          path = candidate;
          break;
        }
        if (end == std::string::npos)
          break;
        start = end + 1;
      }
    }
    if (path.empty()) {
      const char* home = std::getenv("HOME");
      path = std::string(home ? home : "") + "/.kube/config";
    }
  }
  return kube::load_kubeconfig(path, c.context);
}

template <class T>
kube::result<std::vector<T>> list_all(kube::client& client, const kube::resource& r) {
  auto list = client.list(r, {});
  if (!list)
    return list.error();
  std::vector<T> out;
  const auto* array = kube::find_path(list.value(), {"items"});
  if (array == nullptr || !array->IsArray())
    return out;
  for (const auto& v : array->GetArray()) {
    auto decoded = protocol::from_json_value<T>(v);
    if (decoded)
      out.push_back(std::move(decoded).value());
    else
      std::cerr << "warning: "
                << protocol::printable(r.plural + " " +
                                       kube::string_at(kube::find_path(v, {"metadata"}), "name") +
                                       " could not be read: " + decoded.error().message())
                << "\n";
  }
  return out;
}

kube::result<protocol::partitioning_plan> get_plan(kube::client& client, const std::string& name) {
  auto doc = client.get(plans, {}, name);
  if (!doc)
    return doc.error();
  auto plan = protocol::from_json_value<protocol::partitioning_plan>(doc.value());
  if (!plan)
    return kube::make_error(kube::error_kind::decode,
                            "plan " + name + " could not be read: " + plan.error().message());
  return std::move(plan).value();
}

int run(const cli::command& c, kube::client& client) {
  auto now = protocol::wall_clock::now();
  switch (c.kind) {
  case cli::command_kind::list: {
    auto all = list_all<protocol::partitioning_plan>(client, plans);
    if (!all)
      return fail(all.error().describe());
    std::cout << cli::render_plans(all.value(), now);
    return 0;
  }
  case cli::command_kind::status: {
    auto plan = get_plan(client, c.plan);
    if (!plan)
      return fail(plan.error().describe());
    auto all = list_all<protocol::node_partitioning>(client, items);
    if (!all)
      return fail(all.error().describe());
    std::cout << cli::render_status(plan.value(), cli::items_of_plan(plan.value(), all.value()),
                                    now, c.all_nodes);
    return 0;
  }
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
    auto item = cli::item_of_node(plan.value(), all.value(), c.node);
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
    std::cerr << "error: " << error->message << "\n\n" << cli::usage();
    return 2;
  }
  const auto& c = std::get<cli::command>(parsed);
  if (c.kind == cli::command_kind::help) {
    std::cout << cli::usage();
    return 0;
  }
  if (c.kind == cli::command_kind::version) {
    std::cout << "kubectl-partitioning " << gpu_partitioner::version << "\n";
    return 0;
  }
  auto connection = connection_for(c);
  if (!connection)
    return fail(connection.error().describe());
  kube::http_client http(connection.value(),
                         std::make_shared<kube::credentials>(connection.value()));
  kube::client client(http);
  return run(c, client);
}
