#pragma once

// The PromQL expressions of the monitoring files the Helm chart ships: every target and
// query variable of the Grafana dashboard, every rule's expr in the Prometheus rule file.

#include <rapidjson/document.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace gpu_partitioner::monitoring {

inline constexpr const char* dashboard_path = "helm/gpu-partitioner/files/grafana-dashboard.json";
inline constexpr const char* rules_path = "helm/gpu-partitioner/files/prometheus-rules.yaml";

struct promql_expression {
  /// Where it comes from, for messages: `panel "Nodes by phase" A`, `alert X`, `variable plan`.
  std::string where;
  /// The dashboard panel's title; "" for rules and variables.
  std::string panel;
  /// The alert's (or recording rule's) name; "" for the dashboard.
  std::string rule;
  std::string expr;
  /// Evaluated at one instant (rules, variables, instant targets), else over a range.
  bool instant = true;
};

rapidjson::Document read_dashboard(const std::string& path = dashboard_path);
YAML::Node read_rules(const std::string& path = rules_path);

/// Every target of every panel (rows' nested panels too), and each query variable as the
/// PromQL Grafana runs for it: `label_values(m, l)` becomes `group by (l) (m)`.
std::vector<promql_expression> dashboard_expressions(const rapidjson::Value& dashboard);
/// Every rule of every group.
std::vector<promql_expression> rule_expressions(const YAML::Node& rules);

/// Replaces Grafana's variables (`$name` and `${name}`) by `values[name]`; names it does not
/// know are left as they are.
std::string substitute(const std::string& expr, const std::map<std::string, std::string>& values);

/// The gpu_partitioner_* names an expression selects.
std::set<std::string> metric_names(const std::string& expr);

/// The label names of each gpu_partitioner_* selector's matchers: name -> labels.
std::multimap<std::string, std::string> matcher_labels(const std::string& expr);

} // namespace gpu_partitioner::monitoring
