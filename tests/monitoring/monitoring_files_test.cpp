// The monitoring files the Helm chart ships, against the operator's own registry and
// docs/monitoring.md: no rule or panel names a metric or label the operator does not
// export, the docs' metrics table is the registry's, alerts carry what routing and humans
// need, and the dashboard's panels follow its data source variable.
#include "actors/operator_metrics.hpp"
#include "tests/monitoring/support/expressions.hpp"

#include <boost/test/unit_test.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

using namespace gpu_partitioner;
using namespace gpu_partitioner::monitoring;

namespace {

std::vector<promql_expression> all_expressions() {
  auto out = dashboard_expressions(read_dashboard());
  for (auto& e : rule_expressions(read_rules()))
    out.push_back(e);
  return out;
}

/// The family a sample name belongs to: histograms' _bucket, _sum and _count included.
const metrics::family* family_of(const metrics::registry& r, const std::string& sample) {
  if (const auto* f = r.find(sample))
    return f;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (sample.size() > s.size() && sample.compare(sample.size() - s.size(), s.size(), s) == 0)
      if (const auto* f = r.find(sample.substr(0, sample.size() - s.size()));
          f != nullptr && f->type() == metrics::metric_type::histogram)
        return f;
  }
  return nullptr;
}

const char* type_name(metrics::metric_type t) {
  switch (t) {
  case metrics::metric_type::counter:
    return "counter";
  case metrics::metric_type::gauge:
    return "gauge";
  case metrics::metric_type::histogram:
    return "histogram";
  }
  return "?";
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  BOOST_REQUIRE_MESSAGE(in, "cannot read " << path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v)
    out += (out.empty() ? "" : ", ") + s;
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(monitoring_files)

BOOST_AUTO_TEST_CASE(the_files_have_expressions_to_check) {
  const auto dashboard = dashboard_expressions(read_dashboard());
  const auto rules = rule_expressions(read_rules());
  BOOST_TEST(dashboard.size() >= 15u);
  BOOST_TEST(rules.size() >= 10u);
  for (const auto& e : all_expressions())
    BOOST_TEST(!e.expr.empty(), e.where << " has no expression");
}

BOOST_AUTO_TEST_CASE(every_metric_and_label_the_rules_and_dashboard_select_is_exported) {
  const auto& r = actors::process_metrics().registry;
  // Labels the scrape adds (Kubernetes service discovery, the job) and histograms' le.
  const std::set<std::string> scrape_labels{"namespace", "pod", "instance", "job", "service"};
  for (const auto& e : all_expressions()) {
    for (const auto& name : metric_names(e.expr))
      BOOST_TEST(family_of(r, name) != nullptr,
                 e.where << " selects " << name << ", which the operator does not export");
    for (const auto& [name, label] : matcher_labels(e.expr)) {
      const auto* f = family_of(r, name);
      if (f == nullptr)
        continue;
      const auto& labels = f->label_names();
      const bool known = std::find(labels.begin(), labels.end(), label) != labels.end() ||
                         scrape_labels.count(label) ||
                         (label == "le" && f->type() == metrics::metric_type::histogram);
      BOOST_TEST(known, e.where << " matches label " << label << " of " << name
                                << ", which has only: " << join(labels));
    }
  }
}

BOOST_AUTO_TEST_CASE(the_docs_table_lists_every_metric_with_its_type_and_labels) {
  const auto& r = actors::process_metrics().registry;
  const auto readme = read_all("docs/monitoring.md");
  // | `name` | type | `label`, `label` (values) |
  static const std::regex row(
      R"(^\| `((?:gpu_partitioner|process)_[a-z_]+)` \| ([a-z]+) \|(.*)\|\s*$)");
  static const std::regex label(R"(`([a-z_]+)`)");
  std::set<std::string> listed;
  std::istringstream lines(readme);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, row))
      continue;
    const std::string name = m[1];
    listed.insert(name);
    const auto* f = r.find(name);
    BOOST_TEST_CONTEXT("docs/monitoring.md row " << name) {
      BOOST_TEST_REQUIRE(f != nullptr, "the operator does not export it");
      BOOST_TEST(m[2].str() == type_name(f->type()));
      std::vector<std::string> labels;
      const std::string cell = m[3];
      for (std::sregex_iterator it(cell.begin(), cell.end(), label), end; it != end; ++it)
        labels.push_back((*it)[1]);
      BOOST_TEST(join(labels) == join(f->label_names()));
    }
  }
  for (const auto& name : r.names())
    BOOST_TEST(listed.count(name) == 1u,
               name << " is missing from the metrics table of docs/monitoring.md");
}

BOOST_AUTO_TEST_CASE(metric_names_follow_prometheus_conventions) {
  const auto& r = actors::process_metrics().registry;
  for (const auto& name : r.names()) {
    const auto* f = r.find(name);
    BOOST_TEST_CONTEXT(name) {
      // Ours, or the process's own under the names every Prometheus client gives them.
      BOOST_TEST((name.rfind("gpu_partitioner_", 0) == 0u || name.rfind("process_", 0) == 0u));
      BOOST_TEST(std::regex_match(name, std::regex("[a-z_]+")));
      const bool total = std::regex_search(name, std::regex("_total$"));
      BOOST_TEST(total == (f->type() == metrics::metric_type::counter));
      if (f->type() == metrics::metric_type::histogram)
        BOOST_TEST(std::regex_search(name, std::regex("_seconds$")));
      for (const auto& l : f->label_names())
        BOOST_TEST(std::regex_match(l, std::regex("[a-z][a-z_]*")), l);
    }
  }
}

