#pragma once

// The plugin's command line, parsed for a test: the command, or the refusal; the other
// outcome fails the test case.

#include "cli/arguments.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <variant>
#include <vector>

namespace gpu_partitioner::cli::testing {

inline command parsed(std::vector<std::string> args) {
  auto r = parse_arguments(args);
  if (auto* e = std::get_if<usage_error>(&r))
    BOOST_FAIL("refused: " + e->message);
  return std::get<command>(r);
}

inline usage_error refusal(std::vector<std::string> args) {
  auto r = parse_arguments(args);
  if (auto* e = std::get_if<usage_error>(&r))
    return *e;
  BOOST_FAIL("accepted");
  return {};
}

} // namespace gpu_partitioner::cli::testing
