// The API server's error bodies (decode_status): any body and code give a failure with
// a message; a body that is not a Status is quoted (at most 512 bytes and "...") with
// the kind the code implies; retry_after is never negative.
//
// Input: two bytes for the HTTP code (0 to 599), then the body.

#include "fuzz/check.hpp"
#include "kube/error.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

namespace gk = gpu_partitioner::kube;

bool looks_like_status(const std::string& body) {
  return body.find("Status") != std::string::npos;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2)
    return 0;
  const int code = (data[0] << 8 | data[1]) % 600;
  const std::string body(reinterpret_cast<const char*>(data) + 2, size - 2);
  const gk::failure f = gk::decode_status(code, body);
  FUZZ_CHECK(!f.message.empty() || looks_like_status(body), "an empty message");
  FUZZ_CHECK(f.retry_after.count() >= 0, "a negative Retry-After");
  FUZZ_CHECK(!f.describe().empty(), "an empty description");
  (void)gk::is_retryable(f);
  if (!looks_like_status(body)) {
    FUZZ_CHECK(f.code == code && f.kind == gk::kind_for_code(code) && f.reason.empty() &&
                   f.causes.empty(),
               "a body that is no Status changed code, kind, reason or causes");
    const std::string expected = body.empty()        ? "HTTP " + std::to_string(code)
                                 : body.size() > 512 ? body.substr(0, 512) + "..."
                                                     : body;
    FUZZ_CHECK(f.message == expected, "message " + fuzz::shown(f.message));
  }
  return 0;
}
