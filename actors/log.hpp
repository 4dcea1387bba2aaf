#pragma once

#include <string>

namespace gpu_partitioner::actors {

enum class log_level { debug, info, warning, error };

/// Structured logs: one line per record, `time level message plan=... node=...`.
void set_log_level(log_level level);

/// A value as a record holds it: as is when it is one plain word, else in double quotes
/// with quotes, backslashes and every control byte escaped (protocol::printable), so a
/// record stays one line however hostile the names and messages it quotes.
std::string log_value(const std::string& v);

bool parse_log_level(const std::string& text, log_level& out);
void log_at(log_level level, const std::string& message, const std::string& plan = {},
            const std::string& node = {});

inline void log_debug(const std::string& m, const std::string& plan = {},
                      const std::string& node = {}) {
  log_at(log_level::debug, m, plan, node);
}
inline void log_info(const std::string& m, const std::string& plan = {},
                     const std::string& node = {}) {
  log_at(log_level::info, m, plan, node);
}
inline void log_warning(const std::string& m, const std::string& plan = {},
                        const std::string& node = {}) {
  log_at(log_level::warning, m, plan, node);
}
inline void log_error(const std::string& m, const std::string& plan = {},
                      const std::string& node = {}) {
  log_at(log_level::error, m, plan, node);
}

} // namespace gpu_partitioner::actors
