#include "cli/arguments.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace gpu_partitioner::cli {

namespace {

constexpr unsigned bit(command_kind k) {
  return 1u << static_cast<unsigned>(k);
}
constexpr unsigned every_command = ~0u;
constexpr unsigned list_and_status = bit(command_kind::list) | bit(command_kind::status);

using setter = std::optional<std::string> (*)(command&, const std::string&);

/// One flag, as kubectl spells it. `value` names what a flag with a value takes (nullptr
/// for a boolean); `commands` are those it applies to. Parsing and help read this table.
struct flag_spec {
  const char* name;
  char shorthand;
  const char* value;
  unsigned commands;
  const char* help;
  setter set;
};

std::optional<std::string> not_empty(const std::string& v, const char* flag, std::string& out) {
  if (v.empty())
    return std::string("--") + flag + " needs a value";
  out = v;
  return std::nullopt;
}

const std::array<flag_spec, 16> flags{{
    {"output", 'o', "FORMAT", list_and_status,
     "json, yaml or wide: the objects as the API server returned them (json, yaml; a v1 List), "
     "or the table with more columns (wide)",
     [](command& c, const std::string& v) -> std::optional<std::string> {
       if (v == "json")
         c.output = output_format::json;
       else if (v == "yaml")
         c.output = output_format::yaml;
       else if (v == "wide")
         c.output = output_format::wide;
       else
         return "--output \"" + v +
                "\" is not a format this command prints; use json, yaml or wide";
       return std::nullopt;
     }},
    {"watch", 'w', nullptr, list_and_status,
     "after the first answer, print again whenever the objects change; status ends when the "
     "plan is Completed, both end on Ctrl-C",
     [](command& c, const std::string& v) -> std::optional<std::string> {
       c.watch = v == "true";
       return std::nullopt;
     }},
    {"all", 0, nullptr, bit(command_kind::status),
     "also list the nodes that succeeded (a plan of more than 20 nodes lists only the others)",
     [](command& c, const std::string& v) -> std::optional<std::string> {
       c.all_nodes = v == "true";
       return std::nullopt;
     }},
    {"kubeconfig", 0, "FILE", every_command,
     "the kubeconfig to use (else $KUBECONFIG's files merged, else ~/.kube/config, else "
     "in-cluster)",
     [](command& c, const std::string& v) { return not_empty(v, "kubeconfig", c.kubeconfig); }},
    {"context", 0, "NAME", every_command, "the kubeconfig context to use",
     [](command& c, const std::string& v) { return not_empty(v, "context", c.context); }},
    {"cluster", 0, "NAME", every_command, "the kubeconfig cluster to use instead of the context's",
     [](command& c, const std::string& v) { return not_empty(v, "cluster", c.cluster); }},
    {"user", 0, "NAME", every_command, "the kubeconfig user to use instead of the context's",
     [](command& c, const std::string& v) { return not_empty(v, "user", c.user); }},
    {"as", 0, "USER", every_command, "the user to impersonate",
     [](command& c, const std::string& v) { return not_empty(v, "as", c.as); }},
    {"as-group", 0, "GROUP", every_command, "a group to impersonate (repeat for more)",
     [](command& c, const std::string& v) -> std::optional<std::string> {
       if (v.empty())
         return std::string("--as-group needs a value");
       c.as_groups.push_back(v);
       return std::nullopt;
     }},
    {"as-uid", 0, "UID", every_command, "the UID to impersonate",
     [](command& c, const std::string& v) { return not_empty(v, "as-uid", c.as_uid); }},
    {"request-timeout", 0, "DURATION", every_command,
     "how long to wait for each answer: a number of seconds or 30s, 1m, 1h; 0 waits forever "
     "(default 30s)",
     [](command& c, const std::string& v) -> std::optional<std::string> {
       auto t = parse_request_timeout(v);
       if (!t)
         return "--request-timeout \"" + v +
                "\" is neither a whole number of seconds nor a duration such as 30s, 1m or 1h";
       c.request_timeout = t;
       return std::nullopt;
     }},
    {"v", 'v', "LEVEL", every_command, "log level; 6 and above log each request to stderr",
     [](command& c, const std::string& v) -> std::optional<std::string> {
       if (v.empty() || v.size() > 3 || v.find_first_not_of("0123456789") != std::string::npos)
         return "--v \"" + v + "\" is not a log level (a whole number from 0)";
       c.verbosity = std::atoi(v.c_str());
       return std::nullopt;
     }},
    {"namespace", 'n', "NAMESPACE", every_command,
     "accepted as kubectl accepts it; plans and their items are cluster-scoped, so it changes "
     "nothing",
     [](command& c, const std::string& v) { return not_empty(v, "namespace", c.namespace_); }},
    {"all-namespaces", 'A', nullptr, every_command,
     "accepted as kubectl accepts it; every plan is shown whatever the namespace",
     [](command&, const std::string&) -> std::optional<std::string> { return std::nullopt; }},
    // Read by parse_arguments itself: they choose the command.
    {"help", 'h', nullptr, every_command, "help for the command",
     [](command&, const std::string&) -> std::optional<std::string> { return std::nullopt; }},
    {"version", 0, nullptr, every_command, "print the plugin's version",
     [](command&, const std::string&) -> std::optional<std::string> { return std::nullopt; }},
}};

struct command_spec {
  command_kind kind;
  const char* name;
  std::size_t operands;
  const char* operand_names;
  const char* summary;
  const char* description;
  const char* examples;
};

const std::array<command_spec, 8> commands{{
    {command_kind::list, "list", 0, "", "every plan: phase, progress, window, canary",
     "One row per PartitioningPlan: its phase, nodes succeeded of the total, failed, in flight "
     "and soaking, its change window and canary, its age.",
     "  # every plan\n"
     "  kubectl partitioning list\n"
     "  # with each plan's rollout limits, as JSON, or kept up to date\n"
     "  kubectl partitioning list -o wide\n"
     "  kubectl partitioning list -o json\n"
     "  kubectl partitioning list --watch\n"},
    {command_kind::status, "status", 1, "PLAN",
     "the plan, its window and canary, and each node's phase and what holds it",
     "The plan's phase and progress, its change window and canary when it has them, the "
     "conditions that say something is wrong, and one row per node (in rollout order): its "
     "phase, time in phase, profile and what holds it (blocking pods and PDBs, its last "
     "error, its soak). -o json and -o yaml print a v1 List of the plan and its "
     "NodePartitionings, as the API server returned them.",
     "  kubectl partitioning status training-to-cpx\n"
     "  # every node, including those that succeeded\n"
     "  kubectl partitioning status training-to-cpx --all\n"
     "  # follow the rollout until the plan is Completed (Ctrl-C ends it sooner)\n"
     "  kubectl partitioning status training-to-cpx -w\n"
     "  # the objects, for jq\n"
     "  kubectl partitioning status training-to-cpx -o json | jq '.items[1:][].status.phase'\n"},
    {command_kind::pause, "pause", 1, "PLAN", "no new node starts; nodes in flight finish",
     "Sets spec.paused of the plan: the operator starts no new node, and the nodes in flight "
     "finish.",
     "  kubectl partitioning pause training-to-cpx\n"},
    {command_kind::resume, "resume", 1, "PLAN", "let a paused plan go on",
     "Clears spec.paused of the plan.", "  kubectl partitioning resume training-to-cpx\n"},
    {command_kind::retry, "retry", 2, "PLAN NODE", "retry a Failed node",
     "Annotates the node's NodePartitioning for a retry; only a Failed one is retried. The "
     "item is found by plan and node whatever its name.",
     "  kubectl partitioning retry training-to-cpx gpu-node-07\n"},
    {command_kind::promote, "promote", 1, "PLAN",
     "let the rest of the plan follow its canary, once that awaits promotion",
     "Annotates the plan to promote its canary; refused unless the canary is "
     "AwaitingPromotion for the plan's current generation.",
     "  kubectl partitioning promote training-to-cpx\n"},
    {command_kind::version, "version", 0, "", "print the plugin's version",
     "Prints the plugin's version.", "  kubectl partitioning version\n"},
    {command_kind::help, "help", 0, "[COMMAND]", "help for a command",
     "Prints the help of a command, or this list.", "  kubectl partitioning help status\n"},
}};

const command_spec& spec_of(command_kind kind) {
  for (const auto& c : commands)
    if (c.kind == kind)
      return c;
  return commands.back();
}

const command_spec* spec_named(const std::string& name) {
  for (const auto& c : commands)
    if (name == c.name)
      return &c;
  return nullptr;
}

const flag_spec* flag_named(const std::string& name) {
  for (const auto& f : flags)
    if (f.set != nullptr && name == f.name)
      return &f;
  return nullptr;
}

const flag_spec* flag_with_shorthand(char shorthand) {
  for (const auto& f : flags)
    if (f.set != nullptr && f.shorthand != 0 && f.shorthand == shorthand)
      return &f;
  return nullptr;
}

/// The commands a flag applies to, for the message that refuses it elsewhere.
std::string commands_of(unsigned mask) {
  std::vector<std::string> names;
  for (const auto& c : commands)
    if ((mask & bit(c.kind)) != 0 && c.kind != command_kind::help &&
        c.kind != command_kind::version)
      names.push_back(c.name);
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

/// `text` in lines of at most `width` columns, each after the first `indent` spaces in.
std::string wrapped(const std::string& text, std::size_t indent, std::size_t first_column,
                    std::size_t width = 100) {
  std::string out;
  std::size_t column = first_column;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos)
      end = text.size();
    const std::string word = text.substr(start, end - start);
    if (column > indent && column + 1 + word.size() > width) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
    } else if (column > indent) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    start = end + 1;
  }
  return out + "\n";
}

