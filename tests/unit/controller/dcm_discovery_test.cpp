// controller/dcm_discovery: which DCM answers a node (its pod there), the ConfigMap it
// reads (the pod's volume at /etc/config-manager), its version (its image's tag), and
// what that DCM would refuse (controller/dcm_payload dcm_refusal).
#include "controller/dcm_discovery.hpp"
#include "controller/dcm_payload.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

namespace gc = gpu_partitioner::controller;

namespace {

const std::string ns = "kube-amd-gpu";

gc::pod_info dcm_pod(const std::string& name, const std::optional<std::string>& mount,
                     bool standalone = false) {
  gc::pod_info p;
  p.ns = ns;
  p.name = name;
  p.node_name = "gpu-1";
  p.phase = "Running";
  if (standalone)
    p.labels = {{"app", "amdgpu-device-config-manager"}};
  else
    p.labels = {{"app.kubernetes.io/name", "device-config-manager"}};
  p.dcm_config_mount = mount;
  p.dcm_image = "docker.io/rocm/device-config-manager:v1.4.1";
  return p;
}

gc::node_dcm find(const std::vector<gc::pod_info>& pods) {
  std::vector<const gc::pod_info*> ptrs;
  for (const auto& p : pods)
    ptrs.push_back(&p);
  return gc::find_node_dcm(ptrs, ns);
}

std::string group(const std::string& compute, const std::string& memory,
                  const std::string& count = R"(,"numGPUsAssigned":8)") {
  return R"({"skippedGPUs":{"ids":[]},"profiles":[{"computePartition":")" + compute +
         R"(","memoryPartition":")" + memory + "\"" + count + "}]}";
}

} // namespace

BOOST_AUTO_TEST_SUITE(dcm_discovery)

BOOST_AUTO_TEST_CASE(the_gpu_operators_dcm_reads_the_configmap_its_pod_mounts) {
  const auto d = find({dcm_pod("dcm-a", std::string("config-manager-config"))});
  BOOST_TEST(d.pod == ns + "/dcm-a");
  BOOST_TEST(d.running);
  BOOST_TEST(d.config_map == "config-manager-config");
  BOOST_TEST(d.problem.empty());
  BOOST_REQUIRE(d.version.has_value());
  BOOST_TEST(d.version->text() == "1.4.1");
}

BOOST_AUTO_TEST_CASE(standalone_dcm_is_known_by_its_charts_label) {
  const auto d = find({dcm_pod("st", std::string("dcm-st"), true)});
  BOOST_TEST(d.config_map == "dcm-st");
  BOOST_TEST(d.running);
  auto other = dcm_pod("st", std::string("dcm-st"), true);
  other.ns = "team"; // DCM's labels in another namespace are anyone's
  BOOST_TEST(find({other}).pod.empty());
}

BOOST_AUTO_TEST_CASE(what_dcm_reads_cannot_be_told_is_a_problem_naming_what_was_found) {
  const auto two = find({dcm_pod("dcm-a", std::string("default-dcm-config")),
                         dcm_pod("st", std::string("dcm-st"), true)});
  BOOST_TEST(two.config_map.empty());
  BOOST_TEST(two.problem.find("2 DCM pods") != std::string::npos, two.problem);
  BOOST_TEST(two.problem.find("ConfigMap dcm-st") != std::string::npos, two.problem);
  const auto bare = find({dcm_pod("dcm-a", std::nullopt)});
  BOOST_TEST(bare.config_map.empty());
  BOOST_TEST(bare.problem.find("mounts nothing at /etc/config-manager") != std::string::npos,
             bare.problem);
  const auto other = find({dcm_pod("dcm-a", std::string())});
  BOOST_TEST(other.problem.find("no ConfigMap") != std::string::npos, other.problem);
}

BOOST_AUTO_TEST_CASE(a_dcm_pod_being_replaced_gives_way_to_its_successor) {
  auto old = dcm_pod("dcm-old", std::string("default-dcm-config"));
  old.deleting = true;
  const auto both = find({old, dcm_pod("dcm-new", std::string("config-manager-config"))});
  BOOST_TEST(both.problem.empty());
  BOOST_TEST(both.config_map == "config-manager-config");
  const auto leaving = find({old});
  BOOST_TEST(leaving.config_map == "default-dcm-config");
  BOOST_TEST(!leaving.running, "a pod being deleted answers no new label");
  auto done = dcm_pod("dcm-done", std::string("x"));
  done.phase = "Failed";
  BOOST_TEST(find({done}).pod.empty());
}

