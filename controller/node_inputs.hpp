#pragma once

// What one node's step reads, taken from the cluster view: the node's pods and the budgets
// that cover them, its profile with the payload and its rivals, its plan's standing, DCM's
// config and Events, and the profiles DCM's config may be given. Pure: a view is cut into
// node slices (the supervisor's side), a slice and the worker's own facts make node_inputs
// (the worker's side).

#include "controller/cluster_view.hpp"
#include "controller/node_machine.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpu_partitioner::controller {

/// DCM's namespace (where its pods, ConfigMaps and Events are), and how long kubelet may
/// take to deliver a change of its config to DCM's mounted file (--dcm-config-sync). Which
/// ConfigMap a node's DCM reads is its pod's (find_node_dcm).
struct dcm_settings {
  std::string ns;
  std::chrono::milliseconds sync{90000};
  /// The ConfigMaps there the operator may write (--dcm-configmaps, as its RBAC grants);
  /// empty: any.
  std::set<std::string> writable{};
  /// How long after the label DCM may still change a node's GPUs (--dcm-retry-seconds).
  std::chrono::milliseconds retry_bound{dcm_retry_bound};
};

/// What only the node's worker knows: its token, its evictions so far, its last write's
/// error.
struct worker_facts {
  bool token = false;
  std::map<std::string, eviction_memory> evictions;
  std::string write_error;
  std::string resolved_write_error;
};

/// The profile `name` as the view has it: found or invalid, its DCM name, its payload
/// (or why there is none, or that its ConfigMap is still being listed), and the other
/// profiles that give the same DCM name another payload.
resolved_profile resolve_profile(const cluster_view& view, const std::string& name);

/// protocol::payload_hash of the profile's payload; "" when it cannot be read now (no
/// profile, no ConfigMap yet, or one in a namespace payloads may not live in).
std::string payload_hash_of(const cluster_view& view, const std::string& profile);

/// Whether the item's plan lets the operator act on it: it must name a live plan, by name
/// and uid; an invalid or deleting plan starts no node.
plan_standing standing_of(const cluster_view& view, const protocol::node_partitioning& item);

/// DCM's ConfigMap `name` (in DCM's namespace) as the view has it; written_at is the latest
/// of our stamp, the root's sight of a change, and the creation (whole seconds: taken as a
/// second later). The node's DCM (pod, version, problem) is not filled in.
dcm_config_state dcm_config_of(const cluster_view& view, const dcm_settings& dcm,
                               const std::string& name);

/// The node's DCM (find_node_dcm over its pods in the view) and the ConfigMap it reads.
dcm_config_state node_dcm_config(const cluster_view& view, const dcm_settings& dcm,
                                 const std::string& node);

/// A profile of the item's plan that DCM's config may be given, and the nodes labelled
/// with its DCM name when DCM's config holds another payload under that name (writing this
/// one would repartition them undrained; the node being stepped excepted).
struct plan_profile_candidate {
  std::string dcm_name;
  std::string payload;
  std::vector<std::string> labelled;
};

/// One node's share of a view: what its worker reads, as pointers to the view's immutable
/// objects (nothing large is copied), and what was worked out across the view for it. The
/// plan's supervisor sends it; the worker keeps the latest and steps on it.
struct node_slice {
  /// The item as the view has it (its status may be older than the worker's own); null
  /// once it is gone.
  std::shared_ptr<const protocol::node_partitioning> item;
  /// Null when the node is not in the view.
  std::shared_ptr<const node_info> node;
  std::shared_ptr<const cluster_view::by_key<pod_info>> pods;
  /// The DaemonSets there are, to check the pods' owners by; null when the API server does
  /// not let the operator list them (the owner's kind is trusted then).
  std::shared_ptr<const daemon_set_uids> daemon_sets;
  /// The budgets that cover a pod on the node.
  std::vector<std::shared_ptr<const pdb_info>> pdbs;
  std::shared_ptr<const cluster_view::by_key<dcm_event>> dcm_events;
  std::shared_ptr<const cluster_view::by_key<resource_slice_info>> slices;
  std::shared_ptr<const cluster_view::by_key<resource_claim_info>> claims;
  std::shared_ptr<const cluster_view::by_key<device_taint_rule_info>> taint_rules;
  /// The API server serves DeviceTaintRules.
  bool device_taints_served = false;
  /// The operator may not list ResourceClaims (403): who holds a DRA node's GPUs is unseen.
  bool claims_forbidden = false;
  bool pods_deletable = true;
  std::shared_ptr<const resolved_profile> profile;
  plan_standing plan;
  std::shared_ptr<const dcm_config_state> dcm;
  std::shared_ptr<const std::vector<plan_profile_candidate>> plan_profiles;
  /// The nodes labelled with the profile's DCM name, when DCM's config holds another
  /// payload under it (the node itself included); null otherwise.
  std::shared_ptr<const std::vector<std::string>> dcm_name_labelled;
  /// When the view saw the node, its pods or its DCM Events change, if it did: the start
  /// of the reaction to it.
  std::optional<protocol::wall_clock::time_point> node_changed_at;
  /// Every node, for items that read them (reads_every_node); null for the others. With
  /// it, the devices of AMD's DRA driver no claim holds, per node that publishes some.
  std::shared_ptr<const shared_map<node_info>> all_nodes;
  std::shared_ptr<const std::map<std::string, std::int64_t>> free_gpu_devices;
  /// The nodes of the item's plan and its maxParallel, for a dry run's deadlock warning;
  /// null and 0 otherwise.
  std::shared_ptr<const std::set<std::string>> plan_nodes;
  std::int32_t plan_max_parallel = 0;
};

