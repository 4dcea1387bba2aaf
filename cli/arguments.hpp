#pragma once

// kubectl-partitioning's command line, as kubectl users type it: kubectl's global flags
// (--kubeconfig, --context, --as, --request-timeout, -v, ...) in both `--flag value` and
// `--flag=value` spellings, anywhere on the line, and each command's own flags. Pure:
// words in, a command or a usage error out; the help text comes from the same table.

#include <chrono>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace gpu_partitioner::cli {

enum class command_kind { list, status, pause, resume, retry, promote, help, version };

/// -o/--output: text (the default), kubectl's wide, or the objects as the API server
/// returned them in JSON or YAML.
enum class output_format { text, wide, json, yaml };

struct command {
  command_kind kind = command_kind::help;
  std::string plan;
  std::string node;

  // -- kubectl's global flags --
  std::string kubeconfig;
  std::string context;
  /// --cluster and --user replace the context's cluster and user.
  std::string cluster;
  std::string user;
  /// --as, --as-group (repeatable), --as-uid: impersonation, replacing the kubeconfig's.
  std::string as;
  std::vector<std::string> as_groups;
  std::string as_uid;
  /// --request-timeout: the deadline of each request; zero means none. Unset: the
  /// client's own (30 s).
  std::optional<std::chrono::milliseconds> request_timeout;
  /// -v/--v: at 6 and above each request is logged to stderr as kubectl logs it.
  int verbosity = 0;
  /// -n/--namespace: accepted as kubectl accepts it; plans and their items are
  /// cluster-scoped, so it selects nothing.
  std::string namespace_;

  // -- the commands' own flags --
  /// status --all: also list the nodes that succeeded (by default only the others are
  /// listed when the plan has more than a screenful of nodes).
  bool all_nodes = false;
  output_format output = output_format::text;
  /// -w/--watch (list, status): render again whenever the objects change.
  bool watch = false;
  /// help: the command whose help is asked for (`help status`, `status --help`); unset:
  /// the top-level help.
  std::optional<command_kind> help_of;
};

/// Why the command line was refused, in words that name the argument; `command` is the
/// command it was meant for when that is known, so the hint points at its help.
struct usage_error {
  std::string message;
  std::optional<command_kind> command{};
};

std::variant<command, usage_error> parse_arguments(const std::vector<std::string>& args);

/// The top-level help: what the plugin is for, its commands, the global flags.
std::string usage();

/// One command's help: its usage line, what it does, its flags, examples.
std::string usage_of(command_kind kind);

/// "See 'kubectl partitioning status --help' for usage.", after a usage error.
std::string usage_hint(const std::optional<command_kind>& kind);

/// The command's name as typed ("status").
std::string name_of(command_kind kind);

/// kubectl's --request-timeout: a bare whole number is seconds, otherwise a Go duration
/// ("30s", "1m", "1h30m", "250ms", "1.5s"); "0" means no timeout. Nothing when the text is
/// neither (a negative duration included).
std::optional<std::chrono::milliseconds> parse_request_timeout(const std::string& text);

} // namespace gpu_partitioner::cli
