#include "actors/plan_supervisor.hpp"

#include "actors/log.hpp"
#include "actors/messages.hpp"
#include "actors/node_worker.hpp"
#include "actors/operator_metrics.hpp"
#include "controller/canary_needs.hpp"
#include "controller/gate_wake.hpp"
#include "controller/item_reconcile.hpp"
#include "controller/plan_items.hpp"
#include "controller/plan_resolution.hpp"
#include "controller/plan_status.hpp"
#include "controller/recompute_pace.hpp"

#include <set>
#include <utility>

namespace gpu_partitioner::actors {

namespace {

struct supervisor_state {
  explicit supervisor_state(std::string plan) : mine(std::move(plan)) {}

  governor_actor governor;
  std::map<std::string, node_worker_actor> workers; // item name -> worker
  /// Items we asked to create, delete or update, so a slow watch does not make us ask twice.
  std::map<std::string, std::string> requested; // item -> what (create/remove/hash)
  /// Creates sent to the io pool and not answered yet, each with the flag that drops it
  /// unsent if a newer resolution (or the plan's deletion) no longer wants it.
  std::map<std::string, std::shared_ptr<std::atomic<bool>>> pending_creates;
  /// Items asked to take the plan and node labels (controller::item_labels_of).
  std::set<std::string> relabel_requested;
  /// DeviceClass name -> what was last asked to be written (a profile's deviceClassName).
  std::map<std::string, std::string> device_classes;
  protocol::partitioning_plan_status last_status;
  bool wrote_status = false;
  /// The plan's node selection and the items it wants, kept until the plan, a profile, a
  /// node's labels or an item's spec or phase changes (a rollout of a thousand nodes
  /// brings twenty views a second, most of them status changes).
  bool resolved = false;
  controller::plan_resolution resolution;
  std::set<std::string> keep_items;
  /// The latest view, for another look after a failed item write.
  snapshot_ptr latest;
  /// The slice each worker was last sent, and what the slices of successive views share.
  std::map<std::string, node_slice_ptr> sent;
  controller::slice_memo memo;
  bool retry_pending = false;
  /// The plan's items as the latest view has them (pointers into `latest`).
  controller::plan_items mine;
  /// Every item is looked at with the next view (a worker was lost and must be started
  /// again), not only those whose item or node changed.
  bool sweep = true;
  /// The nodes of selected items not made yet, and whether each counted as down: one going
  /// down or coming up changes what counts against maxUnavailable.
  std::map<std::string, bool> absent_down;
  /// Nodes whose item waits to land before its spec is updated.
  std::set<std::string> held;
  /// News that may wait (controller/recompute_pace): owed a walk, and when its timer fires.
  controller::recompute_pace pace;
  bool owed = false;
  std::optional<caf::actor_clock::time_point> pace_due;
  /// profile -> the desiredHash its nodes should carry (for the canary's key).
  std::map<std::string, std::string> hashes;
  /// The plan's limits and items as last worked out, and the gate over them (windows,
  /// canary, failure budget), decided again as items change and time passes.
  controller::rollout_limits base_limits;
  std::vector<std::string> selected, absent_items, absent_unavailable;
  /// Items whose last create failed (name -> why), and the selected nodes whose item
  /// cannot be made now: reported on the plan, holding back no other node's turn.
  std::map<std::string, std::string> create_errors;
  std::vector<controller::unmade_item> unmade;
  bool gate_live = false;
  controller::gate_decision gate;
  /// The canary's nodes the items were last worked out with.
  std::set<std::string> canary_nodes;
  /// What the governor was last told (limits_atom's arguments).
  struct governor_orders {
    controller::rollout_limits limits;
    std::vector<std::string> selected, absent, absent_unavailable, unmade;
  };
  std::optional<governor_orders> told;
  /// The pending wake-up for the gate (a window opening or closing, a soak ending).
  controller::gate_wake wake;
  bool gate_due = false;
};

bool same_orders(const supervisor_state::governor_orders& a,
                 const supervisor_state::governor_orders& b) {
  const auto& x = a.limits;
  const auto& y = b.limits;
  return x.max_parallel == y.max_parallel && x.max_unavailable == y.max_unavailable &&
         x.paused == y.paused && x.max_failures == y.max_failures && x.only == y.only &&
         a.selected == b.selected && a.absent == b.absent &&
         a.absent_unavailable == b.absent_unavailable && a.unmade == b.unmade;
}

} // namespace

plan_supervisor_actor::behavior_type plan_supervisor(plan_supervisor_actor::pointer self,
                                                     plan_supervisor_config config) {
  auto s = std::make_shared<supervisor_state>(config.plan);
  const controller::dcm_settings dcm{config.dcm_namespace, config.dcm_config_sync,
                                     config.dcm_configmaps, config.dcm_retry_bound};
  s->governor = self->spawn<caf::linked>(rollout_governor_actor, config.plan);
  // The supervisor ends when its plan and items are gone (or the operator stops): the
  // plan's series go with it, so that no stale gauge keeps an alert firing.
  self->attach_functor([plan = config.plan] { process_metrics().forget_plan(plan); });
  process_metrics().reconcile_errors.ensure({config.plan});
  // A worker that fails is logged and started again with the next view (its state is in
  // the item's status and on the node); anything else ends the supervisor.
  self->set_exit_handler([=](caf::exit_msg& msg) {
    for (auto it = s->workers.begin(); it != s->workers.end(); ++it)
      if (it->second.address() == msg.source) {
        if (msg.reason)
          log_error("the worker of " + it->first + " failed (" + self->system().render(msg.reason) +
                        "); restarting it",
                    config.plan);
        // The governor, which monitors the worker, keeps its token: the node may be
        // cordoned and mid-drain. It grants nothing more until the new worker reports.
        s->workers.erase(it);
        s->sweep = true;
        return;
      }
    self->quit(msg.reason);
  });
  // An item write that failed (the API server away, say) is forgotten, so the next look
  // asks again; that look comes within 2 s even if nothing else changes.
  auto write_item = [=](const std::string& name, item_io io) {
    const bool create = io.what == item_io::op::create;
    const bool label = io.what == item_io::op::label;
    std::shared_ptr<std::atomic<bool>> superseded;
    if (create) {
      superseded = std::make_shared<std::atomic<bool>>(false);
      io.superseded = superseded;
      s->pending_creates[name] = superseded;
    }
    auto answered = [=] {
      if (auto it = s->pending_creates.find(name);
          it != s->pending_creates.end() && it->second == superseded)
        s->pending_creates.erase(it);
    };
    auto failed = [=](const std::string& error) {
      if (label)
        s->relabel_requested.erase(name);
      if (create) {
        // Reported on the plan until a create of it goes through.
        if (s->create_errors[name] != error)
          log_warning(error, config.plan);
        s->create_errors[name] = error;
      }
      s->requested.erase(name);
      s->resolved = false; // the next look works out the wanted items again
      if (!s->retry_pending) {
        s->retry_pending = true;
        self->delayed_send(self, std::chrono::seconds(2), tick_atom_v);
      }
    };
    self->request(config.io, caf::infinite, io_atom_v, std::move(io))
        .then(
            [=](const std::string& error) {
              answered();
              if (error == item_io_superseded)
                return; // withdrawn by withdraw_creates, which forgot the request
              if (!error.empty())
                failed(error);
              else if (create && s->create_errors.erase(name))
                s->resolved = false;
            },
            [=](caf::error&) {
              answered();
              failed("creating " + name + ": the io executor did not answer");
            });
  };
  // Creates still queued that the plan no longer wants (a newer resolution selects other
  // nodes, or the plan is going) are dropped before they are sent: a create sent anyway
  // would be followed by its item's status, finalizer and delete, for nothing.
  auto withdraw_creates = [=](const std::set<std::string>& wanted) {
    for (auto it = s->pending_creates.begin(); it != s->pending_creates.end();) {
      if (wanted.count(it->first)) {
        ++it;
        continue;
      }
      it->second->store(true);
      if (auto r = s->requested.find(it->first); r != s->requested.end() && r->second == "create")
        s->requested.erase(r);
      it = s->pending_creates.erase(it);
    }
  };
  // The gate's next decision is due at `at` even if nothing changes: a tick then (again,
  // if the wall clock was set back while the timer ran: controller/gate_wake).
  auto wake_at = [=](protocol::wall_clock::time_point at) {
    if (auto delay = s->wake.arm(at, protocol::wall_clock::now(), self->clock().now()))
      self->delayed_send(self, *delay, tick_atom_v);
  };
  return {
      [=](tick_atom) {
        s->retry_pending = false;
        if (s->pace_due) {
          const auto now = self->clock().now();
          if (now >= *s->pace_due)
            s->pace_due.reset();
          else
            self->delayed_send(self, *s->pace_due - now, tick_atom_v);
        }
        const auto woke = s->wake.tick(protocol::wall_clock::now(), self->clock().now());
        if (woke.due)
          s->gate_due = true;
        if (woke.again)
          self->delayed_send(self, *woke.again, tick_atom_v);
        if (auto view = s->latest)
          self->send(self, view_atom_v, std::move(view));
      },
      [=](view_atom, const snapshot_ptr& view) {
        s->latest = view;
        const auto plan_it = view->plans.find(config.plan);
        const protocol::partitioning_plan* plan =
            plan_it == view->plans.end() ? nullptr : plan_it->second.get();
        if (plan != nullptr && !s->wrote_status) {
          // Start from what the plan's status says, so a restarted operator writes (and
          // announces) only what changed.
          s->last_status = plan->status;
          s->wrote_status = true;
        }
        // Working the plan out again walks every node and item it has: at once for news
        // that may change what it selects, starts or counts as down; paced for its own
        // items' creation and metadata (controller/recompute_pace).
        bool recompute = !s->resolved || view->shared_changed ||
                         controller::flights_concern(*view, config.plan, s->held) ||
                         controller::selections_may_change(*view) ||
                         controller::absent_down_changed(*view, s->absent_down);
        if (!recompute && (s->owed || view->item_spec_plans.count(config.plan) > 0)) {
          const auto now = self->clock().now();
          const auto wait = s->pace.wait(now);
          recompute = wait == std::chrono::steady_clock::duration::zero();
          s->owed = !recompute;
          if (s->owed && !s->pace_due) {
            s->pace_due = now + wait;
            self->delayed_send(self, wait, tick_atom_v);
          }
        }
        const auto walk_start =
            recompute ? controller::thread_cpu_time() : std::chrono::nanoseconds::zero();
        auto& keep_items = s->keep_items;
        auto& resolution = s->resolution;
        s->mine.update(*view);
        const auto& mine = s->mine.all();

        // Nothing new starts unless the plan is live and resolves; nodes in flight finish.
        auto hold_all = [&] {
          s->gate_live = false;
          s->told.reset();
          controller::rollout_limits held;
          held.paused = true;
          std::vector<std::string> names;
          for (const auto& [name, item] : mine)
            names.push_back(name);
          self->send(s->governor, limits_atom_v, held, names, std::vector<std::string>{},
                     std::vector<std::string>{}, std::vector<std::string>{});
        };
        if (auto invalid = view->invalid_plans.find(config.plan);
            invalid != view->invalid_plans.end()) {
          hold_all();
          s->resolved = false;
          keep_items.clear();
          resolution = {};
          // Never act on a half-valid plan: say why, touch nothing.
          const auto judged = view->invalid_plan_generations.find(config.plan);
          auto status = controller::invalid_plan_status(
              s->last_status, invalid->second,
              judged == view->invalid_plan_generations.end() ? 0 : judged->second,
              protocol::wall_clock::now());
          if (!s->wrote_status || !(status == s->last_status)) {
            s->last_status = status;
            s->wrote_status = true;
            self->send(config.writer, plan_status_atom_v, config.plan, status);
          }
          process_metrics().publish_plan_phase(config.plan, status.phase);
        } else if (plan != nullptr && !plan->metadata.deletion_timestamp && recompute) {
          s->resolved = true;
          s->owed = false;
          keep_items.clear();
          // Nodes in flight stay with the plan that started them.
          std::map<std::string, std::string> flying;
          for (const auto& [name, item] : view->items)
            if (controller::holds_its_node(*item))
              flying.emplace(item->spec.node_name, item->spec.plan_ref.name);
          const auto selections = view->selections
                                      ? view->selections
                                      : controller::select_nodes(view->plans, view->nodes);
          resolution = controller::resolve_plan(*plan, *selections, view->nodes, flying);
          s->absent_down.clear();
          s->held.clear();
          s->unmade.clear();
          if (!resolution.problems.empty()) {
            // An invalid plan keeps the items it has (those in flight finish) and starts
            // nothing: removing them would abort nodes mid-change.
            for (const auto& [name, item] : mine)
              keep_items.insert(name);
            hold_all();
          } else {
            s->hashes = controller::wanted_hashes(*plan, resolution, *view);
            auto changes = controller::reconcile_items(*plan, resolution, mine, *view,
                                                       s->canary_nodes, s->create_errors);
            keep_items = changes.keep;
            s->absent_down = std::move(changes.absent_down);
            s->held = std::move(changes.held);
            const std::set<std::string> selected(changes.selected.begin(), changes.selected.end());
            for (auto it = s->create_errors.begin(); it != s->create_errors.end();)
              it = selected.count(it->first) ? std::next(it) : s->create_errors.erase(it);
            s->unmade = changes.unmade;
            std::set<std::string> to_create;
            for (const auto& want : changes.create)
              to_create.insert(want.metadata.name);
            withdraw_creates(to_create);
            for (auto& want : changes.create) {
              const auto name = want.metadata.name;
              if (s->requested[name] != "create") {
                s->requested[name] = "create";
                write_item(name, item_io{item_io::op::create, std::move(want)});
              }
            }
            for (auto& want : changes.update) {
              const auto name = want.metadata.name;
              const auto what = want.spec.desired_hash + "|" +
                                std::to_string(want.spec.soak_seconds.value_or(0)) + "|" +
                                (want.spec.canary ? "canary" : "");
              if (s->requested[name] != what) {
                s->requested[name] = what;
                write_item(name, item_io{item_io::op::update_spec, std::move(want)});
              }
            }
            // Missing labels are asked once; a failed patch is asked again after 2 s.
            for (auto& want : changes.relabel) {
              const auto name = want.metadata.name;
              if (s->relabel_requested.insert(name).second)
                write_item(name, item_io{item_io::op::label, std::move(want)});
            }
            for (const auto& name : changes.unchanged)
              s->requested.erase(name);
            controller::rollout_limits limits;
            limits.max_parallel = plan->spec.rollout.max_parallel;
            limits.max_unavailable = plan->spec.rollout.max_unavailable;
            limits.paused = plan->spec.paused;
            s->base_limits = limits;
            s->selected = changes.selected;
            s->absent_items = changes.absent;
            s->absent_unavailable = changes.absent_unavailable;
            s->gate_live = true;
            // The DeviceClasses its profiles ask for, each written once per content (a
            // failed write is asked again with the next resolution).
            for (const auto& entry : plan->spec.partitionings) {
              auto profile = view->profiles.find(entry.profile_ref.name);
              if (profile == view->profiles.end())
                continue;
              auto json = controller::device_class_json(*profile->second);
              const auto& name = profile->second->spec.device_class_name;
              if (json.empty() || s->device_classes[*name] == json)
                continue;
              s->device_classes[*name] = json;
              item_io io;
              io.what = item_io::op::ensure_device_class;
              io.device_class = std::move(json);
              io.device_class_name = *name;
              self->request(config.io, caf::infinite, io_atom_v, std::move(io))
                  .then(
                      [=, class_name = *name](const std::string& error) {
                        if (!error.empty())
                          s->device_classes.erase(class_name);
                      },
                      [=, class_name = *name](caf::error&) {
                        s->device_classes.erase(class_name);
                      });
            }
          }
        } else if (plan == nullptr || plan->metadata.deletion_timestamp) {
          hold_all(); // the plan is gone or being deleted
          s->resolved = false;
          keep_items.clear();
          resolution = {};
        }
        if (recompute)
          s->pace.ran(controller::thread_cpu_time() - walk_start, self->clock().now());
        // The gate: whether the windows, the canary and the failure budget let nodes
        // start. Decided again with every view while a window or an unfinished canary
        // can change it, else when the plan or its items change (or a wake-up is due).
        bool gate_changed = false;
        const bool gate_every_view =
            plan != nullptr &&
            (!plan->spec.rollout.windows.empty() ||
             (plan->spec.rollout.canary &&
              !(s->gate.canary && s->gate.canary->phase == protocol::canary_phase::passed)));
        if (plan != nullptr && s->gate_live &&
            (recompute || gate_every_view || !view->item_changes.empty() || s->gate_due)) {
          s->gate_due = false;
          controller::gate_inputs gin;
          gin.plan = plan;
          gin.resolution = &resolution;
          gin.items = &mine;
          gin.nodes = &view->nodes;
          gin.hashes = s->hashes;
          gin.previous = s->last_status.canary;
          gin.now = protocol::wall_clock::now();
          controller::canary_needs needs(*plan, *view, dcm, gin.now);
          gin.need = std::ref(needs);
          auto gate = controller::decide_gate(gin);
          std::set<std::string> canary_nodes;
          if (gate.canary)
            canary_nodes.insert(gate.canary->nodes.begin(), gate.canary->nodes.end());
          if (canary_nodes != s->canary_nodes) {
            // The canary's items carry it (and its soak): work the items out again.
            s->canary_nodes = canary_nodes;
            s->resolved = false;
            self->send(self, tick_atom_v);
          }
          for (const auto& e : gate.events) {
            event_io ev;
            ev.api_version = std::string(protocol::api_version);
            ev.kind = std::string(protocol::partitioning_plan::kind_name);
            ev.name = config.plan;
            ev.uid = plan->metadata.uid;
            ev.type = e.type;
            ev.reason = e.reason;
            ev.message = e.message;
            self->send(config.writer, event_atom_v, ev);
            log_info(e.reason + ": " + e.message, config.plan);
          }
          if (gate.wake)
            wake_at(*gate.wake);
          gate_changed = !(gate.window == s->gate.window) || !(gate.canary == s->gate.canary) ||
                         gate.outside_window != s->gate.outside_window;
          s->gate = std::move(gate);
          supervisor_state::governor_orders orders{
              s->base_limits, s->selected, s->absent_items, s->absent_unavailable, {}};
          for (const auto& u : s->unmade)
            orders.unmade.push_back(u.name);
          orders.limits.max_failures = s->gate.max_failures;
          orders.limits.only = s->gate.only;
          if (!s->told || !same_orders(*s->told, orders)) {
            s->told = orders;
            self->send(s->governor, limits_atom_v, orders.limits, orders.selected, orders.absent,
                       orders.absent_unavailable, orders.unmade);
          }
        }
        // Items no longer selected (node gone, labels changed) are deleted; their
        // finalizer returns the node to service. Looked for when the plan was worked out
        // again (what it keeps changes only then) or its items changed.
        const bool plan_gone = plan == nullptr || plan->metadata.deletion_timestamp.has_value();
        if (plan_gone || view->invalid_plans.count(config.plan) > 0 || !resolution.problems.empty())
          withdraw_creates({});
        if (recompute || !view->item_changes.empty())
          for (const auto& name : controller::items_to_remove(
                   mine, keep_items, plan_gone, view->invalid_plans.count(config.plan) > 0))
            if (s->requested[name] != "remove") {
              s->requested[name] = "remove";
              write_item(name, item_io{item_io::op::remove, *mine.at(name)});
            }
        // A worker per item of this plan, for as long as the item exists. Each is sent its
        // slice of the views with news for it: its node, pods or item, the objects every
        // node shares, or a change in the budgets covering its pods or in who carries its
        // DCM name. Only the first two when nothing of the others changed: a view of a
        // thousand nodes has news for one or two.
        const bool sweep = s->sweep || controller::plan_items::news_for_all(*view);
        s->sweep = false;
        const auto changed = sweep ? controller::plan_items::by_name{} : s->mine.touched(*view);
        controller::view_slicer slicer(*view, dcm, s->memo);
        for (const auto& [name, item] : sweep ? mine : changed) {
          auto& worker = s->workers[name];
          auto& last = s->sent[name];
          auto next = slicer.update(*item, worker ? last : nullptr);
          if (next.news == controller::slice_news::none)
            continue;
          if (!worker) {
            node_worker_config c;
            c.item = name;
            c.plan = config.plan;
            c.io = config.io.address();
            c.writer = config.writer.address();
            c.governor = s->governor;
            worker = self->spawn<caf::linked>(node_worker, c);
          }
          last = next.slice;
          self->send(worker, view_atom_v, std::move(next.slice),
                     next.news == controller::slice_news::budgets_only);
        }
        // A worker whose item is gone stops (an item goes with an item change). The
        // governor sees it go (user_shutdown: the item is gone) and forgets it.
        std::vector<std::string> gone;
        if (sweep) {
          for (const auto& [name, worker] : s->workers)
            if (!mine.count(name))
              gone.push_back(name);
        } else {
          for (const auto& name : view->item_changes)
            if (!mine.count(name) && s->workers.count(name))
              gone.push_back(name);
        }
        for (const auto& name : gone) {
          self->send_exit(s->workers.at(name), caf::exit_reason::user_shutdown);
          s->workers.erase(name);
          s->sent.erase(name);
        }
        if (plan != nullptr && !view->invalid_plans.count(config.plan) &&
            (recompute || !view->item_changes.empty() || gate_changed)) {
          auto status =
              controller::aggregate_plan_status(*plan, resolution, mine, s->last_status,
                                                protocol::wall_clock::now(), s->gate, s->unmade);
          status.devices = controller::devices_by_profile(resolution, *view);
          if (!s->wrote_status || !(status == s->last_status)) {
            if (status.phase != s->last_status.phase && !status.history.empty()) {
              // An Event on the plan for each change of its phase.
              const auto& latest = status.history.back();
              event_io e;
              e.api_version = std::string(protocol::api_version);
              e.kind = std::string(protocol::partitioning_plan::kind_name);
              e.name = config.plan;
              e.uid = plan->metadata.uid;
              e.type = status.phase == protocol::plan_phase::degraded ? "Warning" : "Normal";
              e.reason = latest.type;
              e.message = latest.message;
              self->send(config.writer, event_atom_v, e);
            }
            s->last_status = status;
            s->wrote_status = true;
            self->send(config.writer, plan_status_atom_v, config.plan, status);
          }
          // Each time, not only on a change: a restarted operator whose plan's status is
          // already written must still show it.
          std::int32_t in_preflight = 0;
          for (const auto& [name, item] : mine)
            in_preflight += controller::failed_in_preflight(*item) ? 1 : 0;
          process_metrics().publish_plan(config.plan, status, plan->spec.dry_run,
                                         s->gate.max_failures, in_preflight);
        }
      },
  };
}

} // namespace gpu_partitioner::actors
