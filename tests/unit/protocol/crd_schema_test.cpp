// The CRDs in manifests/crds and the C++ field tables describe the same API: the same
// fields, types, required fields, enums, minimums, lengths, patterns, list keys and
// defaults, so the API server and the operator accept and default the same objects.
// Also: every property is documented, and the printer columns point at real fields.
#include "protocol/canonical_json.hpp"
#include "protocol/json.hpp"
#include "tests/unit/protocol/yaml_json.hpp"

#include <boost/test/unit_test.hpp>

#include <rapidjson/document.h>

#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace gp = gpu_partitioner::protocol;
namespace gpt = gpu_partitioner::protocol::testing;
namespace codec = gpu_partitioner::protocol::codec;
using rapidjson::Value;

namespace {

const std::string crds = "manifests/crds/";

// Cross-field rules the API server checks at apply time, while the C++ decoder does not:
// the operator checks them in controller::check_spec (plan_resolution.cpp and
// rollout_gate.cpp's windows_of) and marks the plan Invalid naming the field, so that a plan
// stored before a rule existed still decodes and says what is wrong. Each must have a rule.
const std::set<std::string> checked_by_plan_resolution = {
    "spec.partitionings[].selector", "spec.rollout.canary", "spec.rollout.canary.selector",
    "spec.rollout.windows[]"};

std::string str(const Value& v) {
  return v.IsString() ? std::string(v.GetString(), v.GetStringLength()) : std::string();
}

std::string canonical(const Value& v) {
  return gp::canonical_json(v).value();
}

template <class M>
std::string encoded(const M& m) {
  rapidjson::Document doc;
  codec::encode_value(m, doc, doc.GetAllocator());
  return canonical(doc);
}

template <class I>
std::optional<std::int64_t> int32_maximum() {
  if (sizeof(I) == 4)
    return std::numeric_limits<std::int32_t>::max();
  return std::nullopt;
}

// Compares one CRD schema with one C++ table, recursively, collecting differences.
class schema_comparison {
public:
  std::vector<std::string> problems;

  template <class T>
  void object(const Value& schema, const std::string& path) {
    if (!expect_type(schema, "object", path))
      return;
    if (path == "metadata")
      return; // left to the API server's own validation
    const Value* props = member(schema, "properties");
    if (props == nullptr || !props->IsObject()) {
      problem(path, "has no properties");
      return;
    }
    std::set<std::string> in_table, required_in_table, required_in_crd;
    codec::for_each_field<T>([&](const auto& f) {
      using M = typename std::decay_t<decltype(f)>::member_type;
      const std::string name(f.name);
      in_table.insert(name);
      if (f.is_required)
        required_in_table.insert(name);
      const std::string sub = path.empty() ? name : path + "." + name;
      const Value* prop = member(*props, name);
      if (prop == nullptr) {
        problem(sub, "is in the C++ table but not in the CRD");
        return;
      }
      // The API server allows nothing but `type: object` for the root's metadata.
      if (!member(*prop, "description") && sub != "metadata")
        problem(sub, "has no description (kubectl explain shows nothing)");
      value<M>(*prop, f.rule, sub);
      defaults<T, M>(*prop, f, sub);
    });
    for (const auto& m : props->GetObject())
      if (!in_table.count(str(m.name)))
        problem(path + "." + str(m.name), "is in the CRD but not in the C++ table");
    if (const Value* req = member(schema, "required"))
      for (const auto& r : req->GetArray())
        required_in_crd.insert(str(r));
    if (required_in_crd != required_in_table)
      problem(path, "required fields differ: CRD " + join(required_in_crd) + ", C++ " +
                        join(required_in_table));
    const bool has_rule = member(schema, "x-kubernetes-validations") != nullptr;
    if (checked_by_plan_resolution.count(path) != 0) {
      if (!has_rule)
        problem(path, "has no CEL rule, though the operator's plan checks expect one");
    } else if (has_rule != codec::has_object_check<T>::value)
      problem(path, has_rule ? "has a CEL rule the C++ decoder does not check"
                             : "has a C++ object check the CRD does not state as a CEL rule");
  }

private:
  static const Value* member(const Value& v, const char* name) {
    if (!v.IsObject())
      return nullptr;
    auto it = v.FindMember(name);
    return it == v.MemberEnd() ? nullptr : &it->value;
  }
  static const Value* member(const Value& v, const std::string& name) {
    return member(v, name.c_str());
  }

  static std::string join(const std::set<std::string>& s) {
    std::string out = "[";
    for (const auto& x : s)
      out += (out.size() > 1 ? "," : "") + x;
    return out + "]";
  }

  void problem(const std::string& path, const std::string& what) {
    problems.push_back(path + ": " + what);
  }

  bool expect_type(const Value& schema, const char* type, const std::string& path) {
    const Value* t = member(schema, "type");
    if (t == nullptr || str(*t) != type) {
      problem(path, std::string("CRD type is not ") + type);
      return false;
    }
    return true;
  }

