#pragma once

#include "protocol/api_group.hpp"
#include "protocol/codec/equality.hpp"
#include "protocol/codec/field.hpp"
#include "protocol/condition.hpp"
#include "protocol/drain_policy.hpp"
#include "protocol/int_or_percent.hpp"
#include "protocol/label_selector.hpp"
#include "protocol/object_meta.hpp"
#include "protocol/plan_verification.hpp"
#include "protocol/profile_reference.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace gpu_partitioner::protocol {

/// The days of the week, as a window names them.
enum class weekday { sunday, monday, tuesday, wednesday, thursday, friday, saturday };

constexpr auto enum_names(codec::tag<weekday>) {
  using E = weekday;
  return std::array<codec::enum_name<E>, 7>{{{E::sunday, "Sun"},
                                             {E::monday, "Mon"},
                                             {E::tuesday, "Tue"},
                                             {E::wednesday, "Wed"},
                                             {E::thursday, "Thu"},
                                             {E::friday, "Fri"},
                                             {E::saturday, "Sat"}}};
}

/// "HH:MM" on a 24-hour clock; an end may also be "24:00".
inline bool is_clock_time(std::string_view s) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (s.size() != 5 || s[2] != ':' || !digit(s[0]) || !digit(s[1]) || !digit(s[3]) || !digit(s[4]))
    return false;
  return (s[0] < '2' || (s[0] == '2' && s[1] <= '3')) && s[3] <= '5';
}
inline bool is_clock_time_or_midnight(std::string_view s) {
  return is_clock_time(s) || s == "24:00";
}
inline constexpr codec::pattern clock_time{"^([01][0-9]|2[0-3]):[0-5][0-9]$",
                                           "a time of day HH:MM (00:00 to 23:59)", &is_clock_time};
inline constexpr codec::pattern clock_time_or_midnight{"^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$",
                                                       "a time of day HH:MM (00:00 to 24:00)",
                                                       &is_clock_time_or_midnight};

/// spec.rollout.windows[]: when nodes may start. A window opens on each of its days at
/// `start` and closes at `end`, local to `timeZone`; an end not after the start is on the
/// next day. Windows gate starts only: nodes in flight finish.
struct rollout_window {
  /// The days it opens; none: every day.
  std::vector<weekday> days;
  std::string start;
  std::string end;
  /// An IANA time zone name (Europe/Berlin), read from the system's zoneinfo.
  std::string time_zone = "UTC";
};

constexpr auto describe(codec::tag<rollout_window>) {
  using T = rollout_window;
  return std::make_tuple(
      codec::field("days", &T::days).max_items(7),
      codec::field("start", &T::start).required().max_length(5).matching(clock_time),
      codec::field("end", &T::end).required().max_length(5).matching(clock_time_or_midnight),
      codec::field("timeZone", &T::time_zone).min_length(1).max_length(64));
}

/// How a canary that passed its soak lets the rest of the plan go.
enum class canary_promotion { automatic, manual };

constexpr auto enum_names(codec::tag<canary_promotion>) {
  using E = canary_promotion;
  return std::array<codec::enum_name<E>, 2>{{{E::automatic, "Automatic"}, {E::manual, "Manual"}}};
}

/// spec.rollout.canary: the first nodes, which must pass before any other starts.
struct canary_policy {
  /// How many of each partitioning's nodes (a count, or a percentage rounded down but at
  /// least 1).
  std::optional<int_or_percent> nodes{};
  /// Or: the plan's nodes this selects.
  std::optional<label_selector> selector{};
  /// How long every canary node must stay verified and healthy after it succeeded.
  std::optional<std::int64_t> soak_seconds{};
  std::optional<canary_promotion> promotion{};

  std::int64_t soak() const { return soak_seconds.value_or(0); }
  canary_promotion promotion_mode() const {
    return promotion.value_or(canary_promotion::automatic);
  }
};

constexpr auto describe(codec::tag<canary_policy>) {
  using T = canary_policy;
  return std::make_tuple(codec::field("nodes", &T::nodes), codec::field("selector", &T::selector),
                         codec::field("soakSeconds", &T::soak_seconds).minimum(0).seconds(),
                         codec::field("promotion", &T::promotion));
}

