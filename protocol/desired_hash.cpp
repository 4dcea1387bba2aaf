#include "protocol/desired_hash.hpp"

#include "protocol/canonical_json.hpp"
#include "protocol/codec/json_encode.hpp"

#include <openssl/evp.h>

#include <rapidjson/document.h>

#include <stdexcept>
#include <string_view>

namespace gpu_partitioner::protocol {

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  // Fails only when OpenSSL cannot allocate; there is no hash to return then.
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("EVP_Digest(sha256) failed");
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (unsigned int i = 0; i < size; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xf];
  }
  return out;
}

std::string desired_state_json(const partitioning_profile_spec& profile, const drain_policy& drain,
                               const plan_verification& verification) {
  rapidjson::Document doc;
  auto& a = doc.GetAllocator();
  doc.SetObject();
  rapidjson::Value value;
  codec::encode_value(profile, value, a);
  doc.AddMember("profile", value, a);
  codec::encode_value(drain, value, a);
  doc.AddMember("drainPolicy", value, a);
  codec::encode_value(verification, value, a);
  doc.AddMember("verification", value, a);
  // Our own encoding is a few levels deep: canonical_json cannot fail here.
  return canonical_json(doc).value();
}

std::string desired_hash(const partitioning_profile_spec& profile, const drain_policy& drain,
                         const plan_verification& verification) {
  return "sha256:" + sha256_hex(desired_state_json(profile, drain, verification));
}

std::string desired_hash(const partitioning_profile& profile, const drain_policy& drain,
                         const plan_verification& verification) {
  partitioning_profile_spec spec = profile.spec;
  spec.operator_payload.profile_name = dcm_profile_name(profile);
  // A class for workloads to ask by is no change of the nodes.
  spec.device_class_name.reset();
  return desired_hash(spec, drain, verification);
}

std::string payload_hash(std::string_view payload) {
  const auto canonical = canonical_json(payload);
  return "sha256:" + sha256_hex(canonical ? std::string_view(canonical.value()) : payload);
}

} // namespace gpu_partitioner::protocol