/// Whether the item's step reads every node (a drain's and a dry run's deadlock check).
bool reads_every_node(const protocol::node_partitioning& item);

/// What a view brings a node's worker: nothing; news of its own (its node, pods, Events or
/// item, what every node shares, or who carries its DCM name: it steps); or only news of
/// the budgets that cover its pods (it steps only while it drains).
enum class slice_news { none, own, budgets_only };

using node_slice_ptr = std::shared_ptr<const node_slice>;

/// A worker's next slice, if the view has news for it.
struct slice_update {
  slice_news news = slice_news::none;
  node_slice_ptr slice;
};

/// What several nodes' slices share, worked out once and kept from view to view while
/// nothing it depends on changes (objects, profiles, plans and ConfigMaps: a view's
/// shared_changed; nodes' DCM profile labels: relabelled). Slices of successive views then
/// share these objects, and DCM's config is not parsed again for every node.
struct slice_memo {
  /// DCM's ConfigMaps by name.
  std::map<std::string, std::shared_ptr<const dcm_config_state>> dcm;
  std::map<std::string, std::shared_ptr<const resolved_profile>> profiles;
  /// By plan name and DCM ConfigMap (dcm_keyed).
  std::map<std::string, std::shared_ptr<const std::vector<plan_profile_candidate>>> plans;
  /// By profile name and DCM ConfigMap (dcm_keyed): the nodes whose DCM reads that
  /// ConfigMap labelled with the profile's DCM name, when the ConfigMap holds another
  /// payload under it; null when it does not.
  std::map<std::string, std::shared_ptr<const std::vector<std::string>>> holders;
  std::optional<std::map<std::string, std::vector<std::string>>> by_dcm_name;
};

/// Cuts one view into node slices, working out what several nodes share (a profile, DCM's
/// config, a plan's profiles, who carries a DCM name) once. Holds a reference to the view:
/// use it while the view lives. `memo` carries what was worked out from the views before
/// (a plan's supervisor keeps one and shows it every view, in order).
class view_slicer {
public:
  view_slicer(const cluster_view& view, dcm_settings dcm, slice_memo& memo);
  view_slicer(const cluster_view& view, dcm_settings dcm);
  /// The slice of `item` (the view's, or one the view does not have yet).
  node_slice slice(const protocol::node_partitioning& item);
  /// What the view brings the worker of `item`, last sent `last` (null: none yet). A view
  /// of a thousand nodes has news of its own for one or two: the others are only checked
  /// for changed budgets (when those over their pods may have) and holders of their DCM
  /// name (when a node's DCM profile label did).
  slice_update update(const protocol::node_partitioning& item, const node_slice_ptr& last);

private:
  std::vector<std::shared_ptr<const pdb_info>> budgets(const node_slice& s) const;
  std::shared_ptr<const std::vector<std::string>> labelled_if_differs(const resolved_profile& p,
                                                                      const dcm_config_state& d);
  std::shared_ptr<const resolved_profile> profile(const std::string& name);
  std::shared_ptr<const std::vector<std::string>> labelled(const std::string& dcm_name,
                                                           const std::string& config_map);

  std::shared_ptr<const dcm_config_state> dcm(const std::string& node);
  std::shared_ptr<const shared_map<node_info>> all_nodes();
  std::shared_ptr<const std::map<std::string, std::int64_t>> free_gpu_devices();
  std::shared_ptr<const std::set<std::string>> plan_nodes(const std::string& plan);

  const cluster_view& view_;
  dcm_settings settings_;
  slice_memo own_;
  slice_memo& memo_;
  /// This view's nodes and plans' nodes, made once when first asked for.
  std::shared_ptr<const shared_map<node_info>> all_nodes_;
  std::shared_ptr<const std::map<std::string, std::int64_t>> free_gpu_devices_;
  std::map<std::string, std::shared_ptr<const std::set<std::string>>> plan_nodes_;
};

/// The inputs of step_node from `slice`, for `item` (the slice's, with the status as the
/// worker last wrote it), deciding on `node` (the slice's, or the worker's own write while
/// the watch lags; nullopt: gone).
node_inputs assemble_node_inputs(const node_slice& slice, protocol::node_partitioning item,
                                 std::optional<node_info> node, const worker_facts& facts,
                                 protocol::wall_clock::time_point now);

/// The same, straight from a view (one slice cut and assembled).
node_inputs assemble_node_inputs(const cluster_view& view, protocol::node_partitioning item,
                                 std::optional<node_info> node, const dcm_settings& dcm,
                                 const worker_facts& facts, protocol::wall_clock::time_point now);

} // namespace gpu_partitioner::controller
