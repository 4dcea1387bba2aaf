// The kubeconfig parser: any text gives a connection config or a Config error naming
// the file; a config it gives is one the client can use (an http(s) server URL without
// a trailing slash, a client certificate only with its key, a supported exec plugin).
// Also decode_base64 (the `-data` fields): what it decodes re-encodes and decodes the
// same.

#include "fuzz/check.hpp"
#include "kube/config.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

namespace gk = gpu_partitioner::kube;

// The parser reads the files a kubeconfig names (certificate-authority, client-key,
// ...), relative to /nonexistent-fuzz-folder. Inputs that could name a device, a FIFO
// or a pseudo-file (which may block or never end) are skipped, and so is every YAML
// escape (which could spell such a path), so the fuzzer reads only plain files.
bool may_name_a_special_file(const std::string& text) {
  for (const char* word : {"/dev", "/proc", "/sys", "/run", "\\"})
    if (text.find(word) != std::string::npos)
      return true;
  return false;
}

std::string encode_base64(const std::string& bytes) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned n = static_cast<unsigned char>(bytes[i]) << 16 |
                       static_cast<unsigned char>(bytes[i + 1]) << 8 |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6)
      out += alphabet[(n >> shift) & 63];
  }
  if (i + 1 == bytes.size()) {
    const unsigned n = static_cast<unsigned char>(bytes[i]) << 16;
    out += {alphabet[n >> 18 & 63], alphabet[n >> 12 & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const unsigned n =
        static_cast<unsigned char>(bytes[i]) << 16 | static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += {alphabet[n >> 18 & 63], alphabet[n >> 12 & 63], alphabet[n >> 6 & 63], '='};
  }
  return out;
}

void check_base64(const std::string& text) {
  const auto decoded = gk::decode_base64(text);
  if (!decoded)
    return;
  FUZZ_CHECK(decoded->size() <= text.size() * 3 / 4, "decoded more bytes than the text holds");
  const std::string encoded = encode_base64(*decoded);
  const auto again = gk::decode_base64(encoded);
  FUZZ_CHECK(again && *again == *decoded,
             "base64 round trip: " + fuzz::shown(text) + " -> " + fuzz::shown(encoded));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  check_base64(text);
  if (may_name_a_special_file(text))
    return 0;
  const std::string path = "/nonexistent-fuzz-folder/kubeconfig";
  const auto parsed = gk::parse_kubeconfig(text, path);
  if (!parsed.ok()) {
    FUZZ_CHECK(parsed.error().kind == gk::error_kind::config &&
                   parsed.error().message.rfind("kubeconfig \"" + path + "\": ", 0) == 0,
               "an error that does not name the file: " + parsed.error().message);
    return 0;
  }
  const gk::connection_config& c = parsed.value();
  FUZZ_CHECK(c.server.rfind("https://", 0) == 0 || c.server.rfind("http://", 0) == 0,
             "server " + fuzz::shown(c.server));
  FUZZ_CHECK(c.server.back() != '/', "a trailing slash: " + fuzz::shown(c.server));
  // No user name or password, control character, query or bad port in it (issue 38).
  FUZZ_CHECK(!gk::server_url_problem(c.server), "server " + fuzz::shown(c.server));
  FUZZ_CHECK(c.client_cert_pem.empty() == c.client_key_pem.empty(),
             "a client certificate without its key, or the other way round");
  FUZZ_CHECK(!c.default_namespace.empty(), "no namespace");
  FUZZ_CHECK(c.origin.find(path) != std::string::npos, "origin " + c.origin);
  if (c.exec) {
    FUZZ_CHECK(!c.exec->command.empty(), "an exec plugin without a command");
    FUZZ_CHECK(c.exec->api_version == "client.authentication.k8s.io/v1" ||
                   c.exec->api_version == "client.authentication.k8s.io/v1beta1",
               "exec apiVersion " + c.exec->api_version);
  }
  return 0;
}
