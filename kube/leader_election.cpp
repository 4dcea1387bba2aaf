#include "kube/leader_election.hpp"

#include "kube/event_recorder.hpp"
#include "protocol/timestamp.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <thread>
#include <unistd.h>

namespace gpu_partitioner::kube {

const char* to_string(election_action action) {
  switch (action) {
  case election_action::wait:
    return "wait";
  case election_action::create:
    return "create";
  case election_action::take_over:
    return "take_over";
  case election_action::renew:
    return "renew";
  case election_action::step_down:
    return "step_down";
  }
  return "wait";
}

void observe_lease(election_state& state, const lease_record& lease,
                   election_state::clock::time_point now) {
  const bool changed = !state.observed || lease.holder != state.observed_holder ||
                       lease.renew_time != state.observed_renew_time ||
                       lease.resource_version != state.observed_resource_version;
  if (changed) {
    state.observed = true;
    state.observed_holder = lease.holder;
    state.observed_renew_time = lease.renew_time;
    state.observed_resource_version = lease.resource_version;
    state.observed_at = now;
  }
}

election_action decide_election(const election_state& state, const lease_record& lease,
                                election_state::clock::time_point now,
                                const election_config& config) {
  if (state.leading && now - state.last_renewed >= config.renew_deadline)
    return election_action::step_down;
  if (!lease.exists)
    return election_action::create;
  if (lease.holder == config.identity)
    return election_action::renew;
  if (state.leading)
    // Someone else holds it although we thought we led: we lost it.
    return election_action::step_down;
  if (lease.holder.empty())
    return election_action::take_over;
  // The holder's own duration if it set one, else ours. The API's field is an int32: a
  // larger one (a hostile server) is cut to that, which in nanoseconds cannot overflow.
  const auto duration =
      lease.lease_duration_seconds > 0
          ? std::chrono::seconds(std::min<long long>(lease.lease_duration_seconds,
                                                     std::numeric_limits<std::int32_t>::max()))
          : config.lease_duration;
  if (state.observed && now - state.observed_at >= duration)
    return election_action::take_over;
  return election_action::wait;
}

election_state::clock::time_point lease_valid_until(const election_state& state,
                                                    const election_config& config) {
  if (!state.leading)
    return election_state::clock::time_point::min();
  return state.last_renewed + config.renew_deadline;
}

namespace {

long long int_at(const rapidjson::Value& v, const char* k) {
  auto it = v.FindMember(k);
  return it != v.MemberEnd() && it->value.IsInt64() ? it->value.GetInt64() : 0;
}

lease_record decode_lease(const rapidjson::Value& doc) {
  lease_record r;
  r.exists = true;
  if (const auto* meta = find_path(doc, {"metadata"}))
    r.resource_version = string_at(*meta, "resourceVersion");
  if (const auto* spec = find_path(doc, {"spec"}); spec != nullptr && spec->IsObject()) {
    r.holder = string_at(*spec, "holderIdentity");
    r.lease_duration_seconds = int_at(*spec, "leaseDurationSeconds");
    r.acquire_time = string_at(*spec, "acquireTime");
    r.renew_time = string_at(*spec, "renewTime");
    r.transitions = int_at(*spec, "leaseTransitions");
  }
  return r;
}

} // namespace

std::string default_identity() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  std::mt19937_64 rng(std::random_device{}());
  char suffix[20];
  std::snprintf(suffix, sizeof suffix, "%08llx",
                static_cast<unsigned long long>(rng() & 0xffffffffULL));
  return std::string(host) + "_" + std::to_string(::getpid()) + "_" + suffix;
}

leader_elector::leader_elector(client& api, election_config config)
    : api_(api), config_(std::move(config)),
      valid_until_(std::make_shared<std::atomic<election_state::clock::rep>>(
          election_state::clock::time_point::min().time_since_epoch().count())) {}

std::function<bool()> leader_elector::write_gate() const {
  return [until = valid_until_] {
    return election_state::clock::now().time_since_epoch().count() < until->load();
  };
}

result<lease_record> leader_elector::read() {
  auto doc = api_.get(resources::leases(), config_.lease_namespace, config_.lease_name);
  if (!doc) {
    if (doc.error().kind == error_kind::not_found)
      return lease_record{};
    return doc.error();
  }
  return decode_lease(doc.value());
}

result<lease_record> leader_elector::write(const lease_record& base, bool take, bool release) {
  const auto now = protocol::format_time_micro(std::chrono::system_clock::now());
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("apiVersion");
  w.String("coordination.k8s.io/v1");
  w.Key("kind");
  w.String("Lease");
  w.Key("metadata");
  w.StartObject();
  w.Key("name");
  w.String(config_.lease_name.c_str());
  w.Key("namespace");
  w.String(config_.lease_namespace.c_str());
  if (base.exists) {
    w.Key("resourceVersion");
    w.String(base.resource_version.c_str());
  }
  w.EndObject();
  w.Key("spec");
  w.StartObject();
  w.Key("holderIdentity");
  w.String(release ? "" : config_.identity.c_str());
  w.Key("leaseDurationSeconds");
  w.Int64(release ? 1 : config_.lease_duration.count());
  w.Key("acquireTime");
  w.String(take || !base.exists ? now.c_str() : base.acquire_time.c_str());
  w.Key("renewTime");
  w.String(now.c_str());
  w.Key("leaseTransitions");
  w.Int64(base.transitions + (take && base.exists ? 1 : 0));
  w.EndObject();
  w.EndObject();
  auto answer = base.exists
                    ? api_.update(resources::leases(), config_.lease_namespace, config_.lease_name,
                                  buffer.GetString())
                    : api_.create(resources::leases(), config_.lease_namespace, buffer.GetString());
  if (!answer)
    return answer.error();
  return decode_lease(answer.value());
}

void leader_elector::run(const std::atomic<bool>& stop, const std::function<void()>& on_started,
                         const std::function<void()>& on_stopped) {
  using clock = election_state::clock;
  lease_record last;
  auto publish = [&] {
    valid_until_->store(lease_valid_until(state_, config_).time_since_epoch().count());
  };
  auto stop_leading = [&] {
    if (state_.leading) {
      state_.leading = false;
      publish();
      leading_.store(false);
      if (on_stopped)
        on_stopped();
    }
  };
  while (!stop.load()) {
    auto lease = read();
    const auto now = clock::now();
    if (lease) {
      last = lease.value();
      observe_lease(state_, last, now);
      observed_ = true;
    }
    // A failed read decides from what we saw last, so a leader cut off from the API
    // server still steps down at its deadline.
    const election_action action = decide_election(state_, last, now, config_);
    switch (action) {
    case election_action::step_down:
      stop_leading();
      break;
    case election_action::create:
    case election_action::take_over:
    case election_action::renew: {
      if (!lease)
        break;
      auto written = write(last, action != election_action::renew, false);
      if (written) {
        last = written.value();
        observe_lease(state_, last, clock::now());
        state_.last_renewed = now;
        if (!state_.leading) {
          state_.leading = true;
          publish(); // writes are let through before the controllers start
          leading_.store(true);
          if (on_started)
            on_started();
        }
      }
      break;
    }
    case election_action::wait:
      break;
    }
    publish();
    const auto until = clock::now() + config_.retry_period;
    while (!stop.load() && clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (state_.leading) {
    // Hand the lease back so a successor need not wait for it to expire.
    if (config_.release_on_stop)
      if (auto current = read(); current && current->holder == config_.identity)
        (void)write(current.value(), false, true);
    stop_leading();
  }
}

} // namespace gpu_partitioner::kube
