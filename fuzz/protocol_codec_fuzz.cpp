// The CRD codecs: any text decodes to a PartitioningProfile, PartitioningPlan and
// NodePartitioning or to an error naming a path and a problem; what decodes encodes to
// text that decodes to an equal object and encodes to the same text again; desiredHash
// of what decodes is well formed and survives the round trip.

#include "fuzz/check.hpp"
#include "protocol/desired_hash.hpp"
#include "protocol/json.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

namespace gp = gpu_partitioner::protocol;

void check_hash(const std::string& hash, const std::string& text) {
  FUZZ_CHECK(hash.size() == 71 && hash.rfind("sha256:", 0) == 0 &&
                 hash.find_first_not_of("0123456789abcdef", 7) == std::string::npos,
             "desiredHash " + hash + " of " + fuzz::shown(text));
}

void check_derived(const gp::partitioning_profile& profile, const std::string& text) {
  check_hash(gp::desired_hash(profile, gp::drain_policy{}, gp::plan_verification{}), text);
}

void check_derived(const gp::partitioning_plan& plan, const std::string& text) {
  gp::partitioning_profile profile;
  profile.metadata.name = "p";
  profile.spec.operator_payload.name = "payload";
  profile.spec.operator_payload.namespace_ = "ns";
  check_hash(gp::desired_hash(profile, plan.spec.rollout.drain, plan.spec.verification), text);
}

void check_derived(const gp::node_partitioning&, const std::string&) {}

template <class T>
void round_trip(const std::string& text) {
  auto first = gp::from_json<T>(text);
  if (!first.ok()) {
    FUZZ_CHECK(!first.error().problem.empty(),
               "a refusal without a problem (path " + first.error().path + ")");
    return;
  }
  const std::string encoded = gp::to_json(first.value());
  auto second = gp::from_json<T>(encoded);
  FUZZ_CHECK(second.ok(),
             std::string(T::kind_name) +
                 ": the encoded form is refused: " + (second.ok() ? "" : second.error().message()) +
                 "\n  input:   " + fuzz::shown(text) + "\n  encoded: " + fuzz::shown(encoded));
  FUZZ_CHECK(second.value() == first.value(),
             std::string(T::kind_name) + ": decode(encode(x)) != x\n  input:   " +
                 fuzz::shown(text) + "\n  encoded: " + fuzz::shown(encoded) +
                 "\n  again:   " + fuzz::shown(gp::to_json(second.value())));
  const std::string again = gp::to_json(second.value());
  FUZZ_CHECK(again == encoded, std::string(T::kind_name) + ": encoding is not stable\n  " +
                                   fuzz::shown(encoded) + "\n  " + fuzz::shown(again));
  check_derived(first.value(), text);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  round_trip<gp::partitioning_profile>(text);
  round_trip<gp::partitioning_plan>(text);
  round_trip<gp::node_partitioning>(text);
  return 0;
}
