#pragma once

// What a fuzz target asserts beyond "does not crash": a failed check prints what was
// expected and aborts, which libFuzzer reports as a crash and saves the input for.

#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(condition, what)                                                                \
  do {                                                                                             \
    if (!(condition)) {                                                                            \
      std::fprintf(stderr, "%s:%d: check failed: %s\n  %s\n", __FILE__, __LINE__, #condition,      \
                   std::string(what).c_str());                                                     \
      std::abort();                                                                                \
    }                                                                                              \
  } while (false)

namespace fuzz {

/// `text` shortened for a message, with bytes outside printable ASCII escaped.
inline std::string shown(const std::string& text, std::size_t limit = 400) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (text.size() > limit)
    out += "...(" + std::to_string(text.size()) + " bytes)";
  return out;
}

} // namespace fuzz
