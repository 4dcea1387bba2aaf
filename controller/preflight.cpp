#include "controller/preflight.hpp"

#include "controller/dcm_payload.hpp"
#include "controller/dra.hpp"
#include "controller/selector.hpp"
#include "protocol/codec/pattern.hpp"
#include "protocol/codec/quote.hpp"

#include <algorithm>

namespace gpu_partitioner::controller {

namespace codec = protocol::codec;

finding rival_finding(const resolved_profile& profile, const std::string& rival) {
  return {"DCMProfileNameConflict",
          "PartitioningProfile \"" + rival + "\" uses DCM profile name " +
              codec::quote(profile.dcm_name) + " too, with another payload; DCM holds one " +
              "payload per name, so neither is applied until one of them is renamed"};
}

finding holders_finding(const node_inputs& in) {
  std::string who;
  const auto& h = in.dcm_name_holders;
  for (std::size_t i = 0; i < h.size() && i < 5; ++i)
    who += (i ? ", " : "") + h[i];
  if (h.size() > 5)
    who += " and " + std::to_string(h.size() - 5) + " more";
  return {"DCMProfileInUse",
          "DCM's config holds another payload under " + codec::quote(in.profile.dcm_name) +
              ", which node(s) " + who +
              " carry: DCM runs every labelled node again when its config changes, so writing "
              "this payload would repartition them without a drain; give the profile a new "
              "spec.operatorPayload.profileName"};
}

std::vector<finding> preflight(const node_inputs& in) {
  std::vector<finding> findings;
  const auto& profile = in.profile;
  if (!profile.found) {
    if (!profile.invalid.empty())
      findings.push_back({"ProfileInvalid", "PartitioningProfile \"" + profile.name +
                                                "\" is invalid: " + profile.invalid});
    else
      findings.push_back(
          {"ProfileNotFound", "PartitioningProfile \"" + profile.name + "\" does not exist"});
    return findings;
  }
  if (!profile.payload) {
    findings.push_back(
        {profile.payload_forbidden ? "PayloadNamespaceNotAllowed" : "PayloadNotFound",
         profile.payload_problem});
  } else if (auto problem = payload_problem(*profile.payload)) {
    findings.push_back({"PayloadInvalid", *problem});
  }
  // What the profile names must be something a node can carry; otherwise the node would
  // fail only after it was drained (the label patch refused, the label never seen).
  const std::string where = "PartitioningProfile \"" + profile.name + "\" ";
  if (!codec::is_label_value(profile.dcm_name))
    findings.push_back(
        {"ProfileInvalid",
         where + "spec.operatorPayload.profileName: the DCM profile name " +
             codec::quote(profile.dcm_name) + " (" + std::to_string(profile.dcm_name.size()) +
             " characters" +
             (profile.spec.operator_payload.profile_name ? "" : ", the profile's own name") +
             ") is not a node label value (at most 63 characters); set "
             "spec.operatorPayload.profileName"});
  const auto& ready = profile.spec.verification.ready_label;
  if (!ready.empty() && !codec::is_label_requirement(ready))
    findings.push_back(
        {"ProfileInvalid", where + "spec.verification.readyLabel: " + codec::quote(ready) +
                               " is not a node label key or key=value (a name "
                               "of at most 63 characters)"});
  for (std::size_t i = 0; i < profile.spec.expected_resources.size(); ++i) {
    const auto& name = profile.spec.expected_resources[i].name;
    if (!codec::is_label_key(name))
      findings.push_back({"ProfileInvalid", where + "spec.expectedResources[" + std::to_string(i) +
                                                "].name: " + codec::quote(name) +
                                                " is not a resource name"});
  }
  for (const auto& rival : profile.dcm_name_rivals)
    findings.push_back(rival_finding(profile, rival));
  if (!in.dcm_name_holders.empty())
    findings.push_back(holders_finding(in));
  if (profile.payload && payload_mixes_styles(*profile.payload) &&
      std::any_of(profile.spec.expected_resources.begin(), profile.spec.expected_resources.end(),
                  [](const auto& r) { return r.name == "amd.com/gpu"; }))
    findings.push_back(
        {"PayloadMixedStyles",
         where + "puts GPUs in more than one compute/memory style but expects amd.com/gpu: "
                 "AMD's device plugin under its default single strategy exits on such a "
                 "node; use the mixed strategy's amd.com/<compute>_<memory> resources"});
  // DCM reads its profiles from the ConfigMap its pod on the node mounts; without it (or
  // with garbage in it) DCM cannot apply anything, so find out before the node is
  // disturbed. Where no DCM pod is there, DCMNotRunning below says so.
  if (!in.dcm.problem.empty())
    findings.push_back({"DCMConfigUnknown", "node " + in.item.spec.node_name + ": " +
                                                in.dcm.problem +
                                                "; nothing is drained until one DCM with its "
                                                "ConfigMap runs there"});
  else if (!in.dcm.name.empty() && !in.dcm.writable)
    findings.push_back({"DCMConfigNotWritable",
                        "DCM pod " + in.dcm.pod + " reads ConfigMap " + in.dcm.ns + "/" +
                            in.dcm.name +
                            ", which the operator may not write (--dcm-configmaps; add it to "
                            "the chart's dcm.configMaps)"});
  else if (!in.dcm.name.empty() && !in.dcm.found)
    findings.push_back({"DCMConfigNotFound", "DCM's ConfigMap " + in.dcm.ns + "/" + in.dcm.name +
                                                 ", which DCM pod " + in.dcm.pod +
                                                 " mounts, does not exist"});
  else if (const auto problem =
               in.dcm.found ? dcm_config_problem(in.dcm.config_json) : std::optional<std::string>{})
    findings.push_back(
        {"DCMConfigInvalid", in.dcm.ns + "/" + in.dcm.name + " config.json " + *problem});
  // What the node's DCM would refuse, known before the drain: a mode the kernel refuses
  // on the node's part, a group without numGPUsAssigned on DCM 1.3.
  if (profile.payload && in.node)
    if (const auto refused =
            dcm_refusal(*profile.payload, in.node->label(gpu_device_id_label), in.dcm.version))
      findings.push_back(
          {"DCMWouldRefuse",
           where + "spec.operatorPayload: " + *refused +
               (in.dcm.pod.empty() ? std::string()
                                   : " (DCM pod " + in.dcm.pod + ", image " + in.dcm.image + ")")});
  if (in.node && profile.spec.target_selector &&
      !matches(*profile.spec.target_selector, in.node->labels))
    findings.push_back({"TargetMismatch", "node " + in.node->name +
                                              " does not match the targetSelector of profile " +
                                              profile.name});
  if (in.node) {
    // A node that reports no AMD GPU at all has nothing to partition: a CPU node, or one
    // whose device plugin or DRA driver never ran. Draining it would gain nothing.
    const bool extended =
        std::any_of(in.node->allocatable.begin(), in.node->allocatable.end(),
                    [](const auto& r) { return r.first.rfind("amd.com/", 0) == 0; });
    const auto dra = publication_of(in.slices, protocol::amd_dra_driver);
    if (!extended && !dra.publishes && !in.item.status.dra)
      findings.push_back(
          {"NotAGPUNode", "node " + in.node->name +
                              " reports no amd.com/ resource in status.allocatable and publishes "
                              "no ResourceSlice of " +
                              protocol::amd_dra_driver +
                              ": it has no AMD GPUs, or neither their device plugin nor their "
                              "DRA driver is running"});
    // A driver that carves partitions itself on demand (partitionable devices, shared
    // counters) owns the GPUs' modes: DCM changing them under it would break its claims.
    if (dra.dynamic)
      findings.push_back(
          {"DRADynamicPartitioning",
           "node " + in.node->name + "'s DRA driver " + protocol::amd_dra_driver +
               " partitions the GPUs itself (its ResourceSlices carry shared counters): DCM "
               "must not repartition them; leave the node out of the plan's selectors"});
    else if (dra.publishes && profile.spec.expected_devices.empty())
      findings.push_back({"ExpectedDevicesMissing",
                          "node " + in.node->name +
                              " publishes its GPUs through DRA (ResourceSlices of " +
                              protocol::amd_dra_driver + "), not extended resources, but " + where +
                              "has no spec.expectedDevices to verify them by"});
    // Not being allowed to list claims is not their absence: a pod holding the GPUs by a
    // claim would be taken for one holding none, and left on the node DCM repartitions.
    if (dra.publishes && in.claims_forbidden)
      findings.push_back({"ResourceClaimsForbidden",
                          "node " + in.node->name +
                              " publishes its GPUs through DRA, but the operator may not "
                              "list ResourceClaims (403): the pods holding them cannot be "
                              "seen; grant resource.k8s.io resourceclaims list, watch "
                              "(the chart's ClusterRole does)"});
  }
  // No AMD component sets a readiness label: one that is named must be a site's own, and
  // a site's labeller has it on the node already. A key the node lacks before the run
  // would never appear after it, and the node would fail verification cordoned. Checked
  // only before a run: during one, the taint takes the labels of a node's GPU stack off.
  const auto phase = in.item.status.phase.value_or(protocol::node_phase::pending);
  const bool before_run = phase == protocol::node_phase::pending ||
                          phase == protocol::node_phase::failed ||
                          phase == protocol::node_phase::succeeded;
  // A NotReady node's pods are what its kubelet last reported: DCM's is looked for once
  // the node is Ready (it waits in Pending meanwhile).
  if (in.node && in.node->ready && before_run && !in.dcm.running)
    findings.push_back(
        {"DCMNotRunning",
         "no DCM pod runs on node " + in.node->name +
             (in.dcm.pod.empty() ? std::string() : " (" + in.dcm.pod + " is not Running)") +
             " (a pod in " + in.dcm.ns + " labelled " + dcm_pod_label + "=" + dcm_pod_label_value +
             " by AMD's GPU operator, or app=amdgpu-device-config-manager by DCM's own chart): "
             "nothing would answer the profile label; check the DeviceConfig's "
             "spec.configManager and its selector"});
  if (in.node && before_run) {
    const std::pair<const char*, std::string> named[] = {
        {"the plan's spec.verification.gpuReadyLabel", in.item.spec.verification.gpu_ready_label},
        {"the profile's spec.verification.readyLabel", ready}};
    for (const auto& [field, spec] : named) {
      const std::string key = spec.substr(0, spec.find('='));
      if (!key.empty() && !in.node->labels.count(key))
        findings.push_back({"ReadyLabelMissing",
                            std::string(field) + " names " + codec::quote(spec) + ", but node " +
                                in.node->name + " has no label " + codec::quote(key) +
                                " (AMD's GPU operator sets no readiness label; name one only "
                                "where the site's own labeller sets it)"});
    }
  }
  // Deleting pods is granted only when a plan needs it (the chart's rbac.podDelete): a
  // plan that needs it without it would drain half a node and stop.
  if (!in.pods_deletable) {
    const auto& drain = in.item.spec.drain;
    std::string needs;
    if (drain.enabled && drain.kind == protocol::eviction_kind::delete_pods)
      needs = "drainPolicy.evictionKind Delete deletes pods";
    else if (drain.enabled && !drain.respect_pdb)
      needs = "drainPolicy.respectPDB false deletes the pods a budget holds";
    else if (drain.cordons_devices() && publishes_gpus(in.slices) && in.device_taints_served)
      needs = "drainPolicy.cordon Devices restarts AMD's DRA driver by deleting its pod";
    if (!needs.empty())
      findings.push_back({"PodDeleteNotPermitted",
                          needs + ", and the operator may not delete pods (grant it with the "
                                  "chart's rbac.podDelete: true)"});
  }
  return findings;
}

} // namespace gpu_partitioner::controller
