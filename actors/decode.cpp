#include "actors/decode.hpp"

#include "controller/node_machine.hpp"
#include "kube/client.hpp"

#include <algorithm>
#include <cstdlib>

namespace gpu_partitioner::actors {

using kube::find_path;
using kube::string_at;

controller::node_info decode_node(const rapidjson::Value& o) {
  controller::node_info n;
  if (const auto* meta = find_path(o, {"metadata"})) {
    n.name = string_at(*meta, "name");
    n.uid = string_at(*meta, "uid");
    n.resource_version = string_at(*meta, "resourceVersion");
    n.labels = kube::string_map(find_path(*meta, {"labels"}));
    if (const auto* a = find_path(*meta, {"annotations"}); a != nullptr && a->IsObject())
      for (const auto& m : a->GetObject()) {
        const std::string_view key(m.name.GetString(), m.name.GetStringLength());
        if (m.value.IsString() && key.substr(0, controller::operator_annotation_prefix.size()) ==
                                      controller::operator_annotation_prefix)
          n.annotations.emplace(key, m.value.GetString());
      }
  }
  if (const auto* u = find_path(o, {"spec", "unschedulable"}); u != nullptr && u->IsBool())
    n.unschedulable = u->GetBool();
  if (const auto* taints = find_path(o, {"spec", "taints"}); taints != nullptr && taints->IsArray())
    for (const auto& t : taints->GetArray())
      n.taints.push_back({string_at(t, "key"), string_at(t, "value"), string_at(t, "effect")});
  n.allocatable = kube::string_map(find_path(o, {"status", "allocatable"}));
  n.ready = false;
  if (const auto* conds = find_path(o, {"status", "conditions"});
      conds != nullptr && conds->IsArray())
    for (const auto& c : conds->GetArray())
      if (string_at(c, "type") == "Ready")
        n.ready = string_at(c, "status") == "True";
  return n;
}

namespace {

// What the pod mounts at DCM's config path, and the image of the container that does.
void decode_dcm_mount(const rapidjson::Value& spec, controller::pod_info& p) {
  const auto* cs = find_path(spec, {"containers"});
  if (cs == nullptr || !cs->IsArray())
    return;
  const std::string path = controller::dcm_config_mount_path;
  for (const auto& c : cs->GetArray()) {
    const auto* mounts = find_path(c, {"volumeMounts"});
    if (mounts == nullptr || !mounts->IsArray())
      continue;
    for (const auto& m : mounts->GetArray()) {
      const auto at = string_at(m, "mountPath");
      if (at != path && at != path + "/")
        continue;
      const auto volume = string_at(m, "name");
      std::string config_map;
      if (const auto* volumes = find_path(spec, {"volumes"}); volumes && volumes->IsArray())
        for (const auto& v : volumes->GetArray())
          if (string_at(v, "name") == volume)
            if (const auto* cm = find_path(v, {"configMap"}))
              config_map = string_at(*cm, "name");
      p.dcm_config_mount = config_map;
      p.dcm_image = string_at(c, "image");
      return;
    }
  }
}

} // namespace

controller::pod_info decode_pod(const rapidjson::Value& o) {
  controller::pod_info p;
  if (const auto* meta = find_path(o, {"metadata"})) {
    p.ns = string_at(*meta, "namespace");
    p.name = string_at(*meta, "name");
    p.uid = string_at(*meta, "uid");
    p.labels = kube::string_map(find_path(*meta, {"labels"}), controller::pod_list_limit);
    if (const auto* at = find_path(*meta, {"deletionTimestamp"})) {
      p.deleting = true;
      if (at->IsString())
        p.deletion_deadline = protocol::parse_time(at->GetString());
    }
    if (const auto* grace = find_path(*meta, {"deletionGracePeriodSeconds"});
        grace && grace->IsNumber())
      p.deletion_grace_seconds = kube::whole_number(grace);
    p.mirror = find_path(*meta, {"annotations", "kubernetes.io/config.mirror"}) != nullptr;
    p.unmanaged = true;
    if (const auto* owners = find_path(*meta, {"ownerReferences"}); owners && owners->IsArray())
      for (const auto& ref : owners->GetArray())
        if (const auto* c = find_path(ref, {"controller"}); c && c->IsBool() && c->GetBool()) {
          p.unmanaged = false;
          // kubectl drain asks only the kind; the group too, or a CRD of kind DaemonSet
          // would pass. Whether it exists is checked against the DaemonSets watched.
          if (string_at(ref, "kind") == "DaemonSet" && string_at(ref, "apiVersion") == "apps/v1") {
            p.daemon_set = true;
            p.daemon_set_key = p.ns + "/" + string_at(ref, "name");
            p.daemon_set_uid = string_at(ref, "uid");
          }
        }
  }
  if (const auto* spec = find_path(o, {"spec"})) {
    p.node_name = string_at(*spec, "nodeName");
    if (const auto* selector = find_path(*spec, {"nodeSelector"});
        selector && selector->IsObject() && selector->MemberCount() > controller::pod_list_limit)
      p.node_selector_cut = true;
    else
      p.node_selector = kube::string_map(selector);
    if (const auto* cs = find_path(*spec, {"containers"}); cs && cs->IsArray())
      for (const auto& c : cs->GetArray()) {
        p.device_plugin = p.device_plugin || string_at(c, "name") == "device-plugin";
        p.dra_driver = p.dra_driver || controller::dra_driver_image(string_at(c, "image"));
      }
    const auto component = p.labels.find("app.kubernetes.io/component");
    p.dra_driver =
        p.daemon_set &&
        (p.dra_driver || (component != p.labels.end() && component->second == "kubeletplugin"));
    if (const auto* volumes = find_path(*spec, {"volumes"}); volumes && volumes->IsArray())
      for (const auto& v : volumes->GetArray())
        if (find_path(v, {"emptyDir"}) != nullptr)
          p.empty_dir = true;
    decode_dcm_mount(*spec, p);
    if (const auto* tols = find_path(*spec, {"tolerations"}); tols && tols->IsArray())
      for (const auto& t : tols->GetArray()) {
        controller::toleration tol;
        tol.key = string_at(t, "key");
        tol.op = string_at(t, "operator");
        if (tol.op.empty())
          tol.op = "Equal";
        tol.value = string_at(t, "value");
        tol.effect = string_at(t, "effect");
        if (const auto* secs = find_path(t, {"tolerationSeconds"}); secs && secs->IsNumber())
          tol.bounded = true;
        p.tolerates_dcm = p.tolerates_dcm || controller::tolerates_dcm_without_bound(tol);
        // A DaemonSet's pod keeps none (controller/observed.hpp).
        if (!p.daemon_set && p.tolerations.size() < controller::pod_list_limit &&
            std::find(p.tolerations.begin(), p.tolerations.end(), tol) == p.tolerations.end())
          p.tolerations.push_back(std::move(tol));
      }
    // Kept for as long as the pod is: no room for more.
    p.tolerations.shrink_to_fit();
    if (p.daemon_set)
      p.node_selector.clear();
    // Any amd.com/ resource: amd.com/gpu, or a style's (amd.com/cpx_nps4) under the device
    // plugin's mixed strategy.
    if (const auto* cs = find_path(*spec, {"containers"}); cs && cs->IsArray())
      for (const auto& c : cs->GetArray()) {
        long long most = 0;
        for (const char* kind : {"requests", "limits"})
          if (const auto* list = find_path(c, {"resources", kind}); list && list->IsObject())
            for (const auto& r : list->GetObject())
              if (std::string(r.name.GetString(), r.name.GetStringLength()).rfind("amd.com/", 0) ==
                  0)
                most = std::max(most, kube::whole_number(&r.value));
        p.gpus += most;
      }
  }
  p.phase = find_path(o, {"status"}) ? string_at(o["status"], "phase") : std::string{};
  if (const auto* conds = find_path(o, {"status", "conditions"}); conds && conds->IsArray())
    for (const auto& c : conds->GetArray())
      if (string_at(c, "type") == "Ready")
        p.ready = string_at(c, "status") == "True";
  if (const auto* cs = find_path(o, {"status", "containerStatuses"}); cs && cs->IsArray())
    for (const auto& c : cs->GetArray()) {
      if (const auto* n = find_path(c, {"restartCount"}); n && n->IsInt())
        p.restarts = std::max(p.restarts, n->GetInt());
      if (const auto* waiting = find_path(c, {"state", "waiting"}))
        p.crash_looping = p.crash_looping || string_at(*waiting, "reason") == "CrashLoopBackOff";
    }
  return p;
}

controller::pdb_info decode_pdb(const rapidjson::Value& o) {
  controller::pdb_info d;
  if (const auto* meta = find_path(o, {"metadata"})) {
    d.ns = string_at(*meta, "namespace");
    d.name = string_at(*meta, "name");
  }
  const auto* selector = find_path(o, {"spec", "selector"});
  d.selects_nothing = selector == nullptr || selector->IsNull();
  if (selector != nullptr && selector->IsObject()) {
    d.match_labels = kube::string_map(find_path(*selector, {"matchLabels"}));
    if (const auto* exprs = find_path(*selector, {"matchExpressions"}); exprs && exprs->IsArray())
      for (const auto& e : exprs->GetArray()) {
        controller::pdb_info::requirement r;
        r.key = string_at(e, "key");
        r.op = string_at(e, "operator");
        if (const auto* vs = find_path(e, {"values"}); vs && vs->IsArray())
          for (const auto& v : vs->GetArray())
            if (v.IsString())
              r.values.push_back(v.GetString());
        d.match_expressions.push_back(r);
      }
  }
  if (const auto* allowed = find_path(o, {"status", "disruptionsAllowed"});
      allowed && allowed->IsInt())
    d.disruptions_allowed = allowed->GetInt();
  if (const auto* n = find_path(o, {"status", "currentHealthy"}); n && n->IsInt())
    d.current_healthy = n->GetInt();
  if (const auto* n = find_path(o, {"status", "desiredHealthy"}); n && n->IsInt())
    d.desired_healthy = n->GetInt();
  if (const auto* policy = find_path(o, {"spec", "unhealthyPodEvictionPolicy"}))
    d.always_allow_unhealthy =
        policy->IsString() && std::string(policy->GetString()) == "AlwaysAllow";
  if (const auto* disrupted = find_path(o, {"status", "disruptedPods"});
      disrupted && disrupted->IsObject())
    for (const auto& m : disrupted->GetObject())
      d.disrupted_pods.insert(m.name.GetString());
  return d;
}

std::map<std::string, std::string> decode_config_map_data(const rapidjson::Value& o) {
  // Only what the operator reads: DCM's config.json, a payload's profile.json. Every
  // ConfigMap of DCM's namespace is watched (which one a DCM pod mounts is found at run
  // time): the rest of their data is nobody's business here, and would only grow memory.
  std::map<std::string, std::string> data;
  if (const auto* all = find_path(o, {"data"}); all && all->IsObject())
    for (const char* key : {"config.json", "profile.json"})
      if (const auto* v = find_path(*all, {key}); v && v->IsString())
        data[key] = std::string(v->GetString(), v->GetStringLength());
  // When config.json last changed (DCM's ConfigMap): under keys a ConfigMap's data cannot
  // have.
  if (const auto* at =
          find_path(o, {"metadata", "annotations", controller::dcm_config_written_annotation});
      at && at->IsString())
    data[config_written_key] = at->GetString();
  if (const auto* at = find_path(o, {"metadata", "creationTimestamp"}); at && at->IsString())
    data[config_created_key] = at->GetString();
  return data;
}

controller::dcm_event decode_dcm_event(const rapidjson::Value& v) {
  controller::dcm_event e;
  if (const auto* meta = kube::find_path(v, {"metadata"}))
    e.ns = kube::string_at(*meta, "namespace");
  if (const auto* about = kube::find_path(v, {"involvedObject"})) {
    e.about_kind = kube::string_at(*about, "kind");
    e.about_namespace = kube::string_at(*about, "namespace");
    e.about_name = kube::string_at(*about, "name");
  }
  if (const auto* source = kube::find_path(v, {"source"}))
    e.host = kube::string_at(*source, "host");
  e.info.type = kube::string_at(v, "type");
  e.info.reason = kube::string_at(v, "reason");
  e.info.message = kube::string_at(v, "message");
  if (auto t = protocol::parse_time(kube::string_at(v, "lastTimestamp")))
    e.info.time = *t;
  // The message is whatever the Event's writer put there (any node's kubelet may write
  // Events): parsed without recursion, so no nesting depth can exhaust the stack.
  rapidjson::Document status;
  status.Parse<rapidjson::kParseIterativeFlag>(e.info.message.c_str(), e.info.message.size());
  if (!status.HasParseError() && status.IsObject())
    if (const auto* gpus = kube::find_path(status, {"GPUStatus"});
        gpus && (gpus->IsNull() || gpus->IsArray()))
      e.info.profile = kube::string_at(status, "SelectedProfile");
  return e;
}

} // namespace gpu_partitioner::actors

