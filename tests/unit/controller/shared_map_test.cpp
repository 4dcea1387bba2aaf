// controller::shared_map: a sorted map whose copies share storage. It must behave as a
// std::map of the same entries at every step, and a copy must never see a later change
// of the map it was copied from (the views published to the workers are such copies).

#include "controller/shared_map.hpp"

#include <boost/test/unit_test.hpp>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace gc = gpu_partitioner::controller;

namespace {

using smap = gc::shared_map<int>;
using ref = std::map<std::string, int>;

ref contents(const smap& m) {
  ref out;
  std::string last;
  bool first = true;
  std::size_t n = 0;
  for (const auto& [key, value] : m) {
    BOOST_TEST_REQUIRE((first || last < key), "out of order: " << last << " then " << key);
    BOOST_TEST_REQUIRE(static_cast<bool>(value));
    out[key] = *value;
    last = key;
    first = false;
    ++n;
  }
  BOOST_TEST_REQUIRE(n == m.size());
  return out;
}

std::string key_of(int k) {
  // Long enough to leave the small-string buffer, in an order unlike the numbers'.
  return "node-" + std::to_string(k * 7919 % 1000) + "-of-the-cluster";
}

} // namespace

BOOST_AUTO_TEST_SUITE(shared_map)

BOOST_AUTO_TEST_CASE(empty_map) {
  smap m;
  BOOST_TEST(m.empty());
  BOOST_TEST((m.begin() == m.end()));
  BOOST_TEST((m.find("x") == m.end()));
  BOOST_TEST(m.erase("x") == 0u);
  BOOST_CHECK_THROW(m.at("x"), std::out_of_range);
}

BOOST_AUTO_TEST_CASE(finds_replaces_and_erases_across_chunk_splits) {
  smap m;
  ref want;
  for (int i = 0; i < 1000; ++i) {
    m.set(key_of(i), std::make_shared<const int>(i));
    want[key_of(i)] = i;
  }
  BOOST_TEST(contents(m) == want);
  for (int i = 0; i < 1000; i += 3) {
    m[key_of(i)] = std::make_shared<const int>(-i);
    want[key_of(i)] = -i;
  }
  for (int i = 1; i < 1000; i += 2) {
    BOOST_TEST(m.erase(key_of(i)) == 1u);
    BOOST_TEST(m.erase(key_of(i)) == 0u);
    want.erase(key_of(i));
  }
  BOOST_TEST(contents(m) == want);
  for (const auto& [key, value] : want) {
    auto it = m.find(key);
    BOOST_TEST_REQUIRE((it != m.end()));
    BOOST_TEST(it->first == key);
    BOOST_TEST(*it->second == value);
    BOOST_TEST(m.count(key) == 1u);
  }
  BOOST_TEST((m.find("node-") == m.end()));
  BOOST_TEST((m.find("zzz") == m.end()));
  BOOST_TEST(m.count("") == 0u);
}

// lower_bound agrees with std::map's across chunks: a namespace's keys are walked from it.
BOOST_AUTO_TEST_CASE(lower_bound_finds_the_first_key_not_below) {
  smap m;
  ref want;
  for (int i = 0; i < 500; i += 2) {
    m.set(key_of(i), std::make_shared<const int>(i));
    want[key_of(i)] = i;
  }
  for (int i = 0; i < 520; ++i)
    for (const auto& probe :
         {key_of(i), key_of(i) + "!", std::string("node-") + std::to_string(i)}) {
      auto got = m.lower_bound(probe);
      auto expected = want.lower_bound(probe);
      BOOST_TEST_REQUIRE(((got == m.end()) == (expected == want.end())), probe);
      if (expected != want.end())
        BOOST_TEST(got->first == expected->first);
    }
  BOOST_TEST((m.lower_bound("zzz") == m.end()));
  BOOST_TEST(m.lower_bound("")->first == want.begin()->first);
  const smap none;
  BOOST_TEST((none.lower_bound("a") == none.end()));
}

// Random operations against std::map, with copies taken along the way: each copy must
// still hold exactly what the map held when it was taken.
BOOST_AUTO_TEST_CASE(copies_never_see_later_changes) {
  std::mt19937 rng(20261130);
  smap m;
  ref want;
  std::vector<std::pair<smap, ref>> copies;
  for (int step = 0; step < 20000; ++step) {
    const int k = static_cast<int>(rng() % 400);
    switch (rng() % 4) {
    case 0:
    case 1:
      m.set(key_of(k), std::make_shared<const int>(step));
      want[key_of(k)] = step;
      break;
    case 2:
      BOOST_TEST_REQUIRE(m.erase(key_of(k)) == want.erase(key_of(k)));
      break;
    default:
      BOOST_TEST_REQUIRE((m.find(key_of(k)) == m.end()) == (want.count(key_of(k)) == 0));
    }
    if (step % 500 == 0)
      copies.emplace_back(m, want);
    if (step % 2000 == 0)
      m.clear(), want.clear();
  }
  BOOST_TEST(contents(m) == want);
  for (const auto& [copy, then] : copies)
    BOOST_TEST_REQUIRE(contents(copy) == then);
  // A copy changed on its own leaves the original alone.
  auto other = m;
  other.set("aaa-first", std::make_shared<const int>(1));
  BOOST_TEST(m.count("aaa-first") == 0u);
  BOOST_TEST(other.size() == m.size() + 1);
}

BOOST_AUTO_TEST_SUITE_END()
