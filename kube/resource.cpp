#include "kube/resource.hpp"

#include <algorithm>

namespace gpu_partitioner::kube {

std::string resource::prefix() const {
  return group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
}

std::string resource::collection_path(const std::string& ns) const {
  if (namespaced && !ns.empty())
    return prefix() + "/namespaces/" + url_encode(ns) + "/" + plural;
  return prefix() + "/" + plural;
}

std::string resource::object_path(const std::string& ns, const std::string& name,
                                  const std::string& subresource) const {
  std::string path = collection_path(ns) + "/" + url_encode(name);
  if (!subresource.empty())
    path += "/" + subresource;
  return path;
}

namespace resources {
resource nodes() {
  return {"", "v1", "nodes", false};
}
resource pods() {
  return {"", "v1", "pods", true};
}
resource events() {
  return {"", "v1", "events", true};
}
resource config_maps() {
  return {"", "v1", "configmaps", true};
}
resource namespaces() {
  return {"", "v1", "namespaces", false};
}
resource service_accounts() {
  return {"", "v1", "serviceaccounts", true};
}
resource leases() {
  return {"coordination.k8s.io", "v1", "leases", true};
}
resource daemon_sets() {
  return {"apps", "v1", "daemonsets", true};
}
resource pod_disruption_budgets() {
  return {"policy", "v1", "poddisruptionbudgets", true};
}
resource resource_slices() {
  return {"resource.k8s.io", "v1", "resourceslices", false};
}
resource resource_claims() {
  return {"resource.k8s.io", "v1", "resourceclaims", true};
}
resource device_classes() {
  return {"resource.k8s.io", "v1", "deviceclasses", false};
}
resource device_taint_rules() {
  return {"resource.k8s.io", "v1alpha3", "devicetaintrules", false};
}
} // namespace resources

std::string url_encode(const std::string& text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0xF]);
    }
  }
  return out;
}

query& query::add(const std::string& key, const std::string& value) {
  if (!value.empty())
    params_.emplace_back(key, value);
  return *this;
}

query& query::add(const std::string& key, long long value) {
  params_.emplace_back(key, std::to_string(value));
  return *this;
}

std::string query::str() const {
  std::string out;
  for (const auto& [k, v] : params_) {
    out += out.empty() ? '?' : '&';
    out += url_encode(k) + "=" + url_encode(v);
  }
  return out;
}

std::string format_selector(const std::vector<label_requirement>& requirements) {
  std::string out;
  for (const auto& r : requirements) {
    if (!out.empty())
      out += ',';
    std::vector<std::string> values = r.values;
    std::sort(values.begin(), values.end());
    auto joined = [&] {
      std::string s;
      for (const auto& v : values)
        s += (s.empty() ? "" : ",") + v;
      return s;
    };
    using op = label_requirement::op;
    switch (r.operation) {
    case op::equals:
      out += r.key + "=" + (values.empty() ? std::string{} : values.front());
      break;
    case op::not_equals:
      out += r.key + "!=" + (values.empty() ? std::string{} : values.front());
      break;
    case op::in:
      out += r.key + " in (" + joined() + ")";
      break;
    case op::not_in:
      out += r.key + " notin (" + joined() + ")";
      break;
    case op::exists:
      out += r.key;
      break;
    case op::does_not_exist:
      out += "!" + r.key;
      break;
    }
  }
  return out;
}

} // namespace gpu_partitioner::kube
