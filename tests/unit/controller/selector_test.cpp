// controller::matches and is_empty: metav1.LabelSelector semantics as Kubernetes
// defines them (matchLabels and every matchExpression ANDed; NotIn and DoesNotExist
// match a node without the key; the empty selector matches everything).
#include "controller/selector.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace gc = gpu_partitioner::controller;
namespace gp = gpu_partitioner::protocol;
namespace bdata = boost::unit_test::data;

using labels = std::map<std::string, std::string>;

namespace {

gp::label_selector_requirement req(std::string key, gp::selector_operator op,
                                   std::vector<std::string> values = {}) {
  return {std::move(key), op, std::move(values)};
}

gp::label_selector sel(labels match_labels,
                       std::vector<gp::label_selector_requirement> expressions = {}) {
  return {std::move(match_labels), std::move(expressions)};
}

struct match_row {
  const char* behaviour;
  gp::label_selector selector;
  labels node_labels;
  bool expected;
};

std::ostream& operator<<(std::ostream& os, const match_row& r) {
  return os << r.behaviour;
}

constexpr auto in = gp::selector_operator::in;
constexpr auto not_in = gp::selector_operator::not_in;
constexpr auto exists = gp::selector_operator::exists;
constexpr auto does_not_exist = gp::selector_operator::does_not_exist;

const labels gpu_node{{"gpu", "mi300x"}, {"pool", "training"}, {"zone", ""}};

const std::vector<match_row> match_rows{
    {"empty selector matches a labelled node", sel({}), gpu_node, true},
    {"empty selector matches a node without labels", sel({}), {}, true},
    {"matchLabels all equal matches", sel({{"gpu", "mi300x"}, {"pool", "training"}}), gpu_node,
     true},
    {"matchLabels with a different value does not match", sel({{"gpu", "mi250"}}), gpu_node, false},
    {"matchLabels with a missing key does not match", sel({{"rack", "r1"}}), gpu_node, false},
    {"matchLabels with one of two wrong does not match",
     sel({{"gpu", "mi300x"}, {"pool", "inference"}}), gpu_node, false},
    {"matchLabels empty value matches an empty label value", sel({{"zone", ""}}), gpu_node, true},
    {"In matches a listed value", sel({}, {req("pool", in, {"inference", "training"})}), gpu_node,
     true},
    {"In does not match an unlisted value", sel({}, {req("pool", in, {"inference"})}), gpu_node,
     false},
    {"In does not match a node without the key", sel({}, {req("rack", in, {"r1"})}), gpu_node,
     false},
    {"NotIn does not match a listed value", sel({}, {req("pool", not_in, {"training"})}), gpu_node,
     false},
    {"NotIn matches an unlisted value", sel({}, {req("pool", not_in, {"inference"})}), gpu_node,
     true},
    {"NotIn matches a node without the key", sel({}, {req("rack", not_in, {"r1"})}), gpu_node,
     true},
    {"Exists matches a present key", sel({}, {req("gpu", exists)}), gpu_node, true},
    {"Exists matches a present key with an empty value", sel({}, {req("zone", exists)}), gpu_node,
     true},
    {"Exists does not match an absent key", sel({}, {req("rack", exists)}), gpu_node, false},
    {"DoesNotExist matches an absent key", sel({}, {req("rack", does_not_exist)}), gpu_node, true},
    {"DoesNotExist does not match a present key", sel({}, {req("gpu", does_not_exist)}), gpu_node,
     false},
    {"matchLabels and matchExpressions are ANDed: both hold",
     sel({{"gpu", "mi300x"}}, {req("pool", in, {"training"})}), gpu_node, true},
    {"matchLabels and matchExpressions are ANDed: expression fails",
     sel({{"gpu", "mi300x"}}, {req("pool", in, {"inference"})}), gpu_node, false},
    {"matchLabels and matchExpressions are ANDed: label fails",
     sel({{"gpu", "mi250"}}, {req("pool", in, {"training"})}), gpu_node, false},
    {"every expression must hold", sel({}, {req("gpu", exists), req("pool", not_in, {"training"})}),
     gpu_node, false},
    {"every expression holding matches",
     sel({}, {req("gpu", exists), req("rack", does_not_exist), req("pool", in, {"training"})}),
     gpu_node, true},
};

} // namespace

BOOST_AUTO_TEST_SUITE(selector)

BOOST_DATA_TEST_CASE(matches_follows_label_selector_semantics, bdata::make(match_rows), row) {
  BOOST_TEST(gc::matches(row.selector, row.node_labels) == row.expected, row.behaviour);
}

BOOST_AUTO_TEST_CASE(is_empty_only_without_labels_and_expressions) {
  BOOST_TEST(gc::is_empty(sel({})));
  BOOST_TEST(!gc::is_empty(sel({{"gpu", "mi300x"}})));
  BOOST_TEST(!gc::is_empty(sel({}, {req("gpu", exists)})));
  BOOST_TEST(!gc::is_empty(sel({}, {req("gpu", does_not_exist)})));
}

BOOST_AUTO_TEST_SUITE_END()