std::string flag_lines(unsigned match_mask, bool global) {
  std::string out;
  for (const auto& f : flags) {
    if (f.set == nullptr || (f.commands == every_command) != global)
      continue;
    if (!global && (f.commands & match_mask) == 0)
      continue;
    std::string left = "  ";
    left += f.shorthand != 0 ? std::string("-") + f.shorthand + ", " : std::string("    ");
    left += std::string("--") + f.name + (f.value != nullptr ? std::string(" ") + f.value : "");
    if (left.size() < 30)
      left += std::string(30 - left.size(), ' ');
    else
      left += "\n" + std::string(30, ' ');
    out += left + wrapped(f.help, 30, 30);
  }
  return out;
}

constexpr const char* command_list = "list, status, pause, resume, retry, promote";

} // namespace

std::string name_of(command_kind kind) {
  return spec_of(kind).name;
}

std::optional<std::chrono::milliseconds> parse_request_timeout(const std::string& text) {
  if (text.empty())
    return std::nullopt;
  if (text.find_first_not_of("0123456789") == std::string::npos) {
    if (text.size() > 9)
      return std::nullopt;
    return std::chrono::milliseconds(std::atoll(text.c_str()) * 1000);
  }
  // A Go duration: one or more decimal numbers, each with a unit.
  double total_ms = 0;
  std::size_t i = 0;
  if (text[0] == '+')
    ++i;
  if (i == text.size())
    return std::nullopt;
  while (i < text.size()) {
    const std::size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    const std::string number = text.substr(start, i - start);
    if (number.empty() || number == "." || number.find('.') != number.rfind('.'))
      return std::nullopt;
    const std::size_t unit_start = i;
    while (i < text.size() && !std::isdigit(static_cast<unsigned char>(text[i])) && text[i] != '.')
      ++i;
    const std::string unit = text.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit == "ns")
      scale = 1e-6;
    else if (unit == "us" || unit == "\xc2\xb5s" || unit == "\xce\xbcs")
      scale = 1e-3;
    else if (unit == "ms")
      scale = 1;
    else if (unit == "s")
      scale = 1000;
    else if (unit == "m")
      scale = 60000;
    else if (unit == "h")
      scale = 3600000;
    else
      return std::nullopt;
    total_ms += std::strtod(number.c_str(), nullptr) * scale;
  }
  if (total_ms > 1e12)
    return std::nullopt;
  // Under a millisecond but not zero is still a deadline, not "none".
  return std::chrono::milliseconds(static_cast<long long>(std::ceil(total_ms)));
}

