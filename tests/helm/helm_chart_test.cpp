// The Helm chart (helm/gpu-partitioner) without a cluster: its CRDs are the project's,
// every value is documented, `helm lint` passes, and `helm template` renders the
// objects an operator deployment needs, with defaults and with every optional part on.
// helm comes from PATH (tools/test puts the control-plane bin dir there).
#include "tests/e2e/support/e2e.hpp"
#include "tests/helm/helm_support.hpp"

#include <boost/test/unit_test.hpp>

#include <rapidjson/document.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

using namespace gpu_partitioner;
using namespace gpu_partitioner::helm_test;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> all_toggles = {
    "--set", "serviceMonitor.enabled=true",   "--set", "prometheusRule.enabled=true",
    "--set", "grafanaDashboard.enabled=true", "--set", "networkPolicy.enabled=true"};

command_result helm_template(const std::vector<std::string>& extra) {
  std::vector<std::string> args{"helm",        "template", "gp",    chart_copy(),
                                "--namespace", "gp-ns",    "--set", "dcm.namespace=dcm-ns"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run(args);
}

std::vector<YAML::Node> render(const std::vector<std::string>& extra = {}) {
  auto r = helm_template(extra);
  E2E_REQUIRE(r.ok(), r.describe());
  return documents(r.out);
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

/// The value after `flag` in an argument list, "" if none.
std::string arg_after(const std::vector<std::string>& args, const std::string& flag) {
  auto it = std::find(args.begin(), args.end(), flag);
  return it != args.end() && it + 1 != args.end() ? *(it + 1) : std::string();
}

/// "group/resource" -> verbs, from a Role's or ClusterRole's rules; names restricted
/// grants are keyed "group/resource[name]".
std::map<std::string, std::set<std::string>> grants(const YAML::Node& role) {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& rule : role["rules"]) {
    std::string names;
    for (const auto& n : strings(rule["resourceNames"]))
      names += (names.empty() ? "" : ",") + n;
    for (const auto& g : strings(rule["apiGroups"]))
      for (const auto& r : strings(rule["resources"]))
        for (const auto& v : strings(rule["verbs"]))
          out[g + "/" + r + (names.empty() ? "" : "[" + names + "]")].insert(v);
  }
  return out;
}

std::string describe(const std::map<std::string, std::set<std::string>>& g) {
  std::ostringstream s;
  for (const auto& [what, verbs] : g) {
    s << "  " << what << ":";
    for (const auto& v : verbs)
      s << " " << v;
    s << "\n";
  }
  return s.str();
}

/// Every leaf of values.yaml as a dotted path (an empty map or a list is a leaf).
void leaf_paths(const YAML::Node& n, const std::string& prefix, std::vector<std::string>& out) {
  if (n.IsMap() && n.size() > 0) {
    for (const auto& kv : n)
      leaf_paths(kv.second,
                 prefix.empty() ? kv.first.as<std::string>()
                                : prefix + "." + kv.first.as<std::string>(),
                 out);
  } else {
    out.push_back(prefix);
  }
}

std::string trim_right(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

} // namespace

BOOST_AUTO_TEST_SUITE(helm_chart)

BOOST_AUTO_TEST_CASE(the_chart_crds_are_the_manifests_crds_byte_for_byte) {
  const std::vector<std::string> names = {"nodepartitionings.yaml", "partitioningplans.yaml",
                                          "partitioningprofiles.yaml"};
  const auto chart_crds = fs::path(e2e::runfile("helm/gpu-partitioner/crds"));
  const auto manifest_crds = fs::path(e2e::runfile("manifests/crds"));
  std::set<std::string> in_chart;
  std::set<std::string> in_manifests;
  for (const auto& e : fs::directory_iterator(chart_crds))
    in_chart.insert(e.path().filename().string());
  for (const auto& e : fs::directory_iterator(manifest_crds))
    if (e.path().extension() == ".yaml")
      in_manifests.insert(e.path().filename().string());
  BOOST_TEST(in_chart == in_manifests);
  BOOST_TEST(in_chart == std::set<std::string>(names.begin(), names.end()));
  for (const auto& n : names)
    BOOST_TEST(e2e::read_text((chart_crds / n).string()) ==
                   e2e::read_text((manifest_crds / n).string()),
               n << " differs between helm/gpu-partitioner/crds and manifests/crds: copy "
                    "manifests/crds/*.yaml into the chart");
}

BOOST_AUTO_TEST_CASE(every_value_has_a_comment_and_a_row_in_the_readme) {
  const std::string values_path = e2e::runfile("helm/gpu-partitioner/values.yaml");
  const std::string text = e2e::read_text(values_path);
  // A comment line right above every key.
  std::istringstream lines(text);
  std::string line;
  std::string previous;
  const std::regex key(R"(^\s*[A-Za-z_][A-Za-z0-9_]*:.*$)");
  const std::regex comment(R"(^\s*#.*$)");
  int keys = 0;
  while (std::getline(lines, line)) {
    if (std::regex_match(line, key)) {
      ++keys;
      BOOST_TEST(std::regex_match(previous, comment),
                 "values.yaml: no comment above `" << line << "`");
    }
    previous = line;
  }
  BOOST_TEST(keys > 30);
  // The README's table lists exactly the leaves of values.yaml.
  std::vector<std::string> leaves;
  leaf_paths(YAML::Load(text), "", leaves);
  const std::string readme = e2e::read_text(e2e::runfile("helm/gpu-partitioner/README.md"));
  std::set<std::string> rows;
  const std::regex row(R"(^\| `([A-Za-z0-9_.]+)` \|)");
  std::istringstream readme_lines(readme);
  bool in_values = false; // the table under "## Values"
  while (std::getline(readme_lines, line)) {
    if (line.rfind("## ", 0) == 0)
      in_values = line == "## Values";
    std::smatch m;
    if (in_values && std::regex_search(line, m, row))
      rows.insert(m[1]);
  }
  for (const auto& leaf : leaves)
    BOOST_TEST(rows.count(leaf) == 1u, "README.md has no row for the value `" << leaf << "`");
  for (const auto& r : rows)
    BOOST_TEST((std::find(leaves.begin(), leaves.end(), r) != leaves.end()),
               "README.md lists `" << r << "`, which values.yaml does not have");
}

BOOST_AUTO_TEST_CASE(helm_lint_passes_with_defaults_and_with_every_option_on) {
  auto plain = run({"helm", "lint", "--strict", chart_copy()});
  E2E_CHECK(plain.ok(), plain.describe());
  std::vector<std::string> args{"helm", "lint", "--strict", chart_copy()};
  args.insert(args.end(), all_toggles.begin(), all_toggles.end());
  auto toggled = run(args);
  E2E_CHECK(toggled.ok(), toggled.describe());
}

BOOST_AUTO_TEST_CASE(the_deployment_runs_two_hardened_replicas_with_leader_election_and_probes) {
  const auto docs = render();
  const auto d = find(docs, "Deployment", "gp-gpu-partitioner");
  BOOST_REQUIRE(d);
  BOOST_TEST(d["metadata"]["namespace"].as<std::string>() == "gp-ns");
  BOOST_TEST(d["spec"]["replicas"].as<int>() == 2);
  const auto pod = d["spec"]["template"]["spec"];
  BOOST_TEST(pod["serviceAccountName"].as<std::string>() == "gp-gpu-partitioner");
  BOOST_TEST(pod["securityContext"]["runAsNonRoot"].as<bool>());
  BOOST_TEST(pod["securityContext"]["runAsUser"].as<int>() != 0);
  BOOST_TEST(pod["securityContext"]["seccompProfile"]["type"].as<std::string>() ==
             "RuntimeDefault");
  // Off the AMD GPU nodes a plan drains, where there are others.
  const auto prefer =
      pod["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"];
  BOOST_REQUIRE(prefer.IsSequence());
  std::set<std::string> absent;
  for (const auto& e : prefer[0]["preference"]["matchExpressions"])
    if (e["operator"].as<std::string>() == "DoesNotExist")
      absent.insert(e["key"].as<std::string>());
  BOOST_TEST((absent == std::set<std::string>{"amd.com/gpu.device-id",
                                              "feature.node.kubernetes.io/amd-gpu"}));
  BOOST_TEST(pod["affinity"]["podAntiAffinity"].IsMap());
  BOOST_REQUIRE_EQUAL(pod["containers"].size(), 1u);
  const auto c = pod["containers"][0];
  const auto args = strings(c["args"]);
  BOOST_TEST(has(args, "--leader-elect"));
  BOOST_TEST(arg_after(args, "--lease-namespace") == "gp-ns");
  // Both listeners on the pod's IP: the Service reaches /metrics, the kubelet (on the
  // node) the probes, which have a port of their own.
  BOOST_TEST(arg_after(args, "--metrics-addr") == "0.0.0.0:8080");
  BOOST_TEST(arg_after(args, "--health-addr") == "0.0.0.0:8081");
  // No ConfigMap name is fixed: each node's DCM pod names the one it reads, among those the
  // operator may write (and its Role grants).
  BOOST_TEST(!has(args, "--dcm-config"));
  BOOST_TEST(arg_after(args, "--dcm-namespace") == "dcm-ns");
  BOOST_TEST(arg_after(args, "--dcm-configmaps") ==
             "default-dcm-config,config-manager-config,dcm-st");
  BOOST_TEST(arg_after(args, "--dcm-config-sync") == "90");
  BOOST_TEST(arg_after(args, "--payload-namespaces") == "dcm-ns");
  BOOST_TEST(arg_after(args, "--api-qps") == "50");
  BOOST_TEST(arg_after(args, "--api-burst") == "100");
  BOOST_REQUIRE_EQUAL(c["ports"].size(), 2u);
  BOOST_TEST(c["ports"][0]["name"].as<std::string>() == "metrics");
  BOOST_TEST(c["ports"][0]["containerPort"].as<int>() == 8080);
  BOOST_TEST(c["ports"][1]["name"].as<std::string>() == "health");
  BOOST_TEST(c["ports"][1]["containerPort"].as<int>() == 8081);
  BOOST_TEST(c["livenessProbe"]["httpGet"]["path"].as<std::string>() == "/healthz");
  BOOST_TEST(c["livenessProbe"]["httpGet"]["port"].as<std::string>() == "health");
  BOOST_TEST(c["readinessProbe"]["httpGet"]["path"].as<std::string>() == "/readyz");
  BOOST_TEST(c["readinessProbe"]["httpGet"]["port"].as<std::string>() == "health");
  for (const char* kind : {"requests", "limits"})
    for (const char* what : {"cpu", "memory"})
      BOOST_TEST(!c["resources"][kind][what].as<std::string>("").empty(),
                 "resources." << kind << "." << what);
  const auto sc = c["securityContext"];
  BOOST_TEST(sc["runAsNonRoot"].as<bool>());
  BOOST_TEST(sc["readOnlyRootFilesystem"].as<bool>());
  BOOST_TEST(!sc["allowPrivilegeEscalation"].as<bool>());
  BOOST_TEST(strings(sc["capabilities"]["drop"]) == std::vector<std::string>{"ALL"});
  BOOST_TEST(!sc["capabilities"]["add"]);
  BOOST_TEST(!sc["privileged"].as<bool>(false));
  BOOST_TEST(sc["seccompProfile"]["type"].as<std::string>() == "RuntimeDefault");

  // The metrics Service selects these pods and reaches the named port.
  const auto svc = find(docs, "Service", "gp-gpu-partitioner-metrics");
  BOOST_REQUIRE(svc);
  for (const auto& kv : svc["spec"]["selector"])
    BOOST_TEST(
        d["spec"]["template"]["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>(
            "") == kv.second.as<std::string>(),
        "selector " << kv.first.as<std::string>());
  BOOST_TEST(svc["spec"]["ports"][0]["targetPort"].as<std::string>() == "metrics");
  // A budget keeps one replica through node drains.
  const auto pdb = find(docs, "PodDisruptionBudget");
  BOOST_REQUIRE(pdb);
  BOOST_TEST(pdb["spec"]["minAvailable"].as<int>() == 1);
  // Optional parts are off by default.
  BOOST_TEST(!find(docs, "ServiceMonitor"));
  BOOST_TEST(!find(docs, "PrometheusRule"));
  BOOST_TEST(!find(docs, "ConfigMap"));
  // The NetworkPolicy is on by default (issue 38: any pod could hold the probe port's
  // workers with idle connections and have the operator restarted), and can be turned off.
  BOOST_TEST(find(docs, "NetworkPolicy"));
  BOOST_TEST(!find(render({"--set", "networkPolicy.enabled=false"}), "NetworkPolicy"));
}

BOOST_AUTO_TEST_CASE(the_network_policy_admits_prometheus_to_metrics_and_nothing_else) {
  const auto docs = render({"--set", "networkPolicy.enabled=true"});
  const auto np = find(docs, "NetworkPolicy", "gp-gpu-partitioner");
  BOOST_REQUIRE(np);
  BOOST_TEST(np["apiVersion"].as<std::string>() == "networking.k8s.io/v1");
  BOOST_TEST(np["metadata"]["namespace"].as<std::string>() == "gp-ns");
  // It selects the operator's pods, for ingress only: egress (to the API server) stays open.
  const auto d = find(docs, "Deployment");
  BOOST_REQUIRE(d);
  BOOST_TEST(same(np["spec"]["podSelector"]["matchLabels"], d["spec"]["selector"]["matchLabels"]));
  BOOST_TEST(strings(np["spec"]["policyTypes"]) == std::vector<std::string>{"Ingress"});
  BOOST_TEST(!np["spec"]["egress"]);
  // One rule: the metrics port, from Prometheus' pods in "monitoring". The health port
  // needs none: the kubelet probes from the pod's node, which NetworkPolicy always admits.
  const auto ingress = np["spec"]["ingress"];
  BOOST_REQUIRE_EQUAL(ingress.size(), 1u);
  BOOST_TEST(same(ingress[0]["ports"], YAML::Load("[{port: metrics, protocol: TCP}]")));
  BOOST_TEST(same(ingress[0]["from"], YAML::Load(R"([{
      namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}},
      podSelector: {matchLabels: {app.kubernetes.io/name: prometheus}}}])")),
             YAML::Dump(ingress[0]["from"]));
  // The ports it names are the container's.
  std::set<std::string> named;
  for (const auto& p : d["spec"]["template"]["spec"]["containers"][0]["ports"])
    named.insert(p["name"].as<std::string>());
  BOOST_TEST((named == std::set<std::string>{"metrics", "health"}));

  // Sources of one's own for each port.
  const auto own =
      render({"--set", "networkPolicy.enabled=true", "--set-json",
              R"(networkPolicy.metrics.from=[{"podSelector":{"matchLabels":)"
              R"({"app":"scraper"}}}])",
              "--set-json", R"(networkPolicy.health.from=[{"ipBlock":{"cidr":"10.0.0.0/16"}}])"});
  const auto np2 = find(own, "NetworkPolicy");
  BOOST_REQUIRE(np2);
  const auto rules = np2["spec"]["ingress"];
  BOOST_REQUIRE_EQUAL(rules.size(), 2u);
  BOOST_TEST(same(rules[0]["ports"], YAML::Load("[{port: metrics, protocol: TCP}]")));
  BOOST_TEST(same(rules[0]["from"], YAML::Load("[{podSelector: {matchLabels: {app: scraper}}}]")));
  BOOST_TEST(same(rules[1]["ports"], YAML::Load("[{port: health, protocol: TCP}]")));
  BOOST_TEST(same(rules[1]["from"], YAML::Load("[{ipBlock: {cidr: 10.0.0.0/16}}]")));

  // No sources: no rule (one without peers would admit everyone), so no ingress at all.
  const auto none = render(
      {"--set", "networkPolicy.enabled=true", "--set-json", "networkPolicy.metrics.from=[]"});
  const auto np3 = find(none, "NetworkPolicy");
  BOOST_REQUIRE(np3);
  BOOST_TEST(strings(np3["spec"]["policyTypes"]) == std::vector<std::string>{"Ingress"});
  BOOST_TEST(np3["spec"]["ingress"].IsSequence());
  BOOST_TEST(np3["spec"]["ingress"].size() == 0u);
}