/// spec.rollout: how many nodes may be disrupted at once, and how they are drained.
/// The fields after drainPolicy are optional without a schema default: a plan that does
/// not set them reads back as it was written.
struct rollout_policy {
  std::int32_t max_parallel = 1;
  int_or_percent max_unavailable = int_or_percent::count(1);
  drain_policy drain;
  std::vector<rollout_window> windows{};
  /// No node starts when less than this is left of the window it would start in.
  std::optional<std::int64_t> min_window_remaining_seconds{};
  std::optional<canary_policy> canary{};
  /// A node holds its token until it has stayed verified and healthy this long.
  std::optional<std::int64_t> node_soak_seconds{};
  /// How many nodes may fail before no more start (default 0: the first failure stops).
  std::optional<count_or_percent> max_failures{};
};

constexpr auto describe(codec::tag<rollout_policy>) {
  using T = rollout_policy;
  // int_or_percent validates its own range (minimum 1, 1% to 100%; maxFailures from 0).
  return std::make_tuple(
      codec::field("maxParallel", &T::max_parallel).minimum(1),
      codec::field("maxUnavailable", &T::max_unavailable), codec::field("drainPolicy", &T::drain),
      codec::field("windows", &T::windows).max_items(32),
      codec::field("minWindowRemainingSeconds", &T::min_window_remaining_seconds)
          .minimum(0)
          .seconds(),
      codec::field("canary", &T::canary),
      codec::field("nodeSoakSeconds", &T::node_soak_seconds).minimum(0).seconds(),
      codec::field("maxFailures", &T::max_failures));
}

/// One entry of spec.partitionings: a set of nodes and the profile they get.
struct partitioning {
  std::string name;
  label_selector selector;
  /// Nodes matching this are left out even if `selector` matches them.
  std::optional<label_selector> exclude;
  profile_reference profile_ref;
};

constexpr auto describe(codec::tag<partitioning>) {
  using T = partitioning;
  return std::make_tuple(
      codec::field("name", &T::name).required().max_length(63).matching(codec::dns1123_label),
      codec::field("selector", &T::selector).required(), codec::field("exclude", &T::exclude),
      codec::field("profileRef", &T::profile_ref).required());
}

struct partitioning_plan_spec {
  /// No new node starts while paused; nodes in flight finish to a safe state.
  bool paused = false;
  /// Create NodePartitionings that preview the work, change nothing on nodes.
  bool dry_run = false;
  rollout_policy rollout;
  plan_verification verification;
  std::vector<partitioning> partitionings;
};

constexpr auto describe(codec::tag<partitioning_plan_spec>) {
  using T = partitioning_plan_spec;
  return std::make_tuple(codec::field("paused", &T::paused), codec::field("dryRun", &T::dry_run),
                         codec::field("rollout", &T::rollout),
                         codec::field("verification", &T::verification),
                         codec::field("partitionings", &T::partitionings)
                             .required()
                             .min_items(1)
                             .max_items(100)
                             .map_key("name"));
}

enum class plan_phase { pending, progressing, paused, completed, degraded };

constexpr auto enum_names(codec::tag<plan_phase>) {
  using E = plan_phase;
  return std::array<codec::enum_name<E>, 5>{{{E::pending, "Pending"},
                                             {E::progressing, "Progressing"},
                                             {E::paused, "Paused"},
                                             {E::completed, "Completed"},
                                             {E::degraded, "Degraded"}}};
}

/// status.nodes: the plan's nodes by phase.
struct node_counts {
  std::int32_t total = 0;
  std::int32_t pending = 0;
  std::int32_t draining = 0;
  std::int32_t applying = 0;
  std::int32_t waiting_operator = 0;
  std::int32_t verifying = 0;
  std::int32_t succeeded = 0;
  std::int32_t failed = 0;
  /// Of the succeeded, those still soaking (holding their token).
  std::int32_t soaking = 0;
};

constexpr auto describe(codec::tag<node_counts>) {
  using T = node_counts;
  return std::make_tuple(codec::field("total", &T::total).minimum(0),
                         codec::field("pending", &T::pending).minimum(0),
                         codec::field("draining", &T::draining).minimum(0),
                         codec::field("applying", &T::applying).minimum(0),
                         codec::field("waitingOperator", &T::waiting_operator).minimum(0),
                         codec::field("verifying", &T::verifying).minimum(0),
                         codec::field("succeeded", &T::succeeded).minimum(0),
                         codec::field("failed", &T::failed).minimum(0),
                         codec::field("soaking", &T::soaking).minimum(0));
}

