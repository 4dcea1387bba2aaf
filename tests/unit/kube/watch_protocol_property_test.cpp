// The list+watch protocol against a simulated API server: random changes, paged lists
// from a consistent snapshot, watch streams that drop, replay, end, send bookmarks and
// errors, and history compaction that answers 410 Gone. A consumer builds its view
// only from what `watch_step` says to deliver. Properties: after every sync the view
// equals the list's snapshot; whenever the stream has caught up it equals the server's
// objects; no change is ever delivered twice (no ADDED for a key the view has, no
// MODIFIED to the rv it already has, no DELETED for a key it lacks).
#include "kube/watch_protocol.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace kube = gpu_partitioner::kube;
namespace bdata = boost::unit_test::data;

using kube::event_type;
using kube::object_key;
using kube::watch_input;
using kube::watch_output;
using request = watch_output::request;
using view_map = std::map<object_key, std::string>;

namespace {

std::string describe(const view_map& v) {
  std::string out;
  for (const auto& [k, rv] : v)
    out += k.namespace_ + "/" + k.name + "@" + rv + " ";
  return out;
}

// The API server: objects with resourceVersions from one counter, and the history of
// changes a watch replays. History at or below `compacted` is gone.
struct fake_server {
  struct change {
    long long rv;
    event_type type;
    object_key key;
  };
  std::map<object_key, long long> objects;
  std::vector<change> history;
  long long rv = 1000;
  long long compacted = 1000;

  void mutate(std::mt19937_64& rng) {
    static const char* names[] = {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"};
    static const char* namespaces[] = {"", "team-a"};
    object_key k{namespaces[rng() % 2], names[rng() % 8]};
    ++rv;
    auto it = objects.find(k);
    if (it == objects.end()) {
      objects[k] = rv;
      history.push_back({rv, event_type::added, k});
    } else if (rng() % 3 == 0) {
      objects.erase(it);
      history.push_back({rv, event_type::deleted, k});
    } else {
      it->second = rv;
      history.push_back({rv, event_type::modified, k});
    }
  }

  view_map truth() const {
    view_map v;
    for (const auto& [k, rv] : objects)
      v[k] = std::to_string(rv);
    return v;
  }

  // The first change after `from`, if any.
  const change* next_after(long long from) const {
    for (const auto& c : history)
      if (c.rv > from)
        return &c;
    return nullptr;
  }
};

struct run_stats {
  int syncs = 0;
  int relists_after_gone = 0;
  int deletions_found_by_relist = 0;
  int stream_deliveries = 0;
  int catch_up_checks = 0;
  int back_offs = 0;
};

class simulation {
public:
  explicit simulation(std::uint64_t seed) : rng_(seed) { state_.rng.seed(seed * 7919 + 1); }

  void run(int steps) {
    apply(kube::watch_start(state_));
    for (int i = 0; i < steps; ++i) {
      BOOST_TEST_CONTEXT("step " << i) {
        if (chance(40))
          server_.mutate(rng_);
        if (chance(3))
          server_.compacted = server_.rv - static_cast<long long>(rng_() % 3);
        step();
      }
    }
  }

  const run_stats& stats() const { return stats_; }

private:
  bool chance(int percent) { return static_cast<int>(rng_() % 100) < percent; }

  void step() {
    switch (pending_.next) {
    case request::list:
      return list_step();
    case request::watch:
      return stream_step();
    case request::sleep: {
      BOOST_TEST_REQUIRE(pending_.delay.count() > 0);
      // The back-off lasts a few steps, while the server keeps changing.
      if (!chance(25))
        return;
      ++stats_.back_offs;
      watch_input in;
      in.what = watch_input::kind::timer_fired;
      return apply(kube::watch_step(state_, in));
    }
    case request::none:
      BOOST_TEST_REQUIRE(false, "the protocol asked for nothing");
    }
  }

