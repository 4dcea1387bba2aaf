// rollout_governor under random interleavings (DESIGN.md section 5: "the limits hold
// under any interleaving"). A simulated plan of ten nodes goes through random events:
// admin cordons, NotReady flips, failures and retries, workers that start late or are
// found in flight after a restart, releases, forgets, limit changes, and grant() calls.
// A model kept beside the governor says which nodes each grant() must start; after
// every event the governor's counters are sampled from outside and checked against the
// model, and every grant against the limits as they stood at that moment.
#include "controller/rollout_governor.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;
namespace bdata = boost::unit_test::data;

namespace {

constexpr int events_per_seed = 20000;
constexpr int node_count = 10;

// -- the simulated cluster: what the PlanSupervisor would observe --

enum class phase {
  pending,   // asks for a token
  granted,   // holds a token; its worker has not yet moved it to Draining
  in_flight, // Draining .. Verifying
  succeeded,
  failed,
};

struct sim_node {
  bool in_plan = true;
  bool admin_cordon = false;
  bool not_ready = false;
  phase ph = phase::pending;
  /// Failed after Applying: kept cordoned.
  bool failed_cordoned = false;

  gc::governor_node facts() const {
    gc::governor_node f;
    f.in_flight = ph == phase::in_flight;
    f.unavailable = admin_cordon || not_ready || (ph == phase::failed && failed_cordoned);
    f.failed = ph == phase::failed;
    // A granted node whose worker has not moved yet still looks Pending.
    f.wants_token = ph == phase::pending || ph == phase::granted;
    return f;
  }
};

// -- the model: section 5 written out once more, against which grant() is checked --

struct model {
  gc::rollout_limits limits;
  std::map<std::string, gc::governor_node> nodes;
  std::set<std::string> tokens;

  bool down(const std::string& name, const gc::governor_node& f) const {
    return f.unavailable || f.failed || f.in_flight || tokens.count(name) > 0;
  }
  std::int32_t unavailable() const {
    std::int32_t n = 0;
    for (const auto& [name, f] : nodes)
      n += down(name, f) ? 1 : 0;
    return n;
  }
  std::int32_t max_unavailable() const {
    const auto& mu = limits.max_unavailable;
    if (!mu.is_percent())
      return mu.value();
    return std::max<std::int32_t>(1, static_cast<std::int32_t>(nodes.size()) * mu.value() / 100);
  }
  bool over_failure_budget() const {
    return std::count_if(nodes.begin(), nodes.end(),
                         [](const auto& kv) { return kv.second.failed; }) > limits.max_failures;
  }
  bool candidate(const std::string& name, const gc::governor_node& f) const {
    return f.wants_token && !f.failed && tokens.count(name) == 0;
  }
  bool allowed(const std::string& name) const {
    return !limits.only || limits.only->count(name) > 0;
  }
  bool any_candidate() const {
    return std::any_of(nodes.begin(), nodes.end(),
                       [&](const auto& kv) { return candidate(kv.first, kv.second); });
  }
  // The nodes grant() must start now, in order, and the tokens afterwards.
  std::vector<std::string> grants() const {
    std::vector<std::string> out;
    if (limits.paused || over_failure_budget())
      return out;
    model after = *this;
    for (const auto& [name, f] : nodes) {
      if (!after.candidate(name, f) || !allowed(name))
        continue;
      if (static_cast<std::int32_t>(after.tokens.size()) + 1 > limits.max_parallel)
        continue;
      const std::int32_t adds = after.down(name, f) ? 0 : 1;
      if (after.unavailable() + adds > max_unavailable())
        continue;
      after.tokens.insert(name);
      out.push_back(name);
    }
    return out;
  }
};

struct run_stats {
  int grant_calls = 0;
  int nodes_granted = 0;
  int grants_to_already_unavailable = 0;
  int observed_in_flight_without_grant = 0;
  std::set<gc::hold_reason> reasons;
  /// Every grant() result, in order: equal for equal seeds.
  std::vector<std::string> trace;
};

std::string name_of(int i) {
  return "node-" + std::string(i < 10 ? "0" : "") + std::to_string(i);
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "" : ",") + n;
  return out;
}