// Who reads which ConfigMap is shared by every node's slice: a DCM pod that comes, goes,
// moves or mounts another changes it; any other pod change does not.
BOOST_AUTO_TEST_CASE(a_dcm_pod_that_comes_goes_or_mounts_another_changes_who_reads_what) {
  const auto a = dcm_pod("dcm-a", std::string("default-dcm-config"));
  auto other = a;
  other.dcm_config_mount = "config-manager-config";
  auto status_only = a;
  status_only.phase = "Pending";
  auto web = a;
  web.ns = "team";
  BOOST_TEST(gc::dcm_reader_changed(nullptr, &a, ns));
  BOOST_TEST(gc::dcm_reader_changed(&a, nullptr, ns));
  BOOST_TEST(gc::dcm_reader_changed(&a, &other, ns));
  BOOST_TEST(!gc::dcm_reader_changed(&a, &status_only, ns));
  BOOST_TEST(!gc::dcm_reader_changed(nullptr, &web, ns));
  BOOST_TEST(!gc::dcm_reader_changed(&web, nullptr, ns));
}

BOOST_AUTO_TEST_CASE(dcms_version_is_its_images_tag) {
  auto v = [](const std::string& image) {
    const auto r = gc::dcm_version_of_image(image);
    return r ? r->text() : std::string("none");
  };
  BOOST_TEST(v("docker.io/rocm/device-config-manager:v1.3.0") == "1.3.0");
  BOOST_TEST(v("rocm/device-config-manager:1.4.1-beta@sha256:abc") == "1.4.1");
  BOOST_TEST(v("registry:5000/rocm/device-config-manager:v1.5") == "1.5.0");
  BOOST_TEST(v("registry:5000/rocm/device-config-manager") == "none", "a port is no tag");
  BOOST_TEST(v("rocm/device-config-manager:latest") == "none");
  BOOST_TEST(v("rocm/device-config-manager:v1") == "none");
  BOOST_TEST(v("rocm/device-config-manager:v1.3x") == "none");
  BOOST_TEST(v("") == "none");
}

BOOST_AUTO_TEST_CASE(modes_the_kernel_refuses_on_mi300x_are_refused) {
  for (const auto& [c, m] : std::vector<std::pair<std::string, std::string>>{
           {"SPX", "NPS1"}, {"DPX", "NPS2"}, {"QPX", "NPS4"}, {"CPX", "NPS4"}, {"CPX", "NPS1"}})
    BOOST_TEST(!gc::dcm_refusal(group(c, m), "74a1", std::nullopt), c << "+" << m);
  for (const auto& [c, m] : std::vector<std::pair<std::string, std::string>>{
           {"CPX", "NPS2"}, {"QPX", "NPS2"}, {"CPX", "NPS8"}}) {
    const auto r = gc::dcm_refusal(group(c, m), "74a1", std::nullopt);
    BOOST_REQUIRE(r.has_value());
    BOOST_TEST(r->find(c + " with " + m + " is a mode the kernel refuses on MI300X") !=
                   std::string::npos,
               *r);
  }
  BOOST_TEST(!gc::dcm_refusal(group("CPX", "NPS2"), "", std::nullopt), "an unknown part");
}

BOOST_AUTO_TEST_CASE(a_group_without_its_count_is_refused_by_dcm_1_3_only) {
  const auto omitted = group("CPX", "NPS4", "");
  const auto r = gc::dcm_refusal(omitted, "74a1", gc::dcm_version_of_image("dcm:v1.3.0"));
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->find("omits numGPUsAssigned, which DCM 1.3.0 reads as 0") != std::string::npos, *r);
  BOOST_TEST(!gc::dcm_refusal(omitted, "74a1", gc::dcm_version_of_image("dcm:v1.4.1")));
  BOOST_TEST(!gc::dcm_refusal(omitted, "74a1", std::nullopt), "a version not known");
}

BOOST_AUTO_TEST_SUITE_END()
