#pragma once

#include "protocol/resource_version.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpu_partitioner::kube {

/// A kind of object as the API serves it: group ("" for core), version, plural name,
/// and whether it lives in namespaces.
struct resource {
  std::string group;
  std::string version;
  std::string plural;
  bool namespaced = false;

  /// "/api/v1" or "/apis/<group>/<version>".
  std::string prefix() const;
  /// The collection: ".../namespaces/<ns>/<plural>", or ".../<plural>" for cluster-scoped
  /// resources and for namespaced ones listed across all namespaces (`ns` empty).
  std::string collection_path(const std::string& ns = {}) const;
  /// One object, optionally a subresource of it ("status", "eviction").
  std::string object_path(const std::string& ns, const std::string& name,
                          const std::string& subresource = {}) const;
};

/// Core and built-in resources the client's own operations use.
namespace resources {
resource nodes();
resource pods();
resource daemon_sets();
resource events();
resource config_maps();
resource namespaces();
resource service_accounts();
resource leases();
resource pod_disruption_budgets();
/// Dynamic Resource Allocation (resource.k8s.io/v1, GA in 1.34).
resource resource_slices();
resource resource_claims();
resource device_classes();
/// Alpha in 1.35 (the DRADeviceTaintRules gate and resource.k8s.io/v1alpha3 served).
resource device_taint_rules();
} // namespace resources

using protocol::compare_resource_versions;

/// Percent-encodes a query component (RFC 3986 unreserved characters pass as they are).
std::string url_encode(const std::string& text);

/// Builds "?a=1&b=x" with every value encoded; empty values are left out.
class query {
public:
  query& add(const std::string& key, const std::string& value);
  query& add(const std::string& key, long long value);
  std::string str() const;

private:
  std::vector<std::pair<std::string, std::string>> params_;
};

/// One requirement of a label selector, in the API server's string syntax.
struct label_requirement {
  enum class op { equals, not_equals, in, not_in, exists, does_not_exist };
  std::string key;
  op operation = op::equals;
  std::vector<std::string> values;
};

/// Writes a selector in the syntax of `labelSelector=`: "a=b,c!=d,e in (f,g),h,!i".
/// Values are sorted inside in/notin for a stable string.
std::string format_selector(const std::vector<label_requirement>& requirements);

} // namespace gpu_partitioner::kube