class simulation {
public:
  explicit simulation(std::uint32_t seed) : seed_(seed), rng_(seed) {
    for (int i = 0; i < node_count; ++i)
      sim_[name_of(i)] = sim_node{};
    set_limits(random_limits());
    for (const auto& [name, n] : sim_)
      observe(name);
  }

  run_stats run() {
    for (step_ = 0; step_ < events_per_seed; ++step_) {
      const int dice = pick(100);
      if (dice < 22)
        do_grant();
      else if (dice < 40)
        do_release();
      else if (dice < 70)
        do_cluster_change();
      else if (dice < 80)
        do_worker_starts();
      else if (dice < 85)
        do_forget();
      else if (dice < 90)
        do_rejoin();
      else if (dice < 95)
        set_limits(random_limits());
      else
        observe(random_node_in_plan());
      if (failed_)
        break;
    }
    return stats_;
  }

  bool failed() const { return failed_; }

private:
  // -- randomness --

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool chance(int percent) { return pick(100) < percent; }

  std::string random_node_in_plan() {
    std::vector<std::string> in;
    for (const auto& [name, n] : sim_)
      if (n.in_plan)
        in.push_back(name);
    return in.empty() ? std::string{} : in[pick(static_cast<int>(in.size()))];
  }

  gc::rollout_limits random_limits() {
    static const std::int32_t percents[] = {10, 25, 34, 50, 75, 100};
    gc::rollout_limits l;
    l.max_parallel = 1 + pick(4);
    l.max_unavailable = chance(50) ? gp::int_or_percent::count(1 + pick(5))
                                   : gp::int_or_percent::percent(percents[pick(6)]);
    l.paused = chance(15);
    l.max_failures = chance(70) ? 0 : pick(3);
    if (chance(10)) {
      // A canary or a closed window: only some nodes (or none) may start.
      std::set<std::string> only;
      for (int i = 0; i < 8; ++i)
        if (chance(50))
          only.insert(name_of(i));
      l.only = only;
    }
    return l;
  }

  // -- events --

  void set_limits(const gc::rollout_limits& l) {
    gov_.set_limits(l);
    model_.limits = l;
    event_ = "set_limits(maxParallel=" + std::to_string(l.max_parallel) +
             ", maxUnavailable=" + l.max_unavailable.to_string() + (l.paused ? ", paused" : "") +
             ", maxFailures=" + std::to_string(l.max_failures) +
             (l.only ? ", only " + std::to_string(l.only->size()) + " nodes" : "") + ")";
    check();
  }

  void observe(const std::string& name) {
    if (name.empty() || !sim_.at(name).in_plan)
      return;
    const auto f = sim_.at(name).facts();
    gov_.observe(name, f);
    model_.nodes[name] = f;
    if (f.in_flight)
      model_.tokens.insert(name);
    event_ = "observe(" + name + ")";
    check();
  }

  void release(const std::string& name) {
    gov_.release(name);
    model_.tokens.erase(name);
    // Released: no longer in flight, and not asking for a token until it is observed
    // asking again (it finished, or it failed).
    if (auto it = model_.nodes.find(name); it != model_.nodes.end()) {
      it->second.in_flight = false;
      it->second.wants_token = false;
    }
    event_ = "release(" + name + ")";
    check();
  }

  void do_grant() {
    const auto expected = model_.grants();
    const auto in_flight_before = gov_.in_flight();
    const auto granted = gov_.grant();
    event_ = "grant() -> [" + joined(granted) + "]";
    ++stats_.grant_calls;
    stats_.trace.push_back(joined(granted));
    if (granted != expected)
      return fail("grant() started [" + joined(granted) + "], the model says [" + joined(expected) +
                  "]");
    // The limits at the moment of the grant, sampled from outside: each grant kept
    // in-flight within maxParallel and unavailable within maxUnavailable.
    if (!granted.empty() && gov_.in_flight() > model_.limits.max_parallel)
      return fail("in flight " + std::to_string(gov_.in_flight()) + " > maxParallel " +
                  std::to_string(model_.limits.max_parallel) + " after a grant");
    if (!granted.empty() && gov_.unavailable() > model_.max_unavailable())
      return fail("unavailable " + std::to_string(gov_.unavailable()) + " > maxUnavailable " +
                  std::to_string(model_.max_unavailable()) + " after a grant");
    if (gov_.in_flight() != in_flight_before + static_cast<std::int32_t>(granted.size()))
      return fail("in_flight() did not grow by the number of grants");
    for (const auto& name : granted) {
      if (model_.nodes.at(name).unavailable)
        ++stats_.grants_to_already_unavailable;
      model_.tokens.insert(name);
      sim_.at(name).ph = phase::granted;
    }
    stats_.nodes_granted += static_cast<int>(granted.size());
    check();
    // grant() is greedy: straight after it, nothing more may start.
    if (!failed_ && gov_.holding() == gc::hold_reason::none)
      fail("holding() says None right after grant()");
  }

