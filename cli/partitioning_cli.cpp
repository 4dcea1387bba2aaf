#include "cli/partitioning_cli.hpp"

#include "controller/item_name.hpp"
#include "controller/node_machine.hpp"
#include "controller/soak.hpp"
#include "protocol/printable.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace gpu_partitioner::cli {

namespace {

using protocol::canary_phase;
using protocol::condition_status;
using protocol::node_phase;

/// A plan with more nodes than this lists only the ones not yet Succeeded, unless --all.
constexpr std::size_t quiet_threshold = 20;

/// Text made of lines, as rendered: the names and reasons in them are the objects' own, so
/// everything but its line breaks is escaped.
constexpr protocol::printable_style rendered{true, false};

std::string phase_name(const std::optional<node_phase>& phase) {
  return phase ? std::string(protocol::codec::to_string(*phase)) : "Pending";
}

std::string plan_phase_name(const std::optional<protocol::plan_phase>& phase) {
  return phase ? std::string(protocol::codec::to_string(*phase)) : "Pending";
}

/// Left-aligned columns, two spaces apart; the last column is not padded. Cells are made
/// printable first, so an escape inside one neither reaches the terminal nor skews the
/// columns.
std::string table(std::vector<std::vector<std::string>> rows) {
  for (auto& row : rows)
    for (auto& cell : row)
      cell = protocol::printable(cell);
  std::vector<std::size_t> width;
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i)
        width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size())
        line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string since(const std::string& time, protocol::wall_clock::time_point now) {
  auto t = protocol::parse_time(time);
  if (!t)
    return "-";
  return format_duration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
}

/// `time` and how far it is from `now`: "T (in 6h00m)", "T (5m00s ago)"; the text alone
/// when it is not a time.
std::string when(const std::string& time, protocol::wall_clock::time_point now) {
  auto t = protocol::parse_time(time);
  if (!t)
    return time;
  if (*t >= now)
    return time + " (in " +
           format_duration(std::chrono::duration_cast<std::chrono::seconds>(*t - now)) + ")";
  return time + " (" + format_duration(std::chrono::duration_cast<std::chrono::seconds>(now - *t)) +
         " ago)";
}

/// Line breaks (from an error the status quotes) become spaces; other control characters
/// are escaped.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\r', ' ');
  return protocol::printable(text);
}

/// The first `shown` names, comma-separated, then how many more there are: of `total`, the
/// count a status gives beside the first names it lists, when that is more.
std::string some_of(const std::vector<std::string>& names, std::size_t shown,
                    std::size_t total = 0) {
  total = std::max(total, names.size());
  std::string out;
  std::size_t i = 0;
  for (; i < names.size() && i < shown; ++i)
    out += (i ? ", " : "") + names[i];
  if (total > i)
    out += " and " + std::to_string(total - i) + " more";
  return out;
}

/// How many of a plan's conflicts `status` prints; the rest are counted.
constexpr std::size_t conflicts_shown = 10;

/// A Succeeded node that still holds its token: when its soak ends, if after `now`.
std::optional<protocol::wall_clock::time_point>
soaking_until(const protocol::node_partitioning& item, protocol::wall_clock::time_point now) {
  auto end = controller::soak_end(item);
  if (!end || *end <= now)
    return std::nullopt;
  return end;
}

std::string window_line(const protocol::window_status& w, protocol::wall_clock::time_point now) {
  std::string out = "  window: ";
  if (w.open)
    out += w.closes_at.empty() ? std::string("open") : "open until " + when(w.closes_at, now);
  else
    out += "closed";
  if (w.may_start)
    return out + "\n";
  if (w.open)
    out += ", too little of it left for a node to start";
  out += "; " + (w.next_start.empty() ? std::string("no window opens in the next week")
                                      : "nodes may start from " + when(w.next_start, now));
  return out + "\n";
}

