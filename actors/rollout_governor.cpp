#include "actors/rollout_governor.hpp"

#include "actors/log.hpp"

#include <map>
#include <set>

namespace gpu_partitioner::actors {

governor_actor::behavior_type rollout_governor_actor(governor_actor::pointer self,
                                                     std::string plan) {
  struct state {
    controller::rollout_governor governor;
    // Weak handles: workers hold the governor, so strong ones both ways would keep each
    // other (and the io executors they name) alive after shutdown.
    std::map<std::string, caf::actor_addr> workers;
    // Every worker monitored, and its item: its down message, which comes after all its
    // reports, says it is gone.
    std::map<caf::actor_addr, std::string> monitored;
    // The plan's items, and those that have said where they stand: tokens go in name
    // order only once every item has been heard from (or is known not to exist yet),
    // whatever order they asked in.
    std::set<std::string> selected;
    std::set<std::string> heard;
    // Selected items that do not exist yet (the supervisor is creating them): none can be
    // in flight, so they hold nothing back but their turn. Tokens go to the items named
    // before the first of them, and their nodes count as unavailable when they are.
    std::set<std::string> absent;
    // Of `absent`, those whose create fails: no node waits for their turn.
    std::set<std::string> unmade;
    /// How many of `selected` are in `heard` (checked on every report, so kept, not counted).
    std::size_t selected_heard = 0;
  };
  auto s = std::make_shared<state>();
  auto grant = [=] {
    if (s->selected_heard + s->absent.size() < s->selected.size())
      return;
    const std::string* before = nullptr;
    for (const auto& item : s->absent)
      if (!s->unmade.count(item)) {
        before = &item;
        break;
      }
    for (const auto& item : s->governor.grant(before)) {
      log_info("token granted (" + std::to_string(s->governor.in_flight()) + " in flight, " +
                   std::to_string(s->governor.unavailable()) + " unavailable)",
               plan, item);
      if (auto it = s->workers.find(item); it != s->workers.end())
        if (auto worker = caf::actor_cast<grant_receiver>(it->second))
          self->send(worker, grant_atom_v);
    }
  };
  auto unheard = [=](const std::string& item) {
    if (s->heard.erase(item) && s->selected.count(item))
      --s->selected_heard;
  };
  self->set_down_handler([=](caf::down_msg& msg) {
    auto it = s->monitored.find(msg.source);
    if (it == s->monitored.end())
      return;
    const std::string item = it->second;
    s->monitored.erase(it);
    auto current = s->workers.find(item);
    if (current == s->workers.end() || current->second != msg.source)
      return; // a worker since replaced
    s->workers.erase(current);
    unheard(item);
    if (msg.reason != caf::exit_reason::user_shutdown)
      return; // failed: its token stays until the worker started in its place reports
    // Stopped by the supervisor: the item is gone, and with it what it held.
    s->governor.forget(item);
    s->absent.erase(item);
    s->selected.erase(item);
    grant();
  });
  return {
      [=](limits_atom, const controller::rollout_limits& limits,
          const std::vector<std::string>& selected, const std::vector<std::string>& absent,
          const std::vector<std::string>& absent_unavailable,
          const std::vector<std::string>& unmade) {
        s->governor.set_limits(limits);
        s->selected = std::set<std::string>(selected.begin(), selected.end());
        std::set<std::string> now_absent;
        const std::set<std::string> down(absent_unavailable.begin(), absent_unavailable.end());
        for (const auto* list : {&absent, &unmade})
          for (const auto& item : *list)
            if (s->selected.count(item) && !s->heard.count(item)) {
              now_absent.insert(item);
              controller::governor_node facts;
              facts.unavailable = down.count(item) > 0;
              s->governor.observe(item, facts);
            }
        s->unmade = std::set<std::string>(unmade.begin(), unmade.end());
        // One that is no longer absent either exists now (its worker will say where it
        // stands) or left the plan: what was assumed of it goes.
        for (const auto& item : s->absent)
          if (!now_absent.count(item) && !s->heard.count(item))
            s->governor.forget(item);
        s->absent = std::move(now_absent);
        s->selected_heard = 0;
        for (const auto& item : s->selected)
          s->selected_heard += s->heard.count(item);
        grant();
      },
      [=](report_atom, const std::string& item, const controller::governor_node& facts,
          const grant_receiver& worker) {
        const auto address = worker.address();
        if (!s->monitored.count(address)) {
          // A strong handle here: only a live actor object can be monitored (one already
          // gone answers with its down message at once).
          s->monitored.emplace(address, item);
          self->monitor(worker);
        }
        s->workers[item] = address;
        s->absent.erase(item);
        if (s->heard.insert(item).second && s->selected.count(item))
          ++s->selected_heard;
        const bool held = s->governor.holds(item);
        s->governor.observe(item, facts);
        if (!facts.in_flight && held && !facts.wants_token)
          s->governor.release(item);
        grant();
        // A restarted worker may ask again for a token it already holds.
        if (facts.wants_token && held)
          self->send(worker, grant_atom_v);
      },
  };
}

} // namespace gpu_partitioner::actors