BOOST_AUTO_TEST_CASE(the_rbac_grants_exactly_what_the_operator_uses_and_no_wildcard) {
  const auto docs = render();
  const auto cr = find(docs, "ClusterRole", "gp-gpu-partitioner");
  BOOST_REQUIRE(cr);
  for (const auto& role : find_all(docs, "ClusterRole"))
    for (const auto& rule : role["rules"]) {
      for (const char* field : {"apiGroups", "resources", "verbs", "resourceNames"})
        BOOST_TEST(!has(strings(rule[field]), "*"), "wildcard in " << field);
      BOOST_TEST(!rule["nonResourceURLs"]);
    }
  for (const auto& role : find_all(docs, "Role"))
    for (const auto& rule : role["rules"])
      for (const char* field : {"apiGroups", "resources", "verbs", "resourceNames"})
        BOOST_TEST(!has(strings(rule[field]), "*"), "wildcard in " << field);

  // Each grant is read off actors/ and kube/ (see the ClusterRole's comments); a new one
  // must be added here on purpose.
  const std::map<std::string, std::set<std::string>> cluster_wide = {
      {"/nodes", {"get", "list", "watch", "patch"}},
      {"/pods", {"get", "list", "watch"}},
      {"/pods/eviction", {"create"}},
      {"policy/poddisruptionbudgets", {"list", "watch"}},
      {"apps/daemonsets", {"list", "watch"}},
      {"resource.k8s.io/resourceslices", {"list", "watch"}},
      {"resource.k8s.io/resourceclaims", {"list", "watch"}},
      {"resource.k8s.io/deviceclasses", {"get", "create", "patch"}},
      {"resource.k8s.io/devicetaintrules", {"get", "list", "watch", "create", "patch", "delete"}},
      {"infrastructure.silogen.ai/partitioningplans", {"list", "watch"}},
      {"infrastructure.silogen.ai/partitioningprofiles", {"list", "watch"}},
      {"infrastructure.silogen.ai/nodepartitionings",
       {"get", "list", "watch", "create", "patch", "delete"}},
      {"infrastructure.silogen.ai/partitioningplans/status", {"patch"}},
      {"infrastructure.silogen.ai/nodepartitionings/status", {"patch"}},
      {"infrastructure.silogen.ai/partitioningplans/finalizers", {"update"}},
  };
  E2E_CHECK((grants(cr) == cluster_wide), "ClusterRole grants:\n" << describe(grants(cr)));

  const auto lease = find(docs, "Role", "gp-gpu-partitioner-leader-election");
  BOOST_REQUIRE(lease);
  BOOST_TEST(lease["metadata"]["namespace"].as<std::string>() == "gp-ns");
  const std::map<std::string, std::set<std::string>> lease_grants = {
      {"coordination.k8s.io/leases", {"create"}},
      {"coordination.k8s.io/leases[gpu-partitioner]", {"get", "update"}},
  };
  E2E_CHECK((grants(lease) == lease_grants), describe(grants(lease)));

  const auto events = find(docs, "Role", "gp-gpu-partitioner-events");
  BOOST_REQUIRE(events);
  BOOST_TEST(events["metadata"]["namespace"].as<std::string>() == "default");
  const std::map<std::string, std::set<std::string>> event_grants = {
      {"/events", {"create", "patch"}}};
  E2E_CHECK((grants(events) == event_grants), describe(grants(events)));

  const auto dcm = find(docs, "Role", "gp-gpu-partitioner-dcm-config");
  BOOST_REQUIRE(dcm);
  BOOST_TEST(dcm["metadata"]["namespace"].as<std::string>() == "dcm-ns");
  const std::map<std::string, std::set<std::string>> dcm_grants = {
      {"/configmaps", {"create", "list", "watch"}},
      {"/configmaps[default-dcm-config,config-manager-config,dcm-st]", {"get", "update"}},
      {"/events", {"list", "watch"}},
  };
  E2E_CHECK((grants(dcm) == dcm_grants), describe(grants(dcm)));
  BOOST_TEST(find_all(docs, "Role").size() == 3u);

  // Every role is bound to the chart's ServiceAccount, in the release namespace.
  const auto bindings = find_all(docs, "RoleBinding");
  BOOST_TEST(bindings.size() == 3u);
  auto all = bindings;
  all.push_back(find(docs, "ClusterRoleBinding", "gp-gpu-partitioner"));
  for (const auto& b : all) {
    BOOST_REQUIRE(b);
    BOOST_REQUIRE_EQUAL(b["subjects"].size(), 1u);
    BOOST_TEST(b["subjects"][0]["kind"].as<std::string>() == "ServiceAccount");
    BOOST_TEST(b["subjects"][0]["name"].as<std::string>() == "gp-gpu-partitioner");
    BOOST_TEST(b["subjects"][0]["namespace"].as<std::string>() == "gp-ns");
    const auto ref = b["roleRef"]["name"].as<std::string>();
    const auto kind = b["roleRef"]["kind"].as<std::string>();
    const auto target = find(docs, kind, ref);
    BOOST_TEST(target, b["metadata"]["name"].as<std::string>() << " binds a missing " << kind);
    if (target && kind == "Role")
      BOOST_TEST(target["metadata"]["namespace"].as<std::string>() ==
                 b["metadata"]["namespace"].as<std::string>());
  }
  BOOST_REQUIRE(find(docs, "ServiceAccount", "gp-gpu-partitioner"));

  // Pods are deleted only when a plan needs it, and the chart is told so.
  const auto deleting = render({"--set", "rbac.podDelete=true"});
  auto with_delete = cluster_wide;
  with_delete["/pods"].insert("delete");
  E2E_CHECK((grants(find(deleting, "ClusterRole", "gp-gpu-partitioner")) == with_delete),
            describe(grants(find(deleting, "ClusterRole", "gp-gpu-partitioner"))));

  // Turning the DCM Role off leaves the rest.
  // Any ConfigMap there: the flag goes, and the Role grants them all.
  const auto any = render({"--set-json", "dcm.configMaps=[]"});
  const auto any_args =
      strings(find(any, "Deployment",
                   "gp-gpu-partitioner")["spec"]["template"]["spec"]["containers"][0]["args"]);
  BOOST_TEST(!has(any_args, "--dcm-configmaps"));
  const std::map<std::string, std::set<std::string>> any_grants = {
      {"/configmaps", {"create", "get", "update", "list", "watch"}},
      {"/events", {"list", "watch"}}};
  E2E_CHECK((grants(find(any, "Role", "gp-gpu-partitioner-dcm-config")) == any_grants),
            describe(grants(find(any, "Role", "gp-gpu-partitioner-dcm-config"))));
  const auto without = render({"--set", "dcm.rbac=false"});
  BOOST_TEST(!find(without, "Role", "gp-gpu-partitioner-dcm-config"));
  BOOST_TEST(find_all(without, "Role").size() == 2u);

  // More payload namespaces: each gets a read-only Role for ConfigMaps, and the flag
  // names them after DCM's, each once.
  const auto more = render({"--set-json", R"(dcm.payloadNamespaces=["team-a","dcm-ns","team-a"])"});
  BOOST_TEST(find_all(more, "Role").size() == 4u);
  const auto payloads = find(more, "Role", "gp-gpu-partitioner-payloads");
  BOOST_REQUIRE(payloads);
  BOOST_TEST(payloads["metadata"]["namespace"].as<std::string>() == "team-a");
  const std::map<std::string, std::set<std::string>> payload_grants = {
      {"/configmaps", {"list", "watch"}}};
  E2E_CHECK((grants(payloads) == payload_grants), describe(grants(payloads)));
  const auto bound = find(more, "RoleBinding", "gp-gpu-partitioner-payloads");
  BOOST_REQUIRE(bound);
  BOOST_TEST(bound["metadata"]["namespace"].as<std::string>() == "team-a");
  const auto more_args =
      strings(find(more, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]);
  BOOST_TEST(arg_after(more_args, "--payload-namespaces") == "dcm-ns,team-a");
}

