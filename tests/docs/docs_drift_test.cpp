// Docs that cannot drift: every operator and plugin flag, chart value, CRD field, metric
// and alert that docs/*.md, README.md and the chart's README name in backticks (or in
// code blocks) is checked against what it names: `gpu-partitioner --help`, the plugin's
// usage text, helm/gpu-partitioner/values.yaml, manifests/crds/*.yaml, the operator's
// metrics registry and the chart's Prometheus rules.
#include "actors/operator_metrics.hpp"
#include "cli/partitioning_cli.hpp"
#include "kube/config.hpp"

#include <boost/test/unit_test.hpp>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace gpu_partitioner;

namespace {

// Flags the docs show in backticks of their own (no command before them) that belong to
// tools other than the operator and the plugin; the comment says whose.
// clang-format off
const std::set<std::string> foreign_flags{
    "--jobs", "--nocache_test_results", "--config",                      // bazel
    "--set", "--create-namespace",                                       // helm
    "--skip-wait-for-delete-timeout",                                    // kubectl drain
    "--cascade",                                                         // kubectl delete
    "--runtime-config",                                                  // kube-apiserver
    "--no-heartbeats",                                                   // gpu-sim
    "--with-node",                                                       // tools/cluster
    "--plans", "--select-all", "--namespaces", "--pods-per-node",        // tools/bench
    "--stop-after", "--max-run-seconds",                                 // tools/bench
    "--down", "--nodes", "--time-scale", "--plan", "--no-ui", "--name",  // tools/demo
};
// clang-format on

// Paths in backticks that are another object's: a Node's, a PDB's, AMD's DeviceConfig's.
const std::vector<std::string> foreign_paths{"status.allocatable", "spec.unschedulable",
                                             "spec.unhealthyPodEvictionPolicy",
                                             "spec.configManager"};

struct references {
  std::set<std::string> operator_flags; // `gpu-partitioner --help`
  std::set<std::string> plugin_flags;   // cli::usage() and cli::usage_of()
  YAML::Node values;                    // helm/gpu-partitioner/values.yaml
  std::map<std::string, std::pair<std::string, YAML::Node>> crds; // kind -> file, schema
  std::set<std::string> alerts;
  std::string sources; // controller/ and actors/, where reasons are spelled
};

std::string read_all(const std::string& path) {
  auto text = kube::read_file(path);
  BOOST_REQUIRE_MESSAGE(text.ok(), "cannot read " << path << ": "
                                                  << (text.ok() ? "" : text.error().describe()));
  return text.value();
}

template <typename F>
void each_match(const std::string& text, const std::regex& re, F f) {
  for (std::sregex_iterator i(text.begin(), text.end(), re), end; i != end; ++i)
    f(*i);
}

const std::regex flag_re(R"((?:^|[^A-Za-z0-9_-])(--[a-z][a-z0-9_-]*[a-z0-9]))");

std::set<std::string> flags_in(const std::string& text) {
  std::set<std::string> out;
  each_match(text, flag_re, [&](const std::smatch& m) { out.insert(m[1]); });
  return out;
}

const references& refs() {
  static const references r = [] {
    references r;
    std::string help;
    FILE* p = popen("./gpu-partitioner --help 2>&1", "r");
    BOOST_REQUIRE(p != nullptr);
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;)
      help.append(buf, n);
    BOOST_REQUIRE_MESSAGE(pclose(p) == 0, "gpu-partitioner --help failed: " << help);
    r.operator_flags = flags_in(help);
    // The global flags, then each command's own.
    std::string plugin_help = cli::usage();
    for (auto kind :
         {cli::command_kind::list, cli::command_kind::status, cli::command_kind::pause,
          cli::command_kind::resume, cli::command_kind::retry, cli::command_kind::promote})
      plugin_help += cli::usage_of(kind);
    r.plugin_flags = flags_in(plugin_help);
    r.values = YAML::LoadFile("helm/gpu-partitioner/values.yaml");
    for (const auto& e : std::filesystem::directory_iterator("manifests/crds")) {
      if (e.path().extension() != ".yaml")
        continue;
      const auto crd = YAML::LoadFile(e.path().string());
      r.crds.emplace(crd["spec"]["names"]["kind"].as<std::string>(),
                     std::make_pair(e.path().string(),
                                    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]));
    }
    const auto rules = YAML::LoadFile("helm/gpu-partitioner/files/prometheus-rules.yaml");
    for (const auto& g : rules["groups"])
      for (const auto& rule : g["rules"])
        if (rule["alert"])
          r.alerts.insert(rule["alert"].as<std::string>());
    for (const char* dir : {"controller", "controller/detail", "actors"})
      for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.is_regular_file())
          r.sources += read_all(e.path().string());
    return r;
  }();
  return r;
}

