#include "controller/dra.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <set>
#include <utility>

namespace gpu_partitioner::controller {

dra_publication publication_of(const std::vector<resource_slice_info>& slices,
                               const std::string& driver) {
  dra_publication out;
  // A pool is republished slice by slice: only its newest generation counts, and only
  // once all of its slices are there (resourceSliceCount).
  std::map<std::string, std::int64_t> newest;
  for (const auto& s : slices) {
    if (s.driver != driver)
      continue;
    out.publishes = true;
    out.dynamic = out.dynamic || s.shared_counters ||
                  std::any_of(s.devices.begin(), s.devices.end(),
                              [](const dra_device& d) { return d.consumes_counters; });
    auto [it, fresh] = newest.emplace(s.pool, s.generation);
    if (!fresh)
      it->second = std::max(it->second, s.generation);
  }
  out.complete = out.publishes;
  for (const auto& [pool, generation] : newest) {
    std::int64_t have = 0;
    std::int64_t want = 1;
    for (const auto& s : slices)
      if (s.driver == driver && s.pool == pool && s.generation == generation) {
        ++have;
        want = std::max<std::int64_t>(want, s.slice_count);
        out.current.push_back(&s);
      }
    out.complete = out.complete && have >= want;
  }
  return out;
}

bool publishes_gpus(const std::vector<resource_slice_info>& slices) {
  return std::any_of(slices.begin(), slices.end(), [](const resource_slice_info& s) {
    return s.driver == protocol::amd_dra_driver;
  });
}

std::string slice_mark(const resource_slice_info& slice) {
  return slice.uid + "@" + slice.resource_version;
}

std::int64_t matching_devices(const std::vector<const resource_slice_info*>& slices,
                              const protocol::expected_device& want) {
  const std::string driver = protocol::device_driver(want);
  std::int64_t n = 0;
  for (const auto* s : slices) {
    if (s->driver != driver)
      continue;
    for (const auto& d : s->devices) {
      const bool all =
          std::all_of(want.attributes.begin(), want.attributes.end(), [&](const auto& a) {
            auto it = d.attributes.find(a.first);
            return it != d.attributes.end() && it->second == a.second;
          });
      n += all ? 1 : 0;
    }
  }
  return n;
}

namespace {

std::string describe_expected(const protocol::expected_device& want) {
  std::string what;
  for (const auto& [k, v] : want.attributes)
    what += (what.empty() ? " with " : ", ") + k + "=" + v;
  return protocol::device_driver(want) + ": " + std::to_string(want.count) + " device(s)" + what;
}

} // namespace

std::string devices_gap(const std::vector<resource_slice_info>& slices,
                        const std::vector<protocol::expected_device>& expected,
                        const std::vector<std::string>* before, bool driver_back) {
  std::vector<std::string> gaps;
  // Each driver's publication, worked out once: the pools are checked, then the counts.
  std::map<std::string, dra_publication> pubs;
  for (const auto& want : expected)
    pubs.emplace(protocol::device_driver(want), dra_publication{});
  if (expected.empty())
    pubs.emplace(protocol::amd_dra_driver, dra_publication{});
  for (auto& [driver, pub] : pubs) {
    pub = publication_of(slices, driver);
    if (!pub.publishes) {
      gaps.push_back(driver + " publishes no ResourceSlice for the node");
      continue;
    }
    if (!pub.complete) {
      gaps.push_back(driver + " is still publishing the node's ResourceSlices");
      continue;
    }
    if (before && !driver_back &&
        std::any_of(pub.current.begin(), pub.current.end(), [&](const resource_slice_info* s) {
          return std::find(before->begin(), before->end(), slice_mark(*s)) != before->end();
        }))
      gaps.push_back(driver + " has not published the node's devices again since DCM ran");
  }
  if (!gaps.empty()) {
    std::string out;
    for (const auto& g : gaps)
      out += (out.empty() ? "" : "; ") + g;
    return out;
  }
  std::string out;
  for (const auto& want : expected) {
    const auto have = matching_devices(pubs.at(protocol::device_driver(want)).current, want);
    if (have != want.count)
      out += (out.empty() ? "expected " : "; expected ") + describe_expected(want) + ", found " +
             std::to_string(have);
  }
  return out;
}

namespace {

// A CEL string literal: single-quoted, with quotes and backslashes escaped.
std::string cel_string(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\\' || c == '\'')
      out += '\\';
    out += c;
  }
  return out + "'";
}

} // namespace

std::string device_class_expression(const std::vector<protocol::expected_device>& expected) {
  std::vector<std::string> alternatives;
  for (const auto& want : expected) {
    const std::string driver = protocol::device_driver(want);
    std::string term = "device.driver == " + cel_string(driver);
    for (const auto& [key, value] : want.attributes) {
      // A qualified name (domain/name) is looked up in its domain, a bare one in the
      // driver's, as DRA's CEL environment files them.
      const auto slash = key.rfind('/');
      const std::string domain = slash == std::string::npos ? driver : key.substr(0, slash);
      const std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
      const std::string attrs = "device.attributes[" + cel_string(domain) + "]";
      term += " && " + cel_string(name) + " in " + attrs + " && " + attrs + "[" + cel_string(name) +
              "] == " + cel_string(value);
    }
    alternatives.push_back(std::move(term));
  }
  if (alternatives.size() == 1)
    return alternatives.front();
  std::string out;
  for (const auto& a : alternatives)
    out += (out.empty() ? "(" : " || (") + a + ")";
  return out;
}

