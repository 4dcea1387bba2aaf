// gpu-partitioner: rolls AMD GPU partition profiles across Kubernetes nodes safely.
#include "actors/io_executor.hpp"
#include "actors/io_router.hpp"
#include "actors/log.hpp"
#include "actors/messages.hpp"
#include "actors/operator_metrics.hpp"
#include "actors/operator_root.hpp"
#include "actors/status_writer.hpp"
#include "actors/watcher.hpp"
#include "kube/leader_election.hpp"
#include "kube/rate_limiter.hpp"
#include "metrics/server.hpp"
#include "protocol/codec/pattern.hpp"
#include "protocol/version.hpp"

#include <caf/all.hpp>

#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

using namespace gpu_partitioner;

namespace {

constexpr const char* usage = R"(Usage: gpu-partitioner [flags]

Rolls AMD GPU partition profiles (PartitioningPlan, infrastructure.silogen.ai/v1alpha1)
across a cluster's GPU nodes: cordon, drain through the Eviction API, taint, hand the
profile to AMD's Device Config Manager, verify, untaint, uncordon, within the plan's
rollout limits.

Flags:
  --kubeconfig PATH          kubeconfig to use (else $KUBECONFIG, in-cluster, ~/.kube/config)
  --dcm-namespace NS         where DCM runs, AMD's GPU operator's or DCM's own chart's
                             (default kube-amd-gpu); each node's DCM pod there says which
                             ConfigMap it reads (its volume at /etc/config-manager)
  --dcm-config NS/NAME       deprecated: the namespace as --dcm-namespace (the name is not
                             used: each node's DCM pod names its ConfigMap)
  --dcm-config-sync SECONDS  how long after a change of DCM's config kubelet has surely
                             delivered it to DCM's mounted file; a node is labelled only
                             then (default 90)
  --dcm-configmaps NAME[,NAME...]
                             the ConfigMaps in --dcm-namespace the operator may write as
                             DCM's config (as its RBAC grants); a node whose DCM pod mounts
                             another fails preflight, naming it (default: any)
  --dcm-retry-seconds SECONDS
                             how long after the profile label DCM may still change the GPUs
                             of a run that failed while DCM retries (its 30 minutes of
                             retries and the attempt under way); the node keeps its taint
                             until then (default 2400)
  --payload-namespaces NS[,NS...]
                             the namespaces profiles' payload ConfigMaps may live in
                             (default: DCM's namespace); whoever may edit a payload
                             decides how nodes are partitioned
  --leader-elect             run leader election; only the leader acts
  --lease-namespace NS       namespace of the leader election Lease (default: the
                             kubeconfig's namespace, in-cluster the pod's)
  --lease-name NAME          name of the Lease (default gpu-partitioner)
  --metrics-addr HOST:PORT   where to serve /metrics (default 127.0.0.1:8080; "0" turns it
                             off); /healthz and /readyz answer there too, but its clients
                             can delay them: point probes at --health-addr
  --health-addr HOST:PORT    where to serve /healthz and /readyz on threads of their own,
                             for the kubelet's probes (default 127.0.0.1:8081; "0" turns
                             it off)
                             In both, port 0 (127.0.0.1:0) takes a port the kernel
                             chooses; the log line "serving ... on HOST:PORT" names it
  --bound-addresses-file FILE
                             once both addresses listen, write where to FILE: a line
                             "metrics HOST:PORT" and one "health HOST:PORT" (none for an
                             address turned off), the port as bound; FILE appears whole
                             (written beside it, then renamed)
  --log-level LEVEL          debug, info, warning or error (default info)
  --api-qps N                requests a second to the API server, on average, over all
                             connections (open watches and the Lease excepted; default
                             50; 0: no limit)
  --api-burst N              requests that may go at once before --api-qps holds them
                             (default 100)
  --help                     print this help and exit
  --version                  print the version and exit
)";

std::atomic<bool> stop_requested{false};
std::atomic<bool> leadership_lost{false};

void on_signal(int) {
  stop_requested = true;
}

struct flags {
  std::string kubeconfig;
  std::string dcm_namespace = "kube-amd-gpu";
  /// --dcm-config as given (deprecated; only its namespace is used).
  std::string dcm_config_flag;
  double dcm_config_sync = 90;
  double dcm_retry_seconds = 2400;
  /// Empty: DCM's namespace only.
  std::set<std::string> payload_namespaces;
  std::set<std::string> dcm_configmaps;
  bool leader_elect = false;
  std::string lease_namespace;
  std::string lease_name = "gpu-partitioner";
  std::string metrics_addr = "127.0.0.1:8080";
  std::string health_addr = "127.0.0.1:8081";
  /// Empty: the addresses listened on are only logged.
  std::string bound_addresses_file;
  std::string log_level = "info";
  /// The client-side rate limit (kube::rate_limiter); 0 qps: none.
  double api_qps = 50;
  int api_burst = 100;
};

// The comma-separated names of `flag`'s `value` into `out`, each checked by `valid`; false
// (said on stderr, naming the flag and the name) on the first that is not `what`.
bool name_list(const std::string& flag, const std::string& value, bool (*valid)(std::string_view),
               const char* what, std::set<std::string>& out) {
  for (std::size_t start = 0; start <= value.size();) {
    const auto comma = std::min(value.find(',', start), value.size());
    const std::string name = value.substr(start, comma - start);
    if (!valid(name)) {
      std::cerr << "gpu-partitioner: " << flag << ": \"" << name << "\" is not " << what << "\n";
      return false;
    }
    out.insert(name);
    start = comma + 1;
  }
  return true;
}

// `flag`'s `value` as a number of seconds from 0 to a day into `out`; false (said on
// stderr) if it is not one.
bool seconds(const std::string& flag, const std::string& value, double& out) {
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || *end != '\0' || !(v >= 0) || v > 86400) {
    std::cerr << "gpu-partitioner: " << flag << ": \"" << value
              << "\" is not a number of seconds from 0 to 86400\n";
    return false;
  }
  out = v;
  return true;
}