/// A family of the operator's registry, or a histogram's _bucket, _sum or _count.
bool metric_known(const std::string& name) {
  const auto& reg = actors::process_metrics().registry;
  const auto* f = reg.find(std::regex_replace(name, std::regex("_(bucket|sum|count)$"), ""));
  return reg.find(name) != nullptr || (f && f->type() == metrics::metric_type::histogram);
}

/// Whether `text` has "name as the start of a string literal, the whole word.
bool spelled(const std::string& text, const std::string& name) {
  for (auto i = text.find('"' + name); i != std::string::npos; i = text.find('"' + name, i + 1))
    if (i + name.size() + 1 == text.size() || !std::isalnum(text[i + name.size() + 1]))
      return true;
  return false;
}

/// A text in backticks, or a command line of a code block, with the heading it is under.
struct snippet {
  std::string text;
  bool code = false;
  std::string section;
};

std::vector<snippet> snippets(const std::string& doc) {
  static const std::regex tick("`([^`]+)`");
  std::vector<snippet> out;
  std::string section, paragraph, command;
  bool fence = false;
  auto flush = [&] {
    each_match(paragraph, tick, [&](const std::smatch& m) {
      out.push_back({m[1], false, section});
    });
    paragraph.clear();
  };
  std::istringstream lines(doc);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("```", 0) == 0) {
      flush();
      fence = !fence;
    } else if (fence) { // a command continued with `\` is one
      command += line;
      if (!command.empty() && command.back() == '\\')
        command.back() = ' ';
      else
        out.push_back({command, true, section}), command.clear();
    } else if (line.rfind('#', 0) == 0) {
      flush();
      section = paragraph = line;
      flush();
    } else if (line.find_first_not_of(" \t") == std::string::npos) {
      flush();
    } else {
      paragraph += line + "\n";
    }
  }
  flush();
  return out;
}

enum class owner { none, operator_binary, plugin };

/// Whose flags a snippet shows: the command it starts with, or for bare flags in prose
/// the operator's, the plugin's in a section about the plugin.
owner owner_of(const snippet& s) {
  std::istringstream in(s.text);
  std::vector<std::string> words;
  for (std::string w; in >> w;)
    if (!(words.empty() && (w == "$" || std::regex_match(w, std::regex("[A-Z_]+=.*")))))
      words.push_back(w);
  if (words.empty())
    return owner::none;
  const auto base = words[0].substr(words[0].rfind('/') + 1);
  if (words[0].rfind("--", 0) == 0 && !s.code)
    return s.section.find("plugin") != std::string::npos ||
                   s.section.find("kubectl partitioning") != std::string::npos
               ? owner::plugin
               : owner::operator_binary;
  if (base == "gpu-partitioner")
    return owner::operator_binary;
  if (base == "kubectl-partitioning" ||
      (base == "kubectl" && words.size() > 1 && words[1] == "partitioning"))
    return owner::plugin;
  return owner::none;
}

