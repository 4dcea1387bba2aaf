// The Helm chart installed into the test cluster, and the operator binary run out of
// cluster as the chart's ServiceAccount (a TokenRequest token, `kubectl create token`),
// with the arguments of the chart's Deployment: the seed's plan completes over simulated
// MI300X nodes (gpu-sim) under exactly the chart's RBAC, the API server's audit log shows
// no request of that account refused, and writes outside the RBAC are refused.
//
// The chart's pods are kept Pending here by a node selector and the out-of-cluster
// operator stands in for them, so this runs in every `bazel test` without an image or a
// kubelet; tests/node/helm_pod_test.sh runs the chart's real pods on a kubelet node. The
// operator acts on every plan in the cluster: the target runs alone ("exclusive").
#include "tests/e2e/support/e2e.hpp"
#include "tests/helm/helm_support.hpp"

#include <boost/test/unit_test.hpp>

#include <rapidjson/document.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

using namespace gpu_partitioner;
using namespace gpu_partitioner::e2e;
using namespace gpu_partitioner::helm_test;
using namespace std::chrono_literals;
namespace utf = boost::unit_test;
namespace fs = std::filesystem;

#define HELM_NOTE(what)                                                                            \
  do {                                                                                             \
    std::ostringstream helm_note_;                                                                 \
    helm_note_ << what;                                                                            \
    std::cerr << "helm: " << helm_note_.str() << std::endl;                                        \
  } while (false)

namespace {

using clock_type = std::chrono::steady_clock;

std::string temp_path(const std::string& name) {
  const char* t = std::getenv("TEST_TMPDIR");
  return (t != nullptr && *t != '\0' ? std::string(t) : fs::temp_directory_path().string()) + "/" +
         name;
}

// -- the API server's audit log (tools/cluster: JSON lines under logs/audit.log) --

std::string audit_log_path() {
  const char* dir = std::getenv("GPU_PARTITIONER_CLUSTER_DIR");
  if (dir == nullptr || *dir == '\0')
    BOOST_FAIL("GPU_PARTITIONER_CLUSTER_DIR is not set: run through tools/test, or with "
               "--test_env=GPU_PARTITIONER_CLUSTER_DIR from `tools/cluster env`");
  return std::string(dir) + "/logs/audit.log";
}

struct audit_entry {
  std::string id;
  std::string user;
  std::string agent;
  std::string verb;
  std::string resource; // group/resource[/subresource]
  std::string ns;
  std::string name;
  int code = 0;
  std::string decision;
  std::string describe() const {
    return verb + " " + resource + (ns.empty() ? "" : " in " + ns) +
           (name.empty() ? "" : " (" + name + ")") + " -> " + std::to_string(code) + " [" + agent +
           "]";
  }
};

/// Entries of `user` written after byte `from`, one per request (the last stage logged).
std::vector<audit_entry> audit_entries(std::uintmax_t from, const std::string& user) {
  std::ifstream in(audit_log_path());
  in.seekg(static_cast<std::streamoff>(from));
  std::vector<audit_entry> out;
  std::map<std::string, std::size_t> by_id;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(user) == std::string::npos)
      continue;
    rapidjson::Document d;
    d.Parse(line.c_str(), line.size());
    if (d.HasParseError() || !d.IsObject() || str(d, {"user", "username"}) != user)
      continue;
    audit_entry e;
    e.id = str(d, {"auditID"});
    e.user = user;
    e.agent = str(d, {"userAgent"});
    e.verb = str(d, {"verb"});
    const std::string sub = str(d, {"objectRef", "subresource"});
    e.resource = str(d, {"objectRef", "apiGroup"}) + "/" + str(d, {"objectRef", "resource"}) +
                 (sub.empty() ? "" : "/" + sub);
    e.ns = str(d, {"objectRef", "namespace"});
    e.name = str(d, {"objectRef", "name"});
    if (const auto* code = kube::find_path(d, {"responseStatus", "code"}); code && code->IsInt())
      e.code = code->GetInt();
    if (const auto* a = kube::find_path(d, {"annotations"}); a && a->IsObject())
      e.decision = kube::string_at(*a, "authorization.k8s.io/decision");
    if (auto it = by_id.find(e.id); it != by_id.end())
      out[it->second] = e;
    else {
      by_id[e.id] = out.size();
      out.push_back(e);
    }
  }
  return out;
}