  void list_step() {
    if (pending_.continue_token.empty()) {
      snapshot_.clear();
      for (const auto& [k, rv] : server_.objects)
        snapshot_.push_back({k, std::to_string(rv)});
      snapshot_rv_ = server_.rv;
      position_ = 0;
      ++list_id_;
    } else {
      BOOST_TEST_REQUIRE(pending_.continue_token == token(position_));
      if (chance(5)) // the continue token expired
        return interrupt(failed(kube::error_kind::gone));
    }
    if (chance(5))
      return interrupt(failed(kube::error_kind::service_unavailable));
    watch_input in;
    in.what = watch_input::kind::list_page;
    in.resource_version = std::to_string(snapshot_rv_);
    const std::size_t size = 1 + rng_() % 4;
    while (in.items.size() < size && position_ < snapshot_.size())
      in.items.push_back(snapshot_[position_++]);
    if (position_ < snapshot_.size())
      in.continue_token = token(position_);
    auto out = kube::watch_step(state_, in);
    for (const auto& [index, type] : out.deliver_items) {
      BOOST_TEST_REQUIRE(index < in.items.size());
      deliver(type, in.items[index].key, in.items[index].resource_version);
    }
    for (const auto& k : out.deleted) {
      ++stats_.deletions_found_by_relist;
      deliver(event_type::deleted, k, "");
    }
    if (out.synced) {
      ++stats_.syncs;
      BOOST_TEST_REQUIRE(in.continue_token.empty());
      view_map expected;
      for (const auto& item : snapshot_)
        expected[item.key] = item.resource_version;
      BOOST_TEST_REQUIRE((view_ == expected),
                         "view " << describe(view_) << "!= snapshot " << describe(expected));
      stream_rv_.reset();
    }
    apply(out);
  }

  void stream_step() {
    if (!stream_rv_) {
      // Opening the stream.
      const long long from = std::stoll(pending_.resource_version);
      BOOST_TEST_REQUIRE(from <= server_.rv);
      if (from < server_.compacted) {
        ++stats_.relists_after_gone;
        if (chance(50))
          return interrupt(failed(kube::error_kind::gone));
        return interrupt(event_in(event_type::error, {}, "", 410));
      }
      stream_rv_ = from;
      last_sent_.reset();
    }
    const int roll = static_cast<int>(rng_() % 100);
    if (roll < 4)
      return interrupt(failed(kube::error_kind::transport));
    if (roll < 8) {
      watch_input in;
      in.what = watch_input::kind::stream_closed;
      return interrupt(in);
    }
    if (roll < 10)
      return interrupt(event_in(event_type::error, {}, "", 500));
    if (roll < 16 && *stream_rv_ < server_.compacted) {
      // The watch cache moved past what this stream has sent.
      ++stats_.relists_after_gone;
      return interrupt(event_in(event_type::error, {}, "", 410));
    }
    if (roll < 22) {
      // A bookmark at the position the stream has reached.
      last_sent_.reset();
      return send(event_in(event_type::bookmark, {}, std::to_string(*stream_rv_)));
    }
    if (roll < 27 && last_sent_) {
      // The server repeats the event it just sent.
      return send(*last_sent_);
    }
    if (roll < 45)
      return; // a slow stream: nothing this step
    if (const auto* c = server_.next_after(*stream_rv_)) {
      stream_rv_ = c->rv;
      // ADDED and MODIFIED swap sometimes: the consumer's view decides the type.
      event_type type = c->type;
      if (type != event_type::deleted && chance(10))
        type = type == event_type::added ? event_type::modified : event_type::added;
      last_sent_ = event_in(type, c->key, std::to_string(c->rv));
      return send(*last_sent_);
    }
    // Caught up: the consumer's view is the server's truth.
    ++stats_.catch_up_checks;
    BOOST_TEST_REQUIRE((view_ == server_.truth()),
                       "view " << describe(view_) << "!= truth " << describe(server_.truth()));
  }

  void send(const watch_input& in) {
    auto out = kube::watch_step(state_, in);
    if (out.deliver_as) {
      ++stats_.stream_deliveries;
      deliver(*out.deliver_as, in.object.key, in.object.resource_version);
    }
    if (out.next != request::none) {
      stream_rv_.reset();
      apply(out);
    }
  }