namespace {

using json_writer = rapidjson::Writer<rapidjson::StringBuffer>;

// Starts an object the operator writes: apiVersion, kind, and metadata with its name and
// the label that marks it as ours, metadata left open. Returns how to write a string.
auto open_object(json_writer& w, const std::string& api_version, const std::string& kind,
                 const std::string& name) {
  auto text = [&w](const std::string& t) {
    w.String(t.c_str(), static_cast<rapidjson::SizeType>(t.size()));
  };
  w.StartObject();
  w.Key("apiVersion");
  text(api_version);
  w.Key("kind");
  text(kind);
  w.Key("metadata");
  w.StartObject();
  w.Key("name");
  text(name);
  w.Key("labels");
  w.StartObject();
  w.Key(managed_by_label);
  text(managed_by_value);
  w.EndObject();
  return text;
}

} // namespace

std::string device_class_json(const protocol::partitioning_profile& profile) {
  const auto& name = profile.spec.device_class_name;
  if (!name || profile.spec.expected_devices.empty())
    return {};
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  const auto text = open_object(w, "resource.k8s.io/v1", "DeviceClass", *name);
  // Owned by the profile: the garbage collector removes it with the profile.
  w.Key("ownerReferences");
  w.StartArray();
  w.StartObject();
  w.Key("apiVersion");
  text(std::string(protocol::api_version));
  w.Key("kind");
  text(std::string(protocol::partitioning_profile::kind_name));
  w.Key("name");
  text(profile.metadata.name);
  w.Key("uid");
  text(profile.metadata.uid);
  w.EndObject();
  w.EndArray();
  w.EndObject();
  w.Key("spec");
  w.StartObject();
  w.Key("selectors");
  w.StartArray();
  w.StartObject();
  w.Key("cel");
  w.StartObject();
  w.Key("expression");
  text(device_class_expression(profile.spec.expected_devices));
  w.EndObject();
  w.EndObject();
  w.EndArray();
  w.EndObject();
  w.EndObject();
  return buffer.GetString();
}

std::vector<const resource_claim_info*> gpu_claims(const std::vector<resource_claim_info>& claims) {
  std::vector<const resource_claim_info*> out;
  for (const auto& c : claims)
    if (std::any_of(c.devices.begin(), c.devices.end(), [](const resource_claim_info::device& d) {
          return d.driver == protocol::amd_dra_driver;
        }))
      out.push_back(&c);
  return out;
}

std::map<std::string, int> claim_holders(const std::vector<resource_claim_info>& claims) {
  std::map<std::string, int> out;
  for (const auto* c : gpu_claims(claims)) {
    const auto n = std::count_if(c->devices.begin(), c->devices.end(), [](const auto& d) {
      return d.driver == protocol::amd_dra_driver;
    });
    for (const auto& [uid, name] : c->reserved_for)
      out[uid] += static_cast<int>(n);
  }
  return out;
}

std::int64_t free_gpu_devices(const std::vector<resource_slice_info>& slices,
                              const std::vector<resource_claim_info>& claims) {
  std::set<std::pair<std::string, std::string>> held; // pool, device
  for (const auto& c : claims)
    for (const auto& d : c.devices)
      if (d.driver == protocol::amd_dra_driver)
        held.emplace(d.pool, d.name);
  std::int64_t n = 0;
  for (const auto* s : publication_of(slices, protocol::amd_dra_driver).current)
    for (const auto& d : s->devices)
      n += held.count({s->pool, d.name}) ? 0 : 1;
  return n;
}

std::string device_taint_rule_name(const std::string& node) {
  constexpr std::size_t limit = 253;
  std::string name = "gpu-partitioner-" + node;
  if (name.size() <= limit)
    return name;
  // FNV-1a: the same node gives the same name in every operator, whatever its build.
  std::uint32_t h = 2166136261u;
  for (unsigned char c : node)
    h = (h ^ c) * 16777619u;
  static const char* hex = "0123456789abcdef";
  std::string tag = "-";
  for (int shift = 28; shift >= 0; shift -= 4)
    tag += hex[(h >> shift) & 0xf];
  name.resize(limit - tag.size());
  // A DNS subdomain ends with an alphanumeric character; so does the hash.
  return name + tag;
}

std::string device_taint_rule_json(const std::string& name, const std::string& node,
                                   const std::string& pool, const std::string& effect) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  const auto text = open_object(w, "resource.k8s.io/v1alpha3", "DeviceTaintRule", name);
  w.Key("annotations");
  w.StartObject();
  w.Key(device_taint_node_annotation);
  text(node);
  w.EndObject();
  w.EndObject();
  w.Key("spec");
  w.StartObject();
  w.Key("deviceSelector");
  w.StartObject();
  w.Key("driver");
  text(protocol::amd_dra_driver);
  w.Key("pool");
  text(pool);
  w.EndObject();
  w.Key("taint");
  w.StartObject();
  w.Key("key");
  text(device_taint_key);
  w.Key("effect");
  text(effect);
  w.EndObject();
  w.EndObject();
  w.EndObject();
  return buffer.GetString();
}

std::string gpu_pool(const std::vector<resource_slice_info>& slices) {
  std::string pool;
  for (const auto& s : slices) {
    if (s.driver != protocol::amd_dra_driver)
      continue;
    if (!pool.empty() && s.pool != pool)
      return {};
    pool = s.pool;
  }
  return pool;
}

bool dra_driver_image(const std::string& image) {
  std::string repo = image.substr(0, image.find('@'));
  // A tag follows the last ':' after the last '/' (a registry's port comes before it).
  const auto slash = repo.rfind('/');
  const auto colon = repo.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash))
    repo.resize(colon);
  const auto last = repo.rfind('/');
  return repo.substr(last == std::string::npos ? 0 : last + 1) == "k8s-gpu-dra-driver";
}

} // namespace gpu_partitioner::controller