std::uintmax_t audit_size() {
  std::error_code ec;
  const auto size = fs::file_size(audit_log_path(), ec);
  return ec ? 0 : size;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// -- kubectl and helm --

command_result kubectl(const std::vector<std::string>& args) {
  std::vector<std::string> all{"kubectl"};
  all.insert(all.end(), args.begin(), args.end());
  return run(all);
}

std::string kubectl_out(const std::vector<std::string>& args) {
  auto r = kubectl(args);
  E2E_REQUIRE(r.ok(), r.describe());
  return r.out;
}

/// The release: installed by install(), uninstalled (and its namespace deleted) by
/// uninstall() or at the latest when it goes, also after a failed install (which may
/// leave objects and the namespace behind).
struct release {
  std::string name;
  std::string ns;
  bool attempted = false;

  command_result install(const std::vector<std::string>& extra) {
    std::vector<std::string> args{"helm", "install",           name, chart_copy(), "--namespace",
                                  ns,     "--create-namespace"};
    args.insert(args.end(), extra.begin(), extra.end());
    attempted = true;
    return run(args);
  }

  command_result uninstall() {
    auto r = run({"helm", "uninstall", name, "--namespace", ns, "--wait", "--timeout", "60s"});
    attempted = false;
    (void)kubectl(
        {"delete", "namespace", ns, "--ignore-not-found", "--wait=true", "--timeout=60s"});
    return r;
  }

  ~release() {
    if (attempted)
      uninstall();
  }
};

/// The chart's ServiceAccount as a client: a kubeconfig for the API server of
/// $KUBECONFIG that authenticates with its token, and the same for raw requests.
struct sa_identity {
  std::string server;
  std::string ca_file;
  std::string token;
  std::string kubeconfig;
};

sa_identity make_sa_identity(const std::string& token, const std::string& ns) {
  sa_identity id;
  id.token = token;
  id.server =
      kubectl_out({"config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"});
  const auto ca = kubectl_out({"config", "view", "--minify", "--flatten", "-o",
                               "jsonpath={.clusters[0].cluster.certificate-authority-data}"});
  BOOST_REQUIRE(!id.server.empty() && !ca.empty());
  const auto pem = kube::decode_base64(ca);
  BOOST_REQUIRE(pem);
  id.ca_file = temp_path("cluster-ca.crt");
  std::ofstream(id.ca_file) << *pem;
  id.kubeconfig = temp_path("chart-sa.kubeconfig");
  std::ofstream f(id.kubeconfig);
  f << "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: "
    << id.server << "\n    certificate-authority-data: " << ca
    << "\nusers:\n- name: chart-sa\n  user:\n    token: " << token
    << "\ncontexts:\n- name: chart-sa\n  context:\n    cluster: test\n    user: chart-sa\n"
    << "    namespace: " << ns << "\ncurrent-context: chart-sa\n";
  BOOST_REQUIRE(f.good());
  return id;
}

/// The JSON document of `kubectl get KIND NAME -n NS -o json`.
rapidjson::Document get_json(const std::string& kind, const std::string& name,
                             const std::string& ns = {}) {
  std::vector<std::string> args{"get", kind, name, "-o", "json"};
  if (!ns.empty())
    args.insert(args.end(), {"-n", ns});
  return parse_json(kubectl_out(args));
}

/// Removes DCM profiles from the test namespace's DCM ConfigMap: the operator then has
/// to write them itself (through the chart's Role in that namespace).
void drop_dcm_profiles(e2e_cluster& c, const std::vector<std::string>& names) {
  auto cm = c.get(kube::resources::config_maps(), dcm_config_name, c.ns);
  BOOST_REQUIRE(cm);
  auto config = parse_json(str(*cm, {"data", "config.json"}));
  for (const auto& n : names)
    config["gpu-config-profiles"].RemoveMember(n.c_str());
  const std::string text = kube::to_json(config);
  auto& a = cm->GetAllocator();
  (*cm)["data"]["config.json"].SetString(text.c_str(),
                                         static_cast<rapidjson::SizeType>(text.size()), a);
  auto put =
      c.api.update(kube::resources::config_maps(), c.ns, dcm_config_name, kube::to_json(*cm));
  BOOST_REQUIRE_MESSAGE(put.ok(), (put.ok() ? "" : put.error().describe()));
}

std::set<std::string> dcm_profiles(e2e_cluster& c) {
  std::set<std::string> out;
  auto cm = c.get(kube::resources::config_maps(), dcm_config_name, c.ns);
  BOOST_REQUIRE(cm);
  auto config = parse_json(str(*cm, {"data", "config.json"}));
  for (const auto& m : config["gpu-config-profiles"].GetObject())
    out.insert(m.name.GetString());
  return out;
}

/// A write the chart does not grant, sent once with the chart's token (curl: one
/// request, where kubectl would read the object first).
struct forbidden_write {
  std::string method;
  std::string path;
  std::string body;
  std::string verb;     // as the audit log names it
  std::string resource; // group/resource
};

/// The HTTP code of the request.
std::string send(const sa_identity& id, const forbidden_write& w) {
  const std::string type =
      w.method == "PATCH" ? "application/merge-patch+json" : "application/json";
  auto r = run({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", id.ca_file, "-H",
                "Authorization: Bearer " + id.token, "-H", "Content-Type: " + type, "-X", w.method,
                "--data", w.body.empty() ? "{}" : w.body, id.server + w.path});
  return r.out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(helm_install)

BOOST_AUTO_TEST_CASE(the_operator_runs_the_seed_plan_under_exactly_the_charts_rbac,
                     *utf::timeout(420)) {
  const auto t0 = clock_type::now();
  const auto audit_from = audit_size();
  release rel;
  std::string sa_user;
  std::vector<forbidden_write> refused;
  {
    e2e_cluster c;
    rel.name = "gp-" + c.key;
    rel.ns = "gp-" + c.key;
    const std::string full = rel.name + "-gpu-partitioner";
    sa_user = "system:serviceaccount:" + rel.ns + ":" + full;

    node_spec inference;
    inference.pool = "inference-gpu";
    c.add_nodes({{"t1", node_spec{}}, {"t2", node_spec{}}, {"i1", inference}});
    drop_dcm_profiles(c, {"cpx-nps4", "spx-nps1"});
    c.start_simulator();

    // -- helm install: the objects exist --
    auto installed = rel.install({"--set", "dcm.namespace=" + c.ns, "--set",
                                  "dcm.configSyncSeconds=" + c.dcm_config_sync(),
                                  // no node runs the chart's pods here: keep them Pending
                                  // (a string even when the key is all digits)
                                  "--set-string", "nodeSelector.helm-test=" + c.key});
    E2E_REQUIRE(installed.ok(), installed.describe());
    HELM_NOTE("installed release " << rel.name << " in " << seconds_since(t0) << " s");
    // NOTES.txt: how to watch the rollout, where the metrics are.
    BOOST_TEST(installed.out.find("kubectl -n " + rel.ns + " rollout status deployment/" + full) !=
                   std::string::npos,
               installed.out);
    BOOST_TEST(installed.out.find("service/" + full + "-metrics") != std::string::npos,
               installed.out);
    auto status = run({"helm", "status", rel.name, "--namespace", rel.ns});
    E2E_CHECK(status.out.find("STATUS: deployed") != std::string::npos, status.describe());
    for (const auto& [kind, name, ns] :
         std::vector<std::tuple<std::string, std::string, std::string>>{
             {"serviceaccount", full, rel.ns},
             {"clusterrole", full, ""},
             {"clusterrolebinding", full, ""},
             {"role", full + "-leader-election", rel.ns},
             {"rolebinding", full + "-leader-election", rel.ns},
             {"role", full + "-events", "default"},
             {"rolebinding", full + "-events", "default"},
             {"role", full + "-dcm-config", c.ns},
             {"rolebinding", full + "-dcm-config", c.ns},
             {"service", full + "-metrics", rel.ns},
             {"poddisruptionbudget", full, rel.ns},
             {"networkpolicy", full, rel.ns},
             {"crd", "partitioningplans.infrastructure.silogen.ai", ""},
             {"crd", "partitioningprofiles.infrastructure.silogen.ai", ""},
             {"crd", "nodepartitionings.infrastructure.silogen.ai", ""}}) {
      std::vector<std::string> args{"get", kind, name, "-o", "name"};
      if (!ns.empty())
        args.insert(args.end(), {"-n", ns});
      auto r = kubectl(args);
      E2E_CHECK(r.ok(), kind << " " << name << ": " << r.describe());
    }
    const auto deployment = get_json("deployment", full, rel.ns);
    const auto* replicas = kube::find_path(deployment, {"spec", "replicas"});
    BOOST_TEST((replicas != nullptr && replicas->IsInt() && replicas->GetInt() == 2));
    // The Deployment controller made its two pods (Pending: nothing runs them here).
    BOOST_TEST(eventually(
                   [&] {
                     auto pods = kubectl({"get", "pods", "-n", rel.ns, "-l",
                                          "app.kubernetes.io/instance=" + rel.name, "-o", "name"});
                     return pods.ok() && std::count(pods.out.begin(), pods.out.end(), '\n') == 2;
                   },
                   30s, 200ms),
               "the chart's Deployment has no two pods");

    // -- the operator, as the chart's ServiceAccount, with the Deployment's arguments --
    const auto token =
        kubectl_out({"create", "token", full, "--namespace", rel.ns, "--duration", "3600s"});
    const auto sa = make_sa_identity(token.substr(0, token.find_last_not_of("\n ") + 1), rel.ns);
    const auto& config = sa.kubeconfig;
    auto whoami = run({"kubectl", "--kubeconfig", config, "auth", "whoami", "-o",
                       "jsonpath={.status.userInfo.username}"});
    E2E_REQUIRE(whoami.ok() && whoami.out == sa_user, whoami.describe());
    std::vector<std::string> args = {"--kubeconfig", config};
    const auto* container = kube::find_path(deployment, {"spec", "template", "spec", "containers"});
    BOOST_REQUIRE(container && container->IsArray() && container->Size() == 1);
    // The Deployment's listeners (0.0.0.0:8080 and :8081) on loopback ports the operator
    // binds itself and reports.
    std::string previous;
    for (const auto& a : (*container)[0]["args"].GetArray()) {
      std::string v = a.GetString();
      if (previous == "--metrics-addr" || previous == "--health-addr")
        v = "127.0.0.1:0";
      previous = a.GetString();
      args.push_back(v);
    }
    BOOST_TEST((std::find(args.begin(), args.end(), "--leader-elect") != args.end()));
    BOOST_TEST((std::find(args.begin(), args.end(), "--health-addr") != args.end()));
    const auto addresses = test_support::fresh_path("operator-addresses");
    args.insert(args.end(), {"--bound-addresses-file", addresses});
    c.start_operator(args);
    const auto running = [&] { return c.operator_process().alive(); };
    const int port = test_support::bound_port(addresses, "metrics", 30s, running);
    const int health_port = test_support::bound_port(addresses, "health", 30s, running);
    E2E_REQUIRE(port != 0 && health_port != 0, "the operator reported no metrics or health port\n"
                                                   << c.operator_log());
    const std::string metrics_url = "http://127.0.0.1:" + std::to_string(port);
    const std::string health_url = "http://127.0.0.1:" + std::to_string(health_port);
    // Ready as the chart's readiness probe sees it.
    E2E_REQUIRE(eventually(
                    [&] {
                      auto r = run({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                    health_url + "/readyz"});
                      return r.out == "200";
                    },
                    30s, 200ms),
                "the operator never became ready\n"
                    << c.operator_log());
    const auto lease = get_json("lease", "gpu-partitioner", rel.ns);
    BOOST_TEST(!str(lease, {"spec", "holderIdentity"}).empty(), "the Lease has no holder");

    // -- the seed's plan, over a workload under a PodDisruptionBudget --
    c.await_default_service_account();
    c.create_deployment("work", 2);
    c.create_pdb("work", "work", 1);
    BOOST_REQUIRE(eventually([&] { return c.healthy_pods("work") == 2; }, 60s, 200ms));
    const auto cpx =
        c.create_sample_profile("cpx", "profile-mi300x-cpx-nps4.yaml", [](rapidjson::Document& d) {
          // The simulator's CPX node reports 64 partitions (the seed's 63: see docs/api.md).
          d["spec"]["expectedResources"][0]["count"].SetInt64(64);
        });
    const auto spx = c.create_sample_profile("spx", "profile-mi300x-spx-nps1.yaml");
    const auto t_plan = clock_type::now();
    const auto plan =
        c.create_sample_plan("seed", {{"mi300x-cpx-nps4", cpx}, {"mi300x-spx-nps1", spx}});
    E2E_REQUIRE(c.await_plan_phase(plan, "Completed", 180s), c.describe(plan) << "\n"
                                                                              << c.operator_log());
    HELM_NOTE("seed plan over " << c.nodes.size() << " nodes completed in " << seconds_since(t_plan)
                                << " s");
    for (const auto& i : c.plan_items(plan))
      BOOST_TEST(i.phase == "Succeeded", i.name << " " << i.phase << " " << i.last_error);
    for (const auto& n : c.nodes) {
      const auto v = c.node(n);
      const bool training = n.find("-t") != std::string::npos;
      // The samples name no profileName: DCM's names are the profiles' own.
      BOOST_TEST(v.label(profile_label) == (training ? cpx : spx), n);
      BOOST_TEST(v.gpus == (training ? 64 : 8), n);
      BOOST_TEST(!v.unavailable(), n);
    }
    // The operator wrote both profiles into DCM's ConfigMap.
    const auto profiles = dcm_profiles(c);
    BOOST_TEST(profiles.count(cpx) == 1u);
    BOOST_TEST(profiles.count(spx) == 1u);

    // -- nothing was refused: the operator's own count, and the audit log --
    const auto metrics = run({"curl", "-s", metrics_url + "/metrics"});
    BOOST_REQUIRE(metrics.ok());
    BOOST_TEST(metrics.out.find("gpu_partitioner_api_requests_total{") != std::string::npos);
    BOOST_TEST(metrics.out.find("code=\"403\"") == std::string::npos, metrics.out);
    BOOST_TEST(metrics.out.find("code=\"401\"") == std::string::npos, metrics.out);

    const auto during = audit_entries(audit_from, sa_user);
    std::map<std::string, std::set<int>> used; // "verb resource" -> codes
    for (const auto& e : during) {
      E2E_CHECK(e.code != 403, "refused: " << e.describe());
      used[e.verb + " " + e.resource + (e.ns.empty() ? "" : " ns:" + e.ns)].insert(e.code);
    }
    std::ostringstream seen;
    for (const auto& [what, codes] : used) {
      seen << "  " << what << " ->";
      for (int code : codes)
        seen << " " << code;
      seen << "\n";
    }
    HELM_NOTE("the chart's ServiceAccount made " << during.size() << " requests:\n" << seen.str());
    // The log covers reads (the cluster's audit policy logs service accounts' reads) and
    // each kind of write the RBAC grants for this run. (A Node is read only when the
    // version a taint was written on had moved on, which a run may never see.)
    for (const auto& expected : std::vector<std::string>{
             "list /nodes", "watch /nodes", "list /pods", "list /configmaps ns:" + c.ns,
             "list /events ns:" + c.ns, "list policy/poddisruptionbudgets", "list apps/daemonsets",
             "list infrastructure.silogen.ai/partitioningplans", "patch /nodes",
             "create /pods/eviction ns:" + c.ns, "get /configmaps ns:" + c.ns,
             "update /configmaps ns:" + c.ns, "create coordination.k8s.io/leases ns:" + rel.ns,
             "update coordination.k8s.io/leases ns:" + rel.ns, "create /events ns:default",
             "create infrastructure.silogen.ai/nodepartitionings",
             "patch infrastructure.silogen.ai/nodepartitionings/status",
             "patch infrastructure.silogen.ai/partitioningplans/status"})
      BOOST_TEST(used.count(expected) == 1u,
                 "no `" << expected << "` by the chart's ServiceAccount in the audit log "
                        << "(a cluster made before tools/cluster logged service accounts' reads? "
                        << "recreate it)");

    // -- a plan that must delete pods, without the grant: refused before any node is
    // touched, naming the chart value (the default chart grants no pods delete) --
    c.delete_plan(plan);
    BOOST_REQUIRE(eventually([&] { return c.plan_items(plan).empty(); }, 60s, 200ms));
    const auto deleting = c.create_sample_plan(
        "deleting", {{"mi300x-cpx-nps4", cpx}, {"mi300x-spx-nps1", spx}},
        [](rapidjson::Document& d) {
          auto& a = d.GetAllocator();
          auto& rollout = d["spec"]["rollout"];
          if (!rollout.HasMember("drainPolicy"))
            rollout.AddMember("drainPolicy", rapidjson::Value(rapidjson::kObjectType), a);
          rollout["drainPolicy"].RemoveMember("evictionKind");
          rollout["drainPolicy"].AddMember("evictionKind", "Delete", a);
        });
    E2E_CHECK(eventually(
                  [&] {
                    const auto is = c.plan_items(deleting);
                    return is.size() == c.nodes.size() &&
                           std::all_of(is.begin(), is.end(), [](const item_view& i) {
                             return i.phase == "Failed" &&
                                    i.last_error.find("PodDeleteNotPermitted") !=
                                        std::string::npos &&
                                    i.last_error.find("rbac.podDelete") != std::string::npos;
                           });
                  },
                  60s, 200ms),
              c.describe(deleting));
    for (const auto& n : c.nodes) {
      const auto v = c.node(n);
      BOOST_TEST(!v.unschedulable, n);
      BOOST_TEST(!v.dcm_taint, n);
    }
    BOOST_TEST(c.healthy_pods("work") == 2, "no pod was deleted");

    // -- writes outside the RBAC are refused for that token --
    const std::string node = c.nodes[0];
    refused = {
        {"POST", "/api/v1/namespaces/" + rel.ns + "/secrets",
         R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"helm-test-forbidden"}})",
         "create", "/secrets"},
        {"DELETE", "/apis/apps/v1/namespaces/" + rel.ns + "/deployments/" + full, "", "delete",
         "apps/deployments"},
        {"PATCH", "/api/v1/namespaces/" + rel.ns,
         R"({"metadata":{"labels":{"helm-test":"forbidden"}}})", "patch", "/namespaces"},
        // ConfigMaps are written only in DCM's namespace, and there only DCM's.
        {"POST", "/api/v1/namespaces/default/configmaps",
         R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"helm-test-forbidden"}})",
         "create", "/configmaps"},
        {"PATCH", "/api/v1/namespaces/" + c.ns + "/configmaps/kube-root-ca.crt",
         R"({"metadata":{"labels":{"helm-test":"forbidden"}}})", "patch", "/configmaps"},
        // Nodes are patched, never replaced or deleted.
        {"PUT", "/api/v1/nodes/" + node, "", "update", "/nodes"},
        {"DELETE", "/api/v1/nodes/" + node + "?dryRun=All", "", "delete", "/nodes"},
        // Events only in "default"; only the operator's own Lease.
        {"POST", "/api/v1/namespaces/kube-system/events",
         R"({"apiVersion":"v1","kind":"Event","metadata":{"name":"helm-test-forbidden"}})",
         "create", "/events"},
        {"PUT", "/apis/coordination.k8s.io/v1/namespaces/" + rel.ns + "/leases/another-lease", "",
         "update", "coordination.k8s.io/leases"},
        // Pods are evicted, not deleted, unless the chart's rbac.podDelete says so.
        {"DELETE", "/api/v1/namespaces/" + c.ns + "/pods/no-such-pod?dryRun=All", "", "delete",
         "/pods"},
    };
    for (const auto& w : refused)
      BOOST_TEST(send(sa, w) == "403", w.method << " " << w.path);
    BOOST_TEST(kubectl({"get", "deployment", full, "-n", rel.ns}).ok());
    BOOST_TEST(!kubectl({"get", "secret", "helm-test-forbidden", "-n", rel.ns}).ok());
  } // the plan is deleted while the operator still runs, then nodes, simulator, namespace

  // Over the whole run, teardown included: no request of the operator refused; the
  // refused ones are exactly the writes above.
  std::multiset<std::string> refused_seen;
  for (const auto& e : audit_entries(audit_from, sa_user)) {
    if (starts_with(e.agent, "gpu-partitioner/"))
      E2E_CHECK(e.code != 403, "refused: " << e.describe());
    else if (e.code == 403) {
      E2E_CHECK(e.decision == "forbid", e.describe());
      refused_seen.insert(e.verb + " " + e.resource);
    }
  }
  std::multiset<std::string> refused_expected;
  for (const auto& w : refused)
    refused_expected.insert(w.verb + " " + w.resource);
  auto join = [](const std::multiset<std::string>& m) {
    std::string out;
    for (const auto& s : m)
      out += "\n  " + s;
    return out;
  };
  BOOST_TEST((refused_seen == refused_expected),
             "refused:" << join(refused_seen) << "\nexpected:" << join(refused_expected));

  // -- helm uninstall removes what the chart made --
  const std::string full = rel.name + "-gpu-partitioner";
  auto removed = rel.uninstall();
  E2E_CHECK(removed.ok(), removed.describe());
  BOOST_TEST(!kubectl({"get", "clusterrole", full}).ok());
  BOOST_TEST(!kubectl({"get", "clusterrolebinding", full}).ok());
  BOOST_TEST(!kubectl({"get", "role", full + "-events", "-n", "default"}).ok());
  BOOST_TEST(!kubectl({"get", "namespace", rel.ns}).ok());
  HELM_NOTE("whole case: " << seconds_since(t0) << " s");
}

BOOST_AUTO_TEST_SUITE_END()
