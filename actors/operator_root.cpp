#include "actors/operator_root.hpp"

#include "actors/decode.hpp"
#include "actors/log.hpp"
#include "actors/messages.hpp"
#include "actors/operator_metrics.hpp"
#include "actors/plan_supervisor.hpp"
#include "controller/item_reconcile.hpp"
#include "kube/resource.hpp"

#include <optional>
#include <set>

namespace gpu_partitioner::actors {

namespace {

struct root_state {
  cluster_snapshot view;
  /// Where each pod is filed (pods move between nodes only by being recreated).
  std::map<std::string, std::string> pod_nodes;
  /// DCM Event (namespace/name) -> the node it came from.
  std::map<std::string, std::string> event_nodes;
  /// DCM Events whose pod is not seen yet, by the pod (namespace/name): filed once it is;
  /// and each such Event's pod.
  std::map<std::string, std::map<std::string, std::shared_ptr<const controller::dcm_event>>>
      unfiled_events;
  std::map<std::string, std::string> unfiled_pod_of;
  /// ResourceSlice -> its node; ResourceClaim (namespace/name) -> the node of its devices.
  std::map<std::string, std::string> slice_nodes;
  std::map<std::string, std::string> claim_nodes;
  std::map<std::string, std::string> rule_nodes;
  /// DCM's ConfigMap, namespace/name.
  /// "<DCM's namespace>/": the keys of the ConfigMaps a DCM may read.
  std::string dcm_prefix;
  /// DCM's namespace: its Events count only from there.
  std::string dcm_namespace;
  std::set<std::string> synced;
  /// A plan came, went or changed its spec since view.selections was worked out.
  bool plans_changed = false;
  bool dirty = false;
  bool tick_pending = false;
  /// When the last snapshot went out, by the actor system's clock (steady; in tests the
  /// test coordinator's). None yet: the first change goes out at once.
  std::optional<caf::actor_clock::time_point> published;
  std::map<std::string, plan_supervisor_actor> supervisors;
};

// Files a per-node object (a ResourceSlice, a claim) under its node ("" : under none),
// moving it from where it was.
template <class T>
void file_under(controller::shared_map<controller::cluster_view::by_key<T>>& per_node,
                std::map<std::string, std::string>& where, controller::cluster_view& v,
                const observation& o, const std::shared_ptr<const T>& object,
                const std::string& node) {
  if (auto was = where.find(o.key); was != where.end()) {
    auto& entries = controller::cluster_view::edit(per_node, was->second);
    entries.erase(o.key);
    if (entries.empty())
      per_node.erase(was->second);
    v.node_changes.emplace(was->second, o.received);
    where.erase(was);
  }
  if (o.deleted || !object || node.empty())
    return;
  controller::cluster_view::edit(per_node, node)[o.key] = object;
  where[o.key] = node;
  v.node_changes.emplace(node, o.received);
}

// Files one of DCM's Events under the node its pod runs on, if it is to be trusted there.
void file_dcm_event(root_state& s, const std::string& key,
                    const std::shared_ptr<const controller::dcm_event>& event,
                    const controller::pod_info* pod, protocol::wall_clock::time_point received) {
  const std::string node = controller::dcm_event_node(*event, s.dcm_namespace, pod);
  if (node.empty())
    return;
  s.event_nodes[key] = node;
  s.view.dcm_events_to_edit(node)[key] = event;
  s.view.node_changes.emplace(node, received);
}

void apply(root_state& s, const observation& o) {
  using k = observation::kind;
  auto& v = s.view;
  switch (o.what) {
  case k::node: {
    v.node_changes.emplace(o.key, o.received);
    auto old = v.nodes.find(o.key);
    const controller::node_info* was = old == v.nodes.end() ? nullptr : old->second.get();
    const controller::node_info* now = o.deleted ? nullptr : o.node.get();
    v.note_relabelling(was, now);
    v.note_schedulability(was, now);
    if (o.deleted)
      v.nodes.erase(o.key);
    else
      v.nodes[o.key] = o.node;
    break;
  }
  case k::pod: {
    auto old = s.pod_nodes.find(o.key);
    // Which ConfigMap a node's DCM reads is its pod's: a DCM pod that comes, goes or mounts
    // another changes who else reads a ConfigMap, which every node's slice shares.
    std::shared_ptr<const controller::pod_info> was;
    if (old != s.pod_nodes.end())
      if (auto on = v.pods_by_node.find(old->second); on != v.pods_by_node.end() && on->second)
        if (auto p = on->second->find(o.key); p != on->second->end())
          was = p->second;
    if (controller::dcm_reader_changed(was.get(), o.deleted ? nullptr : o.pod.get(),
                                       s.dcm_namespace))
      v.shared_changed = true;
    if (old != s.pod_nodes.end()) {
      v.node_changes.emplace(old->second, o.received);
      auto& on_node = v.pods_to_edit(old->second);
      on_node.erase(o.key);
      if (on_node.empty())
        v.pods_by_node.erase(old->second);
      s.pod_nodes.erase(old);
    }
    if (!o.deleted && o.pod && !o.pod->node_name.empty()) {
      v.node_changes.emplace(o.pod->node_name, o.received);
      v.pods_to_edit(o.pod->node_name)[o.key] = o.pod;
      s.pod_nodes[o.key] = o.pod->node_name;
      // DCM's Events that came before their pod are filed now.
      if (auto waiting = s.unfiled_events.find(o.key); waiting != s.unfiled_events.end()) {
        auto events = std::move(waiting->second);
        s.unfiled_events.erase(waiting);
        for (auto& [key, event] : events) {
          s.unfiled_pod_of.erase(key);
          file_dcm_event(s, key, event, o.pod.get(), o.received);
        }
      }
    }
    break;
  }
  case k::pdb: {
    v.note_budget_change(o.key, s.pod_nodes);
    if (o.deleted)
      v.pdbs.erase(o.key);
    else
      v.pdbs[o.key] = o.pdb;
    break;
  }
  case k::config_map: {
    v.shared_changed = true;
    if (o.deleted) {
      v.config_maps.erase(o.key);
      break;
    }
    auto data = o.data;
    // DCM reads this ConfigMap as a file kubelet refreshes late: when config.json was seen
    // to change (by anyone: an admin's edit too), the labels wait for the refresh. Not on
    // the first sight, which tells nothing of when it changed.
    if (o.key.compare(0, s.dcm_prefix.size(), s.dcm_prefix) == 0)
      if (auto old = v.config_maps.find(o.key); old != v.config_maps.end()) {
        auto text = [](const config_map_data& d) {
          auto it = d.find("config.json");
          return it == d.end() ? std::string{} : it->second;
        };
        auto stamped = std::make_shared<config_map_data>(*data);
        if (text(*old->second) != text(*data))
          (*stamped)[config_changed_key] = protocol::format_time_micro(o.received);
        else if (auto was = old->second->find(config_changed_key); was != old->second->end())
          (*stamped)[config_changed_key] = was->second;
        data = stamped;
      }
    v.config_maps[o.key] = data;
    break;
  }
  case k::dcm_event: {
    // Kept per node, for the node's worker: DCM answers a request with an Event about its
    // pod there (source host the node). An Event that only imitates DCM files nowhere; one
    // whose pod is not seen yet waits for the pod, never filed by its host alone.
    if (auto was = s.event_nodes.find(o.key); was != s.event_nodes.end()) {
      v.dcm_events_to_edit(was->second).erase(o.key);
      v.node_changes.emplace(was->second, o.received);
      s.event_nodes.erase(was);
    }
    if (auto pod = s.unfiled_pod_of.find(o.key); pod != s.unfiled_pod_of.end()) {
      auto waiting = s.unfiled_events.find(pod->second);
      if (waiting != s.unfiled_events.end()) {
        waiting->second.erase(o.key);
        if (waiting->second.empty())
          s.unfiled_events.erase(waiting);
      }
      s.unfiled_pod_of.erase(pod);
    }
    if (o.deleted || !o.event)
      break;
    const auto& e = *o.event;
    if (!controller::from_dcms_namespace(e, s.dcm_namespace))
      break;
    const std::string pod_key = e.about_namespace + "/" + e.about_name;
    const auto pod_node = s.pod_nodes.find(pod_key);
    if (pod_node == s.pod_nodes.end()) {
      s.unfiled_events[pod_key][o.key] = o.event;
      s.unfiled_pod_of[o.key] = pod_key;
      break;
    }
    const auto pods = v.pods_by_node.find(pod_node->second);
    const controller::pod_info* pod = nullptr;
    if (pods != v.pods_by_node.end() && pods->second)
      if (auto p = pods->second->find(pod_key); p != pods->second->end())
        pod = p->second.get();
    file_dcm_event(s, o.key, o.event, pod, o.received);
    break;
  }
  case k::plan: {
    // The plan's own status (written by us, many times a rollout) changes nothing here.
    auto old = v.plans.find(o.key);
    if (o.deleted || old == v.plans.end() || !o.plan ||
        controller::meta_changed(old->second->metadata, o.plan->metadata))
      v.shared_changed = s.plans_changed = true;
    v.plans.erase(o.key);
    v.invalid_plans.erase(o.key);
    v.invalid_plan_generations.erase(o.key);
    if (!o.deleted) {
      if (o.plan) {
        v.plans[o.key] = o.plan;
      } else {
        v.invalid_plans[o.key] = o.problem;
        v.invalid_plan_generations[o.key] = o.generation;
      }
    }
    break;
  }
  case k::profile:
    v.shared_changed = true;
    v.profiles.erase(o.key);
    v.invalid_profiles.erase(o.key);
    if (!o.deleted) {
      if (o.profile)
        v.profiles[o.key] = o.profile;
      else
        v.invalid_profiles[o.key] = o.problem;
    }
    break;
  case k::resource_slice:
    file_under(v.slices_by_node, s.slice_nodes, v, o, o.slice, o.slice ? o.slice->node : "");
    // A node's free DRA devices: where a pod holding GPUs through claims may run.
    v.schedulability_changed = true;
    break;
  case k::resource_claim: {
    // Only claims on some node's GPUs matter: their pods hold the GPUs.
    const bool on_gpus = o.claim && !controller::gpu_claims({*o.claim}).empty();
    const bool was_on_gpus = s.claim_nodes.count(o.key) > 0;
    file_under(v.claims_by_node, s.claim_nodes, v, o, o.claim, on_gpus ? o.claim->node : "");
    v.schedulability_changed = v.schedulability_changed || on_gpus || was_on_gpus;
    break;
  }
  case k::daemon_set: {
    // Only whether it is there, and its UID: its status changes with every pod it runs.
    const auto old = v.daemon_sets->find(o.key);
    const std::string was = old == v.daemon_sets->end() ? std::string{} : old->second;
    const std::string now = o.deleted ? std::string{} : o.uid;
    if (was == now)
      break;
    auto edited = std::make_shared<controller::daemon_set_uids>(*v.daemon_sets);
    if (now.empty())
      edited->erase(o.key);
    else
      (*edited)[o.key] = now;
    v.daemon_sets = std::move(edited);
    // Which pods on the nodes are a DaemonSet's may differ: every worker looks again.
    v.shared_changed = true;
    break;
  }
  case k::device_taint_rule:
    file_under(v.taint_rules_by_node, s.rule_nodes, v, o, o.taint_rule,
               o.taint_rule && o.taint_rule->ours ? o.taint_rule->node : "");
    break;
  case k::item: {
    v.item_changes.insert(o.key);
    auto old = v.items.find(o.key);
    v.note_item_change(old == v.items.end() ? nullptr : old->second.get(),
                       o.deleted ? nullptr : o.item.get());
    if (o.deleted || !o.item)
      v.items.erase(o.key);
    else
      v.items[o.key] = o.item;
    if (!o.deleted && !o.item)
      log_warning("NodePartitioning " + o.key + " does not decode: " + o.problem);
    break;
  }
  }
}

} // namespace

operator_root_actor::behavior_type operator_root(operator_root_actor::pointer self,
                                                 operator_settings settings, io_actor io,
                                                 status_writer_actor writer) {
  auto s = std::make_shared<root_state>();
  s->dcm_prefix = settings.dcm_namespace + "/";
  s->dcm_namespace = settings.dcm_namespace;
  s->view.payload_namespaces = settings.payload_namespaces;
  s->view.pods_deletable = settings.pods_deletable;
  auto schedule = [self, s, settings] {
    if (!s->tick_pending) {
      s->tick_pending = true;
      // Behind what is already in the mailbox, so a burst that arrived together is one
      // snapshot; a change right after a publish waits for the rest of the interval.
      const auto since = s->published ? self->clock().now() - *s->published
                                      : caf::actor_clock::duration_type::max();
      if (since >= settings.publish_interval)
        self->send(self, tick_atom_v);
      else
        self->delayed_send(self, settings.publish_interval - since, tick_atom_v);
    }
  };
  // A supervisor that fails is logged and started again with the next view; any other
  // exit (the shutdown from main) ends the root, and with it, through the links, the rest.
  self->set_exit_handler([=](caf::exit_msg& msg) {
    for (auto it = s->supervisors.begin(); it != s->supervisors.end(); ++it)
      if (it->second.address() == msg.source) {
        if (msg.reason)
          log_error("the supervisor of plan " + it->first + " failed (" +
                        self->system().render(msg.reason) + "); restarting it",
                    it->first);
        s->supervisors.erase(it);
        s->dirty = true;
        schedule();
        return;
      }
    self->quit(msg.reason);
  });
  auto synced = [=](const std::string& resource, bool served, bool forbidden) {
    if (!served) {
      s->view.absent_resources.insert(resource);
      if (forbidden)
        s->view.forbidden_resources.insert(resource);
      if (forbidden)
        log_warning("the operator may not list " + resource +
                    " (403: its RBAC lacks the grant): working without them");
      else
        log_info("the API server does not serve " + resource + ": working without");
    } else if (s->view.absent_resources.erase(resource) > 0) {
      // Listed at last (the grant given, the API turned on): the watch kept trying.
      s->view.forbidden_resources.erase(resource);
      log_info("the operator lists " + resource + " now");
    }
    s->synced.insert(resource);
    // DCM's namespace's ConfigMaps have their own watch among them; the payloads' elsewhere
    // are listed_atom.
    if (resource == kube::resources::config_maps().plural)
      s->view.config_maps_listed.insert(s->dcm_prefix + "*");
    s->view.shared_changed = true;
    if (s->synced.size() >= watched_resources && !s->view.synced) {
      s->view.synced = true;
      process_metrics().synced = true;
      log_info("caches synced: " + std::to_string(s->view.nodes.size()) + " nodes, " +
               std::to_string(s->view.plans.size()) + " plans");
    }
    s->dirty = true;
    schedule();
  };
  return {
      [=](observe_atom, const observation& o) {
        apply(*s, o);
        s->dirty = true;
        schedule();
      },
      [=](synced_atom, const std::string& resource) { synced(resource, true, false); },
      [=](synced_atom, const std::string& resource, bool served, bool forbidden) {
        synced(resource, served, forbidden);
      },
      [=](listed_atom, const std::string& config_map, bool listed) {
        if (listed)
          s->view.config_maps_listed.insert(config_map);
        else
          s->view.config_maps_listed.erase(config_map);
        s->view.shared_changed = true;
        s->dirty = true;
        schedule();
      },
      [=](tick_atom) {
        s->tick_pending = false;
        if (!s->dirty || !s->view.synced)
          return;
        s->dirty = false;
        s->published = self->clock().now();
        // Once here for every plan's supervisor and node worker: nodes x plans matches.
        if (!s->view.selections || s->plans_changed || controller::selections_may_change(s->view)) {
          s->view.selections = controller::select_nodes(s->view.plans, s->view.nodes);
          s->plans_changed = false;
        }
        auto snapshot = std::make_shared<const cluster_snapshot>(s->view);
        s->view.node_changes.clear();
        s->view.item_changes.clear();
        s->view.budget_changes.clear();
        s->view.shared_changed = false;
        s->view.relabelled_keys.clear();
        s->view.nodes_came_or_went = false;
        s->view.schedulability_changed = false;
        s->view.item_specs_changed = false;
        s->view.item_spec_plans.clear();
        s->view.flight_changes.clear();
        // A supervisor per plan; items whose plan is gone are still served (a deleted
        // plan's items run their finalizers) by a supervisor kept until they are gone.
        std::set<std::string> wanted;
        for (const auto& [name, plan] : snapshot->plans)
          wanted.insert(name);
        for (const auto& [name, problem] : snapshot->invalid_plans)
          wanted.insert(name);
        for (const auto& [name, item] : snapshot->items)
          wanted.insert(item->spec.plan_ref.name);
        for (const auto& name : wanted)
          if (!s->supervisors.count(name)) {
            plan_supervisor_config c;
            c.plan = name;
            c.dcm_namespace = settings.dcm_namespace;
            c.dcm_configmaps = settings.dcm_configmaps;
            c.dcm_retry_bound = settings.dcm_retry_bound;
            c.dcm_config_sync = settings.dcm_config_sync;
            c.io = io;
            c.writer = writer;
            s->supervisors[name] = self->spawn<caf::linked>(plan_supervisor, c);
            log_info("supervising plan " + name, name);
          }
        for (auto it = s->supervisors.begin(); it != s->supervisors.end();) {
          if (!wanted.count(it->first)) {
            self->send_exit(it->second, caf::exit_reason::user_shutdown);
            log_info("plan " + it->first + " and its items are gone", it->first);
            it = s->supervisors.erase(it);
          } else {
            self->send(it->second, view_atom_v, snapshot);
            ++it;
          }
        }
      },
  };
}

} // namespace gpu_partitioner::actors
