#include "tools/simulator/dra_model.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

namespace gpu_partitioner::sim {

bool device_attribute::operator==(const device_attribute& o) const {
  if (type != o.type)
    return false;
  switch (type) {
  case kind::integer:
    return integer == o.integer;
  case kind::boolean:
    return boolean == o.boolean;
  case kind::string:
  case kind::version:
    break;
  }
  return text == o.text;
}

namespace {

// What the driver reads from each MI300X (sysfs and the amdgpu module), the same on every
// simulated host, and as the node labeller reports it.
const char* const device_id = "0x74a1";
const char* const family = "AI";
const char* const product_name = "AMD_Instinct_MI300X_OAM";
const char* const driver_version = "6.10.5";
const char* const driver_src_version = "5C6E1FD4A0B2E3A1C8D7B90";

// The PCI functions of an 8-GPU MI300X platform's OAMs; more GPUs continue on other buses.
std::string pci_address(int gpu) {
  static const char* const buses[] = {"0c", "22", "38", "5c", "9f", "af", "bf", "df"};
  char out[16];
  if (gpu >= 0 && gpu < 8)
    std::snprintf(out, sizeof out, "0000:%s:00.0", buses[gpu]);
  else
    std::snprintf(out, sizeof out, "0000:%02x:00.0", (0xe0 + gpu) & 0xff);
  return out;
}

std::string lower(std::string s) {
  for (auto& c : s)
    c = c == '/' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A GPU's memory shared by `parts`: whole GiB where it divides, else MiB.
std::string memory_share(int parts) {
  const long long mib = gpu_memory_gib * 1024 / parts;
  return mib % 1024 == 0 ? std::to_string(mib / 1024) + "Gi" : std::to_string(mib) + "Mi";
}

quantities capacity_share(int parts) {
  return {{"memory", memory_share(parts)},
          {"computeUnits", std::to_string(gpu_compute_units / parts)},
          {"simdUnits", std::to_string(gpu_simd_units / parts)}};
}

// The attributes every device has: what the GPU is, and the kernel driver.
void common_attributes(dra_device& d, const std::string& profile) {
  d.attributes["family"] = device_attribute::of_string(family);
  d.attributes["productName"] = device_attribute::of_string(product_name);
  d.attributes["driverVersion"] = device_attribute::of_version(driver_version);
  d.attributes["driverSrcVersion"] = device_attribute::of_string(driver_src_version);
  d.attributes["partitionProfile"] = device_attribute::of_string(profile);
}

// A whole GPU names its own PCI function; a partition its parent's (the driver's code writes
// parentPciAddr and parentDeviceID, not pciAddr and deviceID as its docs say).
void identity(dra_device& d, int gpu, bool partition) {
  d.attributes["type"] = device_attribute::of_string(partition ? "amdgpu-partition" : "amdgpu");
  d.attributes[partition ? "parentPciAddr" : "pciAddr"] =
      device_attribute::of_string(pci_address(gpu));
  d.attributes[partition ? "parentDeviceID" : "deviceID"] = device_attribute::of_string(device_id);
  // The standard attribute k8s.io/dynamic-resource-allocation's deviceattribute reads from
  // sysfs (the driver publishes it on every device, a partition with its parent's): the
  // root complex above the GPU. One root per GPU is the simulator's choice.
  d.attributes["resource.kubernetes.io/pcieRoot"] =
      device_attribute::of_string("pci0000:" + pci_address(gpu).substr(5, 2));
}

} // namespace

std::vector<dra_device> static_devices(const std::vector<std::string>& gpu_modes,
                                       bool wrong_count) {
  std::vector<dra_device> out;
  int minor = 0;
  for (std::size_t gpu = 0; gpu < gpu_modes.size(); ++gpu) {
    const std::string& mode = gpu_modes[gpu];
    const int parts = std::max(1, partitions_per_gpu(mode.substr(0, mode.find('/'))));
    for (int p = 0; p < parts; ++p, ++minor) {
      const int card = 1 + minor;
      const int render = 128 + minor;
      dra_device d;
      d.name = "gpu-" + std::to_string(card) + "-" + std::to_string(render);
      identity(d, static_cast<int>(gpu), parts > 1);
      d.attributes["cardIndex"] = device_attribute::of_int(card);
      d.attributes["renderIndex"] = device_attribute::of_int(render);
      common_attributes(d, lower(mode));
      d.capacity = capacity_share(parts);
      out.push_back(std::move(d));
    }
  }
  if (wrong_count && out.size() > wrong_count_devices)
    out.resize(wrong_count_devices);
  return out;
}

pool_content dynamic_pool(int gpus) {
  pool_content pool;
  // Counter names are DNS labels (the API server refuses "computeUnits" there).
  for (int first = 0; first < gpus; first += static_cast<int>(max_counter_sets_per_slice)) {
    slice_content counters;
    for (int gpu = first; gpu < std::min(gpus, first + 8); ++gpu)
      counters.shared_counters.push_back(
          {"gpu-" + std::to_string(gpu) + "-counters",
           {{"memory", memory_share(1)}, {"compute-units", std::to_string(gpu_compute_units)}}});
    pool.push_back(std::move(counters));
  }
  // Every partition the driver could carve; allocating one consumes its GPU's counters, so
  // the scheduler never hands out more of a GPU than there is.
  const std::pair<const char*, int> styles[] = {{"spx", 1}, {"dpx", 2}, {"qpx", 4}, {"cpx", 8}};
  constexpr int gpus_per_slice = 4;
  for (int first = 0; first < gpus; first += gpus_per_slice) {
    slice_content devices;
    for (int gpu = first; gpu < std::min(gpus, first + gpus_per_slice); ++gpu)
      for (const auto& [style, parts] : styles)
        for (int k = 0; k < parts; ++k) {
          dra_device d;
          d.name = "gpu-" + std::to_string(gpu) + "-" + style +
                   (parts > 1 ? "-" + std::to_string(k) : "");
          identity(d, gpu, parts > 1);
          common_attributes(d, std::string(style) + "_nps1");
          d.capacity = capacity_share(parts);
          d.consumes_counters.push_back(
              {"gpu-" + std::to_string(gpu) + "-counters",
               {{"memory", memory_share(parts)},
                {"compute-units", std::to_string(gpu_compute_units / parts)}}});
          devices.devices.push_back(std::move(d));
        }
    pool.push_back(std::move(devices));
  }
  return pool;
}

pool_content desired_pool(gpu_api api, const std::vector<std::string>& gpu_modes,
                          bool wrong_count) {
  switch (api) {
  case gpu_api::dra: {
    // Sorted by name, so that a restarted driver publishes the same list.
    auto devices = static_devices(gpu_modes, wrong_count);
    std::sort(devices.begin(), devices.end(),
              [](const dra_device& a, const dra_device& b) { return a.name < b.name; });
    return {slice_content{std::move(devices), {}}};
  }
  case gpu_api::dra_dynamic:
    return dynamic_pool(static_cast<int>(gpu_modes.size()));
  case gpu_api::device_plugin:
    break;
  }
  return {};
}

// -- reading slices --

namespace {

std::string string_member(const rapidjson::Value& o, const char* name) {
  if (!o.IsObject())
    return {};
  auto it = o.FindMember(name);
  return it != o.MemberEnd() && it->value.IsString() ? it->value.GetString() : std::string{};
}

const rapidjson::Value* member(const rapidjson::Value& o, const char* name) {
  if (!o.IsObject())
    return nullptr;
  auto it = o.FindMember(name);
  return it == o.MemberEnd() ? nullptr : &it->value;
}

long long int_member(const rapidjson::Value& o, const char* name) {
  const auto* v = member(o, name);
  return v != nullptr && v->IsInt64() ? v->GetInt64() : 0;
}

// {"memory": {"value": "24Gi"}, ...}
quantities read_quantities(const rapidjson::Value* o) {
  quantities out;
  if (o == nullptr || !o->IsObject())
    return out;
  for (const auto& q : o->GetObject()) {
    const auto* v = member(q.value, "value");
    if (v == nullptr)
      continue;
    out[q.name.GetString()] = v->IsString()  ? v->GetString()
                              : v->IsInt64() ? std::to_string(v->GetInt64())
                                             : "";
  }
  return out;
}

dra_device read_device(const rapidjson::Value& o) {
  dra_device d;
  d.name = string_member(o, "name");
  if (const auto* attrs = member(o, "attributes"); attrs != nullptr && attrs->IsObject())
    for (const auto& a : attrs->GetObject()) {
      device_attribute v;
      if (const auto* i = member(a.value, "int"); i != nullptr && i->IsInt64())
        v = device_attribute::of_int(i->GetInt64());
      else if (const auto* b = member(a.value, "bool"); b != nullptr && b->IsBool())
        v = {device_attribute::kind::boolean, 0, b->GetBool(), {}};
      else if (const auto* s = member(a.value, "string"); s != nullptr && s->IsString())
        v = device_attribute::of_string(s->GetString());
      else if (const auto* ver = member(a.value, "version"); ver != nullptr && ver->IsString())
        v = device_attribute::of_version(ver->GetString());
      d.attributes[a.name.GetString()] = v;
    }
  d.capacity = read_quantities(member(o, "capacity"));
  if (const auto* cs = member(o, "consumesCounters"); cs != nullptr && cs->IsArray())
    for (const auto& c : cs->GetArray())
      d.consumes_counters.push_back(
          {string_member(c, "counterSet"), read_quantities(member(c, "counters"))});
  return d;
}

} // namespace

std::optional<observed_slice> parse_slice(const rapidjson::Value& object) {
  const auto* meta = member(object, "metadata");
  const auto* spec = member(object, "spec");
  if (meta == nullptr || spec == nullptr)
    return std::nullopt;
  observed_slice s;
  s.name = string_member(*meta, "name");
  s.uid = string_member(*meta, "uid");
  s.resource_version = string_member(*meta, "resourceVersion");
  s.node = string_member(*spec, "nodeName");
  if (s.node.empty())
    return std::nullopt;
  if (const auto* pool = member(*spec, "pool")) {
    s.pool = string_member(*pool, "name");
    s.generation = int_member(*pool, "generation");
    s.slice_count = int_member(*pool, "resourceSliceCount");
  }
  if (const auto* devices = member(*spec, "devices"); devices != nullptr && devices->IsArray())
    for (const auto& d : devices->GetArray())
      s.content.devices.push_back(read_device(d));
  if (const auto* sets = member(*spec, "sharedCounters"); sets != nullptr && sets->IsArray())
    for (const auto& c : sets->GetArray())
      s.content.shared_counters.push_back(
          {string_member(c, "name"), read_quantities(member(c, "counters"))});
  return s;
}

// -- the driver's pods --

namespace {

// The last path segment of an image's repository, without tag or digest:
// "registry.example:5000/rocm/k8s-gpu-dra-driver:v1@sha256:..." -> "k8s-gpu-dra-driver" (a
// registry's port comes before the last slash, a tag after it).
std::string image_repository_name(const std::string& image) {
  const std::string named = image.substr(0, image.find('@'));
  const auto slash = named.rfind('/');
  const std::string last = slash == std::string::npos ? named : named.substr(slash + 1);
  return last.substr(0, last.find(':'));
}

} // namespace

bool dra_driver_pod(const rapidjson::Value& pod) {
  const auto* meta = member(pod, "metadata");
  if (meta == nullptr)
    return false;
  bool daemon_set = false;
  if (const auto* owners = member(*meta, "ownerReferences"); owners && owners->IsArray())
    for (const auto& o : owners->GetArray())
      daemon_set = daemon_set || string_member(o, "kind") == "DaemonSet";
  if (!daemon_set)
    return false;
  if (const auto* labels = member(*meta, "labels");
      labels != nullptr && string_member(*labels, kubeletplugin_label) == kubeletplugin_label_value)
    return true;
  const auto* spec = member(pod, "spec");
  const auto* containers = spec == nullptr ? nullptr : member(*spec, "containers");
  if (containers != nullptr && containers->IsArray())
    for (const auto& c : containers->GetArray())
      if (image_repository_name(string_member(c, "image")) == dra_driver_image)
        return true;
  return false;
}

// -- the publishing helper --

namespace {

// Same number of devices, and every desired name present (resourceslicecontroller.go,
// sameSlice): two slices of shared counters always match.
bool same_slice(const observed_slice& existing, const slice_content& desired) {
  if (existing.content.devices.size() != desired.devices.size())
    return false;
  std::set<std::string> names;
  for (const auto& d : existing.content.devices)
    names.insert(d.name);
  for (const auto& d : desired.devices)
    if (!names.count(d.name))
      return false;
  return true;
}

slice_write removal(const observed_slice& s, bool preconditions) {
  slice_write w;
  w.what = slice_write::kind::remove;
  w.name = s.name;
  if (preconditions) {
    w.uid = s.uid;
    w.resource_version = s.resource_version;
  }
  w.pool = s.pool;
  return w;
}

} // namespace

std::vector<slice_write> sync_pool(const std::string& pool, const pool_content& desired,
                                   const std::vector<observed_slice>& existing) {
  std::vector<const observed_slice*> slices;
  for (const auto& s : existing)
    slices.push_back(&s);
  std::sort(slices.begin(), slices.end(),
            [](const observed_slice* a, const observed_slice* b) { return a->name < b->name; });
  std::vector<slice_write> out;
  if (desired.empty()) {
    // A pool the driver no longer has: all its slices go.
    for (const auto* s : slices)
      out.push_back(removal(*s, true));
    return out;
  }
  long long generation = 0;
  for (const auto* s : slices)
    generation = std::max(generation, s->generation);
  std::vector<const observed_slice*> obsolete, current;
  for (const auto* s : slices)
    (s->generation < generation ? obsolete : current).push_back(s);

  std::map<std::size_t, const observed_slice*> matched; // desired index -> existing
  if (current.size() == 1 && desired.size() == 1) {
    matched[0] = current[0];
  } else {
    for (const auto* s : current) {
      bool found = false;
      for (std::size_t i = 0; i < desired.size() && !found; ++i)
        if (!matched.count(i) && same_slice(*s, desired[i])) {
          matched[i] = s;
          found = true;
        }
      if (!found)
        obsolete.push_back(s);
    }
  }
  const auto count = static_cast<long long>(desired.size());
  std::set<std::size_t> changed;
  for (const auto& [i, s] : matched)
    if (s->pool != pool || s->generation != generation || s->slice_count != count ||
        s->content != desired[i])
      changed.insert(i);
  const std::size_t created = desired.size() - matched.size();
  // At most one update and nothing new: the generation stays. Anything more: consumers
  // must be able to tell the new pool from the old, so it goes up and every slice follows.
  const bool bumped = !(created == 0 && changed.size() <= 1);
  if (bumped)
    ++generation;

  for (const auto* s : obsolete)
    out.push_back(removal(*s, true));
  for (const auto& [i, s] : matched) {
    if (!changed.count(i) && !bumped)
      continue;
    slice_write w;
    w.what = slice_write::kind::update;
    w.name = s->name;
    w.uid = s->uid;
    w.resource_version = s->resource_version;
    w.pool = pool;
    w.generation = generation;
    w.slice_count = count;
    w.content = desired[i];
    out.push_back(std::move(w));
  }
  for (std::size_t i = 0; i < desired.size(); ++i) {
    if (matched.count(i))
      continue;
    slice_write w;
    w.what = slice_write::kind::create;
    w.pool = pool;
    w.generation = generation;
    w.slice_count = count;
    w.content = desired[i];
    out.push_back(std::move(w));
  }
  return out;
}

std::vector<slice_write> wipe_slices(const std::vector<observed_slice>& existing) {
  std::vector<slice_write> out;
  for (const auto& s : existing)
    out.push_back(removal(s, false));
  return out;
}

// -- writing slices --

namespace {

using json_writer = rapidjson::Writer<rapidjson::StringBuffer>;

void put(json_writer& w, const std::string& s) {
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
}

void put_quantities(json_writer& w, const quantities& q) {
  w.StartObject();
  for (const auto& [name, value] : q) {
    put(w, name);
    w.StartObject();
    w.Key("value");
    put(w, value);
    w.EndObject();
  }
  w.EndObject();
}

void put_device(json_writer& w, const dra_device& d) {
  w.StartObject();
  w.Key("name");
  put(w, d.name);
  if (!d.attributes.empty()) {
    w.Key("attributes");
    w.StartObject();
    for (const auto& [name, a] : d.attributes) {
      put(w, name);
      w.StartObject();
      switch (a.type) {
      case device_attribute::kind::integer:
        w.Key("int");
        w.Int64(a.integer);
        break;
      case device_attribute::kind::boolean:
        w.Key("bool");
        w.Bool(a.boolean);
        break;
      case device_attribute::kind::string:
        w.Key("string");
        put(w, a.text);
        break;
      case device_attribute::kind::version:
        w.Key("version");
        put(w, a.text);
        break;
      }
      w.EndObject();
    }
    w.EndObject();
  }
  if (!d.capacity.empty()) {
    w.Key("capacity");
    put_quantities(w, d.capacity);
  }
  if (!d.consumes_counters.empty()) {
    w.Key("consumesCounters");
    w.StartArray();
    for (const auto& c : d.consumes_counters) {
      w.StartObject();
      w.Key("counterSet");
      put(w, c.counter_set);
      w.Key("counters");
      put_quantities(w, c.counters);
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
}

void put_pool(json_writer& w, const slice_write& s) {
  w.Key("pool");
  w.StartObject();
  w.Key("name");
  put(w, s.pool);
  w.Key("generation");
  w.Int64(s.generation);
  w.Key("resourceSliceCount");
  w.Int64(s.slice_count);
  w.EndObject();
}

// devices and sharedCounters; an absent one is null when `nulls` (a merge patch removes it).
void put_content(json_writer& w, const slice_content& c, bool nulls) {
  if (!c.devices.empty() || nulls) {
    w.Key("devices");
    if (c.devices.empty()) {
      w.Null();
    } else {
      w.StartArray();
      for (const auto& d : c.devices)
        put_device(w, d);
      w.EndArray();
    }
  }
  if (!c.shared_counters.empty() || nulls) {
    w.Key("sharedCounters");
    if (c.shared_counters.empty()) {
      w.Null();
    } else {
      w.StartArray();
      for (const auto& set : c.shared_counters) {
        w.StartObject();
        w.Key("name");
        put(w, set.name);
        w.Key("counters");
        put_quantities(w, set.counters);
        w.EndObject();
      }
      w.EndArray();
    }
  }
}

} // namespace

std::string slice_object_json(const slice_write& s, const std::string& node,
                              const std::string& node_uid) {
  rapidjson::StringBuffer b;
  json_writer w(b);
  w.StartObject();
  w.Key("apiVersion");
  w.String("resource.k8s.io/v1");
  w.Key("kind");
  w.String("ResourceSlice");
  w.Key("metadata");
  w.StartObject();
  w.Key("generateName");
  put(w, node + "-" + dra_driver + "-");
  // Owned by the Node: the garbage collector removes the slices of a deleted node.
  if (!node_uid.empty()) {
    w.Key("ownerReferences");
    w.StartArray();
    w.StartObject();
    w.Key("apiVersion");
    w.String("v1");
    w.Key("kind");
    w.String("Node");
    w.Key("name");
    put(w, node);
    w.Key("uid");
    put(w, node_uid);
    w.Key("controller");
    w.Bool(true);
    w.EndObject();
    w.EndArray();
  }
  w.EndObject();
  w.Key("spec");
  w.StartObject();
  w.Key("driver");
  w.String(dra_driver);
  w.Key("nodeName");
  put(w, node);
  put_pool(w, s);
  put_content(w, s.content, false);
  w.EndObject();
  w.EndObject();
  return b.GetString();
}

std::string slice_patch_json(const slice_write& s) {
  rapidjson::StringBuffer b;
  json_writer w(b);
  w.StartObject();
  if (!s.resource_version.empty()) {
    w.Key("metadata");
    w.StartObject();
    w.Key("resourceVersion");
    put(w, s.resource_version);
    w.EndObject();
  }
  w.Key("spec");
  w.StartObject();
  put_pool(w, s);
  put_content(w, s.content, true);
  w.EndObject();
  w.EndObject();
  return b.GetString();
}

// -- one node --

std::vector<slice_write> step_dra(dra_memory& m, const node_memory& node_state,
                                  const observed_node& node,
                                  const std::vector<observed_slice>& slices, sim_time now,
                                  const sim_timing& timing, const dra_timing& dra) {
  const bool up =
      node.api != gpu_api::device_plugin && node_state.plugin_up && node_state.api == node.api;
  if (!m.seen) {
    // Whatever the driver did before gpu-sim started, kubelet knows it only from now on.
    m.seen = true;
    m.down_since = now;
  }
  if (up && (!m.up || m.api != node.api)) {
    // The driver discovers the GPUs as it starts.
    m.up = true;
    m.api = node.api;
    m.in_sync.reset();
    auto fault = node.labels.find(fault_label);
    m.discovered =
        desired_pool(node.api, node_state.gpu_modes,
                     fault != node.labels.end() && parse_faults(fault->second).wrong_count);
  } else if (!up && m.up) {
    m.up = false;
    m.down_since = now;
  }

  // The driver syncs its own pool, named after the node, and deletes its slices of any
  // other pool on the node; kubelet's wipe takes every slice of the driver on the node.
  auto sync = [&](const pool_content& want) {
    std::vector<slice_write> out;
    std::vector<observed_slice> own;
    bool foreign = false;
    for (const auto& s : slices)
      if (s.pool != node.name) {
        foreign = true;
        out.push_back(removal(s, true));
      }
    if (foreign)
      for (const auto& s : slices)
        if (s.pool == node.name)
          own.push_back(s);
    auto writes = sync_pool(node.name, want, foreign ? own : slices);
    out.insert(out.end(), writes.begin(), writes.end());
    return out;
  };
  // The slices as they are now, by name and resourceVersion: a pool found in sync stays so
  // until one of them changes or the driver restarts.
  std::string seen_slices;
  for (const auto& s : slices)
    seen_slices += s.name + "@" + s.resource_version + ",";
  if (m.asked_at) {
    if (now < *m.asked_at + dra.resend_after && !sync(m.asked_for).empty())
      return {};
    m.asked_at.reset();
  }
  std::vector<slice_write> writes;
  if (m.up) {
    if (m.in_sync && *m.in_sync == seen_slices)
      return writes;
    writes = sync(m.discovered);
  } else if (now >= m.down_since + timing.scaled(dra.wipe_delay)) {
    writes = wipe_slices(slices);
  }
  m.in_sync.reset();
  if (writes.empty()) {
    if (m.up)
      m.in_sync = seen_slices;
    return writes;
  }
  m.asked_at = now;
  m.asked_for = m.up ? m.discovered : pool_content{};
  return writes;
}

} // namespace gpu_partitioner::sim