/// status.devices: what the plan's nodes in DRA mode of one profile publish.
struct profile_devices {
  std::string profile;
  /// The plan's nodes of this profile that publish their GPUs through DRA.
  std::int32_t nodes = 0;
  /// The devices they publish that match the profile's expectedDevices, and how many they
  /// would once every one of them has the profile.
  std::int64_t devices = 0;
  std::int64_t expected = 0;
};

constexpr auto describe(codec::tag<profile_devices>) {
  using T = profile_devices;
  return std::make_tuple(codec::field("profile", &T::profile).required().min_length(1),
                         codec::field("nodes", &T::nodes).minimum(0),
                         codec::field("devices", &T::devices).minimum(0),
                         codec::field("expected", &T::expected).minimum(0));
}

/// A node the plan leaves alone because two partitionings (or two plans) select it.
struct node_conflict {
  std::string node;
  /// Which partitionings or plans select it: the first few by name, and how many more.
  std::string reason;
};

constexpr auto describe(codec::tag<node_conflict>) {
  using T = node_conflict;
  return std::make_tuple(codec::field("node", &T::node).required().min_length(1).max_length(253),
                         codec::field("reason", &T::reason));
}

/// One entry of the plan's bounded history.
struct plan_event {
  std::string time;
  std::string type;
  std::string message;
};

constexpr auto describe(codec::tag<plan_event>) {
  using T = plan_event;
  return std::make_tuple(codec::field("time", &T::time).required().date_time(),
                         codec::field("type", &T::type).required().min_length(1),
                         codec::field("message", &T::message));
}

/// status.window: where the rollout stands against spec.rollout.windows.
struct window_status {
  /// The clock is inside a window.
  bool open = false;
  /// A node may start now (open, with enough of the window left).
  bool may_start = false;
  /// When open: when the window closes.
  std::string closes_at;
  /// When nodes may next start (now, if they may).
  std::string next_start;
};

constexpr auto describe(codec::tag<window_status>) {
  using T = window_status;
  return std::make_tuple(codec::field("open", &T::open), codec::field("mayStart", &T::may_start),
                         codec::field("closesAt", &T::closes_at).date_time(),
                         codec::field("nextStart", &T::next_start).date_time());
}

enum class canary_phase { selecting, in_progress, awaiting_promotion, passed, failed };

constexpr auto enum_names(codec::tag<canary_phase>) {
  using E = canary_phase;
  return std::array<codec::enum_name<E>, 5>{{{E::selecting, "Selecting"},
                                             {E::in_progress, "InProgress"},
                                             {E::awaiting_promotion, "AwaitingPromotion"},
                                             {E::passed, "Passed"},
                                             {E::failed, "Failed"}}};
}

/// status.canary: the canary of the plan's current profiles and policies (`key`).
struct canary_status {
  /// The most canary nodes a plan lists (larger canaries are cut to this).
  static constexpr std::size_t nodes_limit = 1000;

  /// Which desired state the canary tests: a new profile or policy is a new canary.
  std::string key;
  /// The plan's generation when this canary began: with the key, the rollout a promotion
  /// names. A failed canary begins again with the plan's next generation.
  std::int64_t generation = 0;
  std::optional<canary_phase> phase;
  /// The canary's nodes, chosen once per key.
  std::vector<std::string> nodes;
  /// Canary nodes that failed and have not been retried since.
  std::vector<std::string> failed_nodes;
  /// When the last canary node's soak ends (or ended).
  std::string soak_ends;
  std::string passed_at;
  std::string message;
};

constexpr auto describe(codec::tag<canary_status>) {
  using T = canary_status;
  return std::make_tuple(
      codec::field("key", &T::key), codec::field("generation", &T::generation).minimum(0),
      codec::field("phase", &T::phase), codec::field("nodes", &T::nodes).max_items(T::nodes_limit),
      codec::field("failedNodes", &T::failed_nodes).max_items(T::nodes_limit),
      codec::field("soakEnds", &T::soak_ends).date_time(),
      codec::field("passedAt", &T::passed_at).date_time(), codec::field("message", &T::message));
}