std::string canary_lines(const protocol::canary_status& c, protocol::wall_clock::time_point now) {
  std::string out = "  canary: " + (c.phase ? std::string(protocol::codec::to_string(*c.phase))
                                            : std::string("Unknown"));
  if (!c.nodes.empty())
    out += " on " + some_of(c.nodes, 5);
  if (auto end = protocol::parse_time(c.soak_ends))
    out += std::string("; soak ") + (*end > now ? "ends " : "ended ") + when(c.soak_ends, now);
  if (!c.passed_at.empty())
    out += "; passed " + when(c.passed_at, now);
  out += "\n";
  if (!c.message.empty())
    out += "    " + one_line(c.message) + "\n";
  return out;
}

std::string window_column(const std::optional<protocol::window_status>& w) {
  if (!w)
    return "-";
  if (w->may_start)
    return "open";
  return w->open ? "closing" : "closed";
}

std::string canary_column(const std::optional<protocol::canary_status>& c) {
  if (!c)
    return "-";
  return c->phase ? std::string(protocol::codec::to_string(*c->phase)) : "Unknown";
}

/// What holds a node, in one line: the PDBs and pods blocking its drain, its last error,
/// its soak; "canary" first for a canary node.
std::string detail_of(const protocol::node_partitioning& item,
                      protocol::wall_clock::time_point now) {
  const auto& st = item.status;
  std::string out = item.spec.canary ? "canary" : "";
  if (!st.drain.blocking_pdbs.empty()) {
    out += (out.empty() ? "" : "; ") + std::string("drain blocked by PDB");
    for (std::size_t i = 0; i < st.drain.blocking_pdbs.size(); ++i)
      out += (i ? ", " : " ") + st.drain.blocking_pdbs[i].namespace_ + "/" +
             st.drain.blocking_pdbs[i].name;
  }
  if (!st.drain.blocking_pods.empty()) {
    out += st.drain.blocking_pdbs.empty() ? (out.empty() ? "waiting for pod" : "; waiting for pod")
                                          : "; pod";
    out += st.drain.blocking_pods.size() > 1 ? "s" : "";
    for (std::size_t i = 0; i < st.drain.blocking_pods.size() && i < 3; ++i) {
      const auto& b = st.drain.blocking_pods[i];
      out += (i ? ", " : " ") + b.namespace_ + "/" + b.name;
      if (b.cause)
        out += " (" + std::string(protocol::codec::to_string(*b.cause)) + ")";
    }
    if (st.drain.blocking_pods.size() > 3)
      out += " and " + std::to_string(st.drain.blocking_pods.size() - 3) + " more";
  }
  if (!st.last_error.empty())
    out += (out.empty() ? "" : "; ") + one_line(st.last_error);
  if (const auto held = protocol::parse_time(st.dcm_may_change_until); held && *held > now)
    out += (out.empty() ? "" : "; ") + std::string("tainted while DCM may retry, ") +
           format_duration(std::chrono::duration_cast<std::chrono::seconds>(*held - now)) + " more";
  if (auto end = soaking_until(item, now))
    out += (out.empty() ? "" : "; ") + std::string("soaking, ends in ") +
           format_duration(std::chrono::duration_cast<std::chrono::seconds>(*end - now));
  return out;
}

/// The reason phrase kubectl prints beside a status code.
const char* http_reason(int code) {
  switch (code) {
  case 200:
    return "OK";
  case 201:
    return "Created";
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 409:
    return "Conflict";
  case 422:
    return "Unprocessable Entity";
  case 429:
    return "Too Many Requests";
  case 500:
    return "Internal Server Error";
  case 503:
    return "Service Unavailable";
  case 504:
    return "Gateway Timeout";
  default:
    return nullptr;
  }
}

std::string progress_bar(int done, int total, int width) {
  int filled = total > 0 ? done * width / total : 0;
  return "[" + std::string(filled, '#') + std::string(width - filled, '.') + "]";
}

} // namespace

