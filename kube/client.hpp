#pragma once

#include "kube/error.hpp"
#include "kube/http_client.hpp"
#include "kube/resource.hpp"

#include <rapidjson/document.h>

#include <map>
#include <optional>
#include <string>

namespace gpu_partitioner::kube {

struct list_options {
  std::string label_selector;
  std::string field_selector;
  /// Page size; 0 asks for everything at once.
  long long limit = 500;
  std::string continue_token;
  /// "" reads the latest state from etcd; "0" lets the server answer from its cache.
  std::string resource_version;
};

struct delete_options {
  /// Delete only if the object still has this uid / resourceVersion (a Conflict otherwise).
  std::string precondition_uid;
  std::string precondition_resource_version;
  /// "Foreground", "Background" or "Orphan"; empty leaves the server's default.
  std::string propagation_policy;
  std::optional<long long> grace_period_seconds;
};

enum class patch_type {
  /// application/merge-patch+json (RFC 7386)
  merge,
  /// application/json-patch+json (RFC 6902), with `test` operations for preconditions
  json,
  /// application/strategic-merge-patch+json (core kinds only)
  strategic,
  /// application/apply-patch+yaml: server-side apply (JSON is valid YAML)
  apply,
};

struct patch_options {
  /// Required for server-side apply; recorded in managedFields for other patches.
  std::string field_manager;
  /// Server-side apply: take over fields that another manager owns.
  bool force = false;
  /// "status" to patch the status subresource.
  std::string subresource;
};

/// The outcome of one eviction request.
enum class eviction_outcome {
  /// The pod is being deleted.
  evicted,
  /// The pod was already gone (404).
  gone,
  /// A PodDisruptionBudget does not allow it now (429); `message` is the server's.
  blocked_by_pdb,
};

struct eviction_result {
  eviction_outcome outcome = eviction_outcome::evicted;
  std::string message;
};

/// Typed access to API objects as JSON documents. Decoding into typed structs is the
/// caller's business (protocol/ for ours). One client per thread, like http_client.
class client {
public:
  explicit client(http_client& http) : http_(http) {}

  result<rapidjson::Document> get(const resource& r, const std::string& ns, const std::string& name,
                                  const std::string& subresource = {});

  /// One page; `metadata.continue` of the answer asks for the next.
  result<rapidjson::Document> list_page(const resource& r, const std::string& ns,
                                        const list_options& options);

  /// Every page, concatenated into one list document ("items" holds all of them). Its
  /// metadata.resourceVersion is the first page's, as a watch from it must resume there.
  result<rapidjson::Document> list(const resource& r, const std::string& ns,
                                   list_options options = {});

  result<rapidjson::Document> create(const resource& r, const std::string& ns,
                                     const std::string& body);

  /// PUT: `body` carries metadata.resourceVersion; a stale one is a Conflict.
  result<rapidjson::Document> update(const resource& r, const std::string& ns,
                                     const std::string& name, const std::string& body,
                                     const std::string& subresource = {});

  result<rapidjson::Document> patch(const resource& r, const std::string& ns,
                                    const std::string& name, patch_type type,
                                    const std::string& body, const patch_options& options = {});

  /// Server-side apply of a full intent (`body`), owned by `field_manager`.
  result<rapidjson::Document> apply(const resource& r, const std::string& ns,
                                    const std::string& name, const std::string& body,
                                    const std::string& field_manager, bool force = false);

  result<done> remove(const resource& r, const std::string& ns, const std::string& name,
                      const delete_options& options = {});

  /// Evicts a pod through policy/v1 Eviction. Blocked by a PDB and already gone are
  /// outcomes, not errors; anything else is an error.
  result<eviction_result> evict(const std::string& ns, const std::string& pod,
                                const delete_options& options = {});

  /// Whether the caller may `action` (a verb) the resource (group "" for the core group;
  /// ns "" for every namespace), as a SelfSubjectAccessReview answers; any user may ask.
  result<bool> may(const std::string& action, const std::string& group, const std::string& resource,
                   const std::string& ns = {});

  http_client& http() { return http_; }

private:
  result<rapidjson::Document> send(http_request req);

  http_client& http_;
};

/// Serializes a JSON value compactly.
std::string to_json(const rapidjson::Value& value);

/// Reads a string member, or "" if absent or not a string.
std::string string_at(const rapidjson::Value& object, const char* member);
/// The same of an object found by find_path ("" when it was not found).
std::string string_at(const rapidjson::Value* object, const char* member);

/// The string members of an object (labels, annotations, data); integers are written
/// out; a missing or non-object value gives an empty map.
std::map<std::string, std::string> string_map(const rapidjson::Value* object);
/// The same, keeping at most `limit` entries: those with the first keys in their order.
std::map<std::string, std::string> string_map(const rapidjson::Value* object, std::size_t limit);

/// A quantity that is a whole number ("8", or 8); 0 when absent or not a number.
long long whole_number(const rapidjson::Value* value);

/// Follows a path of members ("metadata", "name"); nullptr if any step is missing.
const rapidjson::Value* find_path(const rapidjson::Value& root,
                                  std::initializer_list<const char*> path);

} // namespace gpu_partitioner::kube
