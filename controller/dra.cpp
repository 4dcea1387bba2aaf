#include "controller/dra.hpp"

#include <algorithm>
#include <set>

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
  std::set<std::string> drivers;
  for (const auto& want : expected)
    drivers.insert(protocol::device_driver(want));
  if (expected.empty())
    drivers.insert(protocol::amd_dra_driver);
  for (const auto& driver : drivers) {
    const auto pub = publication_of(slices, driver);
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
    const auto pub = publication_of(slices, protocol::device_driver(want));
    const auto have = matching_devices(pub.current, want);
    if (have != want.count)
      out += (out.empty() ? "expected " : "; expected ") + describe_expected(want) + ", found " +
             std::to_string(have);
  }
  return out;
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

} // namespace gpu_partitioner::controller
