// Benchmarks of kube/ (issue: the decoder must never be the bottleneck).
//   kube_bench decode [EVENTS]      decode a generated stream of Node watch events in-process
//   kube_bench list [NODES]         create NODES Node objects (if missing) and time listing them
// Prints one Markdown table row per measurement; tools/bench collects them.
#include "kube/client.hpp"
#include "kube/config.hpp"
#include "kube/watch_protocol.hpp"
#include "kube/watch_stream.hpp"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

using namespace gpu_partitioner;
using clock_type = std::chrono::steady_clock;

namespace {

// A Node as a simulated MI300X node looks on the wire (about 2.5 KB).
std::string node_json(int i, long long rv) {
  const std::string name = "gpu-node-" + std::to_string(i);
  return R"({"kind":"Node","apiVersion":"v1","metadata":{"name":")" + name +
         R"(","uid":"6a0b1c2d-0000-4000-8000-)" + std::to_string(100000000000LL + i) +
         R"(","resourceVersion":")" + std::to_string(rv) +
         R"(","creationTimestamp":"2026-11-29T10:00:00Z","labels":{"beta.kubernetes.io/arch":"amd64",)"
         R"("beta.kubernetes.io/os":"linux","kubernetes.io/arch":"amd64","kubernetes.io/hostname":")" +
         name +
         R"(","kubernetes.io/os":"linux","gpu.vendor":"amd","gpu.family":"mi300x","nodepool":"training-gpu",)"
         R"("amd.com/gpu.ready":"true","amd.com/gpu.compute-memory-partition":"spx_nps1",)"
         R"("amd.com/gpu.device-id":"74a1","amd.com/gpu.family":"AI","amd.com/gpu.product-name":"AMD_Instinct_MI300X_OAM",)"
         R"("amd.com/gpu.vram":"192G","amd.com/gpu.cu-count":"304","amd.com/gpu.simd-count":"1216",)"
         R"("amd.com/gpu.driver-version":"6.10.5","dcm.amd.com/gpu-config-profile":"spx-nps1",)"
         R"("dcm.amd.com/gpu-config-profile-state":"success"},"annotations":{"node.alpha.kubernetes.io/ttl":"0",)"
         R"("kwok.x-k8s.io/node":"fake"}},"spec":{"podCIDR":"10.244.)" +
         std::to_string(i % 250) +
         R"(.0/24","taints":[]},"status":{"capacity":{"amd.com/gpu":"8","cpu":"192","ephemeral-storage":"3750Gi",)"
         R"("memory":"2113637Mi","pods":"110"},"allocatable":{"amd.com/gpu":"8","cpu":"190","ephemeral-storage":"3600Gi",)"
         R"("memory":"2100000Mi","pods":"110"},"conditions":[{"type":"MemoryPressure","status":"False",)"
         R"("lastHeartbeatTime":"2026-11-29T10:05:00Z","lastTransitionTime":"2026-11-29T10:00:00Z",)"
         R"("reason":"KubeletHasSufficientMemory","message":"kubelet has sufficient memory available"},)"
         R"({"type":"DiskPressure","status":"False","lastHeartbeatTime":"2026-11-29T10:05:00Z",)"
         R"("lastTransitionTime":"2026-11-29T10:00:00Z","reason":"KubeletHasNoDiskPressure",)"
         R"("message":"kubelet has no disk pressure"},{"type":"PIDPressure","status":"False",)"
         R"("lastHeartbeatTime":"2026-11-29T10:05:00Z","lastTransitionTime":"2026-11-29T10:00:00Z",)"
         R"("reason":"KubeletHasSufficientPID","message":"kubelet has sufficient PID available"},)"
         R"({"type":"Ready","status":"True","lastHeartbeatTime":"2026-11-29T10:05:00Z",)"
         R"("lastTransitionTime":"2026-11-29T10:00:00Z","reason":"KubeletReady","message":"kubelet is posting ready status"}],)"
         R"("addresses":[{"type":"InternalIP","address":"10.0.)" +
         std::to_string(i / 250) + "." + std::to_string(i % 250) +
         R"("},{"type":"Hostname","address":")" + name +
         R"("}],"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"6.8.0",)"
         R"("osImage":"Ubuntu 24.04","containerRuntimeVersion":"containerd://2.0.0","kubeletVersion":"v1.35.4",)"
         R"("kubeProxyVersion":"","operatingSystem":"linux","architecture":"amd64"}}})";
}