  // A token holder finishes: Succeeded (available again) or, now and then, Failed.
  void do_release() {
    if (model_.tokens.empty())
      return;
    auto it = model_.tokens.begin();
    std::advance(it, pick(static_cast<int>(model_.tokens.size())));
    const std::string name = *it;
    auto& n = sim_.at(name);
    if (chance(10)) {
      n.ph = phase::failed;
      n.failed_cordoned = chance(50);
      // Either order: the status watch and the worker's release race.
      if (chance(50)) {
        observe(name);
        release(name);
      } else {
        release(name);
        observe(name);
      }
      return;
    }
    n.ph = phase::succeeded;
    release(name);
    if (chance(60))
      observe(name);
  }

  void do_cluster_change() {
    const std::string name = random_node_in_plan();
    if (name.empty())
      return;
    auto& n = sim_.at(name);
    switch (pick(6)) {
    case 0:
      n.admin_cordon = !n.admin_cordon;
      break;
    case 1:
      n.not_ready = !n.not_ready;
      break;
    case 2: // the user retries a failed node
      if (n.ph == phase::failed) {
        n.ph = phase::pending;
        n.failed_cordoned = chance(30);
        // A retried node still cordoned from the failed attempt counts as an admin cordon
        // would: down, but not ours.
        n.admin_cordon = n.admin_cordon || n.failed_cordoned;
        n.failed_cordoned = false;
      }
      break;
    case 3: // the profile changed: a Succeeded node runs again
      if (n.ph == phase::succeeded)
        n.ph = phase::pending;
      break;
    case 4: // found mid-drain after an operator restart, without a grant from us
      if (n.ph == phase::pending && !gov_.holds(name) && chance(25)) {
        n.ph = phase::in_flight;
        ++stats_.observed_in_flight_without_grant;
      }
      break;
    default: // an in-flight node fails before releasing
      if (n.ph == phase::in_flight && chance(20)) {
        n.ph = phase::failed;
        n.failed_cordoned = chance(50);
      }
      break;
    }
    observe(name);
  }

  // A worker that got a token moves its node to Draining.
  void do_worker_starts() {
    std::vector<std::string> granted;
    for (const auto& [name, n] : sim_)
      if (n.in_plan && n.ph == phase::granted)
        granted.push_back(name);
    if (granted.empty())
      return;
    const auto& name = granted[pick(static_cast<int>(granted.size()))];
    sim_.at(name).ph = phase::in_flight;
    observe(name);
  }

  void do_forget() {
    const std::string name = random_node_in_plan();
    if (name.empty())
      return;
    sim_.at(name).in_plan = false;
    gov_.forget(name);
    model_.nodes.erase(name);
    model_.tokens.erase(name);
    event_ = "forget(" + name + ")";
    check();
  }

  void do_rejoin() {
    std::vector<std::string> out;
    for (const auto& [name, n] : sim_)
      if (!n.in_plan)
        out.push_back(name);
    if (out.empty())
      return;
    const auto& name = out[pick(static_cast<int>(out.size()))];
    auto& n = sim_.at(name);
    n.in_plan = true;
    n.ph = phase::pending; // a new NodePartitioning
    n.failed_cordoned = false;
    observe(name);
  }

  // -- the outside sampler --

