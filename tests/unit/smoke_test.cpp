#include <boost/test/unit_test.hpp>

#include "protocol/version.hpp"

#include <string>

BOOST_AUTO_TEST_CASE(version_is_semver_like) {
  const std::string v = gpu_partitioner::version;
  BOOST_TEST(v.find('.') != std::string::npos);
}