std::string format_duration(std::chrono::seconds d) {
  long long s = d.count();
  if (s < 0)
    return "-";
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else if (s < 86400)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  else
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
  return buf;
}

std::vector<protocol::node_partitioning>
items_of_plan(const protocol::partitioning_plan& plan,
              const std::vector<protocol::node_partitioning>& all) {
  std::map<std::string, std::size_t> rank;
  for (std::size_t i = 0; i < plan.status.order.size(); ++i)
    rank.emplace(plan.status.order[i], i);
  std::vector<protocol::node_partitioning> out;
  for (const auto& item : all)
    if (item.spec.plan_ref.name == plan.metadata.name &&
        (plan.metadata.uid.empty() || item.spec.plan_ref.uid == plan.metadata.uid))
      out.push_back(item);
  auto key = [&](const protocol::node_partitioning& i) {
    auto r = rank.find(i.spec.node_name);
    return std::make_pair(r == rank.end() ? rank.size() : r->second, i.spec.node_name);
  };
  std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  return out;
}

std::string render_status(const protocol::partitioning_plan& plan,
                          const std::vector<protocol::node_partitioning>& items,
                          protocol::wall_clock::time_point now, bool all_nodes, bool wide) {
  const auto& st = plan.status;
  const auto& counts = st.nodes;
  std::ostringstream out;
  int total = counts.total;
  int done = counts.succeeded;
  out << "Plan " << plan.metadata.name << ": " << plan_phase_name(st.phase) << ", " << done << "/"
      << total << " nodes succeeded";
  if (counts.failed > 0)
    out << ", " << counts.failed << " failed";
  out << "  " << progress_bar(done + counts.failed, total, 30) << "\n";
  const auto& spec = plan.spec;
  out << "  maxParallel " << spec.rollout.max_parallel << ", maxUnavailable "
      << spec.rollout.max_unavailable.to_string() << (spec.paused ? ", paused" : "")
      << (spec.dry_run ? ", dry run" : "") << "\n";
  out << "  in flight: " << counts.draining << " draining, " << counts.applying << " applying, "
      << counts.waiting_operator << " waiting for DCM, " << counts.verifying << " verifying, "
      << counts.soaking << " soaking; pending " << counts.pending << "\n";
  if (!st.order.empty())
    out << "  next: " << some_of(st.order, 5, static_cast<std::size_t>(std::max(st.order_count, 0)))
        << "\n";
  if (st.window)
    out << window_line(*st.window, now);
  if (st.canary)
    out << canary_lines(*st.canary, now);
  // Nodes in DRA mode: the devices of each profile they show.
  for (const auto& d : st.devices)
    out << "  devices of " << d.profile << ": " << d.devices << "/" << d.expected << " on "
        << d.nodes << " DRA node" << (d.nodes == 1 ? "" : "s") << "\n";
  if (st.observed_generation < plan.metadata.generation)
    out << "  (the operator has not yet seen generation " << plan.metadata.generation << ")\n";
  // Conditions that say something is wrong or held.
  for (const auto& c : st.conditions) {
    namespace pc = protocol::plan_condition;
    bool worrying = (c.type == pc::degraded || c.type == pc::conflict || c.type == pc::invalid ||
                     c.type == pc::paused) &&
                    c.status == condition_status::true_;
    if (worrying)
      out << "  " << c.type << ": " << c.reason << (c.message.empty() ? "" : ": ")
          << one_line(c.message) << "\n";
  }
  const auto shown = std::min(st.conflicts.size(), conflicts_shown);
  for (std::size_t i = 0; i < shown; ++i)
    out << "  conflict: node " << st.conflicts[i].node
        << " left alone: " << one_line(st.conflicts[i].reason) << "\n";
  const auto conflicts =
      std::max(static_cast<std::size_t>(std::max(st.conflict_count, 0)), st.conflicts.size());
  if (conflicts > shown)
    out << "  ... and " << conflicts - shown << " more node" << (conflicts - shown == 1 ? "" : "s")
        << " left alone\n";

  if (items.empty()) {
    out << "\nNo nodes yet.\n";
    return protocol::printable(out.str(), rendered);
  }
  bool hide_succeeded = !all_nodes && items.size() > quiet_threshold;
  std::vector<std::vector<std::string>> rows{{"NODE", "PHASE", "FOR", "PROFILE", "DETAIL"}};
  if (wide)
    rows[0].insert(rows[0].end() - 1, {"ITEM", "STARTED", "COMPLETED"});
  std::size_t hidden = 0;
  for (const auto& item : items) {
    const auto& s = item.status;
    if (hide_succeeded && s.phase == node_phase::succeeded && !soaking_until(item, now)) {
      ++hidden;
      continue;
    }
    std::string in_phase = s.history.empty() ? since(item.metadata.creation_timestamp, now)
                                             : since(s.history.back().time, now);
    rows.push_back({item.spec.node_name, phase_name(s.phase), in_phase, item.spec.profile_ref.name,
                    detail_of(item, now)});
    if (wide)
      rows.back().insert(rows.back().end() - 1,
                         {item.metadata.name, s.started_at.empty() ? "-" : s.started_at,
                          s.completed_at.empty() ? "-" : s.completed_at});
  }
  out << "\n" << table(rows);
  if (hidden > 0)
    out << "(" << hidden << " Succeeded node" << (hidden > 1 ? "s" : "")
        << " not shown; --all lists them)\n";
  return protocol::printable(out.str(), rendered);
}

