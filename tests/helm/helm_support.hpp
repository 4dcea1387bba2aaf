#pragma once

// Support for the Helm chart's tests: running helm and kubectl (found on PATH, which
// tools/test points at the control-plane bin dir) and reading what they print.

#include "tests/support/loopback.hpp"

#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <vector>

namespace gpu_partitioner::helm_test {

struct command_result {
  int status = -1; // the exit code; -1 if it did not exit normally
  std::string out;
  std::string err;
  bool ok() const { return status == 0; }
  /// The command, its exit code and both outputs, for failure messages.
  std::string describe() const;
  std::string command;
};

/// Runs `args` (args[0] looked up on PATH) with stdin from /dev/null, `env` added to
/// this process's environment, and waits for it.
command_result run(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env = {});

/// The chart, copied out of the runfiles (whose files are symlinks) into a directory of
/// its own under $TEST_TMPDIR; its path.
std::string chart_copy();

/// Every non-empty document of a multi-document YAML text.
std::vector<YAML::Node> documents(const std::string& yaml);

/// The first document of `kind` named `name` ("" = any name); an undefined node (false)
/// if none.
YAML::Node find(const std::vector<YAML::Node>& docs, const std::string& kind,
                const std::string& name = {});
std::vector<YAML::Node> find_all(const std::vector<YAML::Node>& docs, const std::string& kind);

/// Structural equality: maps by key (any order), sequences in order, scalars as text.
bool same(const YAML::Node& a, const YAML::Node& b);

/// The string list at a sequence node (empty if not a sequence).
std::vector<std::string> strings(const YAML::Node& seq);

} // namespace gpu_partitioner::helm_test
