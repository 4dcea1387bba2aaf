// Succeeded: the node goes back to service, and is watched through its soak.

#include "controller/detail/node_steps.hpp"
#include "controller/verification.hpp"

#include "controller/soak.hpp"

#include <algorithm>

namespace gpu_partitioner::controller::detail {

namespace {

// The soak of this success was found healthy at its end: what happens after is not its.
bool soak_passed(const protocol::node_partitioning_status& st) {
  return std::any_of(st.conditions.begin(), st.conditions.end(), [](const auto& c) {
    return c.type == node_condition::soaked && c.status == condition_status::true_ &&
           c.reason == "Soaked";
  });
}

// spec.soakSeconds after a success that changed the node: it holds its token while it
// stays verified and healthy, and fails (left in service, as it is) if it does not. It
// ends with a look at the node, whenever that comes: an operator that was down when the
// soak ran out looks first, then declares it passed.
void soak(const node_inputs& in, status_editor& s, node_step& out) {
  if (in.item.spec.soak_seconds.value_or(0) <= 0) {
    s.drop_condition(node_condition::soaked);
    return;
  }
  protocol::node_partitioning current = in.item;
  current.status = s.status;
  const auto end = soak_end(current);
  if (!end) {
    s.condition(node_condition::soaked, true, "NothingToSoak",
                "the node was already in the target state");
    return;
  }
  if (in.now >= *end && soak_passed(s.status))
    return;
  if (const auto problem = soak_problem(in, dcm_events_until(s.status)); !problem.empty()) {
    s.condition(node_condition::soaked, false, problem.reason, problem.message);
    const std::string why = "during its soak: " + problem.text();
    s.error(why);
    s.enter(node_phase::failed, "SoakFailed", why + "; the node is left in service as it is", true);
    out.events.push_back({true, "Warning", "SoakFailed", why});
    return;
  }
  if (in.now >= *end) {
    s.condition(node_condition::soaked, true, "Soaked",
                "verified and healthy for " + std::to_string(*in.item.spec.soak_seconds) + " s");
    return;
  }
  s.condition(node_condition::soaked, false, "Soaking",
              "watched until " + protocol::format_time(*end) +
                  ": Ready, verified, no crash-looping GPU pod, no new DCM failure");
  out.in_flight = true;
  out.soaking = true;
  out.requeue = std::chrono::duration_cast<std::chrono::milliseconds>(*end - in.now) + 1ms;
}

} // namespace

void on_succeeded(const node_inputs& in, status_editor& s, node_step& out) {
  if (s.status.observed_hash != in.item.spec.desired_hash) {
    s.enter(node_phase::pending, "SpecChanged",
            "the desired profile or policy changed: re-running");
    out.requeue = 1ms;
    return;
  }
  if (payload_changed(in, s.status)) {
    s.enter(node_phase::pending, "PayloadChanged",
            "the payload of profile " + in.profile.name + " changed since the node ran (now " +
                in.profile.payload_hash + "): re-running");
    out.requeue = 1ms;
    return;
  }
  // A success recorded before payloads were: it ran the payload there is now, as far as
  // anyone knows, and a later edit is measured from here.
  if (s.status.observed_payload_hash.empty())
    s.status.observed_payload_hash = in.profile.payload_hash;
  // Finish returning the node: uncordon (unless an admin had cordoned it). A node that
  // was already in the target state was never taken.
  if (run_started(s.status) && restore_node(in, s, out, false)) {
    out.requeue = poll_interval;
    if (soak_end(in.item))
      out.in_flight = true; // its soak has not begun: the token stays
    return;
  }
  soak(in, s, out);
}

} // namespace gpu_partitioner::controller::detail