/// Whether a dotted path names a node of a YAML tree: of values (an empty map takes any
/// key), or of a schema (`children` "properties", stepping into arrays' "items").
/// (reset, never =: assigning a yaml-cpp Node writes into the tree.)
bool has_path(const YAML::Node& root, const std::vector<std::string>& path,
              const std::string& children = "") {
  YAML::Node node(root);
  for (const auto& seg : path) {
    const YAML::Node& n = node; // const lookups add nothing to the tree
    if (!children.empty()) {
      node.reset(n["items"] ? n["items"] : n);
      node.reset(n[children]);
    }
    if (!n || !n.IsMap())
      return false;
    if (!n[seg])
      return children.empty() && n.size() == 0;
    node.reset(n[seg]);
  }
  return true;
}

std::vector<std::string> split_path(const std::string& s) {
  std::vector<std::string> out;
  std::string seg;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && s[i] == '\\' && i + 1 < s.size()) // helm's escaped dot
      seg += s[++i];
    else if (i == s.size() || s[i] == '.')
      out.push_back(std::regex_replace(seg, std::regex(R"(\[[^\]]*\])"), "")), seg.clear();
    else
      seg += s[i];
  }
  return out;
}

/// The field tables of api.md: `## Kind`, its `### \`spec\`` and `### \`status\``, then
/// `**Type**` tables, each checked where the fields above it use the type.
void check_api_tables(const std::string& file, const std::string& doc, const references& r,
                      std::vector<std::string>& problems) {
  using place = std::pair<std::string, YAML::Node>; // "Kind spec.rollout", schema
  std::map<std::string, std::vector<place>> uses;   // type name -> where it is used
  std::vector<place> current;
  std::string kind;
  static const std::regex type_heading(R"(^(?:\*\*|### )([A-Z][A-Za-z]+)\b.*)");
  static const std::regex type_cell(R"(^(?:list of )?\[?([A-Z][A-Za-z]+)(?:\]\(.*\))?$)");
  std::istringstream lines(doc);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (line.rfind("## ", 0) == 0) {
      kind = line.substr(3);
      current.clear();
    } else if (line == "### `spec`" || line == "### `status`") {
      current.clear(); // (never assign over Nodes)
      if (!r.crds.count(kind)) {
        problems.push_back(file + ": kind " + kind + " is in none of manifests/crds/*.yaml");
        continue;
      }
      const auto part = line.substr(5, line.size() - 6);
      current.push_back({kind + " " + part, r.crds.at(kind).second["properties"][part]});
    } else if (std::regex_match(line, m, type_heading)) {
      current.clear();
      current.insert(current.end(), uses[m[1]].begin(), uses[m[1]].end());
      if (current.empty())
        problems.push_back(file + ": type " + m[1].str() + " is the type of no field above it");
    } else if (line.rfind("| `", 0) == 0) {
      std::vector<std::string> cells; // the first two: field names, type
      for (size_t a = 0, b; cells.size() < 2 && (b = line.find('|', a + 1)) != std::string::npos;
           a = b)
        cells.push_back(line.substr(a + 1, b - a - 1));
      std::string type =
          cells.size() > 1 ? std::regex_replace(cells[1], std::regex("^ +| +$"), "") : "";
      std::smatch t;
      const bool typed = std::regex_match(type, t, type_cell);
      each_match(cells.at(0), std::regex("`([A-Za-z]+)(?:\\[\\])?`"), [&](const std::smatch& f) {
        for (const auto& [where, node] : current) {
          const auto field = node["properties"][f[1].str()];
          if (!field) {
            problems.push_back(file + ": field " + f[1].str() + " of " + where + " is not in " +
                               r.crds.at(where.substr(0, where.find(' '))).first);
            continue;
          }
          if (typed)
            uses[t[1]].push_back(
                {where + "." + f[1].str(), field["items"] ? field["items"] : field});
        }
      });
    }
  }
}

