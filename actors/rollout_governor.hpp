#pragma once

#include "actors/messages.hpp"

#include <caf/all.hpp>

#include <string>
#include <vector>

namespace gpu_partitioner::actors {

/// What the governor needs of a worker: a place to send its grant.
using grant_receiver = caf::typed_actor<caf::reacts_to<grant_atom>>;

/// The RolloutGovernor of one plan (controller/rollout_governor decides; this actor keeps
/// the books). Its supervisor sends the plan's limits and item names; each worker reports
/// where its item stands and receives `grant_atom` when a drain token is free.
using governor_actor = caf::typed_actor<
    /// The plan's limits, its selected items, those not created yet, which of those (and
    /// of the next) are on nodes that are unavailable already, and those that cannot be
    /// made now (their create fails): counted as the absent are, they hold back no turn.
    caf::reacts_to<limits_atom, controller::rollout_limits, std::vector<std::string>,
                   std::vector<std::string>, std::vector<std::string>, std::vector<std::string>>,
    /// Where an item stands, and the worker to grant a token to.
    caf::reacts_to<report_atom, std::string, controller::governor_node, grant_receiver>>;

/// The governor monitors each worker that reports. A worker stopped by its supervisor
/// (exit reason user_shutdown: its item is gone) takes its item out of the books and its
/// token back; one that failed leaves its token held (its node may be mid-drain) until the
/// worker started in its place reports.
governor_actor::behavior_type rollout_governor_actor(governor_actor::pointer self,
                                                     std::string plan);

} // namespace gpu_partitioner::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(gpu_partitioner::actors::grant_receiver)