// Returns 0 to go on, else the exit code (help, version, bad flags).
int parse(int argc, char** argv, flags& f) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    auto eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    auto next = [&]() -> bool {
      if (!value.empty())
        return true;
      if (i + 1 >= argc) {
        std::cerr << "gpu-partitioner: " << a << " needs a value (see --help)\n";
        return false;
      }
      value = argv[++i];
      return true;
    };
    if (a == "--help" || a == "-h") {
      std::cout << usage;
      return -1;
    }
    if (a == "--version") {
      std::cout << "gpu-partitioner " << gpu_partitioner::version << '\n';
      return -1;
    }
    if (a == "--leader-elect") {
      f.leader_elect = value.empty() || value == "true";
      continue;
    }
    std::string* target = a == "--kubeconfig"             ? &f.kubeconfig
                          : a == "--lease-namespace"      ? &f.lease_namespace
                          : a == "--lease-name"           ? &f.lease_name
                          : a == "--metrics-addr"         ? &f.metrics_addr
                          : a == "--health-addr"          ? &f.health_addr
                          : a == "--bound-addresses-file" ? &f.bound_addresses_file
                          : a == "--log-level"            ? &f.log_level
                                                          : nullptr;
    if (a == "--dcm-config") {
      if (!next())
        return 2;
      auto slash = value.find('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == value.size()) {
        std::cerr << "gpu-partitioner: --dcm-config: \"" << value << "\" is not NAMESPACE/NAME\n";
        return 2;
      }
      f.dcm_namespace = value.substr(0, slash);
      f.dcm_config_flag = value;
      continue;
    }
    if (a == "--dcm-namespace") {
      if (!next())
        return 2;
      if (value.empty() || value.find('/') != std::string::npos) {
        std::cerr << "gpu-partitioner: --dcm-namespace: \"" << value << "\" is not a namespace\n";
        return 2;
      }
      f.dcm_namespace = value;
      continue;
    }
    if (a == "--dcm-configmaps") {
      if (!next() || !name_list(a, value, protocol::codec::is_dns1123_subdomain, "a ConfigMap name",
                                f.dcm_configmaps))
        return 2;
      continue;
    }
    if (a == "--payload-namespaces") {
      if (!next() || !name_list(a, value, protocol::codec::is_dns1123_label, "a namespace name",
                                f.payload_namespaces))
        return 2;
      continue;
    }
    if (a == "--dcm-config-sync" || a == "--dcm-retry-seconds") {
      if (!next() ||
          !seconds(a, value, a == "--dcm-config-sync" ? f.dcm_config_sync : f.dcm_retry_seconds))
        return 2;
      continue;
    }
    if (a == "--api-qps") {
      if (!next())
        return 2;
      char* end = nullptr;
      f.api_qps = std::strtod(value.c_str(), &end);
      if (end == value.c_str() || *end != '\0' || !(f.api_qps >= 0) || f.api_qps > 100000) {
        std::cerr << "gpu-partitioner: --api-qps: \"" << value
                  << "\" is not a number of requests a second from 0 (no limit) to 100000\n";
        return 2;
      }
      continue;
    }
    if (a == "--api-burst") {
      if (!next())
        return 2;
      char* end = nullptr;
      const long burst = std::strtol(value.c_str(), &end, 10);
      if (end == value.c_str() || *end != '\0' || burst < 1 || burst > 100000) {
        std::cerr << "gpu-partitioner: --api-burst: \"" << value
                  << "\" is not a whole number of requests from 1 to 100000\n";
        return 2;
      }
      f.api_burst = static_cast<int>(burst);
      continue;
    }
    if (target == nullptr) {
      std::cerr << "gpu-partitioner: unknown flag '" << argv[i] << "' (see --help)\n";
      return 2;
    }
    if (!next())
      return 2;
    *target = value;
  }
  return 0;
}