  void check() {
    if (failed_)
      return;
    if (gov_.total() != static_cast<std::int32_t>(model_.nodes.size()))
      return fail("total() " + std::to_string(gov_.total()) + ", model " +
                  std::to_string(model_.nodes.size()));
    if (gov_.in_flight() != static_cast<std::int32_t>(model_.tokens.size()))
      return fail("in_flight() " + std::to_string(gov_.in_flight()) + ", model " +
                  std::to_string(model_.tokens.size()));
    if (gov_.unavailable() != model_.unavailable())
      return fail("unavailable() " + std::to_string(gov_.unavailable()) + ", model " +
                  std::to_string(model_.unavailable()));
    if (gov_.max_unavailable() != model_.max_unavailable())
      return fail("max_unavailable() " + std::to_string(gov_.max_unavailable()) + ", model " +
                  std::to_string(model_.max_unavailable()));
    for (const auto& [name, n] : sim_)
      if (gov_.holds(name) != (model_.tokens.count(name) > 0))
        return fail("holds(" + name + ") disagrees with the model");
    const auto reason = gov_.holding();
    stats_.reasons.insert(reason);
    const bool can_start = !model_.grants().empty();
    if ((reason == gc::hold_reason::none) != can_start)
      return fail(std::string("holding() is ") + gc::to_string(reason) + " but the model " +
                  (can_start ? "can" : "cannot") + " start a node");
    if (!model_.any_candidate() && reason != gc::hold_reason::no_candidates)
      return fail(std::string("no candidate, yet holding() is ") + gc::to_string(reason));
    if (model_.any_candidate() && model_.limits.paused && reason != gc::hold_reason::paused)
      return fail(std::string("paused, yet holding() is ") + gc::to_string(reason));
    if (model_.any_candidate() && !model_.limits.paused && model_.over_failure_budget() &&
        reason != gc::hold_reason::failed_node)
      return fail(std::string("a node failed, yet holding() is ") + gc::to_string(reason));
  }

  void fail(const std::string& what) {
    failed_ = true;
    BOOST_ERROR("seed " << seed_ << ", event " << step_ << " (" << event_ << "): " << what);
  }

  std::uint32_t seed_;
  std::mt19937 rng_;
  std::map<std::string, sim_node> sim_;
  gc::rollout_governor gov_;
  model model_;
  run_stats stats_;
  int step_ = 0;
  std::string event_ = "setup";
  bool failed_ = false;
};

const std::vector<std::uint32_t> seeds{1, 2, 3, 42, 4711, 20240501};

} // namespace

BOOST_AUTO_TEST_SUITE(rollout_governor_property)

BOOST_DATA_TEST_CASE(every_grant_matches_the_model_and_keeps_the_limits, bdata::make(seeds), seed) {
  simulation sim(seed);
  const auto stats = sim.run();
  BOOST_TEST_REQUIRE(!sim.failed());
  // The run exercised what it claims to: many grants, grants to nodes that were already
  // down, nodes found in flight, and every reason for holding back.
  BOOST_TEST(stats.grant_calls >= events_per_seed / 6);
  BOOST_TEST(stats.nodes_granted >= 400);
  BOOST_TEST(stats.grants_to_already_unavailable >= 1);
  BOOST_TEST(stats.observed_in_flight_without_grant >= 1);
  for (auto r : {gc::hold_reason::none, gc::hold_reason::paused, gc::hold_reason::failed_node,
                 gc::hold_reason::max_parallel, gc::hold_reason::max_unavailable,
                 gc::hold_reason::not_allowed, gc::hold_reason::no_candidates})
    BOOST_TEST(stats.reasons.count(r) == 1u, "never saw holding() == " << gc::to_string(r));
}

BOOST_DATA_TEST_CASE(the_same_seed_gives_the_same_grants, bdata::make(seeds), seed) {
  simulation first(seed);
  simulation second(seed);
  const auto a = first.run().trace;
  const auto b = second.run().trace;
  BOOST_TEST_REQUIRE(a.size() == b.size());
  BOOST_TEST_REQUIRE(!a.empty());
  for (std::size_t i = 0; i < a.size(); ++i)
    BOOST_TEST_REQUIRE(a[i] == b[i], "grant call " << i);
}

BOOST_AUTO_TEST_SUITE_END()
