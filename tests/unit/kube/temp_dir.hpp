// A scratch folder for one test, removed with its contents at the end of the test.
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace gpu_partitioner::kube::testing {

class temp_dir {
public:
  temp_dir() {
    const char* root = std::getenv("TEST_TMPDIR");
    std::string pattern =
        std::string(root != nullptr && *root != '\0' ? root : "/tmp") + "/kube-test-XXXXXX";
    BOOST_TEST_REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

  /// Writes (or replaces) a file in the folder and returns its path.
  std::string write(const std::string& name, const std::string& content,
                    bool executable = false) const {
    const std::string target = file(name);
    // Replace by rename so a concurrent reader never sees a half-written file.
    const std::string staging = target + ".new";
    {
      std::ofstream out(staging, std::ios::binary | std::ios::trunc);
      out << content;
      BOOST_TEST_REQUIRE(out.good(), "cannot write " << staging);
    }
    if (executable)
      ::chmod(staging.c_str(), 0755);
    BOOST_TEST_REQUIRE(::rename(staging.c_str(), target.c_str()) == 0);
    return target;
  }

  void remove(const std::string& name) const { ::unlink(file(name).c_str()); }

private:
  std::string path_;
};

} // namespace gpu_partitioner::kube::testing