namespace gpu_partitioner::actors {

namespace {

// A device attribute as text: exactly one of string, int, bool, version is set.
std::string attribute_text(const rapidjson::Value& a) {
  if (!a.IsObject())
    return {};
  if (const auto* s = find_path(a, {"string"}); s && s->IsString())
    return s->GetString();
  if (const auto* v = find_path(a, {"version"}); v && v->IsString())
    return v->GetString();
  if (const auto* i = find_path(a, {"int"}); i && i->IsInt64())
    return std::to_string(i->GetInt64());
  if (const auto* b = find_path(a, {"bool"}); b && b->IsBool())
    return b->GetBool() ? "true" : "false";
  return {};
}

} // namespace

controller::resource_slice_info decode_resource_slice(const rapidjson::Value& o) {
  controller::resource_slice_info s;
  if (const auto* meta = find_path(o, {"metadata"})) {
    s.name = string_at(*meta, "name");
    s.uid = string_at(*meta, "uid");
    s.resource_version = string_at(*meta, "resourceVersion");
  }
  const auto* spec = find_path(o, {"spec"});
  if (spec == nullptr || !spec->IsObject())
    return s;
  s.driver = string_at(*spec, "driver");
  s.node = string_at(*spec, "nodeName");
  if (const auto* pool = find_path(*spec, {"pool"}); pool && pool->IsObject()) {
    s.pool = string_at(*pool, "name");
    s.generation = kube::whole_number(find_path(*pool, {"generation"}));
    s.slice_count =
        std::max<std::int64_t>(1, kube::whole_number(find_path(*pool, {"resourceSliceCount"})));
  }
  if (const auto* c = find_path(*spec, {"sharedCounters"}); c && c->IsArray() && !c->Empty())
    s.shared_counters = true;
  if (const auto* devices = find_path(*spec, {"devices"}); devices && devices->IsArray())
    for (const auto& d : devices->GetArray()) {
      controller::dra_device dev;
      dev.name = string_at(d, "name");
      if (const auto* attrs = find_path(d, {"attributes"}); attrs && attrs->IsObject())
        for (const auto& a : attrs->GetObject())
          dev.attributes[a.name.GetString()] = attribute_text(a.value);
      if (const auto* c = find_path(d, {"consumesCounters"}); c && c->IsArray() && !c->Empty())
        dev.consumes_counters = true;
      s.devices.push_back(std::move(dev));
    }
  return s;
}

controller::resource_claim_info decode_resource_claim(const rapidjson::Value& o) {
  controller::resource_claim_info c;
  if (const auto* meta = find_path(o, {"metadata"})) {
    c.ns = string_at(*meta, "namespace");
    c.name = string_at(*meta, "name");
  }
  const auto* allocation = find_path(o, {"status", "allocation"});
  if (allocation == nullptr || !allocation->IsObject())
    return c;
  if (const auto* results = find_path(*allocation, {"devices", "results"});
      results && results->IsArray())
    for (const auto& r : results->GetArray())
      c.devices.push_back({string_at(r, "driver"), string_at(r, "pool"), string_at(r, "device")});
  // Node-local devices bind the allocation to their node: one term, matching metadata.name.
  if (const auto* terms = find_path(*allocation, {"nodeSelector", "nodeSelectorTerms"});
      terms && terms->IsArray())
    for (const auto& t : terms->GetArray())
      if (const auto* fields = find_path(t, {"matchFields"}); fields && fields->IsArray())
        for (const auto& f : fields->GetArray()) {
          const auto* values = find_path(f, {"values"});
          if (string_at(f, "key") == "metadata.name" && string_at(f, "operator") == "In" &&
              values && values->IsArray() && values->Size() == 1 && (*values)[0].IsString())
            c.node = (*values)[0].GetString();
        }
  if (const auto* reserved = find_path(o, {"status", "reservedFor"});
      reserved && reserved->IsArray())
    for (const auto& r : reserved->GetArray())
      if (string_at(r, "resource") == "pods")
        c.reserved_for.emplace_back(string_at(r, "uid"), string_at(r, "name"));
  return c;
}

controller::device_taint_rule_info decode_device_taint_rule(const rapidjson::Value& o) {
  controller::device_taint_rule_info r;
  if (const auto* meta = find_path(o, {"metadata"})) {
    r.name = string_at(*meta, "name");
    if (const auto* annotations = find_path(*meta, {"annotations"}))
      r.node = string_at(*annotations, controller::device_taint_node_annotation);
    const auto labels = kube::string_map(find_path(*meta, {"labels"}));
    const auto mark = labels.find(controller::managed_by_label);
    r.ours = mark != labels.end() && mark->second == controller::managed_by_value;
  }
  if (const auto* selector = find_path(o, {"spec", "deviceSelector"})) {
    r.driver = string_at(*selector, "driver");
    r.pool = string_at(*selector, "pool");
  }
  if (const auto* taint = find_path(o, {"spec", "taint"}))
    r.effect = string_at(*taint, "effect");
  return r;
}

} // namespace gpu_partitioner::actors
