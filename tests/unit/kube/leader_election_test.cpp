// The leader election decision, judged by the local monotonic clock only.
#include "kube/leader_election.hpp"

#include <boost/test/unit_test.hpp>

#include <limits>

using namespace gpu_partitioner::kube;
using namespace std::chrono_literals;
using clock_type = election_state::clock;

namespace {

election_config config() {
  election_config c;
  c.identity = "me";
  c.lease_duration = 15s;
  c.renew_deadline = 10s;
  c.retry_period = 2s;
  return c;
}

lease_record held_by(const std::string& holder, const std::string& renew, const std::string& rv,
                     long long duration = 15) {
  lease_record r;
  r.exists = true;
  r.holder = holder;
  r.renew_time = renew;
  r.resource_version = rv;
  r.lease_duration_seconds = duration;
  return r;
}

const clock_type::time_point t0{std::chrono::hours(1)};

} // namespace

BOOST_AUTO_TEST_SUITE(leader_election)

BOOST_AUTO_TEST_CASE(a_missing_lease_is_created) {
  election_state s;
  BOOST_TEST(decide_election(s, lease_record{}, t0, config()) == election_action::create);
}

BOOST_AUTO_TEST_CASE(a_lease_renewed_by_another_within_its_duration_is_waited_for) {
  election_state s;
  auto lease = held_by("other", "r1", "1");
  observe_lease(s, lease, t0);
  BOOST_TEST(decide_election(s, lease, t0 + 14s, config()) == election_action::wait);
  // It renews: the local clock starts again from when we saw the change.
  auto renewed = held_by("other", "r2", "2");
  observe_lease(s, renewed, t0 + 14s);
  BOOST_TEST(decide_election(s, renewed, t0 + 28s, config()) == election_action::wait);
  BOOST_TEST(decide_election(s, renewed, t0 + 29s, config()) == election_action::take_over);
}

BOOST_AUTO_TEST_CASE(expiry_is_judged_from_our_observation_not_the_written_time) {
  // The holder's renewTime may come from a clock far ahead or behind ours; only the
  // moment we saw the record change counts.
  election_state s;
  auto lease = held_by("other", "2099-01-01T00:00:00.000000Z", "7");
  observe_lease(s, lease, t0);
  BOOST_TEST(decide_election(s, lease, t0 + 10s, config()) == election_action::wait);
  // Re-reading the unchanged record does not restart the clock.
  observe_lease(s, lease, t0 + 10s);
  BOOST_TEST(decide_election(s, lease, t0 + 15s, config()) == election_action::take_over);
}

BOOST_AUTO_TEST_CASE(the_holders_own_duration_is_honoured) {
  election_state s;
  auto lease = held_by("other", "r", "1", 60);
  observe_lease(s, lease, t0);
  BOOST_TEST(decide_election(s, lease, t0 + 30s, config()) == election_action::wait);
  BOOST_TEST(decide_election(s, lease, t0 + 60s, config()) == election_action::take_over);
}

// Issue 38: a duration no int32 holds (a hostile API server) overflowed on the way to
// nanoseconds; it is read as the int32's largest, and waited for.
BOOST_AUTO_TEST_CASE(a_duration_beyond_the_apis_int32_is_cut_not_overflowed) {
  election_state s;
  auto lease = held_by("other", "r", "1", std::numeric_limits<long long>::max() / 4);
  observe_lease(s, lease, t0);
  BOOST_TEST(decide_election(s, lease, t0 + 24h * 365, config()) == election_action::wait);
}

BOOST_AUTO_TEST_CASE(a_released_lease_is_taken_at_once) {
  election_state s;
  auto lease = held_by("", "r", "3");
  observe_lease(s, lease, t0);
  BOOST_TEST(decide_election(s, lease, t0, config()) == election_action::take_over);
}

BOOST_AUTO_TEST_CASE(the_leader_renews_its_own_lease) {
  election_state s;
  s.leading = true;
  s.last_renewed = t0;
  auto lease = held_by("me", "r", "4");
  observe_lease(s, lease, t0);
  BOOST_TEST(decide_election(s, lease, t0 + 2s, config()) == election_action::renew);
}

BOOST_AUTO_TEST_CASE(a_leader_that_cannot_renew_steps_down_at_the_deadline) {
  election_state s;
  s.leading = true;
  s.last_renewed = t0;
  auto lease = held_by("me", "r", "4");
  observe_lease(s, lease, t0);
  BOOST_TEST(decide_election(s, lease, t0 + 9s, config()) == election_action::renew);
  BOOST_TEST(decide_election(s, lease, t0 + 10s, config()) == election_action::step_down);
}

BOOST_AUTO_TEST_CASE(a_leader_that_sees_another_holder_steps_down) {
  election_state s;
  s.leading = true;
  s.last_renewed = t0;
  auto lease = held_by("other", "r", "5");
  observe_lease(s, lease, t0 + 1s);
  BOOST_TEST(decide_election(s, lease, t0 + 1s, config()) == election_action::step_down);
}

BOOST_AUTO_TEST_CASE(the_deadline_is_shorter_than_the_lease_so_leaders_never_overlap) {
  // A leader cut off from the API server stops acting (renew_deadline) before any
  // other candidate may take over (lease_duration after its last observed renewal).
  const auto c = config();
  BOOST_TEST(c.renew_deadline.count() < c.lease_duration.count());
  election_state leader;
  leader.leading = true;
  leader.last_renewed = t0;
  election_state follower;
  auto lease = held_by("me", "r", "6");
  observe_lease(follower, lease, t0);
  for (auto t = t0; t <= t0 + 30s; t += 500ms) {
    const bool leader_acts = decide_election(leader, lease, t, c) != election_action::step_down;
    const bool follower_takes =
        decide_election(follower, lease, t, c) == election_action::take_over;
    BOOST_TEST(!(leader_acts && follower_takes));
  }
}

// A leader may write until its renew deadline by its own clock, exactly as long as
// decide_election keeps it leading; a process that does not lead may never write.
BOOST_AUTO_TEST_CASE(a_leader_may_write_until_its_renew_deadline_and_never_after) {
  election_state s;
  BOOST_TEST((lease_valid_until(s, config()) == clock_type::time_point::min()));
  s.leading = true;
  s.observed = true;
  s.last_renewed = t0;
  const auto until = lease_valid_until(s, config());
  BOOST_TEST((until == t0 + 10s));
  const auto mine = held_by("me", "r1", "1");
  BOOST_TEST(decide_election(s, mine, until - 1ms, config()) == election_action::renew);
  BOOST_TEST(decide_election(s, mine, until, config()) == election_action::step_down);
}

BOOST_AUTO_TEST_CASE(a_new_elector_does_not_let_writes_through) {
  connection_config c;
  c.server = "http://127.0.0.1:1";
  http_client http(c, nullptr);
  client api(http);
  leader_elector elector(api, config());
  const auto gate = elector.write_gate();
  BOOST_TEST(!gate());
}

BOOST_AUTO_TEST_SUITE_END()