/// What `doc` (the text of `file`) names that the tree does not have, one line each.
std::vector<std::string> check_doc(const std::string& file, const std::string& doc) {
  const auto& r = refs();
  std::vector<std::string> problems;
  static const std::regex value_re(R"(^([a-z][A-Za-z0-9]*)((\.[A-Za-z][A-Za-z0-9]*)+)(=\S*)?$)");
  static const std::regex set_re(R"(--set(?:-string)?[ =]'?([A-Za-z][A-Za-z0-9.\\/-]*)=)");
  static const std::regex field_re(R"(^(spec|status)(\.[A-Za-z][A-Za-z0-9]*(\[[a-z0-9]*\])?)+$)");
  static const std::regex metric_re(R"(\bgpu_partitioner_[a-z0-9_]*[a-z0-9]\b(?![*]))");
  static const std::regex alert_re(R"(\bGpuPartitioner[A-Za-z]+)");
  auto value_ok = [&](const std::string& path) { return has_path(r.values, split_path(path)); };
  for (const auto& s : snippets(doc)) {
    const auto o = owner_of(s);
    for (const auto& flag : flags_in(s.text)) {
      if (o == owner::operator_binary && !r.operator_flags.count(flag) &&
          !foreign_flags.count(flag))
        problems.push_back(file + ": flag " + flag + " is not in `gpu-partitioner --help`");
      if (o == owner::plugin && !r.plugin_flags.count(flag))
        problems.push_back(file + ": flag " + flag + " is not in `kubectl partitioning --help`");
    }
    std::smatch m;
    if (!s.code && std::regex_match(s.text, m, value_re) && r.values[m[1].str()] &&
        !std::regex_search(s.text, std::regex(R"(\.(tar|json|yaml|md)$)")) && // a file
        !value_ok(m[1].str() + m[2].str()))
      problems.push_back(file + ": chart value " + m[1].str() + m[2].str() +
                         " is not in helm/gpu-partitioner/values.yaml");
    if (s.text.rfind("helm", 0) == 0 || s.text.rfind("--set", 0) == 0)
      each_match(s.text, set_re, [&](const std::smatch& v) {
        if (!value_ok(v[1]))
          problems.push_back(file + ": chart value " + v[1].str() + " (--set) is not in " +
                             "helm/gpu-partitioner/values.yaml");
      });
    bool foreign = false;
    for (const auto& f : foreign_paths)
      foreign = foreign || s.text.rfind(f, 0) == 0;
    if (!s.code && !foreign && std::regex_match(s.text, field_re)) {
      bool found = false;
      for (const auto& [kind, crd] : r.crds)
        found = found || has_path(crd.second, split_path(s.text), "properties");
      if (!found)
        problems.push_back(file + ": field " + s.text + " is in none of manifests/crds/*.yaml");
    }
    each_match(s.text, metric_re, [&](const std::smatch& n) {
      if (!metric_known(n[0]))
        problems.push_back(file + ": metric " + n[0].str() +
                           " is not in the operator's metrics registry");
    });
    each_match(s.text, alert_re, [&](const std::smatch& n) {
      if (!r.alerts.count(n[0]))
        problems.push_back(file + ": alert " + n[0].str() +
                           " is not in helm/gpu-partitioner/files/prometheus-rules.yaml");
    });
  }
  if (file == "docs/api.md")
    check_api_tables(file, doc, r, problems);
  // Reasons in operating.md's tables: CamelCase in backticks, as the code spells them.
  static const std::regex reason_re("`([A-Z][a-z]+[A-Z][A-Za-z]*)`");
  std::istringstream lines(doc);
  for (std::string line; file == "docs/operating.md" && std::getline(lines, line);)
    if (line.rfind('|', 0) == 0)
      each_match(line, reason_re, [&](const std::smatch& n) {
        if (n[1] != "DeviceConfig" && // AMD's kind, not a reason
            !spelled(r.sources, n[1]))
          problems.push_back(file + ": reason " + n[1].str() +
                             " is not in controller/*.cpp or actors/*.cpp");
      });
  return problems;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v)
    out += "\n  " + s;
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(docs_drift)

