#pragma once

#include "protocol/codec/equality.hpp"
#include "protocol/codec/field.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace gpu_partitioner::protocol {

/// metav1.OwnerReference: ties a NodePartitioning to its plan so the garbage
/// collector removes it with the plan.
struct owner_reference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
  std::optional<bool> block_owner_deletion;
};

constexpr auto describe(codec::tag<owner_reference>) {
  using T = owner_reference;
  return std::make_tuple(
      codec::field("apiVersion", &T::api_version).required(),
      codec::field("kind", &T::kind).required(), codec::field("name", &T::name).required(),
      codec::field("uid", &T::uid).required(), codec::field("controller", &T::controller),
      codec::field("blockOwnerDeletion", &T::block_owner_deletion));
}

/// The part of metav1.ObjectMeta the operator reads or writes. Other members
/// (managedFields, ...) are dropped on decoding: write with patches, not updates of a
/// decoded object. The CRDs leave metadata to the API server's own validation.
struct object_meta {
  std::string name;
  std::string uid;
  std::string resource_version;
  std::int64_t generation = 0;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> finalizers;
  std::vector<owner_reference> owner_references;
  std::string creation_timestamp;
  /// Set once deletion was requested; the object lives on while finalizers remain.
  std::optional<std::string> deletion_timestamp;
};

constexpr auto describe(codec::tag<object_meta>) {
  using T = object_meta;
  return std::make_tuple(
      codec::field("name", &T::name), codec::field("uid", &T::uid),
      codec::field("resourceVersion", &T::resource_version),
      codec::field("generation", &T::generation), codec::field("labels", &T::labels),
      codec::field("annotations", &T::annotations), codec::field("finalizers", &T::finalizers),
      codec::field("ownerReferences", &T::owner_references),
      codec::field("creationTimestamp", &T::creation_timestamp),
      codec::field("deletionTimestamp", &T::deletion_timestamp));
}

} // namespace gpu_partitioner::protocol