std::variant<command, usage_error> parse_arguments(const std::vector<std::string>& args) {
  command c;
  bool help = false, version = false;
  std::vector<std::string> words;
  std::vector<const flag_spec*> given;
  // A bad value is reported once the command is known, so the hint names its help.
  std::optional<std::string> flag_problem;
  bool flags_ended = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (flags_ended || a.size() < 2 || a[0] != '-') {
      words.push_back(a);
      continue;
    }
    if (a == "--") {
      flags_ended = true;
      continue;
    }
    const flag_spec* f = nullptr;
    std::optional<std::string> value;
    std::string shown;
    if (a[1] == '-') {
      const auto eq = a.find('=');
      const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      if (eq != std::string::npos)
        value = a.substr(eq + 1);
      f = flag_named(name);
      shown = "--" + name;
      if (f == nullptr)
        return usage_error{"unknown flag: " + shown};
    } else {
      f = flag_with_shorthand(a[1]);
      shown = a.substr(0, 2);
      if (f == nullptr)
        return usage_error{"unknown shorthand flag: '" + std::string(1, a[1]) + "' in " + a};
      if (a.size() > 2)
        value = a[2] == '=' ? a.substr(3) : a.substr(2);
    }
    if (f->value != nullptr && !value) {
      if (i + 1 >= args.size())
        return usage_error{"flag needs an argument: " + shown + " " + f->value};
      value = args[++i];
    }
    if (f->value == nullptr) {
      if (value && *value != "true" && *value != "false")
        return usage_error{shown + " is true or false, not \"" + *value + "\""};
      if (!value)
        value = "true";
      if (std::string(f->name) == "help")
        help = *value == "true";
      else if (std::string(f->name) == "version")
        version = *value == "true";
    }
    if (auto problem = f->set(c, *value); problem && !flag_problem)
      flag_problem = problem;
    given.push_back(f);
  }

  const command_spec* verb = words.empty() ? nullptr : spec_named(words[0]);
  if (!words.empty() && verb == nullptr)
    return usage_error{"unknown command \"" + words[0] + "\" (" + command_list + ")"};
  if (flag_problem)
    return usage_error{*flag_problem, verb ? std::optional<command_kind>(verb->kind)
                                           : std::optional<command_kind>()};
  if (help || verb == nullptr || verb->kind == command_kind::help) {
    if (version && verb == nullptr && !help) {
      c.kind = command_kind::version;
      return c;
    }
    c.kind = command_kind::help;
    if (verb != nullptr && verb->kind != command_kind::help) {
      c.help_of = verb->kind;
    } else if (words.size() >= 2) {
      const command_spec* topic = spec_named(words[1]);
      if (topic == nullptr)
        return usage_error{"unknown command \"" + words[1] + "\" (" + command_list + ")"};
      if (words.size() > 2)
        return usage_error{"help takes one command, given " + std::to_string(words.size() - 1),
                           command_kind::help};
      c.help_of = topic->kind;
    }
    return c;
  }
  c.kind = verb->kind;
  for (const flag_spec* f : given)
    if ((f->commands & bit(c.kind)) == 0)
      return usage_error{std::string("--") + f->name + " is not a flag of " + verb->name +
                             " (only of " + commands_of(f->commands) + ")",
                         c.kind};
  if (words.size() - 1 != verb->operands)
    return usage_error{std::string(verb->name) + " takes " +
                           (verb->operands ? std::string(verb->operand_names) : "no arguments") +
                           ", given " + std::to_string(words.size() - 1),
                       c.kind};
  if (words.size() > 1)
    c.plan = words[1];
  if (words.size() > 2)
    c.node = words[2];
  // Groups or a UID without a user would be an impersonation of nobody; the API server
  // refuses it, and kubectl refuses it before asking.
  if (c.as.empty() && (!c.as_groups.empty() || !c.as_uid.empty()))
    return usage_error{std::string(c.as_groups.empty() ? "--as-uid" : "--as-group") +
                           " needs --as: impersonation needs a user name",
                       c.kind};
  return c;
}

