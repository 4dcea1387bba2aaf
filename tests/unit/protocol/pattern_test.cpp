// The hand-written matchers of protocol/codec/pattern.hpp accept exactly what their
// CRD regex accepts (checked with std::regex on short inputs, where it is safe).
#include "protocol/codec/pattern.hpp"

#include <boost/test/unit_test.hpp>

#include <regex>
#include <string>
#include <vector>

namespace codec = gpu_partitioner::protocol::codec;

namespace {

const std::vector<std::string> candidates = {
    "",
    "a",
    "A",
    "0",
    "-",
    "a-",
    "-a",
    "a-b",
    "a--b",
    "training",
    "Training",
    "Training_Pool",
    "training-pool-1",
    "a.b",
    "a..b",
    ".a",
    "a.",
    "amd.com",
    "amd.com/gpu",
    "amd.com/gpu.ready",
    "amd.com/gpu.ready=true",
    "amd.com/gpu.ready=",
    "amd.com/gpu.ready==",
    "amd.com/gpu.ready=a=b",
    "amd.com/gpu.ready=-x",
    "AMD.com/gpu",
    "/gpu",
    "amd.com/",
    "a/b/c",
    "gpu ready",
    "cpx-nps4",
    "cpx_nps4",
    "cpx.nps4",
    "_cpx",
    "cpx_",
    std::string(63, 'a'),
    std::string(64, 'a'),
    "a" + std::string(61, '-') + "a",
    "a" + std::string(62, '-') + "a",
    "Ready",
    "example.com/Ready",
    "ProfileNotFound",
    "Profile:NotFound",
    "Profile,x_",
    "Profile,",
    "9Lives",
    "sha256:" + std::string(64, 'a'),
    "sha256:" + std::string(63, 'a'),
    "sha256:" + std::string(65, 'a'),
    "sha256:" + std::string(64, 'A'),
    "sha256:" + std::string(63, '0') + "g",
    "md5:abc",
    "gpu-node-01",
    "gpu-node-01.example.com",
    "ünicode",
};

void check_agrees(const codec::pattern& p) {
  const std::regex re(std::string(p.regex), std::regex::ECMAScript);
  for (const auto& s : candidates)
    BOOST_TEST(p.matches(s) == std::regex_match(s, re), p.regex << " on \"" << s << "\"");
}

} // namespace

BOOST_AUTO_TEST_SUITE(patterns)

BOOST_AUTO_TEST_CASE(dns1123_label_matcher_agrees_with_its_regex) {
  check_agrees(codec::dns1123_label);
}

BOOST_AUTO_TEST_CASE(dns1123_subdomain_matcher_agrees_with_its_regex) {
  check_agrees(codec::dns1123_subdomain);
}

BOOST_AUTO_TEST_CASE(label_value_matcher_agrees_with_its_regex) {
  check_agrees(codec::label_value);
}

BOOST_AUTO_TEST_CASE(label_key_or_pair_matcher_agrees_with_its_regex) {
  check_agrees(codec::label_key_or_pair);
}

BOOST_AUTO_TEST_CASE(desired_hash_matcher_agrees_with_its_regex) {
  check_agrees(codec::desired_hash_format);
}

BOOST_AUTO_TEST_CASE(condition_type_matcher_agrees_with_its_regex) {
  check_agrees(codec::condition_type);
}

BOOST_AUTO_TEST_CASE(condition_reason_matcher_agrees_with_its_regex) {
  check_agrees(codec::condition_reason);
}

BOOST_AUTO_TEST_CASE(rfc3339_accepts_utc_offsets_and_fractions_and_refuses_the_rest) {
  for (const char* ok :
       {"2024-05-01T12:00:00Z", "2024-05-01t12:00:00z", "2024-02-29T23:59:60Z",
        "2024-05-01T12:00:00.123456Z", "2024-05-01T12:00:00+02:00", "2024-05-01T12:00:00-07:30"})
    BOOST_TEST(codec::is_rfc3339_date_time(ok), ok);
  for (const char* bad : {"", "yesterday", "2024-05-01", "2024-05-01 12:00:00Z",
                          "2024-05-01T12:00Z", "2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z",
                          "2024-05-01T24:00:00Z", "2024-05-01T12:00:00", "2024-05-01T12:00:00.Z",
                          "2024-05-01T12:00:00+0200", "2024-05-01T12:00:00Z trailing"})
    BOOST_TEST(!codec::is_rfc3339_date_time(bad), bad);
}

BOOST_AUTO_TEST_CASE(long_hostile_input_is_matched_without_recursion) {
  const std::string huge(1 << 20, 'a');
  BOOST_TEST(codec::is_dns1123_subdomain(huge));
  BOOST_TEST(!codec::is_dns1123_label(huge + "-"));
}

BOOST_AUTO_TEST_CASE(label_keys_hold_a_63_character_name_after_a_253_character_prefix) {
  const std::string name63(63, 'n');
  const std::string prefix253 = std::string(63, 'p') + "." + std::string(63, 'p') + "." +
                                std::string(63, 'p') + "." + std::string(61, 'p');
  BOOST_TEST(prefix253.size() == 253u);
  BOOST_TEST(codec::is_label_key(name63));
  BOOST_TEST(codec::is_label_key(prefix253 + "/" + name63));
  BOOST_TEST(codec::is_label_key("amd.com/gpu.ready"));
  BOOST_TEST(!codec::is_label_key(name63 + "n"));
  BOOST_TEST(!codec::is_label_key("amd.com/" + name63 + "n"));
  BOOST_TEST(!codec::is_label_key(prefix253 + "p/" + name63));
  BOOST_TEST(!codec::is_label_key("amd.com/gpu!!"));
  BOOST_TEST(!codec::is_label_key(""));
  BOOST_TEST(!codec::is_label_key(std::string(1 << 20, 'g')));
}

BOOST_AUTO_TEST_CASE(label_requirements_are_a_key_or_key_equals_a_63_character_value) {
  BOOST_TEST(codec::is_label_requirement("amd.com/gpu.ready"));
  BOOST_TEST(codec::is_label_requirement("amd.com/gpu.ready=true"));
  BOOST_TEST(codec::is_label_requirement("amd.com/gpu.ready="));
  BOOST_TEST(codec::is_label_requirement("k=" + std::string(63, 'v')));
  BOOST_TEST(!codec::is_label_requirement("k=" + std::string(64, 'v')));
  BOOST_TEST(!codec::is_label_requirement("amd.com/" + std::string(64, 'r')));
  BOOST_TEST(!codec::is_label_requirement("=true"));
}

BOOST_AUTO_TEST_SUITE_END()