BOOST_AUTO_TEST_CASE(every_name_the_docs_give_exists) {
  std::vector<std::string> files{"README.md", "helm/gpu-partitioner/README.md"};
  for (const auto& e : std::filesystem::directory_iterator("docs"))
    if (e.path().extension() == ".md")
      files.push_back(e.path().string());
  BOOST_TEST(files.size() >= 8u);
  for (const auto& f : files) {
    const auto problems = check_doc(f, read_all(f));
    BOOST_TEST(problems.empty(), f << ":" << joined(problems));
  }
}

// api.md quotes the sample NodePartitioning's desiredHash (its first and last 8 digits):
// the hash the sample carries, which desired_hash_test pins.
BOOST_AUTO_TEST_CASE(the_quoted_desired_hash_is_the_samples) {
  const auto api = read_all("docs/api.md");
  const auto sample =
      read_all("manifests/samples/nodepartitioning-training-pool-partition-gpu-node-02.yaml");
  std::smatch quoted, carried;
  BOOST_TEST_REQUIRE(
      std::regex_search(api, quoted, std::regex(R"(`sha256:([0-9a-f]{8})\.\.\.([0-9a-f]{8})`)")));
  BOOST_TEST_REQUIRE(std::regex_search(sample, carried,
                                       std::regex(R"re(desiredHash: "sha256:([0-9a-f]{64})")re")));
  const std::string hash = carried[1];
  BOOST_TEST(hash.substr(0, 8) == quoted[1].str());
  BOOST_TEST(hash.substr(56) == quoted[2].str());
}

BOOST_AUTO_TEST_CASE(made_up_names_are_reported) {
  const std::string doc = "# Doc\n\n"
                          "Run with `--dcm-namespace` and `--made-up-flag`; see `dcm.madeUp`\n"
                          "and `status.madeUpField`, `gpu_partitioner_made_up_total` and\n"
                          "`GpuPartitionerMadeUp`.\n\n"
                          "## The kubectl plugin\n\n"
                          "`--all` and `--made-up-plugin-flag`.\n\n"
                          "```sh\nhelm install x helm/gpu-partitioner \\\n"
                          "  --set dcm.namespace=a --set made.up=b\n```\n\n"
                          "## PartitioningPlan\n\n### `spec`\n\n"
                          "| field | type |\n|---|---|\n"
                          "| `rollout` | Rollout |\n| `madeUpSpec` | bool |\n\n"
                          "**Rollout**\n\n| field | type |\n|---|---|\n"
                          "| `maxParallel` | int32 |\n| `madeUpRollout` | int32 |\n";
  auto problems = check_doc("docs/api.md", doc);
  for (const auto& p : check_doc("docs/operating.md", "| a | `PreflightFailed`, `MadeUpReason` |"))
    problems.push_back(p);
  const auto all = joined(problems);
  BOOST_TEST_MESSAGE("reported:" << all);
  for (const auto* name : {"docs/api.md: flag --made-up-flag is not in `gpu-partitioner --help`",
                           "--made-up-plugin-flag is not in `kubectl partitioning --help`",
                           "dcm.madeUp is not in helm", "made.up (--set) is not in helm",
                           "status.madeUpField is in none", "gpu_partitioner_made_up_total",
                           "GpuPartitionerMadeUp", "madeUpSpec of PartitioningPlan spec is",
                           "madeUpRollout of PartitioningPlan spec.rollout is",
                           "docs/operating.md: reason MadeUpReason is not in controller"})
    BOOST_TEST(all.find(name) != std::string::npos, "not reported: " << name);
  BOOST_TEST(problems.size() == 10u, all);
}

BOOST_AUTO_TEST_SUITE_END()
