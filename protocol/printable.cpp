#include "protocol/printable.hpp"

namespace gpu_partitioner::protocol {

namespace {

constexpr char hex[] = "0123456789abcdef";

void append_hex_byte(std::string& out, unsigned char c) {
  out += "\\x";
  out += hex[c >> 4];
  out += hex[c & 0xf];
}

bool continuation(unsigned c) {
  return (c & 0xc0) == 0x80;
}

/// The length of the well-formed UTF-8 sequence at `text[i]` (RFC 3629: no overlong forms,
/// no surrogates, nothing above U+10FFFF), or 0 if there is none.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) -> unsigned {
    return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u;
  };
  const unsigned lead = at(0);
  unsigned low = 0x80;
  unsigned high = 0xbf;
  std::size_t length = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0)
      low = 0xa0;
    else if (lead == 0xed)
      high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0)
      low = 0x90;
    else if (lead == 0xf4)
      high = 0x8f;
  } else {
    return 0;
  }
  if (at(1) < low || at(1) > high)
    return 0;
  for (std::size_t k = 2; k < length; ++k)
    if (!continuation(at(k)))
      return 0;
  return length;
}

} // namespace

std::string printable(std::string_view text, printable_style style) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      if (style.quoted && (c == '"' || c == '\\'))
        out += '\\';
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c < 0x80) {
      switch (c) {
      case '\n':
        out += style.keep_newlines ? "\n" : "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        append_hex_byte(out, c);
      }
      ++i;
      continue;
    }
    const std::size_t length = utf8_length(text, i);
    if (length == 0) {
      append_hex_byte(out, c);
      ++i;
    } else if (c == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0) {
      // U+0080 to U+009F: C1 controls, which a terminal obeys as it does ESC sequences.
      const auto second = static_cast<unsigned char>(text[i + 1]);
      out += "\\u00";
      out += hex[second >> 4];
      out += hex[second & 0xf];
      i += 2;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

} // namespace gpu_partitioner::protocol