std::string render_plans(const std::vector<protocol::partitioning_plan>& plans,
                         protocol::wall_clock::time_point now, bool wide) {
  if (plans.empty())
    return "No PartitioningPlans.\n";
  std::vector<std::vector<std::string>> rows{
      {"PLAN", "PHASE", "SUCCEEDED", "FAILED", "IN FLIGHT", "SOAKING", "WINDOW", "CANARY", "AGE"}};
  if (wide)
    rows[0].insert(rows[0].end(), {"MAXPARALLEL", "MAXUNAVAILABLE", "PAUSED", "DRYRUN"});
  for (const auto& p : plans) {
    const auto& n = p.status.nodes;
    int in_flight = n.draining + n.applying + n.waiting_operator + n.verifying;
    rows.push_back({p.metadata.name, plan_phase_name(p.status.phase),
                    std::to_string(n.succeeded) + "/" + std::to_string(n.total),
                    std::to_string(n.failed), std::to_string(in_flight), std::to_string(n.soaking),
                    window_column(p.status.window), canary_column(p.status.canary),
                    since(p.metadata.creation_timestamp, now)});
    if (wide)
      rows.back().insert(rows.back().end(),
                         {std::to_string(p.spec.rollout.max_parallel),
                          p.spec.rollout.max_unavailable.to_string(),
                          p.spec.paused ? "true" : "false", p.spec.dry_run ? "true" : "false"});
  }
  return table(rows);
}

bool watch_is_over(const protocol::partitioning_plan& plan) {
  return plan.status.phase == protocol::plan_phase::completed &&
         plan.status.observed_generation >= plan.metadata.generation;
}

std::string log_line(protocol::wall_clock::time_point at, long pid, const std::string& message) {
  // klog's header: severity, MMDD, time with microseconds, pid, source.
  const std::string stamp = protocol::format_time(at);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(at.time_since_epoch()).count() %
      1000000;
  char head[64];
  std::snprintf(head, sizeof head, "I%c%c%c%c %s.%06lld %ld", stamp[5], stamp[6], stamp[8],
                stamp[9], stamp.substr(11, 8).c_str(), static_cast<long long>(micros), pid);
  return std::string(head) + " kubectl-partitioning] " + protocol::printable(message);
}

