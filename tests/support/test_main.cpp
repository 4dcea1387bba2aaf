// Shared main for the Boost.Test binaries. Under `bazel test` it also writes a JUnit
// report to $XML_OUTPUT_FILE, which tools/test reads to count test cases.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <string>
#include <vector>

namespace {

bool init_unit_test() {
  return true;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> storage(argv, argv + argc);
  if (const char* xml = std::getenv("XML_OUTPUT_FILE"); xml != nullptr && *xml != '\0')
    storage.push_back(std::string("--logger=HRF,warning,stdout:JUNIT,error,") + xml);
  std::vector<char*> args;
  for (auto& arg : storage)
    args.push_back(arg.data());
  return boost::unit_test::unit_test_main(&init_unit_test, static_cast<int>(args.size()),
                                          args.data());
}