BOOST_AUTO_TEST_CASE(every_alert_has_a_severity_a_summary_and_a_description) {
  const auto rules = read_rules();
  std::set<std::string> names;
  int alerts = 0;
  for (const auto& group : rules["groups"])
    for (const auto& rule : group["rules"]) {
      if (!rule["alert"])
        continue;
      ++alerts;
      const auto name = rule["alert"].as<std::string>();
      BOOST_TEST_CONTEXT("alert " << name) {
        BOOST_TEST(name.rfind("GpuPartitioner", 0) == 0u);
        const auto severity = rule["labels"]["severity"];
        BOOST_TEST_REQUIRE(static_cast<bool>(severity));
        // One alert may have a rule per severity (a failed node: warning within the
        // budget, critical past it), never two rules of one severity.
        BOOST_TEST(names.insert(name + "/" + severity.as<std::string>()).second,
                   "named twice with one severity");
        const std::set<std::string> severities{"critical", "warning", "info"};
        BOOST_TEST(severities.count(severity.as<std::string>()) == 1u, severity.as<std::string>());
        for (const char* a : {"summary", "description"}) {
          const auto text = rule["annotations"][a];
          BOOST_TEST((text && !text.as<std::string>().empty()), "no " << a);
        }
      }
    }
  BOOST_TEST(alerts >= 10);
}

BOOST_AUTO_TEST_CASE(the_dashboard_reads_from_its_data_source_variable) {
  const auto d = read_dashboard();
  BOOST_REQUIRE(d.IsObject() && d.HasMember("templating") && d.HasMember("panels"));
  std::string variable;
  std::set<std::string> variables;
  for (const auto& v : d["templating"]["list"].GetArray()) {
    variables.insert(v["name"].GetString());
    if (std::string(v["type"].GetString()) == "datasource") {
      BOOST_TEST(std::string(v["query"].GetString()) == "prometheus");
      variable = v["name"].GetString();
    }
  }
  BOOST_REQUIRE_MESSAGE(!variable.empty(), "no data source variable");
  const std::string uid = "${" + variable + "}";
  auto uses_variable = [&](const rapidjson::Value& v) {
    return v.HasMember("datasource") && v["datasource"].IsObject() &&
           v["datasource"].HasMember("uid") && uid == v["datasource"]["uid"].GetString();
  };
  for (const auto& v : d["templating"]["list"].GetArray())
    if (std::string(v["type"].GetString()) == "query")
      BOOST_TEST(uses_variable(v), "variable " << v["name"].GetString());

  std::set<int> ids;
  int panels = 0;
  for (const auto& p : d["panels"].GetArray()) {
    const std::string title = p["title"].GetString();
    BOOST_TEST(ids.insert(p["id"].GetInt()).second, "panel id used twice: " << title);
    BOOST_TEST(p.HasMember("gridPos"), title);
    if (std::string(p["type"].GetString()) == "row")
      continue;
    ++panels;
    BOOST_TEST_CONTEXT("panel " << title) {
      BOOST_TEST(uses_variable(p));
      BOOST_TEST_REQUIRE(p.HasMember("targets"));
      std::set<std::string> refs;
      for (const auto& t : p["targets"].GetArray()) {
        BOOST_TEST(uses_variable(t));
        BOOST_TEST(refs.insert(t["refId"].GetString()).second);
        // Only variables the dashboard defines, or Grafana's own.
        const std::string expr = t["expr"].GetString();
        static const std::regex var(R"(\$\{?([A-Za-z0-9_]+))");
        for (std::sregex_iterator it(expr.begin(), expr.end(), var), end; it != end; ++it) {
          const std::string name = (*it)[1];
          BOOST_TEST((variables.count(name) || name.rfind("__", 0) == 0), "$" << name);
        }
      }
    }
  }
  BOOST_TEST(panels >= 12);
}

// The views its users open it for: rollout progress by phase, phase durations, evictions
// and PDB blocks, API errors. Each must be a panel querying the metric that answers it.
BOOST_AUTO_TEST_CASE(the_dashboard_has_the_views_a_rollout_is_watched_with) {
  const auto d = read_dashboard();
  BOOST_REQUIRE(d.IsObject() && d.HasMember("panels"));
  struct view {
    const char* what;
    std::regex expr;
  };
  const std::vector<view> views = {
      {"nodes by phase", std::regex(R"(sum by \(phase\) \(gpu_partitioner_nodes\b)")},
      {"plan progress", std::regex(R"(gpu_partitioner_plan_progress_ratio\b)")},
      {"phase durations",
       std::regex(R"(histogram_quantile\(.*gpu_partitioner_phase_duration_seconds_bucket)")},
      {"evictions by result", std::regex(R"(by \(result\).*gpu_partitioner_evictions_total)")},
      {"pods blocking drains", std::regex(R"(gpu_partitioner_drain_blocked_pods\b)")},
      {"API errors",
       std::regex(R"(gpu_partitioner_api_requests_total\{[^}]*code=~"[^"]*(403|5\.\.))")},
  };
  for (const auto& v : views) {
    bool found = false;
    for (const auto& p : d["panels"].GetArray()) {
      if (std::string(p["type"].GetString()) == "row" || !p.HasMember("targets"))
        continue;
      for (const auto& t : p["targets"].GetArray())
        found = found || std::regex_search(std::string(t["expr"].GetString()), v.expr);
    }
    BOOST_TEST(found, "no panel shows " << v.what);
  }
}

BOOST_AUTO_TEST_SUITE_END()