double cpu_seconds() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

int decode(int events) {
  // Build the stream first, so only decoding is measured.
  std::string stream;
  const int nodes = 1000;
  for (int i = 0; i < events; ++i) {
    const char* type = i < nodes ? "ADDED" : "MODIFIED";
    stream += std::string(R"({"type":")") + type + R"(","object":)" +
              node_json(i % nodes, 1000 + i) + "}\n";
  }
  // Feed it in 16 KiB chunks, as curl hands over data.
  kube::line_splitter lines;
  kube::watch_event event;
  kube::watch_state state;
  kube::watch_input list;
  list.what = kube::watch_input::kind::list_page;
  list.resource_version = "1";
  (void)kube::watch_start(state);
  (void)kube::watch_step(state, list);
  long long delivered = 0, failed = 0;
  const double cpu0 = cpu_seconds();
  const auto t0 = clock_type::now();
  constexpr std::size_t chunk = 16 * 1024;
  for (std::size_t off = 0; off < stream.size(); off += chunk) {
    lines.feed(std::string_view(stream).substr(off, chunk), [&](std::string& line) {
      if (!kube::decode_event(line, event)) {
        ++failed;
        return;
      }
      kube::watch_input in;
      in.what = kube::watch_input::kind::event;
      in.event = event.type;
      in.object.key = event.key;
      in.object.resource_version = event.resource_version;
      if (kube::watch_step(state, in).deliver_as)
        ++delivered;
    });
  }
  const double wall = std::chrono::duration<double>(clock_type::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;
  std::printf("| decode %d Node watch events (%.1f MB) | %.3f s wall, %.3f s CPU | %.0f events/s "
              "per CPU second | delivered %lld, failed %lld |\n",
              events, stream.size() / 1e6, wall, cpu, events / cpu, delivered, failed);
  return failed == 0 && delivered == events ? 0 : 1;
}

int list(int count) {
  auto config = kube::default_config("");
  if (!config) {
    std::fprintf(stderr, "kube_bench: %s\n", config.error().message.c_str());
    return 2;
  }
  // Create what is missing, four writers at a time.
  {
    std::vector<std::thread> writers;
    for (int w = 0; w < 4; ++w)
      writers.emplace_back([&, w] {
        kube::http_client http(config.value(), std::make_shared<kube::credentials>(config.value()));
        kube::client api(http);
        for (int i = w; i < count; i += 4) {
          const std::string name = "bench-node-" + std::to_string(i);
          std::string body = node_json(i, 0);
          body.replace(body.find("\"resourceVersion\":\"0\","), 22, "");
          for (std::size_t p;
               (p = body.find("gpu-node-" + std::to_string(i) + "\"")) != std::string::npos;)
            body.replace(p, std::string("gpu-node-" + std::to_string(i)).size(), name);
          auto made = api.create(kube::resources::nodes(), "", body);
          if (!made && made.error().kind != kube::error_kind::already_exists)
            std::fprintf(stderr, "create %s: %s\n", name.c_str(), made.error().describe().c_str());
        }
      });
    for (auto& t : writers)
      t.join();
  }
  kube::http_client http(config.value(), std::make_shared<kube::credentials>(config.value()));
  kube::client api(http);
  for (long long page : {500LL, 0LL}) {
    kube::list_options o;
    o.limit = page;
    o.label_selector = "gpu.vendor=amd";
    const double cpu0 = cpu_seconds();
    const auto t0 = clock_type::now();
    auto all = api.list(kube::resources::nodes(), "", o);
    const double wall = std::chrono::duration<double>(clock_type::now() - t0).count();
    const double cpu = cpu_seconds() - cpu0;
    if (!all) {
      std::fprintf(stderr, "list: %s\n", all.error().describe().c_str());
      return 1;
    }
    std::printf(
        "| list %u Nodes, page size %s | %.3f s wall, %.3f s client CPU | %.0f nodes/s | |\n",
        all.value()["items"].Size(), page == 0 ? "unlimited" : std::to_string(page).c_str(), wall,
        cpu, all.value()["items"].Size() / wall);
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "decode";
  const int n = argc > 2 ? std::atoi(argv[2]) : (mode == "list" ? 5000 : 100000);
  int rc = mode == "list" ? list(n) : decode(n);
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  std::fprintf(stderr, "kube_bench %s: peak RSS %.1f MB\n", mode.c_str(), usage.ru_maxrss / 1024.0);
  return rc;
}
