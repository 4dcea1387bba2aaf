#pragma once

#include "protocol/drain_policy.hpp"
#include "protocol/partitioning_profile.hpp"
#include "protocol/plan_verification.hpp"

#include <string>
#include <string_view>

namespace gpu_partitioner::protocol {

/// Lowercase hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

/// What a node is asked to become: "sha256:" + lowercase hex SHA-256 of the canonical
/// JSON (canonical_json.hpp) of
///   {"drainPolicy": <drain>, "profile": <profile spec>, "verification": <verification>}
/// each encoded with defaults written out, so an omitted default and an explicit one
/// hash the same. A Succeeded node whose hash changes runs again (DESIGN.md section 3).
///
/// This form hashes the spec as stored: an absent operatorPayload.profileName stays
/// absent. Prefer the overload below when the profile object is at hand.
std::string desired_hash(const partitioning_profile_spec& profile, const drain_policy& drain,
                         const plan_verification& verification);

/// The canonical JSON desired_hash() hashes: to log, or to see why a hash changed.
std::string desired_state_json(const partitioning_profile_spec& profile, const drain_policy& drain,
                               const plan_verification& verification);

/// As above, with operatorPayload.profileName resolved to its default (the profile's
/// name), so that omitting it and writing the default give the same hash.
std::string desired_hash(const partitioning_profile& profile, const drain_policy& drain,
                         const plan_verification& verification);

/// What a payload is: "sha256:" + hex SHA-256 of its canonical JSON, so that an edit of
/// its layout or spacing is no new payload; text that is not JSON hashes as it is.
std::string payload_hash(std::string_view payload);

} // namespace gpu_partitioner::protocol