  // A keyword's number in the CRD must equal the table's, or both be absent.
  template <class N>
  void same_number(const Value& schema, const char* keyword, const std::optional<N>& rule,
                   const std::string& path) {
    const Value* v = member(schema, keyword);
    const bool crd_has = v != nullptr && v->IsInt64();
    if (crd_has != rule.has_value() ||
        (crd_has && v->GetInt64() != static_cast<std::int64_t>(*rule)))
      problem(path, std::string(keyword) + " differs: CRD " +
                        (crd_has ? std::to_string(v->GetInt64()) : "none") + ", C++ " +
                        (rule ? std::to_string(*rule) : "none"));
  }

  void same_string(const Value& schema, const char* keyword, std::string_view expected,
                   const std::string& path) {
    const Value* v = member(schema, keyword);
    const std::string crd = v ? str(*v) : "";
    if (crd != expected)
      problem(path, std::string(keyword) + " differs: CRD \"" + crd + "\", C++ \"" +
                        std::string(expected) + "\"");
  }

  template <class M>
  void value(const Value& schema, const codec::rules& r, const std::string& path) {
    if constexpr (codec::is_optional<M>::value) {
      value<typename M::value_type>(schema, r, path);
    } else if constexpr (std::is_same_v<M, std::string>) {
      if (!expect_type(schema, "string", path))
        return;
      same_number(schema, "minLength", r.min_length, path);
      same_number(schema, "maxLength", r.max_length, path);
      same_string(schema, "pattern", r.match ? r.match->regex : "", path);
      same_string(schema, "format", r.date_time ? "date-time" : "", path);
    } else if constexpr (std::is_same_v<M, bool>) {
      expect_type(schema, "boolean", path);
    } else if constexpr (std::is_integral_v<M>) {
      if (!expect_type(schema, "integer", path))
        return;
      same_string(schema, "format", sizeof(M) == 4 ? "int32" : "int64", path);
      same_number(schema, "minimum", r.minimum, path);
      // The API server does not enforce `format: int32`; a maximum makes it refuse what
      // the decoder would refuse.
      same_number(schema, "maximum", r.maximum ? r.maximum : int32_maximum<M>(), path);
    } else if constexpr (codec::is_named_enum_v<M>) {
      if (!expect_type(schema, "string", path))
        return;
      std::vector<std::string> table, crd;
      for (const auto& e : enum_names(codec::tag<M>{}))
        table.emplace_back(e.name);
      if (const Value* values = member(schema, "enum"))
        for (const auto& v : values->GetArray())
          crd.push_back(str(v));
      if (crd != table)
        problem(path, "enum values differ from the C++ table");
    } else if constexpr (gp::is_int_or_percent<M>::value) {
      const Value* flag = member(schema, "x-kubernetes-int-or-string");
      if (!flag || !flag->IsBool() || !flag->GetBool() || member(schema, "type"))
        problem(path, "is not x-kubernetes-int-or-string without a type");
      same_number(schema, "minimum", std::optional<std::int64_t>(M::schema_minimum), path);
      same_number(schema, "maximum", int32_maximum<std::int32_t>(), path);
      same_string(schema, "pattern", M::schema_pattern, path);
    } else if constexpr (codec::is_vector<M>::value) {
      if (!expect_type(schema, "array", path))
        return;
      same_number(schema, "minItems", r.min_items, path);
      same_number(schema, "maxItems", r.max_items, path);
      const Value* list_type = member(schema, "x-kubernetes-list-type");
      const Value* keys = member(schema, "x-kubernetes-list-map-keys");
      const bool crd_map = list_type && str(*list_type) == "map";
      if (crd_map != !r.map_key.empty() ||
          (crd_map && (!keys || keys->Size() != 1 || str((*keys)[0]) != r.map_key)))
        problem(path, "list-type map keys differ from the C++ table");
      if (const Value* items = member(schema, "items"))
        value<typename M::value_type>(*items, codec::rules{}, path + "[]");
      else
        problem(path, "has no items schema");
    } else if constexpr (std::is_same_v<M, std::map<std::string, std::string>>) {
      if (!expect_type(schema, "object", path))
        return;
      const Value* extra = member(schema, "additionalProperties");
      if (!extra || !member(*extra, "type") || str(*member(*extra, "type")) != "string")
        problem(path, "is not a map of strings");
    } else {
      object<M>(schema, path);
    }
  }