std::string usage() {
  std::string out = "kubectl partitioning: watch and steer gpu-partitioner's PartitioningPlans\n"
                    "\nCommands:\n";
  for (const auto& c : commands) {
    std::string left = std::string("  ") + c.name + " " + c.operand_names;
    if (left.size() < 22)
      left += std::string(22 - left.size(), ' ');
    out += left + wrapped(c.summary, 22, 22);
  }
  out += "\nGlobal flags (as kubectl's; --flag value and --flag=value alike):\n";
  out += flag_lines(every_command, true);
  out += "\n" +
         wrapped("Exit status: 0 on success, 1 on any error (a usage error, an error from the "
                 "API server or the kubeconfig), as kubectl's.",
                 0, 0) +
         "Use \"kubectl partitioning COMMAND --help\" for a command's flags and examples.\n";
  return out;
}

std::string usage_of(command_kind kind) {
  const command_spec& c = spec_of(kind);
  std::string out = wrapped(c.description, 0, 0) + "\nUsage:\n  kubectl partitioning " + c.name +
                    (*c.operand_names ? std::string(" ") + c.operand_names : "") + " [flags]\n";
  out += std::string("\nExamples:\n") + c.examples;
  const std::string own = flag_lines(bit(kind), false);
  if (!own.empty())
    out += "\nFlags:\n" + own;
  out += "\nGlobal flags:\n" + flag_lines(every_command, true);
  return out;
}

std::string usage_hint(const std::optional<command_kind>& kind) {
  if (kind && *kind != command_kind::help)
    return "See 'kubectl partitioning " + name_of(*kind) + " --help' for usage.";
  return "See 'kubectl partitioning --help' for usage.";
}

} // namespace gpu_partitioner::cli