std::string request_log_line(protocol::wall_clock::time_point at, long pid,
                             const std::string& method, const std::string& url, int code,
                             std::chrono::microseconds latency) {
  std::string status;
  if (code > 0) {
    status = std::to_string(code);
    if (const char* reason = http_reason(code))
      status += std::string(" ") + reason;
    status += " ";
  }
  return log_line(
      at, pid,
      method + " " + url + " " + status + "in " +
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(latency).count()) +
          " milliseconds");
}

std::string pause_patch(bool paused) {
  return std::string("{\"spec\":{\"paused\":") + (paused ? "true" : "false") + "}}";
}

std::optional<protocol::node_partitioning>
item_of_node(const protocol::partitioning_plan& plan,
             const std::vector<protocol::node_partitioning>& all, const std::string& node) {
  std::map<std::string, const protocol::node_partitioning*> by_name;
  for (const auto& item : all)
    by_name.emplace(item.metadata.name, &item);
  if (const auto* found = controller::find_item(by_name, plan, node))
    return *found;
  return std::nullopt;
}

std::optional<std::string> retry_refusal(const protocol::node_partitioning& item) {
  if (item.metadata.deletion_timestamp)
    return "it is being deleted";
  if (item.status.phase != node_phase::failed)
    return "it is " + phase_name(item.status.phase) + ", not Failed; only a Failed node is retried";
  return std::nullopt;
}

std::optional<std::string> retry_note(const protocol::node_partitioning& item,
                                      protocol::wall_clock::time_point now) {
  const auto& until = item.status.dcm_may_change_until;
  const auto at = until.empty() ? std::nullopt : protocol::parse_time(until);
  if (!at || *at <= now)
    return std::nullopt;
  return "DCM may still retry the failed profile until " + until +
         ": the node keeps the amd-dcm taint (and its cordon) until then, or until DCM says "
         "it is done, whatever the new run does; the new run sets the profile label again "
         "and waits for DCM's answer";
}

std::string retry_patch(protocol::wall_clock::time_point now) {
  return std::string("{\"metadata\":{\"annotations\":{\"") + controller::retry_annotation +
         "\":\"" + protocol::format_time(now) + "\"}}}";
}

std::optional<std::string> promote_refusal(const protocol::partitioning_plan& plan) {
  if (plan.metadata.deletion_timestamp)
    return "it is being deleted";
  if (!plan.spec.rollout.canary)
    return "it has no canary (spec.rollout.canary is not set)";
  if (plan.status.observed_generation < plan.metadata.generation)
    return "the operator has not yet seen generation " + std::to_string(plan.metadata.generation) +
           " of it; try again once it has";
  const auto& c = plan.status.canary;
  if (!c || !c->phase)
    return "the operator has not reported its canary yet (no status.canary)";
  const std::string said = c->message.empty() ? "" : " (" + one_line(c->message) + ")";
  switch (*c->phase) {
  case canary_phase::awaiting_promotion:
    if (c->key.empty())
      return "status.canary has no key to promote";
    return std::nullopt;
  case canary_phase::selecting:
    return "its canary is Selecting, not AwaitingPromotion: its nodes are not chosen yet" + said;
  case canary_phase::in_progress:
    return "its canary is InProgress, not AwaitingPromotion: it has not finished its soak" + said;
  case canary_phase::passed:
    return "its canary already passed" + (c->passed_at.empty() ? "" : " at " + c->passed_at) +
           "; there is nothing to promote";
  case canary_phase::failed:
    return "its canary is Failed, not AwaitingPromotion" + said;
  }
  return "its canary's phase is unknown";
}

std::string promote_patch(const std::string& promotion) {
  std::string value;
  for (char ch : promotion) {
    if (ch == '"' || ch == '\\') {
      value += '\\';
      value += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(ch));
      value += buf;
    } else {
      value += ch;
    }
  }
  return std::string("{\"metadata\":{\"annotations\":{\"") + protocol::promote_canary_annotation +
         "\":\"" + value + "\"}}}";
}

} // namespace gpu_partitioner::cli