// Writes `text` to `path` through a file beside it renamed into place, so that a reader
// polling for `path` never sees it half written. "" when done, else why not.
std::string write_whole(const std::string& path, const std::string& text) {
  const std::string partial = path + ".partial-" + std::to_string(::getpid());
  {
    std::ofstream out(partial, std::ios::trunc);
    out << text;
    out.flush();
    if (!out)
      return "cannot write " + partial + ": " + std::strerror(errno);
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    const std::string error =
        "cannot rename " + partial + " to " + path + ": " + std::strerror(errno);
    std::remove(partial.c_str());
    return error;
  }
  return {};
}

} // namespace

int main(int argc, char** argv) {
  // Two malloc arenas, not glibc's default of eight per core: with some thirty threads
  // (watches, writers, executors) each in an arena of its own, freed memory stays spread
  // over them (docs/performance.md, Memory). MALLOC_ARENA_MAX in the environment still
  // decides, if set.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr)
    mallopt(M_ARENA_MAX, 2);
  flags f;
  if (int rc = parse(argc, argv, f); rc != 0)
    return rc < 0 ? 0 : rc;
  actors::log_level level;
  if (!actors::parse_log_level(f.log_level, level)) {
    std::cerr << "gpu-partitioner: --log-level: \"" << f.log_level
              << "\" is not one of debug, info, warning, error\n";
    return 2;
  }
  actors::set_log_level(level);
  auto connection = kube::default_config(f.kubeconfig);
  if (!connection) {
    std::cerr << "gpu-partitioner: " << connection.error().message << '\n';
    return 2;
  }
  const std::string identity = kube::default_identity();
  // Every request names the replica: the audit log shows who wrote what, and when.
  connection->user_agent =
      std::string("gpu-partitioner/") + gpu_partitioner::version + " (" + identity + ")";
  // One set of credentials for every connection: an exec plugin runs once for all.
  kube::share_credentials(connection.value());
  actors::log_info(
      "gpu-partitioner " + std::string(gpu_partitioner::version) + " starting as " + identity +
      " against " + connection->server + " (" + connection->origin + ")" +
      (connection->proxy_url.empty() ? ""
                                     : " through proxy " + kube::shown_url(connection->proxy_url)) +
      (connection->impersonate.user.empty() ? ""
                                            : " impersonating " + connection->impersonate.user));
  if (connection->insecure_skip_tls_verify)
    actors::log_warning(
        "TLS VERIFICATION IS OFF: " + connection->origin +
        " sets insecure-skip-tls-verify, so the API server's certificate is not checked and "
        "anyone on the path can read and change every request, the credentials included; "
        "give the cluster's certificate-authority instead "
        "(gpu_partitioner_api_tls_verification_disabled is 1)");
  actors::process_metrics().tls_verification_disabled.set(
      {}, connection->insecure_skip_tls_verify ? 1 : 0);

  // One token bucket for every connection made from here on (copies of the configuration
  // share it): together they stay within the limit however many threads send. Events
  // take theirs from a second, smaller one (io_config::event_limiter). A request
  // waits for its token on its sender's thread; every sender is a thread of its own (the
  // io executors, status and Event writers are detached actors, the watch loops plain
  // threads), so no wait holds up the actors' scheduler.
  std::shared_ptr<kube::rate_limiter> event_limiter;
  if (f.api_qps > 0) {
    const kube::rate_limit all{f.api_qps, f.api_burst};
    const auto events = kube::events_share(all);
    connection->limiter = std::make_shared<kube::rate_limiter>(all);
    event_limiter = std::make_shared<kube::rate_limiter>(events);
    for (const auto& limiter : {connection->limiter, event_limiter}) {
      limiter->set_observer(actors::process_metrics().rate_limiter_observer());
      limiter->set_depth_observer(actors::process_metrics().rate_limiter_depth());
    }
    std::ostringstream limit;
    limit << "requests to the API server limited to " << f.api_qps << " a second, bursts of "
          << f.api_burst << " (--api-qps, --api-burst); Events beside them to " << events.qps
          << " a second, bursts of " << events.burst;
    actors::log_info(limit.str());
  } else {
    actors::log_info("requests to the API server are not rate limited (--api-qps 0)");
  }

  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);

  // Deleting pods is granted only for the plans that need it (the chart's
  // rbac.podDelete): the nodes of such a plan fail preflight, naming the grant, instead of
  // draining halfway. Asked once; an unanswered question is taken as allowed, and a
  // refused delete then fails as any refused write does.
  bool pods_deletable = true;
  {
    kube::http_client http(connection.value(), kube::credentials_for(connection.value()));
    kube::client api(http);
    if (auto may = api.may("delete", "", "pods"); may.ok()) {
      pods_deletable = may.value();
      if (!pods_deletable)
        actors::log_info("this operator may not delete pods: plans with evictionKind Delete, "
                         "respectPDB false or cordon Devices are refused in preflight");
    } else {
      actors::log_warning("could not ask whether pods may be deleted (" + may.error().describe() +
                          "); assuming they may");
    }
  }

  if (!f.dcm_config_flag.empty())
    actors::log_warning("--dcm-config " + f.dcm_config_flag + ": only its namespace is used; " +
                        "each node's DCM pod says which ConfigMap DCM reads there " +
                        "(use --dcm-namespace)");

  // Leadership: unknown until the elector's first decision (always leading without it).
  std::atomic<int> leadership{f.leader_elect ? 0 : 1}; // 0 unknown, 1 leading, 2 standby
  auto& m = actors::process_metrics();
  metrics::server endpoint(m.registry, [&]() -> std::string {
    if (leadership == 0)
      return "leadership not known yet";
    if (leadership == 1 && !m.synced)
      return "caches not synced yet";
    return {};
  });
  // The addresses as bound (a port 0 replaced by the kernel's choice), for
  // --bound-addresses-file.
  std::string bound;
  if (f.metrics_addr != "0") {
    const auto started = endpoint.start(f.metrics_addr, metrics::routes::metrics_and_probes);
    if (!started.error.empty()) {
      std::cerr << "gpu-partitioner: --metrics-addr: " << started.error << '\n';
      return 2;
    }
    actors::log_info("serving /metrics (and /healthz, /readyz) on " + started.address);
    bound += "metrics " + started.address + "\n";
  }
  if (f.health_addr != "0") {
    const auto started = endpoint.start(f.health_addr, metrics::routes::probes);
    if (!started.error.empty()) {
      std::cerr << "gpu-partitioner: --health-addr: " << started.error
                << (f.health_addr == f.metrics_addr ? " (it is --metrics-addr too)" : "") << '\n';
      return 2;
    }
    actors::log_info("serving /healthz and /readyz on " + started.address);
    bound += "health " + started.address + "\n";
  }
  if (!f.bound_addresses_file.empty()) {
    if (auto error = write_whole(f.bound_addresses_file, bound); !error.empty()) {
      std::cerr << "gpu-partitioner: --bound-addresses-file: " << error << '\n';
      return 2;
    }
  }

  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  // Idle workers wait on a condition variable instead of polling (work stealing polls
  // every 50 us when idle: most of an idle operator's CPU).
  cfg.set("scheduler.policy", caf::atom("sharing"));
  cfg.set("logger.verbosity", caf::atom("quiet"));
  caf::actor_system system{cfg};

  // The elector exists before the writers: they are given its write gate.
  std::unique_ptr<kube::http_client> lease_http;
  std::unique_ptr<kube::client> lease_api;
  std::unique_ptr<kube::leader_elector> elector;
  if (f.leader_elect) {
    kube::election_config ec;
    ec.lease_namespace =
        f.lease_namespace.empty() ? connection->default_namespace : f.lease_namespace;
    ec.lease_name = f.lease_name;
    ec.identity = identity;
    // The Lease's requests take no token: a renewal (one every few seconds) must never
    // queue behind the controllers' writes while the lease runs out.
    kube::connection_config lease_connection = connection.value();
    lease_connection.limiter = nullptr;
    lease_http = std::make_unique<kube::http_client>(lease_connection,
                                                     kube::credentials_for(lease_connection));
    lease_http->set_observer(m.api_observer());
    lease_api = std::make_unique<kube::client>(*lease_http);
    elector = std::make_unique<kube::leader_elector>(*lease_api, ec);
  }

  actors::io_config io;
  io.connection = connection.value();
  io.identity = identity;
  io.event_limiter = event_limiter;
  // Every write of the controllers is refused once this replica's lease may have run out
  // by its own clock: a leader that was frozen (or cut off) past its renew deadline must
  // not write between waking up and learning that another replica leads.
  if (elector)
    io.connection.may_write = elector->write_gate();
  auto writer = system.spawn(actors::status_writer, io);
  // Eight connections for node writes, sixteen for evictions and two for the supervisors'
  // writes of NodePartitionings (io_router), sized for a wave of fifty nodes: its nodes
  // answer DCM at about the same moment, and each untaint should find a free connection;
  // an eviction may take the API server half a second or more (its retry of a budget
  // update that conflicted with the disruption controller's), and such a wave sends about
  // 150. More connections do not make a wave faster on a busy API server: each eviction
  // takes it longer, the operator's other requests wait behind them in Priority and
  // Fairness's queues, and the kubelets' deletions lag (docs/performance.md: with 64, a
  // node's evictions ended 2.7 s sooner, the reactions' p99 went from 1.0 to 5.7 s, and
  // the wall time was no shorter). And a plan's first thousand creates must not queue
  // ahead of its first cordon. Each request goes to an executor with nothing to do
  // (actors::io_pool).
  auto pool = [&](std::size_t connections, const std::string& name, kube::request_lane lane) {
    actors::io_config c = io;
    c.connection.lane = lane;
    std::vector<actors::io_actor> executors;
    for (std::size_t i = 0; i < connections; ++i)
      executors.push_back(system.spawn<caf::detached>(actors::io_executor, c));
    return system.spawn(actors::io_pool, std::move(executors), name);
  };
  auto router = system.spawn(actors::io_router, pool(8, "writes", kube::request_lane::rollout),
                             pool(16, "evictions", kube::request_lane::rollout),
                             pool(2, "items", kube::request_lane::items));

  actors::operator_root_actor root;
  actors::watcher_actor watcher;
  auto start_acting = [&] {
    actors::operator_settings settings;
    settings.dcm_namespace = f.dcm_namespace;
    settings.payload_namespaces = f.payload_namespaces.empty()
                                      ? std::set<std::string>{f.dcm_namespace}
                                      : f.payload_namespaces;
    settings.pods_deletable = pods_deletable;
    settings.dcm_configmaps = f.dcm_configmaps;
    settings.dcm_retry_bound =
        std::chrono::milliseconds(static_cast<long long>(f.dcm_retry_seconds * 1000));
    settings.dcm_config_sync =
        std::chrono::milliseconds(static_cast<long long>(f.dcm_config_sync * 1000));
    settings.identity = identity;
    root = system.spawn(actors::operator_root, settings, router, writer);
    watcher = system.spawn(actors::watcher,
                           actors::watcher_config{connection.value(), root, f.dcm_namespace,
                                                  settings.payload_namespaces});
  };

  std::atomic<bool> elector_stop{false};
  std::thread elector_thread;
  std::atomic<bool> leading{false};
  if (elector) {
    const auto& ec = elector->config();
    actors::log_info("waiting to lead (Lease " + ec.lease_namespace + "/" + ec.lease_name + ")");
    elector_thread = std::thread([&] {
      elector->run(
          elector_stop,
          [&] {
            leading = true;
            leadership = 1;
            m.leader.set({}, 1);
          },
          [&] {
            m.leader.set({}, 0);
            if (!elector_stop)
              leadership_lost = true;
          });
    });
  } else {
    leading = true;
    m.leader.set({}, 1);
  }

  bool acting = false;
  int rounds = 0;
  while (!stop_requested && !leadership_lost) {
    // Give freed memory back every ten seconds (the peaks of decoding lists and bursts).
    if (++rounds % 100 == 0)
      malloc_trim(0);
    if (leading && !acting) {
      actors::log_info("leading: starting the controllers");
      start_acting();
      acting = true;
    }
    // A replica that read the lease and does not lead is a known standby.
    if (f.leader_elect && !leading && leadership == 0 && elector && elector->observed())
      leadership = 2;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  endpoint.stop();
  if (leadership_lost)
    actors::log_error("lost leadership: stopping so that only the new leader acts");
  else
    actors::log_info("stopping");
  if (watcher)
    caf::anon_send_exit(watcher, caf::exit_reason::user_shutdown);
  if (root)
    caf::anon_send_exit(root, caf::exit_reason::user_shutdown);
  // The statuses still pending are written before the writer goes (for at most 5 s; a
  // replica that lost its leadership is refused every write, and gives up at once).
  {
    caf::scoped_actor waiter{system};
    waiter->request(writer, std::chrono::seconds(5), actors::flush_atom_v, actors::stop_atom_v)
        .receive([](bool) {}, [](caf::error&) {});
  }
  caf::anon_send_exit(writer, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(router, caf::exit_reason::user_shutdown);
  elector_stop = true;
  if (elector_thread.joinable())
    elector_thread.join();
  actors::log_info("stopped");
  return leadership_lost ? 1 : 0;
}
