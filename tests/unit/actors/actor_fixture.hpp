#pragma once

// Shared by the deterministic actor tests: an actor system on CAF's test_coordinator,
// test actors that stand in for the io executors, the StatusWriter and (for the worker
// tests) the RolloutGovernor, and hand-built cluster snapshots. The io stand-in keeps a
// small model of the cluster: it applies a node step's writes to it and, like the
// Watcher would, shows the requester the new snapshot before it answers.

#include "actors/io_executor.hpp"
#include "actors/messages.hpp"
#include "actors/rollout_governor.hpp"
#include "actors/status_writer.hpp"
#include "controller/dcm_payload.hpp"
#include "protocol/desired_hash.hpp"
#include "protocol/timestamp.hpp"

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace actor_test {

namespace ga = gpu_partitioner::actors;
namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;

/// Tells the io stand-in to deliver the answers it holds back.
using deliver_atom = caf::atom_constant<caf::atom("deliver")>;
constexpr deliver_atom deliver_atom_v{};

inline const char* const plan_name = "plan";
inline const char* const profile_name = "mi300x-cpx-nps4";
inline const char* const dcm_profile = "cpx-nps4";
inline const char* const dcm_ns = "kube-amd-gpu";
inline const char* const dcm_cm = "config-manager-config";
inline const char* const payload_json =
    R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":"CPX","memoryPartition":"NPS4","numGPUsAssigned":8}]})";

// -- time --

/// A wall clock that moves only when the test moves it. Copies share the time, so the
/// worker, the io stand-in and the test all read the one the test sets.
class manual_clock {
public:
  gp::wall_clock::time_point now() const { return *at_; }
  void advance(gp::wall_clock::duration by) { *at_ += by; }
  /// For a node_worker_config or a cluster_model.
  std::function<gp::wall_clock::time_point()> reader() const {
    return [at = at_] { return *at; };
  }

private:
  // A fixed start, with a fraction of a second: Events and statuses carry whole seconds.
  std::shared_ptr<gp::wall_clock::time_point> at_ =
      std::make_shared<gp::wall_clock::time_point>(*gp::parse_time("2027-01-15T08:00:00.250Z"));
};

// -- objects --

inline gc::node_info make_node(const std::string& name, const std::string& pool = "train") {
  gc::node_info n;
  n.name = name;
  n.uid = "uid-" + name;
  n.resource_version = "1";
  n.labels = {{"pool", pool},
              {"amd.com/gpu.product", "MI300X"},
              {gc::dcm_profile_label, "spx-nps1"},
              {gc::dcm_state_label, "success"},
              {"amd.com/gpu.ready", "true"}};
  n.allocatable = {{"amd.com/gpu", "8"}};
  return n;
}

inline gc::pod_info make_pod(const std::string& node, const std::string& name,
                             const std::string& app = "web") {
  gc::pod_info p;
  p.ns = "team";
  p.name = name;
  p.uid = "uid-" + name;
  p.node_name = node;
  p.labels = {{"app", app}};
  p.phase = "Running";
  return p;
}

inline gp::partitioning_profile make_profile() {
  gp::partitioning_profile p;
  p.metadata.name = profile_name;
  p.spec.expected_resources = {{"amd.com/gpu", 64}};
  p.spec.verification.timeout_seconds = 300;
  p.spec.operator_payload.name = "cpx-nps4";
  p.spec.operator_payload.namespace_ = dcm_ns;
  p.spec.operator_payload.profile_name = dcm_profile;
  return p;
}

inline gp::partitioning_plan make_plan(std::int32_t max_parallel = 1, bool paused = false) {
  gp::partitioning_plan plan;
  plan.metadata.name = plan_name;
  plan.metadata.uid = "plan-uid";
  plan.metadata.generation = 1;
  plan.spec.paused = paused;
  plan.spec.rollout.max_parallel = max_parallel;
  plan.spec.rollout.max_unavailable = gp::int_or_percent::count(10);
  gp::partitioning entry;
  entry.name = "train";
  entry.selector.match_labels = {{"pool", "train"}};
  entry.profile_ref.name = profile_name;
  plan.spec.partitionings = {entry};
  return plan;
}

/// The item the PlanSupervisor would create for `node`.
inline gp::node_partitioning make_item(const std::string& node) {
  gp::node_partitioning item;
  item.metadata.name = std::string(plan_name) + "-" + node;
  item.metadata.uid = "uid-item-" + node;
  item.metadata.finalizers = {gc::item_finalizer};
  item.spec.plan_ref = {plan_name, "plan-uid"};
  item.spec.node_name = node;
  item.spec.profile_ref.name = profile_name;
  item.spec.desired_hash =
      gp::desired_hash(make_profile(), item.spec.drain, item.spec.verification);
  return item;
}

// -- the cluster as the io stand-in keeps it --

struct cluster_model {
  ga::cluster_snapshot view;
  /// The clock the model stamps evictions and DCM's Events with: the wall clock, unless
  /// the test gives it the one its actors read.
  std::function<gp::wall_clock::time_point()> now = [] { return gp::wall_clock::now(); };
  /// How long before now an eviction blocked by a PDB is stamped as refused.
  gp::wall_clock::duration blocked_age{};
  /// Every eviction under a budget is refused whatever the budget's status shows: the
  /// status the operator saw is older than another client's eviction that took its last
  /// disruption.
  bool budgets_refuse = false;
  /// DCM answers this state as soon as the profile label is set ("" for never).
  std::string dcm_answer = "success";
  int events_written = 0;

  cluster_model() {
    view.synced = true;
    view.profiles[profile_name] = std::make_shared<const gp::partitioning_profile>(make_profile());
    view.config_maps[std::string(dcm_ns) + "/cpx-nps4"] =
        std::make_shared<const ga::config_map_data>(
            ga::config_map_data{{"profile.json", payload_json}});
    view.config_maps[std::string(dcm_ns) + "/" + dcm_cm] =
        std::make_shared<const ga::config_map_data>(
            ga::config_map_data{{"config.json", R"({"gpu-config-profiles":{}})"}});
    view.config_maps_listed = {std::string(dcm_ns) + "/cpx-nps4",
                               std::string(dcm_ns) + "/" + dcm_cm};
  }

  /// A node, with DCM's pod on it (the GPU operator's DaemonSet runs one on every GPU node).
  void put(const gc::node_info& n) {
    view.nodes[n.name] = std::make_shared<const gc::node_info>(n);
    const std::string dcm_pod = std::string(dcm_ns) + "/dcm-" + n.name;
    auto pods = view.pods_by_node.find(n.name);
    if (pods == view.pods_by_node.end() || !pods->second->count(dcm_pod)) {
      auto p = make_pod(n.name, "dcm-" + n.name);
      p.ns = dcm_ns;
      p.labels = {{gc::dcm_pod_label, gc::dcm_pod_label_value}};
      p.dcm_config_mount = dcm_cm;
      p.dcm_image = "rocm/device-config-manager:v1.3.0";
      p.daemon_set = true;
      gc::toleration t;
      t.key = gc::dcm_taint_key;
      t.op = "Exists";
      p.tolerations = {t};
      put(p);
    }
  }
  /// A pod; one marked a DaemonSet's gets its DaemonSet too (an owner that does not
  /// exist makes a pod unmanaged).
  void put(gc::pod_info p) {
    if (p.daemon_set && p.daemon_set_key.empty()) {
      p.daemon_set_key = p.ns + "/ds-" + p.name;
      p.daemon_set_uid = "uid-ds-" + p.name;
      auto sets = std::make_shared<gc::daemon_set_uids>(*view.daemon_sets);
      (*sets)[p.daemon_set_key] = p.daemon_set_uid;
      view.daemon_sets = sets;
    }
    view.pods_to_edit(p.node_name)[p.ns + "/" + p.name] = std::make_shared<const gc::pod_info>(p);
  }
  void put(const gc::pdb_info& b) {
    view.pdbs[b.ns + "/" + b.name] = std::make_shared<const gc::pdb_info>(b);
  }
  void put(const gp::node_partitioning& i) {
    view.items[i.metadata.name] = std::make_shared<const gp::node_partitioning>(i);
  }
  void put(const gp::partitioning_plan& p) {
    view.plans[p.metadata.name] = std::make_shared<const gp::partitioning_plan>(p);
  }

  gc::node_info node(const std::string& name) const { return *view.nodes.at(name); }
  /// Snapshots say everything may have changed (every worker steps), unless a test sets
  /// the change fields itself.
  /// Either way the items that changed since the last snapshot are named in it, as the
  /// root names them.
  bool mark_all_changed = true;
  /// `shown`: the snapshot goes to the supervisor, whose change tracking it advances. The
  /// io stand-in's snapshots for a worker's slice do not: the supervisor must still be told
  /// of the items those writes replaced, or it keeps pointers to the objects they replaced.
  ga::snapshot_ptr snapshot(bool shown = true) const {
    auto copy = std::make_shared<ga::cluster_snapshot>(view);
    if (mark_all_changed) {
      copy->shared_changed = true;
      copy->nodes_came_or_went = true;
      copy->item_specs_changed = true;
    }
    std::map<std::string, const gp::node_partitioning*> items;
    for (const auto& [name, item] : view.items) {
      items[name] = item.get();
      if (auto was = shown_items.find(name); was == shown_items.end() || was->second != item.get())
        copy->item_changes.insert(name);
    }
    for (const auto& [name, item] : shown_items)
      if (!items.count(name))
        copy->item_changes.insert(name);
    if (shown)
      shown_items = std::move(items);
    return copy;
  }
  mutable std::map<std::string, const gp::node_partitioning*> shown_items;

  /// DCM's answer to the node's profile label: its state label, and its Event naming the
  /// profile it served.
  void dcm_says(gc::node_info& n, const std::string& state) {
    n.labels[gc::dcm_state_label] = state;
    const bool ok = state == "success";
    gc::dcm_event e;
    e.host = n.name;
    e.info.type = ok ? "Normal" : "Warning";
    e.info.reason = ok ? "SuccessfullyPartitioned" : "AMDSMIAPIFailure";
    e.info.message = "{}";
    e.info.profile = n.labels[gc::dcm_profile_label];
    // Events carry whole seconds.
    e.info.time = *gp::parse_time(gp::format_time(now()));
    view.dcm_events_to_edit(
        n.name)[std::string(dcm_ns) + "/event-" + std::to_string(++events_written)] =
        std::make_shared<const gc::dcm_event>(std::move(e));
  }

  // The device plugin and labeller report what the GPUs run, while not tainted.
  static void plugin(gc::node_info& n) {
    if (n.has_dcm_taint()) {
      n.labels.erase("amd.com/gpu.ready");
      n.allocatable["amd.com/gpu"] = "0"; // kubelet: the plugin's devices are unhealthy
      return;
    }
    n.labels["amd.com/gpu.ready"] = "true";
    const bool cpx = n.labels[gc::dcm_state_label] == "success" &&
                     n.labels[gc::dcm_profile_label] == dcm_profile;
    n.allocatable["amd.com/gpu"] = cpx ? "64" : "8";
  }

  ga::node_io_result apply(const ga::node_io& io) {
    ga::node_io_result r;
    if (io.read_node && !io.patch && !io.taint) {
      // A read: the node as the API server has it, unchanged.
      if (auto it = view.nodes.find(io.node); it != view.nodes.end())
        r.node = it->second;
      return r;
    }
    if (auto it = view.nodes.find(io.node); it != view.nodes.end()) {
      auto n = *it->second;
      const auto label_before = n.labels[gc::dcm_profile_label];
      if (io.patch) {
        if (io.patch->unschedulable)
          n.unschedulable = *io.patch->unschedulable;
        for (const auto& [k, v] : io.patch->labels)
          if (v)
            n.labels[k] = *v;
          else
            n.labels.erase(k);
        for (const auto& [k, v] : io.patch->annotations)
          if (v)
            n.annotations[k] = *v;
          else
            n.annotations.erase(k);
      }
      if (io.taint) {
        const gc::taint t{gc::dcm_taint_key, gc::dcm_taint_value, "NoExecute"};
        n.taints.erase(std::remove(n.taints.begin(), n.taints.end(), t), n.taints.end());
        if (*io.taint) {
          n.taints.push_back(t);
          // The taint manager removes what does not tolerate the taint.
          auto& pods = view.pods_to_edit(io.node);
          for (auto p = pods.begin(); p != pods.end();)
            if (!p->second->mirror && !p->second->tolerates_dcm_taint())
              p = pods.erase(p);
            else
              ++p;
        }
      }
      if (n.labels.count(gc::dcm_profile_label) &&
          n.labels[gc::dcm_profile_label] != label_before && !dcm_answer.empty())
        dcm_says(n, dcm_answer);
      plugin(n);
      n.resource_version = std::to_string(std::stoi(n.resource_version) + 1);
      put(n);
      if (io.patch || io.taint)
        r.node = view.nodes[io.node];
    }
    for (const auto& removal : io.removals) {
      auto& pods = view.pods_to_edit(io.node);
      const auto key = removal.ns + "/" + removal.name;
      gc::eviction_memory m;
      m.at = now();
      auto p = pods.find(key);
      const bool blocked = removal.evict && p != pods.end() &&
                           std::any_of(view.pdbs.begin(), view.pdbs.end(), [&](const auto& b) {
                             return b.second->covers(*p->second) &&
                                    (budgets_refuse || b.second->disruptions_allowed <= 0);
                           });
      if (blocked) {
        m.blocked = true;
        m.at = now() - blocked_age;
        m.message = "Cannot evict pod as it would violate the pod's disruption budget.";
      } else {
        m.done = true;
        if (p != pods.end())
          pods.erase(p);
      }
      r.evictions[key] = m;
    }
    if (io.dcm) {
      const auto key = io.dcm->ns + "/" + io.dcm->name;
      ga::config_map_data data;
      if (auto cm = view.config_maps.find(key); cm != view.config_maps.end())
        data = *cm->second;
      for (const auto& [name, payload] : io.dcm->profiles)
        data["config.json"] =
            gc::dcm_config_with(data["config.json"], name, payload).value_or(data["config.json"]);
      view.config_maps[key] = std::make_shared<const ga::config_map_data>(data);
    }
    if (auto it = view.items.find(io.item); it != view.items.end()) {
      auto item = *it->second;
      auto& f = item.metadata.finalizers;
      if (io.add_finalizer && std::find(f.begin(), f.end(), gc::item_finalizer) == f.end())
        f.push_back(gc::item_finalizer);
      if (io.remove_finalizer)
        f.erase(std::remove(f.begin(), f.end(), gc::item_finalizer), f.end());
      if (io.clear_retry)
        item.metadata.annotations.erase(gc::retry_annotation);
      put(item);
    }
    return r;
  }
};

// -- the io executors' stand-in --

struct io_double_state {
  cluster_model cluster;
  std::vector<ga::node_io> node_requests;
  std::vector<ga::item_io> item_requests;
  /// What item writes answer ("" = done), and for some items by name, over that.
  std::string item_error;
  std::map<std::string, std::string> item_errors;
  /// Hold answers back until deliver_atom (one batch in flight is then observable).
  bool hold = false;
  std::vector<std::tuple<ga::node_io, caf::typed_response_promise<ga::node_io_result>,
                         caf::strong_actor_ptr>>
      held;
  /// Hold item writes back until deliver_atom, queued as in the io pool: one superseded
  /// by then is answered ga::item_io_superseded unsent, and named in `superseded`.
  bool hold_items = false;
  std::vector<std::pair<ga::item_io, caf::typed_response_promise<std::string>>> held_items;
  std::vector<std::string> superseded;
  /// Show the requester the new snapshot before answering, as the watch would.
  bool publish = true;
  /// Where DCM's config is, for the slices shown to the requester.
  gc::dcm_settings dcm{dcm_ns, std::chrono::milliseconds(90000)};
};

/// An io handle the test can also tell to deliver what it holds.
using io_double_actor = ga::io_actor::extend<caf::reacts_to<deliver_atom>>;

inline io_double_actor::behavior_type io_double(io_double_actor::pointer self,
                                                std::shared_ptr<io_double_state> st) {
  auto perform = [=](const ga::node_io& io, caf::typed_response_promise<ga::node_io_result> rp,
                     const caf::strong_actor_ptr& requester) {
    auto r = st->cluster.apply(io);
    if (st->publish)
      if (auto to = caf::actor_cast<caf::actor>(requester)) {
        auto view = st->cluster.snapshot(false);
        if (auto item = view->items.find(io.item); item != view->items.end())
          caf::anon_send(to, ga::view_atom_v,
                         std::make_shared<const gc::node_slice>(
                             gc::view_slicer(*view, st->dcm).slice(*item->second)),
                         false);
      }
    rp.deliver(r);
  };
  return {
      [=](ga::io_atom, const ga::node_io& io) {
        st->node_requests.push_back(io);
        // Before the promise, which takes the sender out of the message.
        auto requester = self->current_sender();
        auto rp = self->make_response_promise<ga::node_io_result>();
        if (st->hold)
          st->held.emplace_back(io, rp, requester);
        else
          perform(io, rp, requester);
        return rp;
      },
      [=](ga::io_atom, const ga::item_io& io) {
        auto rp = self->make_response_promise<std::string>();
        if (st->hold_items) {
          st->held_items.emplace_back(io, rp);
          return rp;
        }
        st->item_requests.push_back(io);
        auto named = st->item_errors.find(io.item.metadata.name);
        rp.deliver(named != st->item_errors.end() ? named->second : st->item_error);
        return rp;
      },
      [=](deliver_atom) {
        auto held = std::move(st->held);
        st->held.clear();
        for (auto& [io, rp, requester] : held)
          perform(io, rp, requester);
        auto items = std::move(st->held_items);
        st->held_items.clear();
        for (auto& [io, rp] : items) {
          if (ga::is_superseded(io)) {
            st->superseded.push_back(io.item.metadata.name);
            rp.deliver(ga::item_io_superseded);
            continue;
          }
          st->item_requests.push_back(io);
          auto named = st->item_errors.find(io.item.metadata.name);
          rp.deliver(named != st->item_errors.end() ? named->second : st->item_error);
        }
      },
  };
}

// -- the StatusWriter's stand-in --

struct writer_double_state {
  std::vector<std::pair<std::string, gp::node_partitioning_status>> statuses;
  /// item -> the worker that wrote its status.
  std::map<std::string, caf::actor_addr> writers;
  std::vector<ga::event_io> events;
  /// Statuses written at once (persist_atom), before a change to the node.
  int persisted = 0;
  /// For each of `statuses`: sent as one that may wait (status_atom, later_atom).
  std::vector<bool> may_wait;
  /// Their phases, in order.
  std::vector<std::string> persisted_phases;
  /// What persist_atom answers ("" = written).
  std::string persist_error;
  std::vector<gp::partitioning_plan_status> plan_statuses;
  /// plan -> the supervisor that last wrote its status.
  std::map<std::string, caf::actor_addr> plan_writers;

  std::vector<std::string> phases_of(const std::string& item) const {
    std::vector<std::string> out;
    for (const auto& [name, st] : statuses)
      if (name == item) {
        auto p = std::string(gp::codec::to_string(st.phase.value_or(gp::node_phase::pending)));
        if (out.empty() || out.back() != p)
          out.push_back(p);
      }
    return out;
  }
  std::string last_phase(const std::string& item) const {
    auto all = phases_of(item);
    return all.empty() ? std::string("-") : all.back();
  }
};

inline ga::status_writer_actor::behavior_type
writer_double(ga::status_writer_actor::pointer self, std::shared_ptr<writer_double_state> st) {
  return {
      [=](ga::status_atom, const std::string& item, const gp::node_partitioning_status& s) {
        st->statuses.emplace_back(item, s);
        st->may_wait.push_back(false);
        st->writers[item] = caf::actor_cast<caf::actor_addr>(self->current_sender());
      },
      [=](ga::status_atom, ga::later_atom, const std::string& item,
          const gp::node_partitioning_status& s) {
        st->statuses.emplace_back(item, s);
        st->may_wait.push_back(true);
        st->writers[item] = caf::actor_cast<caf::actor_addr>(self->current_sender());
      },
      [=](ga::persist_atom, const std::string& item,
          const gp::node_partitioning_status& s) -> std::string {
        st->statuses.emplace_back(item, s);
        st->may_wait.push_back(false);
        st->writers[item] = caf::actor_cast<caf::actor_addr>(self->current_sender());
        ++st->persisted;
        st->persisted_phases.emplace_back(
            gp::codec::to_string(s.phase.value_or(gp::node_phase::pending)));
        return st->persist_error;
      },
      [=](ga::event_atom, const ga::event_io& e) { st->events.push_back(e); },
      [=](ga::plan_status_atom, const std::string& plan, const gp::partitioning_plan_status& s) {
        st->plan_statuses.push_back(s);
        st->plan_writers[plan] = caf::actor_cast<caf::actor_addr>(self->current_sender());
      },
      [=](ga::flush_atom, ga::stop_atom) { return true; },
  };
}

// -- the RolloutGovernor's stand-in (worker tests) --

struct want_record {
  std::string item;
  gc::governor_node facts;
  /// The phases the writer had persisted when the governor heard this (if it is told of one).
  std::vector<std::string> persisted_before;
};

struct governor_double_state {
  std::vector<want_record> wants;
  std::shared_ptr<const writer_double_state> writer;
};

inline ga::governor_actor::behavior_type
governor_double(ga::governor_actor::pointer, std::shared_ptr<governor_double_state> st) {
  return {
      [=](ga::report_atom, const std::string& item, const gc::governor_node& facts,
          const ga::grant_receiver&) {
        st->wants.push_back(
            {item, facts, st->writer ? st->writer->persisted_phases : std::vector<std::string>{}});
      },
      [=](ga::limits_atom, const gc::rollout_limits&, const std::vector<std::string>&,
          const std::vector<std::string>&, const std::vector<std::string>&,
          const std::vector<std::string>&) {},
  };
}

// -- the system --

struct actor_fixture {
  caf::actor_system_config cfg;
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
  std::vector<caf::actor> spawned;

  static caf::actor_system_config& configure(caf::actor_system_config& c) {
    c.set("scheduler.policy", caf::atom("testing"));
    c.set("logger.verbosity", caf::atom("quiet"));
    return c;
  }

  actor_fixture()
      : sys(configure(cfg)),
        sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {}

  ~actor_fixture() {
    // Pending timers would keep actors alive: end every actor the test started (linked
    // children go with them) before the system waits for them.
    for (auto& a : spawned)
      caf::anon_send_exit(a, caf::exit_reason::kill);
    sched.run();
    spawned.clear();
  }

  template <class... Ts>
  auto spawn(Ts&&... xs) {
    auto a = sys.spawn(std::forward<Ts>(xs)...);
    spawned.push_back(caf::actor_cast<caf::actor>(a));
    return a;
  }

  /// Messages and timers until nothing is left, at most `rounds` timer rounds.
  void run_with_timers(int rounds) {
    for (int i = 0; i < rounds; ++i) {
      sched.run();
      if (!sched.has_pending_timeout())
        return;
      sched.trigger_timeouts();
    }
    sched.run();
  }
};

/// Records how an actor ended (attach to any actor).
struct exit_record {
  bool down = false;
  caf::error reason;
};

template <class Handle>
std::shared_ptr<exit_record> watch(const Handle& a) {
  auto rec = std::make_shared<exit_record>();
  a->attach_functor([rec](const caf::error& reason) {
    rec->down = true;
    rec->reason = reason;
  });
  return rec;
}

} // namespace actor_test
