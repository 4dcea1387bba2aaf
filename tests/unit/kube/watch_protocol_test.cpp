// The list+watch protocol, state by state: what `watch_step` delivers and which request it
// asks for next, for every input in every phase. No server: inputs are built by hand.
#include "kube/watch_protocol.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace kube = gpu_partitioner::kube;
namespace bdata = boost::unit_test::data;

using kube::event_type;
using kube::watch_input;
using kube::watch_output;
using kube::watch_phase;
using kube::watch_state;
using request = watch_output::request;

namespace gpu_partitioner::kube {
std::ostream& operator<<(std::ostream& os, watch_phase p) {
  return os << to_string(p);
}
std::ostream& operator<<(std::ostream& os, event_type t) {
  static const char* names[] = {"added", "modified", "deleted", "bookmark", "error"};
  return os << names[static_cast<int>(t)];
}
std::ostream& operator<<(std::ostream& os, const object_key& k) {
  return os << k.namespace_ << "/" << k.name;
}
std::ostream& operator<<(std::ostream& os, watch_output::request r) {
  static const char* names[] = {"none", "list", "watch", "sleep"};
  return os << names[static_cast<int>(r)];
}
} // namespace gpu_partitioner::kube

namespace boost::test_tools::tt_detail {
template <>
struct print_log_value<std::pair<std::size_t, event_type>> {
  void operator()(std::ostream& os, const std::pair<std::size_t, event_type>& p) {
    os << "(" << p.first << ", " << p.second << ")";
  }
};
template <>
struct print_log_value<std::optional<event_type>> {
  void operator()(std::ostream& os, const std::optional<event_type>& t) {
    if (t)
      os << *t;
    else
      os << "nothing";
  }
};
} // namespace boost::test_tools::tt_detail

namespace {

kube::object_key key(const std::string& name, const std::string& ns = "") {
  return {ns, name};
}

watch_input::item item(const std::string& name, const std::string& rv) {
  return {key(name), rv};
}

watch_input page(std::vector<watch_input::item> items, const std::string& list_rv,
                 const std::string& continue_token = "") {
  watch_input in;
  in.what = watch_input::kind::list_page;
  in.items = std::move(items);
  in.resource_version = list_rv;
  in.continue_token = continue_token;
  return in;
}

watch_input event(event_type type, const std::string& name, const std::string& rv) {
  watch_input in;
  in.what = watch_input::kind::event;
  in.event = type;
  in.object = item(name, rv);
  return in;
}

watch_input bookmark(const std::string& rv) {
  watch_input in;
  in.what = watch_input::kind::event;
  in.event = event_type::bookmark;
  in.object.resource_version = rv;
  return in;
}

watch_input error_event(int code) {
  watch_input in;
  in.what = watch_input::kind::event;
  in.event = event_type::error;
  in.code = code;
  return in;
}

watch_input failed(kube::error_kind kind, const std::string& message = "boom") {
  watch_input in;
  in.what = watch_input::kind::request_failed;
  in.failure = kube::make_error(kind, message);
  return in;
}

watch_input closed() {
  watch_input in;
  in.what = watch_input::kind::stream_closed;
  return in;
}

watch_input timer() {
  watch_input in;
  in.what = watch_input::kind::timer_fired;
  return in;
}

using known_map = std::map<kube::object_key, std::string>;

// A loop that listed nodes a@10, b@11 and c@12 at list resourceVersion 100 and is
// now watching from there.
watch_state watching_abc() {
  watch_state s;
  kube::watch_start(s);
  auto out = kube::watch_step(s, page({item("a", "10"), item("b", "11"), item("c", "12")}, "100"));
  BOOST_TEST_REQUIRE(out.synced);
  BOOST_TEST_REQUIRE(s.phase == watch_phase::watching);
  return s;
}

// A loop backing off after its watch failed.
watch_state backing_off_abc() {
  auto s = watching_abc();
  auto out = kube::watch_step(s, failed(kube::error_kind::transport));
  BOOST_TEST_REQUIRE(out.next == request::sleep);
  return s;
}

bool asks_nothing(const watch_output& out) {
  return out.next == request::none && out.deliver_items.empty() && !out.deliver_as &&
         out.deleted.empty() && !out.synced;
}

using delivered = std::vector<std::pair<std::size_t, event_type>>;

} // namespace