BOOST_AUTO_TEST_CASE(service_monitor_prometheus_rule_and_dashboard_render_when_turned_on) {
  const auto docs = render(all_toggles);
  const auto svc = find(docs, "Service", "gp-gpu-partitioner-metrics");
  BOOST_REQUIRE(svc);

  const auto sm = find(docs, "ServiceMonitor", "gp-gpu-partitioner");
  BOOST_REQUIRE(sm);
  BOOST_TEST(sm["apiVersion"].as<std::string>() == "monitoring.coreos.com/v1");
  BOOST_TEST(sm["spec"]["endpoints"][0]["port"].as<std::string>() == "metrics");
  BOOST_TEST(sm["spec"]["endpoints"][0]["path"].as<std::string>() == "/metrics");
  for (const auto& kv : sm["spec"]["selector"]["matchLabels"])
    BOOST_TEST(svc["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>("") ==
                   kv.second.as<std::string>(),
               "ServiceMonitor selects " << kv.first.as<std::string>());
  BOOST_TEST(strings(sm["spec"]["namespaceSelector"]["matchNames"]) ==
             std::vector<std::string>{"gp-ns"});

  // The PrometheusRule carries the rule file's groups unchanged (alert templates such
  // as {{ $labels.plan }} included: the file is not a Helm template).
  const auto rule = find(docs, "PrometheusRule", "gp-gpu-partitioner");
  BOOST_REQUIRE(rule);
  const auto file =
      YAML::Load(e2e::read_text(e2e::runfile("helm/gpu-partitioner/files/prometheus-rules.yaml")));
  BOOST_REQUIRE(file["groups"] && file["groups"].size() > 0);
  BOOST_TEST(same(rule["spec"]["groups"], file["groups"]),
             "PrometheusRule spec.groups differ from files/prometheus-rules.yaml");

  // The dashboard ConfigMap holds the JSON file as is, labelled for Grafana's sidecar.
  const auto cm = find(docs, "ConfigMap", "gp-gpu-partitioner-dashboard");
  BOOST_REQUIRE(cm);
  BOOST_TEST(cm["metadata"]["labels"]["grafana_dashboard"].as<std::string>() == "1");
  const auto json = cm["data"]["gpu-partitioner.json"].as<std::string>();
  BOOST_TEST(trim_right(json) == trim_right(e2e::read_text(e2e::runfile(
                                     "helm/gpu-partitioner/files/grafana-dashboard.json"))));
  rapidjson::Document dashboard;
  dashboard.Parse(json.c_str(), json.size());
  BOOST_TEST(!dashboard.HasParseError());
  BOOST_TEST(dashboard.IsObject());
  BOOST_TEST((dashboard.IsObject() && dashboard.HasMember("panels")));

  // The dashboard's namespace can differ from the release's (e.g. Grafana's).
  const auto elsewhere = render(
      {"--set", "grafanaDashboard.enabled=true", "--set", "grafanaDashboard.namespace=monitoring"});
  const auto moved = find(elsewhere, "ConfigMap", "gp-gpu-partitioner-dashboard");
  BOOST_REQUIRE(moved);
  BOOST_TEST(moved["metadata"]["namespace"].as<std::string>() == "monitoring");
}

BOOST_AUTO_TEST_CASE(replicas_without_leader_election_are_refused_naming_both_values) {
  // Two replicas that both act would each take nodes down: the rollout limits would hold
  // per replica, not for the fleet.
  const auto r =
      helm_template({"--set", "replicaCount=2", "--set", "leaderElection.enabled=false"});
  BOOST_TEST(!r.ok());
  BOOST_TEST(r.err.find("replicaCount is 2 but leaderElection.enabled is false") !=
                 std::string::npos,
             r.describe());
}

BOOST_AUTO_TEST_CASE(a_health_port_equal_to_the_metrics_port_is_refused) {
  // The second listener could not bind: every pod would fail to start.
  const auto r = helm_template({"--set", "health.port=8080"});
  BOOST_TEST(!r.ok());
  BOOST_TEST(r.err.find("health.port and metrics.port are both 8080") != std::string::npos,
             r.describe());
}

BOOST_AUTO_TEST_CASE(values_change_what_they_say) {
  const auto docs = render({"--set", "replicaCount=1",
                            "--set", "leaderElection.enabled=false",
                            "--set", "image.repository=registry.example/gp",
                            "--set", "image.tag=v9",
                            "--set", "metrics.port=9100",
                            "--set", "health.port=9101",
                            "--set", "rbac.create=false",
                            "--set", "serviceAccount.create=false",
                            "--set", "serviceAccount.name=existing",
                            "--set", "apiRateLimit.qps=2.5",
                            "--set", "apiRateLimit.burst=7"});
  const auto d = find(docs, "Deployment");
  BOOST_REQUIRE(d);
  BOOST_TEST(d["spec"]["replicas"].as<int>() == 1);
  const auto c = d["spec"]["template"]["spec"]["containers"][0];
  BOOST_TEST(c["image"].as<std::string>() == "registry.example/gp:v9");
  const auto args = strings(c["args"]);
  BOOST_TEST(!has(args, "--leader-elect"));
  BOOST_TEST(arg_after(args, "--metrics-addr") == "0.0.0.0:9100");
  BOOST_TEST(c["ports"][0]["containerPort"].as<int>() == 9100);
  BOOST_TEST(arg_after(args, "--health-addr") == "0.0.0.0:9101");
  BOOST_TEST(c["ports"][1]["containerPort"].as<int>() == 9101);
  BOOST_TEST(arg_after(args, "--api-qps") == "2.5");
  BOOST_TEST(arg_after(args, "--api-burst") == "7");
  BOOST_TEST(d["spec"]["template"]["spec"]["serviceAccountName"].as<std::string>() == "existing");
  BOOST_TEST(!find(docs, "ServiceAccount"));
  BOOST_TEST(!find(docs, "ClusterRole"));
  BOOST_TEST(!find(docs, "Role"));
  BOOST_TEST(!find(docs, "PodDisruptionBudget")); // one replica: a budget would block drains
  // The default image tag is the chart's appVersion.
  const auto plain = find(render(), "Deployment");
  const auto chart = YAML::Load(e2e::read_text(e2e::runfile("helm/gpu-partitioner/Chart.yaml")));
  BOOST_TEST(plain["spec"]["template"]["spec"]["containers"][0]["image"].as<std::string>() ==
             "gpu-partitioner:" + chart["appVersion"].as<std::string>());
}

BOOST_AUTO_TEST_SUITE_END()
