#pragma once

// The benchmarks' timer: runs `f` `rounds` times and prints the mean in milliseconds.

#include <chrono>
#include <cstdio>

namespace gpu_partitioner::bench {

template <class F>
void timed(const char* what, int rounds, F&& f) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < rounds; ++i)
    f();
  const auto took =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("%-44s %9.4f ms\n", what, took / rounds);
}

} // namespace gpu_partitioner::bench