  // A CRD default must decode to the C++ default, and every spec field the C++ side
  // defaults to something non-empty must have a CRD default, so objects read back from
  // the API server show the values the operator uses.
  template <class Owner, class M, class Field>
  void defaults(const Value& schema, const Field& f, const std::string& path) {
    const M cpp_default = Owner{}.*f.member;
    const Value* crd_default = member(schema, "default");
    if (crd_default != nullptr) {
      auto decoded = codec::decode<M>(*crd_default);
      if (!decoded.ok())
        problem(path, "CRD default does not decode: " + decoded.error().message());
      else if (encoded(decoded.value()) != encoded(cpp_default))
        problem(path, "CRD default " + canonical(*crd_default) + " means " +
                          encoded(decoded.value()) + ", C++ default is " + encoded(cpp_default));
      return;
    }
    const bool in_spec = path.rfind("spec.", 0) == 0;
    if (in_spec && !f.is_required && !codec::is_empty_value(cpp_default) &&
        !codec::is_optional<M>::value)
      problem(path, "C++ defaults it to " + encoded(cpp_default) + " but the CRD has no default");
  }
};

template <class M>
struct unwrap_optional {
  using type = M;
};
template <class M>
struct unwrap_optional<std::optional<M>> {
  using type = M;
};

// Whether `.a.b.c` names a field reachable through T's tables.
template <class T>
bool has_field_path(std::string_view path) {
  if (path.empty())
    return true;
  if (path.front() != '.')
    return false;
  path.remove_prefix(1);
  const auto dot = path.find('.');
  const auto head = path.substr(0, dot);
  const auto rest = dot == std::string_view::npos ? std::string_view() : path.substr(dot);
  bool found = false;
  codec::for_each_field<T>([&](const auto& f) {
    using M = typename std::decay_t<decltype(f)>::member_type;
    using V = typename unwrap_optional<M>::type;
    if (f.name != head)
      return;
    if constexpr (codec::is_described_v<V> && !std::is_same_v<V, gp::object_meta>)
      found = has_field_path<V>(rest);
    else
      found = rest.empty() || std::is_same_v<V, gp::object_meta>;
  });
  return found;
}

template <class T, class = void>
struct has_status : std::false_type {};
template <class T>
struct has_status<T, std::void_t<decltype(std::declval<T&>().status)>> : std::true_type {};

template <class T>
void check_crd(const std::string& file, const std::string& short_name) {
  rapidjson::Document crd;
  crd.Parse(gpt::yaml_document_to_json(crds + file).c_str());
  BOOST_TEST_REQUIRE(!crd.HasParseError());
  const Value& spec = crd["spec"];
  BOOST_TEST(str(spec["group"]) == std::string(gp::api_group));
  BOOST_TEST(str(spec["scope"]) == "Cluster");
  BOOST_TEST(str(spec["names"]["kind"]) == std::string(T::kind_name));
  BOOST_TEST(str(spec["names"]["plural"]) == std::string(T::plural));
  BOOST_TEST(str(crd["metadata"]["name"]) == std::string(T::plural) + "." + str(spec["group"]));
  BOOST_TEST(str(spec["names"]["shortNames"][0]) == short_name);
  BOOST_TEST(str(spec["names"]["categories"][0]) == "gpu-partitioning");
  BOOST_TEST_REQUIRE(spec["versions"].Size() == 1u);
  const Value& version = spec["versions"][0];
  BOOST_TEST(str(version["name"]) == std::string(gp::api_group_version));
  // The status subresource exactly where the kind has a status (profiles have none).
  const bool subresource =
      version.HasMember("subresources") && version["subresources"].HasMember("status");
  BOOST_TEST(subresource == has_status<T>::value);

  schema_comparison comparison;
  comparison.object<T>(version["schema"]["openAPIV3Schema"], "");
  std::ostringstream all;
  for (const auto& p : comparison.problems)
    all << "\n  " << p;
  BOOST_TEST(comparison.problems.empty(), file << " and the C++ table differ:" << all.str());

  for (const auto& column : version["additionalPrinterColumns"].GetArray()) {
    const std::string path = str(column["jsonPath"]);
    BOOST_TEST(has_field_path<T>(path), file << ": printer column " << str(column["name"])
                                             << " shows " << path << ", which is no field");
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(crd_schemas)

BOOST_AUTO_TEST_CASE(profile_crd_matches_the_cpp_table) {
  check_crd<gp::partitioning_profile>("partitioningprofiles.yaml", "gpuprofile");
}

BOOST_AUTO_TEST_CASE(plan_crd_matches_the_cpp_table) {
  check_crd<gp::partitioning_plan>("partitioningplans.yaml", "gpuplan");
}

BOOST_AUTO_TEST_CASE(node_partitioning_crd_matches_the_cpp_table) {
  check_crd<gp::node_partitioning>("nodepartitionings.yaml", "nodepart");
}

BOOST_AUTO_TEST_CASE(the_comparison_notices_a_difference) {
  // Guard against a comparison that passes vacuously: a changed minimum is reported.
  rapidjson::Document crd;
  crd.Parse(gpt::yaml_document_to_json(crds + "partitioningplans.yaml").c_str());
  auto& schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
  schema["properties"]["spec"]["properties"]["rollout"]["properties"]["maxParallel"]["minimum"]
      .SetInt(0);
  schema_comparison comparison;
  comparison.object<gp::partitioning_plan>(schema, "");
  BOOST_TEST_REQUIRE(comparison.problems.size() == 1u);
  BOOST_TEST(comparison.problems[0] == "spec.rollout.maxParallel: minimum differs: CRD 0, C++ 1");
}

BOOST_AUTO_TEST_CASE(every_crd_file_is_checked) {
  BOOST_TEST(gpt::files_in(crds, ".yaml") ==
                 (std::vector<std::string>{"nodepartitionings.yaml", "partitioningplans.yaml",
                                           "partitioningprofiles.yaml"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
