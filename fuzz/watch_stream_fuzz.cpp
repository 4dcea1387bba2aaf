// The watch stream, as list_watch reads it: bytes arrive in chunks of any size, the line
// splitter reassembles lines, decode_event parses each, and watch_step turns the events
// into deliveries.
//
// Input: two bytes that pick the chunk sizes, then the stream. Checks: the lines do not
// depend on how the stream was chunked (and match a plain split on '\n'); an event that
// decodes has an object; the deliveries agree with what the consumer was told before
// (an ADDED is new, a MODIFIED or DELETED is known, a repeat is not delivered); after an
// ERROR the loop relists or backs off, and comes back watching with nothing lost.

#include "fuzz/check.hpp"
#include "kube/watch_protocol.hpp"
#include "kube/watch_stream.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace gk = gpu_partitioner::kube;

std::vector<std::string> split_plainly(std::string_view stream, std::string& rest) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t nl; (nl = stream.find('\n', start)) != std::string_view::npos; start = nl + 1) {
    std::string line(stream.substr(start, nl - start));
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (!line.empty())
      lines.push_back(line);
  }
  rest = std::string(stream.substr(start));
  return lines;
}

// Chunks of 1 to 97 bytes picked by `seed`, or the whole stream at once for seed 0.
std::vector<std::string> split_in_chunks(std::string_view stream, std::uint16_t seed,
                                         std::size_t& pending) {
  gk::line_splitter splitter;
  std::vector<std::string> lines;
  std::uint32_t state = seed;
  for (std::size_t at = 0; at < stream.size();) {
    state = state * 1103515245u + 12345u;
    const std::size_t n = seed == 0
                              ? stream.size()
                              : std::min<std::size_t>(1 + (state >> 16) % 97, stream.size() - at);
    splitter.feed(stream.substr(at, n), [&](std::string& line) { lines.push_back(line); });
    at += n;
  }
  pending = splitter.pending();
  return lines;
}

// Brings the loop back to watching, as list_watch would: after a back-off the timer
// fires; a relist lists exactly what the consumer knows, so nothing is delivered.
void resume(gk::watch_state& state, std::map<gk::object_key, std::string>& told) {
  for (int round = 0; round < 3 && state.phase != gk::watch_phase::watching; ++round) {
    gk::watch_input in;
    if (state.phase == gk::watch_phase::backing_off) {
      in.what = gk::watch_input::kind::timer_fired;
      const auto out = gk::watch_step(state, in);
      FUZZ_CHECK(out.next == gk::watch_output::request::list ||
                     out.next == gk::watch_output::request::watch,
                 "a fired timer asks for neither a list nor a watch");
      continue;
    }
    in.what = gk::watch_input::kind::list_page;
    in.resource_version = state.resource_version;
    for (const auto& [key, rv] : told)
      in.items.push_back({key, rv});
    const auto out = gk::watch_step(state, in);
    FUZZ_CHECK(out.deliver_items.empty() && out.deleted.empty() && out.synced,
               "relisting what the consumer knows changed something");
    FUZZ_CHECK(out.next == gk::watch_output::request::watch, "a full list does not watch next");
  }
  FUZZ_CHECK(state.phase == gk::watch_phase::watching, "the loop does not come back to watching");
  FUZZ_CHECK(state.known == told, "the loop's view differs from what the consumer was told");
}

void deliver(gk::watch_state& state, std::map<gk::object_key, std::string>& told,
             const gk::watch_event& event) {
  gk::watch_input in;
  in.what = gk::watch_input::kind::event;
  in.event = event.type;
  in.code = event.code;
  in.object.key = event.key;
  in.object.resource_version = event.resource_version;
  const auto out = gk::watch_step(state, in);
  const auto before = told.find(event.key);
  const bool known = before != told.end();
  switch (event.type) {
  case gk::event_type::error:
    FUZZ_CHECK(!out.deliver_as, "an ERROR event is delivered");
    // A 410 relists, at once or (the second in a row soon after a list) after a back-off;
    // any other ERROR backs off.
    FUZZ_CHECK(out.next == gk::watch_output::request::sleep ||
                   (event.code == 410 && out.next == gk::watch_output::request::list),
               "ERROR " + std::to_string(event.code) + " neither relists nor backs off");
    if (event.code == 410 && out.next == gk::watch_output::request::sleep)
      FUZZ_CHECK(state.relist_after_backoff, "a 410's back-off does not relist after");
    resume(state, told);
    return;
  case gk::event_type::bookmark:
    FUZZ_CHECK(!out.deliver_as, "a BOOKMARK is delivered");
    break;
  case gk::event_type::deleted:
    FUZZ_CHECK(out.deliver_as == (known ? std::optional(gk::event_type::deleted) : std::nullopt),
               "DELETED of a " + std::string(known ? "known" : "unknown") + " object");
    told.erase(event.key);
    break;
  case gk::event_type::added:
  case gk::event_type::modified:
    if (known && before->second == event.resource_version) {
      FUZZ_CHECK(!out.deliver_as, "a repeated event is delivered again");
    } else {
      FUZZ_CHECK(out.deliver_as == (known ? gk::event_type::modified : gk::event_type::added),
                 "delivered as the wrong type");
      told[event.key] = event.resource_version;
    }
    break;
  }
  FUZZ_CHECK(out.next == gk::watch_output::request::none, "an event ends the watch");
  if (!event.resource_version.empty())
    FUZZ_CHECK(state.resource_version == event.resource_version,
               "the watch does not resume from the latest resourceVersion");
  FUZZ_CHECK(state.known == told, "the loop's view differs from what the consumer was told");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2)
    return 0;
  const auto seed = static_cast<std::uint16_t>(data[0] | data[1] << 8);
  const std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);

  std::string rest;
  const auto expected = split_plainly(stream, rest);
  std::size_t pending = 0;
  const auto lines = split_in_chunks(stream, seed, pending);
  FUZZ_CHECK(lines == expected, "the lines depend on the chunking (" +
                                    std::to_string(lines.size()) + " vs " +
                                    std::to_string(expected.size()) + ")");
  FUZZ_CHECK(pending == rest.size(), "pending " + std::to_string(pending) + " bytes, expected " +
                                         std::to_string(rest.size()));
  std::size_t whole_pending = 0;
  FUZZ_CHECK(split_in_chunks(stream, 0, whole_pending) == expected && whole_pending == rest.size(),
             "one chunk splits differently");

  gk::watch_state state;
  gk::watch_start(state);
  std::map<gk::object_key, std::string> told;
  resume(state, told);

  // One event object for the whole stream, as list_watch keeps it.
  gk::watch_event event;
  for (auto line : lines) {
    const auto decoded = gk::decode_event(line, event);
    if (!decoded.ok()) {
      FUZZ_CHECK(decoded.error().kind == gk::error_kind::decode && !decoded.error().message.empty(),
                 "a refused line without a Decode error");
      continue;
    }
    FUZZ_CHECK(event.object != nullptr && event.object->IsObject(), "an event without an object");
    if (event.type == gk::event_type::error)
      FUZZ_CHECK(event.key.name.empty() && event.resource_version.empty(),
                 "an ERROR event names an object");
    deliver(state, told, event);
  }
  return 0;
}