  // A failed request or a stream that ended: nothing to deliver, only a next request.
  void interrupt(const watch_input& in) {
    stream_rv_.reset();
    auto out = kube::watch_step(state_, in);
    BOOST_TEST_REQUIRE(!out.deliver_as);
    apply(out);
  }

  void apply(const watch_output& out) {
    BOOST_TEST_REQUIRE((out.next != request::none));
    pending_ = out;
  }

  // The consumer: applies a delivered change, refusing anything that repeats what it
  // already knows.
  void deliver(event_type type, const object_key& k, const std::string& rv) {
    auto it = view_.find(k);
    switch (type) {
    case event_type::added:
      BOOST_TEST_REQUIRE((it == view_.end()), "ADDED for known " << k.name);
      BOOST_TEST_REQUIRE(seen_.insert({k, rv}).second, "delivered twice: " << k.name << rv);
      view_[k] = rv;
      break;
    case event_type::modified:
      BOOST_TEST_REQUIRE((it != view_.end()), "MODIFIED for unknown " << k.name);
      BOOST_TEST_REQUIRE(it->second != rv, "MODIFIED to the same rv " << k.name << rv);
      BOOST_TEST_REQUIRE(seen_.insert({k, rv}).second, "delivered twice: " << k.name << rv);
      it->second = rv;
      break;
    case event_type::deleted:
      BOOST_TEST_REQUIRE((it != view_.end()), "DELETED for unknown " << k.name);
      view_.erase(it);
      break;
    default:
      BOOST_TEST_REQUIRE(false, "delivered a bookmark or error");
    }
  }

  static watch_input failed(kube::error_kind kind) {
    watch_input in;
    in.what = watch_input::kind::request_failed;
    in.failure = kube::make_error(kind, "simulated");
    return in;
  }

  static watch_input event_in(event_type type, const object_key& k, const std::string& rv,
                              int code = 0) {
    watch_input in;
    in.what = watch_input::kind::event;
    in.event = type;
    in.object = {k, rv};
    in.code = code;
    return in;
  }

  std::string token(std::size_t position) const {
    return "list-" + std::to_string(list_id_) + "-at-" + std::to_string(position);
  }

  std::mt19937_64 rng_;
  fake_server server_;
  kube::watch_state state_;
  watch_output pending_;
  // The list in progress.
  std::vector<watch_input::item> snapshot_;
  long long snapshot_rv_ = 0;
  std::size_t position_ = 0;
  int list_id_ = 0;
  // The open stream: the rv it has reached, and the event it sent last.
  std::optional<long long> stream_rv_;
  std::optional<watch_input> last_sent_;
  // The consumer.
  view_map view_;
  std::set<std::pair<object_key, std::string>> seen_;
  run_stats stats_;
};

} // namespace

BOOST_AUTO_TEST_SUITE(watch_protocol_property)

BOOST_DATA_TEST_CASE(consumer_view_matches_server_after_every_sync_and_nothing_is_delivered_twice,
                     bdata::xrange(1, 13), seed) {
  simulation sim(static_cast<std::uint64_t>(seed));
  sim.run(5000);
  const auto& s = sim.stats();
  BOOST_TEST_MESSAGE("seed " << seed << ": " << s.syncs << " syncs, " << s.relists_after_gone
                             << " 410s, " << s.deletions_found_by_relist
                             << " deletions found by relist, " << s.stream_deliveries
                             << " stream deliveries, " << s.catch_up_checks << " catch-up checks, "
                             << s.back_offs << " back-offs");
  // The run exercised every path it is meant to check.
  BOOST_TEST(s.syncs > 20);
  BOOST_TEST(s.relists_after_gone > 10);
  BOOST_TEST(s.deletions_found_by_relist > 10);
  BOOST_TEST(s.stream_deliveries > 1000);
  BOOST_TEST(s.catch_up_checks > 100);
  BOOST_TEST(s.back_offs > 100);
}

BOOST_AUTO_TEST_SUITE_END()
