// -o json and -o yaml: objects kept as the server returned them (fields no codec of ours
// knows included), wrapped in kubectl's List, printed as kubectl prints them.
#include "cli/object_output.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

namespace cli = gpu_partitioner::cli;

namespace {

rapidjson::Document json(const char* text) {
  rapidjson::Document d;
  d.Parse(text);
  BOOST_TEST_REQUIRE(!d.HasParseError());
  return d;
}

} // namespace

BOOST_AUTO_TEST_CASE(list_keeps_unknown_fields_and_fills_in_apiVersion_and_kind) {
  const auto plan = json(R"({"apiVersion":"g/v1","kind":"PartitioningPlan",)"
                         R"("metadata":{"name":"p"},"spec":{"futureField":{"x":1}}})");
  // An item of a list answer may come without apiVersion and kind.
  const auto item = json(R"({"metadata":{"name":"p-n1"},"status":{"phase":"Draining"}})");
  const auto list =
      cli::list_of({{&plan, "g/v1", "PartitioningPlan"}, {&item, "g/v1", "NodePartitioning"}});
  BOOST_TEST(cli::json_text(list) == R"({
    "apiVersion": "v1",
    "items": [
        {
            "apiVersion": "g/v1",
            "kind": "PartitioningPlan",
            "metadata": {
                "name": "p"
            },
            "spec": {
                "futureField": {
                    "x": 1
                }
            }
        },
        {
            "apiVersion": "g/v1",
            "kind": "NodePartitioning",
            "metadata": {
                "name": "p-n1"
            },
            "status": {
                "phase": "Draining"
            }
        }
    ],
    "kind": "List",
    "metadata": {
        "resourceVersion": ""
    }
}
)");
}

BOOST_AUTO_TEST_CASE(yaml_sorts_keys_and_puts_list_dashes_at_the_key) {
  const auto v = json(R"({"kind":"List","items":[{"b":[1,2],"a":{"c":"x"}},[]],)"
                      R"("metadata":{},"empty":"","nil":null,"t":true,"f":1.5})");
  BOOST_TEST(cli::yaml_text(v) == "empty: \"\"\n"
                                  "f: 1.5\n"
                                  "items:\n"
                                  "- a:\n"
                                  "    c: x\n"
                                  "  b:\n"
                                  "  - 1\n"
                                  "  - 2\n"
                                  "- []\n"
                                  "kind: List\n"
                                  "metadata: {}\n"
                                  "nil: null\n"
                                  "t: true\n");
}

BOOST_AUTO_TEST_CASE(yaml_quotes_strings_that_would_read_back_as_something_else) {
  const auto v = json(R"({"a":"true","b":"123","c":"2026-11-29T12:00:00Z","d":"no",)"
                      R"("e":"a: b","f":"line\nbreak","g":"amd.com/gpu","h":"1 node failed: x",)"
                      R"("i":"-x","j":"# hash","k":"x #y","l":"Null","m":"*ref"})");
  BOOST_TEST(cli::yaml_text(v) == "a: \"true\"\n"
                                  "b: \"123\"\n"
                                  "c: \"2026-11-29T12:00:00Z\"\n"
                                  "d: \"no\"\n"
                                  "e: \"a: b\"\n"
                                  "f: \"line\\nbreak\"\n"
                                  "g: amd.com/gpu\n"
                                  "h: \"1 node failed: x\"\n"
                                  "i: \"-x\"\n"
                                  "j: \"# hash\"\n"
                                  "k: \"x #y\"\n"
                                  "l: \"Null\"\n"
                                  "m: \"*ref\"\n");
}

BOOST_AUTO_TEST_CASE(json_escapes_what_json_must) {
  const auto v = json(R"({"m":"say \"hi\"\u0007"})");
  BOOST_TEST(cli::json_text(v) == "{\n    \"m\": \"say \\\"hi\\\"\\u0007\"\n}\n");
  BOOST_TEST(cli::json_text(json("{}")) == "{}\n");
}
