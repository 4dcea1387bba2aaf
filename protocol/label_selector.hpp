#pragma once

#include "protocol/codec/equality.hpp"
#include "protocol/codec/field.hpp"

#include <array>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace gpu_partitioner::protocol {

enum class selector_operator { in, not_in, exists, does_not_exist };

constexpr auto enum_names(codec::tag<selector_operator>) {
  using E = selector_operator;
  return std::array<codec::enum_name<E>, 4>{{{E::in, "In"},
                                             {E::not_in, "NotIn"},
                                             {E::exists, "Exists"},
                                             {E::does_not_exist, "DoesNotExist"}}};
}

/// metav1.LabelSelectorRequirement.
struct label_selector_requirement {
  std::string key;
  selector_operator op = selector_operator::in;
  std::vector<std::string> values;
};

constexpr auto describe(codec::tag<label_selector_requirement>) {
  using T = label_selector_requirement;
  return std::make_tuple(codec::field("key", &T::key).required().min_length(1),
                         codec::field("operator", &T::op).required(),
                         codec::field("values", &T::values));
}

/// The rule Kubernetes applies when it converts a selector (and the CRD states as a
/// CEL rule): In and NotIn need values, Exists and DoesNotExist take none.
constexpr std::optional<codec::object_problem> check_object(codec::tag<label_selector_requirement>,
                                                            const label_selector_requirement& r) {
  const bool takes_values = r.op == selector_operator::in || r.op == selector_operator::not_in;
  if (takes_values && r.values.empty())
    return codec::object_problem{"values", "must not be empty when operator is In or NotIn"};
  if (!takes_values && !r.values.empty())
    return codec::object_problem{"values", "must be empty when operator is Exists or DoesNotExist"};
  return std::nullopt;
}

/// metav1.LabelSelector. An empty selector matches every node.
struct label_selector {
  std::map<std::string, std::string> match_labels;
  std::vector<label_selector_requirement> match_expressions;
};

constexpr auto describe(codec::tag<label_selector>) {
  using T = label_selector;
  return std::make_tuple(codec::field("matchLabels", &T::match_labels),
                         codec::field("matchExpressions", &T::match_expressions));
}

} // namespace gpu_partitioner::protocol