struct partitioning_plan_status {
  /// The maximum number of entries in `history`; the writer drops the oldest.
  static constexpr std::size_t history_limit = 50;
  /// The most nodes `order` and `conflicts` name. Their counts say how many there are in
  /// all, so that a plan of thousands of nodes, or one that every other plan overlaps, has
  /// a status of a bounded size (an object must fit etcd's 1.5 MiB request limit).
  static constexpr std::size_t order_limit = 100;
  static constexpr std::size_t conflicts_limit = 100;

  std::int64_t observed_generation = 0;
  std::optional<plan_phase> phase;
  node_counts nodes;
  /// The nodes still to come (neither Succeeded nor Failed) in the order the rollout takes
  /// them: the canary's first until it passes, then by name. The first order_limit.
  std::vector<std::string> order;
  /// How many nodes are still to come.
  std::int32_t order_count{};
  /// The first conflicts_limit nodes left alone, by name.
  std::vector<node_conflict> conflicts;
  /// How many nodes are left alone.
  std::int32_t conflict_count{};
  std::vector<condition> conditions;
  std::vector<plan_event> history;
  std::optional<window_status> window{};
  std::optional<canary_status> canary{};
  std::vector<profile_devices> devices{};
};

constexpr auto describe(codec::tag<partitioning_plan_status>) {
  using T = partitioning_plan_status;
  return std::make_tuple(
      codec::field("observedGeneration", &T::observed_generation).minimum(0),
      codec::field("phase", &T::phase), codec::field("nodes", &T::nodes),
      codec::field("order", &T::order).max_items(T::order_limit).cut_when_read(),
      codec::field("orderCount", &T::order_count).minimum(0),
      codec::field("conflicts", &T::conflicts).max_items(T::conflicts_limit).cut_when_read(),
      codec::field("conflictCount", &T::conflict_count).minimum(0),
      codec::field("conditions", &T::conditions).map_key("type"),
      codec::field("history", &T::history).max_items(T::history_limit),
      codec::field("window", &T::window), codec::field("canary", &T::canary),
      codec::field("devices", &T::devices).map_key("profile").max_items(64));
}

/// Rolls profiles out to the nodes its partitionings select (cluster-scoped).
struct partitioning_plan {
  static constexpr std::string_view kind_name = "PartitioningPlan";
  static constexpr std::string_view plural = "partitioningplans";

  std::string api_version{protocol::api_version};
  std::string kind{kind_name};
  object_meta metadata;
  partitioning_plan_spec spec;
  partitioning_plan_status status;
};

constexpr auto describe(codec::tag<partitioning_plan>) {
  using T = partitioning_plan;
  return std::make_tuple(
      codec::field("apiVersion", &T::api_version).fixed(), codec::field("kind", &T::kind).fixed(),
      codec::field("metadata", &T::metadata), codec::field("spec", &T::spec).required(),
      codec::field("status", &T::status));
}

/// On a PartitioningPlan: promotes its canary once it has soaked, when the value is the
/// canary's key (`kubectl partitioning promote` writes it).
inline constexpr const char* promote_canary_annotation = "infrastructure.silogen.ai/promote-canary";

/// The condition types of a PartitioningPlan's status.
namespace plan_condition {
inline constexpr const char* invalid = "Invalid";
inline constexpr const char* nodes_selected = "NodesSelected";
inline constexpr const char* conflict = "Conflict";
inline constexpr const char* paused = "Paused";
inline constexpr const char* progressing = "Progressing";
inline constexpr const char* degraded = "Degraded";
inline constexpr const char* completed = "Completed";
inline constexpr const char* outside_window = "OutsideWindow";
inline constexpr const char* canary = "Canary";
/// False while a selected node's NodePartitioning cannot be made (named, with why).
inline constexpr const char* items_created = "ItemsCreated";
/// Dry runs only: True once every selected node's NodePartitioning holds its preview.
inline constexpr const char* dry_run = "DryRun";
/// What kstatus (Flux, kpt, Argo CD's health checks) reads: Ready True once every node
/// succeeded; Reconciling True while the rollout goes on; Stalled True when it stopped and
/// needs a person (invalid, failures past maxFailures, a failed canary, ended with
/// failures). One of them is True at a time, but for a paused plan (none).
inline constexpr const char* ready = "Ready";
inline constexpr const char* reconciling = "Reconciling";
inline constexpr const char* stalled = "Stalled";
} // namespace plan_condition

} // namespace gpu_partitioner::protocol
