#pragma once

// Text from outside the process (an object's name, an API server's message) made safe to
// print: shared by the operator's log (actors/) and kubectl-partitioning (cli/).

#include <string>
#include <string_view>

namespace gpu_partitioner::protocol {

struct printable_style {
  /// Pass line feeds through (a multi-line table), else escape them (one log record).
  bool keep_newlines = false;
  /// Escape `"` and `\` too, for text inside double quotes that a reader parses back.
  bool quoted = false;
};

/// `text` with every byte a terminal would act on written out as an escape, so a value can
/// neither start a line of its own nor recolour, move or retitle the terminal: \n, \r and
/// \t, other C0 controls and DEL as \xNN, C1 controls (U+0080 to U+009F, CSI among them) as
/// \u0080 to \u009f, and bytes that are not UTF-8 as \xNN. Valid UTF-8 passes unchanged.
std::string printable(std::string_view text, printable_style style = {});

} // namespace gpu_partitioner::protocol
