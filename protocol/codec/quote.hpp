#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpu_partitioner::protocol::codec {

/// `s` in double quotes for an error message, with quotes, backslashes and control
/// characters escaped, and cut after 64 bytes so a hostile value cannot flood a
/// status condition.
inline std::string quote(std::string_view s) {
  constexpr std::size_t limit = 64;
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size() && i < limit; ++i) {
    const char c = s[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\u00";
      out += hex[(c >> 4) & 0xf];
      out += hex[c & 0xf];
    } else {
      out += c;
    }
  }
  out += s.size() > limit ? "...\"" : "\"";
  return out;
}

} // namespace gpu_partitioner::protocol::codec
