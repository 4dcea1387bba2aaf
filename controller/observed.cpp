#include "controller/observed.hpp"

#include <algorithm>

namespace gpu_partitioner::controller {

bool from_dcms_namespace(const dcm_event& e, const std::string& dcm_namespace) {
  return e.ns == dcm_namespace && e.about_kind == "Pod" && e.about_namespace == dcm_namespace;
}

std::string dcm_event_node(const dcm_event& e, const std::string& dcm_namespace,
                           const pod_info* pod) {
  if (!from_dcms_namespace(e, dcm_namespace) || pod == nullptr || pod->mirror ||
      pod->ns != dcm_namespace || pod->name != e.about_name || pod->node_name.empty())
    return {};
  return e.host.empty() || e.host == pod->node_name ? pod->node_name : std::string{};
}

bool is_dcm_pod(const pod_info& p, const std::string& dcm_namespace) {
  if (p.ns != dcm_namespace)
    return false;
  auto is = [&](const char* key, const char* value) {
    const auto it = p.labels.find(key);
    return it != p.labels.end() && it->second == value;
  };
  return is("app.kubernetes.io/name", "device-config-manager") ||
         is("app", "amdgpu-device-config-manager");
}

bool dcm_reader_changed(const pod_info* was, const pod_info* now,
                        const std::string& dcm_namespace) {
  auto reads = [&](const pod_info* p) {
    return p && is_dcm_pod(*p, dcm_namespace)
               ? std::optional<std::string>(p->node_name + "/" +
                                            p->dcm_config_mount.value_or("<nothing>"))
               : std::nullopt;
  };
  return reads(was) != reads(now);
}

bool node_info::has_dcm_taint() const {
  return std::any_of(taints.begin(), taints.end(), [](const taint& t) {
    return t.key == dcm_taint_key && t.effect == "NoExecute";
  });
}

std::string node_info::label(const std::string& key) const {
  auto it = labels.find(key);
  return it == labels.end() ? std::string{} : it->second;
}

bool node_info::is_control_plane() const {
  // Strings made once: plans' resolutions ask this of every node, for every plan.
  static const std::string roles[] = {"node-role.kubernetes.io/control-plane",
                                      "node-role.kubernetes.io/master"};
  // kubeadm sets both the label and the taint; some clusters keep only one of them.
  for (const auto& role : roles) {
    if (labels.count(role) > 0)
      return true;
    if (std::any_of(taints.begin(), taints.end(), [&](const taint& t) { return t.key == role; }))
      return true;
  }
  return false;
}

bool tolerates(const toleration& t, const taint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect)
    return false;
  // An empty key with Exists tolerates everything.
  if (t.key.empty())
    return t.op == "Exists";
  if (t.key != taint.key)
    return false;
  if (t.op == "Exists")
    return true;
  return t.value == taint.value;
}

void resolve_daemon_set_owner(pod_info& p, const daemon_set_uids& daemon_sets) {
  if (!p.daemon_set)
    return;
  const auto it = daemon_sets.find(p.daemon_set_key);
  if (it != daemon_sets.end() && it->second == p.daemon_set_uid)
    return;
  p.daemon_set = false;
  p.dra_driver = false;
  p.unmanaged = true;
}

bool tolerates_dcm_without_bound(const toleration& t) {
  const taint dcm{dcm_taint_key, dcm_taint_value, "NoExecute"};
  return !t.bounded && tolerates(t, dcm);
}

bool pod_info::tolerates_dcm_taint() const {
  return tolerates_dcm ||
         std::any_of(tolerations.begin(), tolerations.end(), tolerates_dcm_without_bound);
}

bool pdb_info::covers(const pod_info& pod) const {
  if (selects_nothing || pod.ns != ns)
    return false;
  for (const auto& [k, v] : match_labels) {
    auto it = pod.labels.find(k);
    if (it == pod.labels.end() || it->second != v)
      return false;
  }
  for (const auto& r : match_expressions) {
    auto it = pod.labels.find(r.key);
    const bool has = it != pod.labels.end();
    const bool in =
        has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    if ((r.op == "In" && !in) || (r.op == "NotIn" && in) || (r.op == "Exists" && !has) ||
        (r.op == "DoesNotExist" && has))
      return false;
  }
  return true;
}

} // namespace gpu_partitioner::controller
