// controller::choose_node: a worker decides on its own write of the node until the watch
// shows it (or a later version); where versions are ordered, a view older than the write
// stays older however long the watch takes, and the node is then read directly.
#include "controller/read_your_writes.hpp"

#include <boost/test/unit_test.hpp>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;
using namespace std::chrono_literals;

namespace {

const gp::wall_clock::time_point t0 = gp::wall_clock::from_time_t(1800000000);
constexpr auto lag_limit = 10000ms;

gc::node_info version(const std::string& rv) {
  gc::node_info n;
  n.name = "a";
  n.resource_version = rv;
  return n;
}

gc::node_choice choose(const std::string& viewed, const std::string& written,
                       const std::string& written_over, std::chrono::milliseconds since_write,
                       std::chrono::milliseconds since_read = 60000ms) {
  return gc::choose_node(version(viewed), version(written), written_over, t0, t0 + since_write,
                         t0 + since_write - since_read, lag_limit);
}

} // namespace

BOOST_AUTO_TEST_SUITE(read_your_writes)

BOOST_AUTO_TEST_CASE(a_view_older_than_the_write_is_not_decided_on) {
  const auto c = choose("100", "105", "100", 200ms);
  BOOST_TEST(c.own);
  BOOST_TEST(!c.caught_up);
  BOOST_TEST(!c.read_directly, "the watch has had only 200 ms");
}

BOOST_AUTO_TEST_CASE(another_writers_version_between_read_and_write_is_still_older) {
  // 103 landed between our read (100) and our write (105): past what we wrote over, but
  // without our change.
  const auto c = choose("103", "105", "100", 200ms);
  BOOST_TEST(c.own);
  BOOST_TEST(!c.caught_up);
}

BOOST_AUTO_TEST_CASE(the_write_or_a_later_version_in_the_view_ends_it) {
  for (const char* viewed : {"105", "106", "1000"}) {
    const auto c = choose(viewed, "105", "100", 200ms);
    BOOST_TEST(!c.own, viewed);
    BOOST_TEST(c.caught_up, viewed);
  }
}

BOOST_AUTO_TEST_CASE(a_watch_that_lags_past_the_limit_has_the_node_read_directly) {
  BOOST_TEST(choose("100", "105", "100", 10000ms).read_directly);
  BOOST_TEST(choose("100", "105", "100", 600000ms).own, "ordered versions: held for as long");
  BOOST_TEST(!choose("100", "105", "100", 12000ms, 3000ms).read_directly,
             "read 3 s ago: not again before the limit");
}

BOOST_AUTO_TEST_CASE(versions_that_are_not_numbers_hold_for_5_s_at_most) {
  const auto soon = choose("x100", "x105", "x100", 2000ms);
  BOOST_TEST(soon.own);
  BOOST_TEST(!soon.read_directly, "unordered versions are not read directly");
  BOOST_TEST(!choose("x100", "x105", "x100", 5000ms).own);
  const auto other = choose("x103", "x105", "x100", 200ms);
  BOOST_TEST(!other.own, "a version other than the one written over is taken as ours");
  BOOST_TEST(other.caught_up);
}

BOOST_AUTO_TEST_SUITE_END()
