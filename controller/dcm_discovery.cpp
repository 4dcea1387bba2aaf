#include "controller/dcm_discovery.hpp"

#include <cctype>

namespace gpu_partitioner::controller {

std::string dcm_version::text() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::optional<dcm_version> dcm_version_of_image(const std::string& image) {
  // The tag follows the last ':' after the last '/' (a registry's port comes before it),
  // and ends at a digest.
  std::string ref = image.substr(0, image.find('@'));
  const auto slash = ref.rfind('/');
  const auto colon = ref.rfind(':');
  if (colon == std::string::npos || (slash != std::string::npos && colon < slash))
    return std::nullopt;
  std::string tag = ref.substr(colon + 1);
  if (!tag.empty() && (tag[0] == 'v' || tag[0] == 'V'))
    tag.erase(0, 1);
  dcm_version v;
  int* parts[] = {&v.major, &v.minor, &v.patch};
  std::size_t i = 0;
  for (int n = 0; n < 3; ++n) {
    if (i >= tag.size() || !std::isdigit(static_cast<unsigned char>(tag[i]))) {
      if (n < 2) // at least MAJOR.MINOR
        return std::nullopt;
      break;
    }
    long value = 0;
    while (i < tag.size() && std::isdigit(static_cast<unsigned char>(tag[i])) && value < 100000)
      value = value * 10 + (tag[i++] - '0');
    *parts[n] = static_cast<int>(value);
    if (n < 2) {
      if (i < tag.size() && tag[i] == '.')
        ++i;
      else if (n == 0)
        return std::nullopt;
      else
        break;
    }
  }
  // What may follow: nothing, or a pre-release or build suffix.
  if (i < tag.size() && tag[i] != '-' && tag[i] != '+' && tag[i] != '_')
    return std::nullopt;
  return v;
}

node_dcm find_node_dcm(const std::vector<const pod_info*>& pods, const std::string& dcm_namespace) {
  std::vector<const pod_info*> live, leaving;
  for (const auto* p : pods)
    if (is_dcm_pod(*p, dcm_namespace) && !p->finished())
      (p->deleting ? leaving : live).push_back(p);
  const auto& found = live.empty() ? leaving : live;
  node_dcm out;
  if (found.empty())
    return out;
  auto named = [](const pod_info& p) { return p.ns + "/" + p.name; };
  auto mounts = [](const pod_info& p) {
    return !p.dcm_config_mount           ? std::string("nothing")
           : p.dcm_config_mount->empty() ? std::string("no ConfigMap")
                                         : "ConfigMap " + *p.dcm_config_mount;
  };
  const auto& p = *found.front();
  out.pod = named(p);
  out.running = p.phase == "Running" && !p.deleting;
  out.image = p.dcm_image;
  out.version = dcm_version_of_image(p.dcm_image);
  if (found.size() > 1) {
    const auto& q = *found[1];
    out.problem = std::to_string(found.size()) + " DCM pods are on the node (" + out.pod +
                  " mounting " + mounts(p) + ", " + named(q) + " mounting " + mounts(q) +
                  "): each would act on the profile label, and which config answers cannot "
                  "be told";
    return out;
  }
  if (!p.dcm_config_mount || p.dcm_config_mount->empty()) {
    out.problem = "DCM pod " + out.pod + " mounts " + mounts(p) + " at " + dcm_config_mount_path +
                  ", where DCM reads config.json: the operator cannot tell what DCM reads";
    return out;
  }
  out.config_map = *p.dcm_config_mount;
  return out;
}

} // namespace gpu_partitioner::controller