BOOST_AUTO_TEST_SUITE(watch_protocol_start)

BOOST_AUTO_TEST_CASE(start_asks_for_a_fresh_list) {
  watch_state s;
  auto out = kube::watch_start(s);
  BOOST_TEST(out.next == request::list);
  BOOST_TEST(out.continue_token == "");
  BOOST_TEST(out.relist);
  BOOST_TEST(!out.note.empty());
  BOOST_TEST(s.phase == watch_phase::listing);
  BOOST_TEST(s.known.empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(watch_protocol_listing)

BOOST_AUTO_TEST_CASE(single_page_delivers_items_as_added_then_syncs_and_watches_from_list_rv) {
  watch_state s;
  kube::watch_start(s);
  auto out = kube::watch_step(s, page({item("a", "10"), item("b", "11")}, "100"));
  BOOST_TEST(out.deliver_items == (delivered{{0, event_type::added}, {1, event_type::added}}),
             boost::test_tools::per_element());
  BOOST_TEST(out.deleted.empty());
  BOOST_TEST(out.synced);
  BOOST_TEST(out.next == request::watch);
  BOOST_TEST(out.resource_version == "100");
  BOOST_TEST(s.phase == watch_phase::watching);
  BOOST_TEST(s.resource_version == "100");
  BOOST_TEST((s.known == known_map{{key("a"), "10"}, {key("b"), "11"}}));
}

BOOST_AUTO_TEST_CASE(empty_list_syncs_and_watches_from_list_rv) {
  watch_state s;
  kube::watch_start(s);
  auto out = kube::watch_step(s, page({}, "7"));
  BOOST_TEST(out.deliver_items.empty());
  BOOST_TEST(out.synced);
  BOOST_TEST(out.next == request::watch);
  BOOST_TEST(out.resource_version == "7");
}

BOOST_AUTO_TEST_CASE(paged_list_follows_continue_tokens_and_syncs_only_after_the_last_page) {
  watch_state s;
  kube::watch_start(s);

  auto first = kube::watch_step(s, page({item("a", "10"), item("b", "11")}, "100", "token-1"));
  BOOST_TEST(first.deliver_items == (delivered{{0, event_type::added}, {1, event_type::added}}),
             boost::test_tools::per_element());
  BOOST_TEST(!first.synced);
  BOOST_TEST(first.next == request::list);
  BOOST_TEST(first.continue_token == "token-1");
  BOOST_TEST(s.phase == watch_phase::listing);

  auto second = kube::watch_step(s, page({item("c", "12")}, "100", "token-2"));
  BOOST_TEST(second.deliver_items == (delivered{{0, event_type::added}}),
             boost::test_tools::per_element());
  BOOST_TEST(!second.synced);
  BOOST_TEST(second.continue_token == "token-2");

  auto last = kube::watch_step(s, page({item("d", "13")}, "100"));
  BOOST_TEST(last.deliver_items == (delivered{{0, event_type::added}}),
             boost::test_tools::per_element());
  BOOST_TEST(last.deleted.empty());
  BOOST_TEST(last.synced);
  BOOST_TEST(last.next == request::watch);
  BOOST_TEST(last.resource_version == "100");
  BOOST_TEST((s.known ==
              known_map{{key("a"), "10"}, {key("b"), "11"}, {key("c"), "12"}, {key("d"), "13"}}));
}

BOOST_AUTO_TEST_CASE(same_name_in_two_namespaces_are_two_objects) {
  watch_state s;
  kube::watch_start(s);
  auto out = kube::watch_step(s, page({{key("p", "ns1"), "1"}, {key("p", "ns2"), "2"}}, "5"));
  BOOST_TEST(out.deliver_items.size() == 2u);
  BOOST_TEST(s.known.size() == 2u);
}

BOOST_AUTO_TEST_CASE(failed_list_backs_off_then_lists_again_from_the_first_page) {
  watch_state s;
  kube::watch_start(s);
  kube::watch_step(s, page({item("a", "10")}, "100", "token-1"));

  auto out = kube::watch_step(s, failed(kube::error_kind::transport, "connection reset"));
  BOOST_TEST(out.next == request::sleep);
  BOOST_TEST(out.delay.count() > 0);
  BOOST_TEST(out.note == "Transport: connection reset");
  BOOST_TEST(s.phase == watch_phase::backing_off);

  auto retry = kube::watch_step(s, timer());
  BOOST_TEST(retry.next == request::list);
  BOOST_TEST(retry.continue_token == "");
  BOOST_TEST(retry.relist);
  BOOST_TEST(s.phase == watch_phase::listing);
}

BOOST_AUTO_TEST_CASE(items_of_a_list_that_failed_midway_are_not_delivered_again_by_the_retry) {
  watch_state s;
  kube::watch_start(s);
  kube::watch_step(s, page({item("a", "10")}, "100", "token-1"));
  kube::watch_step(s, failed(kube::error_kind::server_error));
  kube::watch_step(s, timer());

  auto out = kube::watch_step(s, page({item("a", "10"), item("b", "11")}, "120"));
  BOOST_TEST(out.deliver_items == (delivered{{1, event_type::added}}),
             boost::test_tools::per_element());
  BOOST_TEST(out.synced);
  BOOST_TEST(out.resource_version == "120");
}

BOOST_AUTO_TEST_CASE(expired_continue_token_relists_at_once) {
  watch_state s;
  kube::watch_start(s);
  kube::watch_step(s, page({item("a", "10")}, "100", "token-1"));
  auto out = kube::watch_step(s, failed(kube::error_kind::gone, "continue token expired"));
  BOOST_TEST(out.next == request::list);
  BOOST_TEST(out.continue_token == "");
  BOOST_TEST(out.delay.count() == 0);
  BOOST_TEST(s.phase == watch_phase::listing);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(watch_protocol_watching)

BOOST_AUTO_TEST_CASE(added_event_is_delivered_and_remembered) {
  auto s = watching_abc();
  auto out = kube::watch_step(s, event(event_type::added, "d", "101"));
  BOOST_TEST(out.deliver_as == std::optional<event_type>(event_type::added));
  BOOST_TEST(out.next == request::none);
  BOOST_TEST(s.known.at(key("d")) == "101");
  BOOST_TEST(s.resource_version == "101");
}

BOOST_AUTO_TEST_CASE(modified_event_is_delivered_and_updates_the_known_rv) {
  auto s = watching_abc();
  auto out = kube::watch_step(s, event(event_type::modified, "a", "102"));
  BOOST_TEST(out.deliver_as == std::optional<event_type>(event_type::modified));
  BOOST_TEST(out.next == request::none);
  BOOST_TEST(s.known.at(key("a")) == "102");
  BOOST_TEST(s.resource_version == "102");
}

BOOST_AUTO_TEST_CASE(deleted_event_is_delivered_and_forgets_the_key) {
  auto s = watching_abc();
  auto out = kube::watch_step(s, event(event_type::deleted, "b", "103"));
  BOOST_TEST(out.deliver_as == std::optional<event_type>(event_type::deleted));
  BOOST_TEST(out.next == request::none);
  BOOST_TEST(s.known.count(key("b")) == 0u);
  BOOST_TEST(s.resource_version == "103");
}

BOOST_AUTO_TEST_CASE(event_repeating_a_known_resource_version_is_not_delivered) {
  auto s = watching_abc();
  auto added = kube::watch_step(s, event(event_type::added, "a", "10"));
  BOOST_TEST(!added.deliver_as);
  auto modified = kube::watch_step(s, event(event_type::modified, "b", "11"));
  BOOST_TEST(!modified.deliver_as);
  BOOST_TEST(modified.next == request::none);
  BOOST_TEST((s.known == known_map{{key("a"), "10"}, {key("b"), "11"}, {key("c"), "12"}}));
}

BOOST_AUTO_TEST_CASE(added_event_for_a_known_key_is_delivered_as_modified) {
  auto s = watching_abc();
  auto out = kube::watch_step(s, event(event_type::added, "a", "104"));
  BOOST_TEST(out.deliver_as == std::optional<event_type>(event_type::modified));
  BOOST_TEST(s.known.at(key("a")) == "104");
}

BOOST_AUTO_TEST_CASE(modified_event_for_an_unknown_key_is_delivered_as_added) {
  auto s = watching_abc();
  auto out = kube::watch_step(s, event(event_type::modified, "z", "105"));
  BOOST_TEST(out.deliver_as == std::optional<event_type>(event_type::added));
  BOOST_TEST(s.known.at(key("z")) == "105");
}

BOOST_AUTO_TEST_CASE(deleted_event_for_an_unknown_key_is_not_delivered_but_moves_the_rv) {
  auto s = watching_abc();
  auto out = kube::watch_step(s, event(event_type::deleted, "z", "106"));
  BOOST_TEST(!out.deliver_as);
  BOOST_TEST(out.next == request::none);
  BOOST_TEST(s.known.size() == 3u);
  BOOST_TEST(s.resource_version == "106");
}

BOOST_AUTO_TEST_CASE(bookmark_moves_the_rv_without_delivering) {
  auto s = watching_abc();
  const auto before = s.known;
  auto out = kube::watch_step(s, bookmark("150"));
  BOOST_TEST(!out.deliver_as);
  BOOST_TEST(out.next == request::none);
  BOOST_TEST(s.resource_version == "150");
  BOOST_TEST((s.known == before));

  auto closed_out = kube::watch_step(s, closed());
  BOOST_TEST(closed_out.resource_version == "150");
}

BOOST_AUTO_TEST_CASE(error_410_event_relists_from_the_first_page_at_once) {
  auto s = watching_abc();
  auto out = kube::watch_step(s, error_event(410));
  BOOST_TEST(out.next == request::list);
  BOOST_TEST(out.continue_token == "");
  BOOST_TEST(out.delay.count() == 0);
  BOOST_TEST(out.relist);
  BOOST_TEST(!out.deliver_as);
  BOOST_TEST(out.note.find("410") != std::string::npos);
  BOOST_TEST(s.phase == watch_phase::listing);
  // The consumer's view is kept: the relist is diffed against it.
  BOOST_TEST(s.known.size() == 3u);
}

// Issue 38: a server that answers 410 right after every list had the loop list the whole
// collection (every pod of the cluster) again and again at once, using up the request
// budget that evictions and untaints need. From the second 410 in a row within a minute of
// its list the relist backs off, doubling up to the cap; a watch that lasts resets it.
BOOST_AUTO_TEST_CASE(a_410_after_every_list_backs_off_and_a_quiet_watch_resets_it) {
  using namespace std::chrono_literals;
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  auto at = [](watch_input in, std::chrono::steady_clock::time_point t) {
    in.now = t;
    return in;
  };
  watch_state s;
  kube::watch_start(s);
  kube::watch_step(s, at(page({item("a", "10")}, "100"), t0));
  auto t = t0;
  std::vector<long long> delays;
  for (int i = 0; i < 9; ++i) {
    t += 1s;
    auto out = kube::watch_step(s, at(error_event(410), t));
    if (out.next == request::sleep) {
      delays.push_back(out.delay.count());
      t += out.delay;
      const auto relist = kube::watch_step(s, at(timer(), t));
      BOOST_TEST(relist.next == request::list);
      BOOST_TEST(relist.relist);
    } else {
      BOOST_TEST(out.relist);
      BOOST_TEST(out.next == request::list);
      delays.push_back(0);
    }
    kube::watch_step(s, at(page({item("a", "10")}, "100"), t));
  }
  // At once, then 0.5 s, 1 s, 2 s ... (jittered to half or more), capped at 30 s.
  BOOST_TEST(delays[0] == 0);
  for (std::size_t i = 1; i < delays.size(); ++i) {
    const long long ceiling = std::min(30000LL, 500LL << (i - 1));
    BOOST_TEST(delays[i] >= ceiling / 2, i);
    BOOST_TEST(delays[i] <= ceiling, i);
  }
  // A watch that ran a quiet minute: the next 410 is the ordinary kind, relisted at once.
  t += 61s;
  auto out = kube::watch_step(s, at(error_event(410), t));
  BOOST_TEST(out.next == request::list);
  BOOST_TEST(out.delay.count() == 0);
  // The same through a failed request (410 on the watch's GET).
  kube::watch_step(s, at(page({item("a", "10")}, "100"), t));
  kube::watch_step(s, at(failed(kube::error_kind::gone, "too old"), t + 1s));
  kube::watch_step(s, at(page({item("a", "10")}, "100"), t + 1s));
  BOOST_TEST(kube::watch_step(s, at(failed(kube::error_kind::gone, "too old"), t + 2s)).next ==
             request::sleep);
}

BOOST_AUTO_TEST_CASE(relist_after_410_reports_objects_added_changed_and_deleted_meanwhile) {
  auto s = watching_abc();
  kube::watch_step(s, error_event(410));
  // a is unchanged, b changed, c vanished, d is new.
  auto out = kube::watch_step(s, page({item("a", "10"), item("b", "15"), item("d", "16")}, "200"));
  BOOST_TEST(out.deliver_items == (delivered{{1, event_type::modified}, {2, event_type::added}}),
             boost::test_tools::per_element());
  BOOST_TEST(out.deleted == std::vector<kube::object_key>{key("c")},
             boost::test_tools::per_element());
  BOOST_TEST(out.synced);
  BOOST_TEST(out.next == request::watch);
  BOOST_TEST(out.resource_version == "200");
  BOOST_TEST((s.known == known_map{{key("a"), "10"}, {key("b"), "15"}, {key("d"), "16"}}));
}

BOOST_AUTO_TEST_CASE(relist_over_several_pages_reports_deletions_only_after_the_last_page) {
  auto s = watching_abc();
  kube::watch_step(s, error_event(410));
  auto first = kube::watch_step(s, page({item("a", "10")}, "200", "t"));
  BOOST_TEST(first.deleted.empty());
  BOOST_TEST(!first.synced);
  auto last = kube::watch_step(s, page({item("c", "12")}, "200"));
  BOOST_TEST(last.deliver_items.empty());
  BOOST_TEST(last.deleted == std::vector<kube::object_key>{key("b")},
             boost::test_tools::per_element());
  BOOST_TEST(last.synced);
}

BOOST_AUTO_TEST_CASE(delete_reported_by_a_relist_is_not_delivered_again_by_the_stream) {
  auto s = watching_abc();
  kube::watch_step(s, error_event(410));
  kube::watch_step(s, page({item("a", "10"), item("b", "11")}, "200"));
  auto out = kube::watch_step(s, event(event_type::deleted, "c", "201"));
  BOOST_TEST(!out.deliver_as);
}

BOOST_AUTO_TEST_CASE(error_event_other_than_410_backs_off_then_watches_from_the_same_rv) {
  auto s = watching_abc();
  kube::watch_step(s, event(event_type::modified, "a", "107"));
  auto out = kube::watch_step(s, error_event(500));
  BOOST_TEST(out.next == request::sleep);
  BOOST_TEST(out.delay.count() > 0);
  BOOST_TEST(out.note == "watch ERROR event (code 500)");
  BOOST_TEST(s.phase == watch_phase::backing_off);

  auto resume = kube::watch_step(s, timer());
  BOOST_TEST(resume.next == request::watch);
  BOOST_TEST(resume.resource_version == "107");
  BOOST_TEST(s.phase == watch_phase::watching);
  BOOST_TEST(s.known.size() == 3u);
}

BOOST_AUTO_TEST_CASE(failed_watch_request_backs_off_then_watches_from_the_last_rv) {
  auto s = watching_abc();
  kube::watch_step(s, event(event_type::added, "d", "108"));
  auto out = kube::watch_step(s, failed(kube::error_kind::transport, "connection reset"));
  BOOST_TEST(out.next == request::sleep);
  BOOST_TEST(out.delay.count() > 0);
  BOOST_TEST(out.note == "Transport: connection reset");
  BOOST_TEST(s.phase == watch_phase::backing_off);

  auto resume = kube::watch_step(s, timer());
  BOOST_TEST(resume.next == request::watch);
  BOOST_TEST(resume.resource_version == "108");
  BOOST_TEST(!resume.relist);
}

BOOST_AUTO_TEST_CASE(gone_failure_of_a_watch_relists_at_once) {
  auto s = watching_abc();
  auto out = kube::watch_step(s, failed(kube::error_kind::gone, "too old resource version"));
  BOOST_TEST(out.next == request::list);
  BOOST_TEST(out.continue_token == "");
  BOOST_TEST(out.delay.count() == 0);
  BOOST_TEST(out.relist);
  BOOST_TEST(s.phase == watch_phase::listing);
}

BOOST_AUTO_TEST_CASE(aborted_request_asks_for_nothing_and_leaves_the_state_alone) {
  auto s = watching_abc();
  auto out = kube::watch_step(s, failed(kube::error_kind::aborted));
  BOOST_TEST(asks_nothing(out));
  BOOST_TEST(s.phase == watch_phase::watching);
  BOOST_TEST(s.failures == 0);
  BOOST_TEST(s.resource_version == "100");
}

BOOST_AUTO_TEST_CASE(stream_closed_watches_again_from_the_last_rv_at_once) {
  auto s = watching_abc();
  kube::watch_step(s, event(event_type::modified, "c", "109"));
  auto out = kube::watch_step(s, closed());
  BOOST_TEST(out.next == request::watch);
  BOOST_TEST(out.resource_version == "109");
  BOOST_TEST(out.delay.count() == 0);
  BOOST_TEST(!out.relist);
  BOOST_TEST(s.phase == watch_phase::watching);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(watch_protocol_backoff)

namespace {

long long step_cap(const kube::watch_backoff& b, int failures) {
  return std::min<long long>(b.cap.count(), b.base.count() << std::min(failures - 1, 40));
}

} // namespace

BOOST_DATA_TEST_CASE(delays_grow_per_consecutive_failure_within_jitter_bounds_and_cap,
                     bdata::xrange(1, 21), seed) {
  const kube::watch_backoff backoff{std::chrono::milliseconds(500),
                                    std::chrono::milliseconds(30000)};
  auto s = watching_abc();
  s.rng.seed(static_cast<std::uint64_t>(seed));
  long long previous = 0;
  for (int failure = 1; failure <= 14; ++failure) {
    BOOST_TEST_CONTEXT("failure " << failure) {
      auto out = kube::watch_step(s, failed(kube::error_kind::transport), backoff);
      BOOST_TEST_REQUIRE(out.next == request::sleep);
      const long long cap = step_cap(backoff, failure);
      BOOST_TEST(out.delay.count() >= cap / 2);
      BOOST_TEST(out.delay.count() <= cap);
      BOOST_TEST(out.delay.count() <= backoff.cap.count());
      // Below the cap each step's floor is the previous step's ceiling.
      if (failure > 1 && cap == 2 * step_cap(backoff, failure - 1))
        BOOST_TEST(out.delay.count() >= previous);
      previous = out.delay.count();
      auto resume = kube::watch_step(s, timer(), backoff);
      BOOST_TEST_REQUIRE(resume.next == request::watch);
    }
  }
  // Long past the cap, delays spread over [cap/2, cap].
  BOOST_TEST(previous >= backoff.cap.count() / 2);
}

BOOST_AUTO_TEST_CASE(delays_are_jittered_not_fixed) {
  std::vector<long long> firsts;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    auto s = watching_abc();
    s.rng.seed(seed);
    firsts.push_back(kube::watch_step(s, failed(kube::error_kind::transport)).delay.count());
  }
  std::sort(firsts.begin(), firsts.end());
  BOOST_TEST(firsts.front() != firsts.back());
}

BOOST_AUTO_TEST_CASE(delay_resets_after_an_event_is_received) {
  const kube::watch_backoff backoff{std::chrono::milliseconds(1000),
                                    std::chrono::milliseconds(60000)};
  auto s = watching_abc();
  for (int i = 0; i < 5; ++i) {
    kube::watch_step(s, failed(kube::error_kind::transport), backoff);
    kube::watch_step(s, timer(), backoff);
  }
  kube::watch_step(s, bookmark("300"), backoff);
  BOOST_TEST(s.failures == 0);
  auto out = kube::watch_step(s, failed(kube::error_kind::transport), backoff);
  BOOST_TEST(out.delay.count() >= 500);
  BOOST_TEST(out.delay.count() <= 1000);
}

BOOST_AUTO_TEST_CASE(delay_resets_after_a_completed_list) {
  const kube::watch_backoff backoff{std::chrono::milliseconds(1000),
                                    std::chrono::milliseconds(60000)};
  watch_state s;
  kube::watch_start(s);
  for (int i = 0; i < 5; ++i) {
    kube::watch_step(s, failed(kube::error_kind::service_unavailable), backoff);
    kube::watch_step(s, timer(), backoff);
  }
  BOOST_TEST(s.failures == 5);
  kube::watch_step(s, page({item("a", "1")}, "10"), backoff);
  BOOST_TEST(s.failures == 0);
  auto out = kube::watch_step(s, failed(kube::error_kind::transport), backoff);
  BOOST_TEST(out.delay.count() >= 500);
  BOOST_TEST(out.delay.count() <= 1000);
}

BOOST_AUTO_TEST_CASE(watch_failure_before_any_rv_is_known_relists_after_backoff) {
  watch_state s;
  s.phase = watch_phase::watching;
  auto out = kube::watch_step(s, failed(kube::error_kind::transport));
  BOOST_TEST(out.next == request::sleep);
  BOOST_TEST(kube::watch_step(s, timer()).next == request::list);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(watch_protocol_too_large)

namespace {

const kube::watch_backoff short_then_long{std::chrono::milliseconds(100),
                                          std::chrono::milliseconds(8000)};

watch_input too_large(const std::string& what) {
  return failed(kube::error_kind::too_large, what + " exceeds the 16 MiB limit");
}

} // namespace

BOOST_AUTO_TEST_CASE(an_event_too_large_lists_again_after_the_longest_backoff) {
  auto s = watching_abc();
  kube::watch_step(s, event(event_type::modified, "a", "107"));
  auto out = kube::watch_step(s, too_large("watch event from GET /api/v1/nodes"), short_then_long);
  BOOST_TEST(out.next == request::sleep);
  BOOST_TEST(out.note == "TooLarge: watch event from GET /api/v1/nodes exceeds the 16 MiB limit");
  // The first failure, yet the longest back-off: the relist that follows resets the count.
  BOOST_TEST(out.delay.count() >= 4000);
  BOOST_TEST(out.delay.count() <= 8000);
  BOOST_TEST(s.phase == watch_phase::backing_off);
  // Resuming from 107 would replay the event: the loop lists instead.
  auto again = kube::watch_step(s, timer(), short_then_long);
  BOOST_TEST(again.next == request::list);
  BOOST_TEST(again.continue_token == "");
  BOOST_TEST(again.relist);
  BOOST_TEST(s.phase == watch_phase::listing);
  // What the consumer knows is kept: the relist reports only the differences.
  BOOST_TEST(s.known.size() == 3u);
  BOOST_TEST(s.page_halvings == 0);
}

BOOST_AUTO_TEST_CASE(an_event_too_large_keeps_the_backoff_long_though_each_relist_succeeds) {
  auto s = watching_abc();
  for (int round = 0; round < 5; ++round) {
    BOOST_TEST_CONTEXT("round " << round) {
      auto out = kube::watch_step(s, too_large("watch event"), short_then_long);
      BOOST_TEST(out.delay.count() >= 4000);
      kube::watch_step(s, timer(), short_then_long);
      auto listed = kube::watch_step(s, page({item("a", "10")}, std::to_string(200 + round)),
                                     short_then_long);
      BOOST_TEST_REQUIRE(listed.next == request::watch);
      BOOST_TEST(s.failures == 0);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_list_page_too_large_is_asked_again_in_pages_half_the_size) {
  watch_state s;
  kube::watch_start(s);
  BOOST_TEST(kube::page_size(s, 500) == 500);
  const long long expected[] = {250, 125, 62, 31, 15, 7, 3, 1, 1, 1};
  int failure = 0;
  for (long long size : expected) {
    BOOST_TEST_CONTEXT("page of " << size) {
      auto out =
          kube::watch_step(s, too_large("response body from GET /api/v1/pods"), short_then_long);
      BOOST_TEST_REQUIRE(out.next == request::sleep);
      // These failures add up: the back-off grows from its base as for any failed list.
      const long long cap = std::min<long long>(8000, 100LL << failure++);
      BOOST_TEST(out.delay.count() >= cap / 2);
      BOOST_TEST(out.delay.count() <= cap);
      auto again = kube::watch_step(s, timer(), short_then_long);
      BOOST_TEST_REQUIRE(again.next == request::list);
      BOOST_TEST(again.continue_token == "");
      BOOST_TEST(kube::page_size(s, 500) == size);
    }
  }
  BOOST_TEST(s.failures == 10);
}

BOOST_AUTO_TEST_CASE(smaller_pages_stay_after_the_list_succeeds) {
  watch_state s;
  kube::watch_start(s);
  kube::watch_step(s, too_large("response body"));
  kube::watch_step(s, timer());
  auto out = kube::watch_step(s, page({item("a", "1")}, "10"));
  BOOST_TEST(out.synced);
  BOOST_TEST(kube::page_size(s, 500) == 250);
  // Nor does a relist after 410 restore them.
  kube::watch_step(s, error_event(410));
  BOOST_TEST(kube::page_size(s, 500) == 250);
}

BOOST_AUTO_TEST_CASE(a_page_size_of_zero_asks_for_everything_however_often_halved) {
  watch_state s;
  s.page_halvings = 3;
  BOOST_TEST(kube::page_size(s, 0) == 0);
  BOOST_TEST(kube::page_size(s, 8) == 1);
  BOOST_TEST(kube::page_size(s, 9) == 1);
  BOOST_TEST(kube::page_size(s, 16) == 2);
}

BOOST_AUTO_TEST_CASE(a_transport_failure_of_a_list_keeps_the_page_size) {
  watch_state s;
  kube::watch_start(s);
  kube::watch_step(s, failed(kube::error_kind::transport));
  BOOST_TEST(kube::page_size(s, 500) == 500);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(watch_protocol_wrong_phase)

namespace {

struct misplaced_input {
  const char* name;
  watch_state (*make_state)();
  watch_input (*make_input)();
};

std::ostream& operator<<(std::ostream& os, const misplaced_input& m) {
  return os << m.name;
}

watch_state listing_with_abc() {
  auto s = watching_abc();
  kube::watch_step(s, error_event(410));
  return s;
}

const misplaced_input misplaced_inputs[] = {
    {"list_page_while_watching", watching_abc, [] { return page({item("x", "1")}, "900"); }},
    {"list_page_while_backing_off", backing_off_abc, [] { return page({item("x", "1")}, "900"); }},
    {"event_while_listing", listing_with_abc, [] { return event(event_type::added, "x", "901"); }},
    {"event_while_backing_off", backing_off_abc,
     [] { return event(event_type::added, "x", "901"); }},
    {"error_410_while_backing_off", backing_off_abc, [] { return error_event(410); }},
    {"stream_closed_while_listing", listing_with_abc, closed},
    {"stream_closed_while_backing_off", backing_off_abc, closed},
    {"timer_while_listing", listing_with_abc, timer},
    {"timer_while_watching", watching_abc, timer},
};

} // namespace

BOOST_DATA_TEST_CASE(input_in_the_wrong_phase_is_ignored, bdata::make(misplaced_inputs), row) {
  auto s = row.make_state();
  const auto before = s;
  auto out = kube::watch_step(s, row.make_input());
  BOOST_TEST(asks_nothing(out));
  BOOST_TEST(s.phase == before.phase);
  BOOST_TEST(s.resource_version == before.resource_version);
  BOOST_TEST((s.known == before.known));
  BOOST_TEST(s.failures == before.failures);
  BOOST_TEST(s.relist_after_backoff == before.relist_after_backoff);
}

BOOST_AUTO_TEST_SUITE_END()
