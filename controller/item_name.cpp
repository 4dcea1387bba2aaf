#include "controller/item_name.hpp"

#include "protocol/codec/pattern.hpp"
#include "protocol/desired_hash.hpp"

#include <unordered_map>

namespace gpu_partitioner::controller {

namespace {

// The longest object name Kubernetes accepts (a DNS subdomain).
constexpr std::size_t name_limit = 253;
constexpr std::size_t hash_digits = 10;

// The first hash_digits of SHA-256 of `key`, remembered: a plan's supervisor looks up
// the items of all its nodes on every view it handles, and at 5,000 nodes hashing each
// name afresh (OpenSSL's EVP_Digest looks the algorithm up on every call) kept a core
// busy. Per thread, as the callers run on the actor system's threads side by side; a few
// hundred KiB for 5,000 nodes, and forgotten wholesale past a bound, so plans and nodes
// that come and go cannot grow it forever.
const std::string& short_hash(const std::string& key) {
  constexpr std::size_t memo_limit = 1 << 16;
  thread_local std::unordered_map<std::string, std::string> memo;
  if (auto it = memo.find(key); it != memo.end())
    return it->second;
  if (memo.size() >= memo_limit)
    memo.clear();
  return memo.emplace(key, protocol::sha256_hex(key).substr(0, hash_digits)).first->second;
}

} // namespace

std::map<std::string, std::string> item_labels_of(const std::string& plan,
                                                  const std::string& node) {
  std::map<std::string, std::string> labels;
  if (protocol::codec::is_label_value(plan))
    labels[item_plan_label] = plan;
  if (protocol::codec::is_label_value(node))
    labels[item_node_label] = node;
  return labels;
}

bool labels_missing(const protocol::node_partitioning& item,
                    const std::map<std::string, std::string>& want) {
  for (const auto& [key, value] : want) {
    auto it = item.metadata.labels.find(key);
    if (it == item.metadata.labels.end() || it->second != value)
      return true;
  }
  return false;
}

item_names item_names_of(const std::string& plan, const std::string& node) {
  item_names out;
  out.plain = plan + "-" + node;
  std::string base = out.plain;
  if (base.size() > name_limit - 1 - hash_digits)
    base.resize(name_limit - 1 - hash_digits);
  // A cut may end a DNS label (".") or leave a dash: the suffix's label must start with a
  // letter or digit.
  while (!base.empty() && (base.back() == '-' || base.back() == '.'))
    base.pop_back();
  out.derived = base + "-" + short_hash(plan + "/" + node);
  return out;
}

bool is_item_of(const protocol::node_partitioning& item, const protocol::partitioning_plan& plan,
                const std::string& node) {
  const auto& ref = item.spec.plan_ref;
  return ref.name == plan.metadata.name && item.spec.node_name == node &&
         (ref.uid.empty() || plan.metadata.uid.empty() || ref.uid == plan.metadata.uid);
}

} // namespace gpu_partitioner::controller
