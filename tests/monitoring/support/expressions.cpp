#include "tests/monitoring/support/expressions.hpp"

#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace gpu_partitioner::monitoring {

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string string_member(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject())
    return {};
  auto it = v.FindMember(name);
  return it != v.MemberEnd() && it->value.IsString() ? it->value.GetString() : std::string{};
}

void collect_panels(const rapidjson::Value& panels, std::vector<promql_expression>& out) {
  if (!panels.IsArray())
    return;
  for (const auto& p : panels.GetArray()) {
    if (!p.IsObject())
      continue;
    const std::string title = string_member(p, "title");
    if (auto nested = p.FindMember("panels"); nested != p.MemberEnd())
      collect_panels(nested->value, out);
    auto targets = p.FindMember("targets");
    if (targets == p.MemberEnd() || !targets->value.IsArray())
      continue;
    for (const auto& t : targets->value.GetArray()) {
      promql_expression e;
      e.panel = title;
      e.where = "panel \"" + title + "\" " + string_member(t, "refId");
      e.expr = string_member(t, "expr");
      auto instant = t.FindMember("instant");
      e.instant = instant != t.MemberEnd() && instant->value.IsBool() && instant->value.GetBool();
      out.push_back(e);
    }
  }
}

} // namespace

rapidjson::Document read_dashboard(const std::string& path) {
  rapidjson::Document d;
  const auto text = read_all(path);
  d.Parse(text.c_str());
  if (d.HasParseError())
    throw std::runtime_error(path + " is not JSON (offset " + std::to_string(d.GetErrorOffset()) +
                             ")");
  return d;
}

YAML::Node read_rules(const std::string& path) {
  return YAML::LoadFile(path);
}

std::vector<promql_expression> dashboard_expressions(const rapidjson::Value& dashboard) {
  std::vector<promql_expression> out;
  if (auto panels = dashboard.FindMember("panels"); panels != dashboard.MemberEnd())
    collect_panels(panels->value, out);
  auto templating = dashboard.FindMember("templating");
  if (templating == dashboard.MemberEnd() || !templating->value.IsObject())
    return out;
  auto list = templating->value.FindMember("list");
  if (list == templating->value.MemberEnd() || !list->value.IsArray())
    return out;
  static const std::regex label_values(
      R"(^\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$)");
  for (const auto& v : list->value.GetArray()) {
    if (string_member(v, "type") != "query")
      continue;
    std::string query = string_member(v, "query");
    if (auto q = v.FindMember("query"); q != v.MemberEnd() && q->value.IsObject())
      query = string_member(q->value, "query");
    promql_expression e;
    e.where = "variable " + string_member(v, "name");
    std::smatch m;
    e.expr = std::regex_match(query, m, label_values)
                 ? "group by (" + m[2].str() + ") (" + m[1].str() + ")"
                 : query;
    out.push_back(e);
  }
  return out;
}

std::vector<promql_expression> rule_expressions(const YAML::Node& rules) {
  std::vector<promql_expression> out;
  for (const auto& group : rules["groups"])
    for (const auto& rule : group["rules"]) {
      promql_expression e;
      e.rule = rule["alert"] ? rule["alert"].as<std::string>() : rule["record"].as<std::string>();
      e.where = (rule["alert"] ? "alert " : "record ") + e.rule;
      e.expr = rule["expr"].as<std::string>();
      out.push_back(e);
    }
  return out;
}

std::string substitute(const std::string& expr, const std::map<std::string, std::string>& values) {
  static const std::regex variable(R"(\$\{([A-Za-z0-9_]+)\}|\$([A-Za-z0-9_]+))");
  std::string out;
  auto begin = expr.cbegin();
  for (std::sregex_iterator it(expr.begin(), expr.end(), variable), end; it != end; ++it) {
    const auto& m = *it;
    const std::string name = m[1].matched ? m[1].str() : m[2].str();
    out.append(begin, m[0].first);
    auto value = values.find(name);
    out += value != values.end() ? value->second : m[0].str();
    begin = m[0].second;
  }
  out.append(begin, expr.cend());
  return out;
}

std::set<std::string> metric_names(const std::string& expr) {
  static const std::regex name(R"(\bgpu_partitioner_[a-z_]+)");
  std::set<std::string> out;
  for (std::sregex_iterator it(expr.begin(), expr.end(), name), end; it != end; ++it)
    out.insert(it->str());
  return out;
}

std::multimap<std::string, std::string> matcher_labels(const std::string& expr) {
  static const std::regex selector(R"(\b(gpu_partitioner_[a-z_]+)\{([^}]*)\})");
  static const std::regex matcher(R"(([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=))");
  std::multimap<std::string, std::string> out;
  for (std::sregex_iterator it(expr.begin(), expr.end(), selector), end; it != end; ++it) {
    // Label names only: drop the quoted values first.
    const std::string inside =
        std::regex_replace((*it)[2].str(), std::regex(R"("(\\.|[^"\\])*")"), "\"\"");
    for (std::sregex_iterator m(inside.begin(), inside.end(), matcher), mend; m != mend; ++m)
      out.emplace((*it)[1].str(), (*m)[1].str());
  }
  return out;
}

} // namespace gpu_partitioner::monitoring
