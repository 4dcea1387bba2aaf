#include "protocol/json.hpp"

namespace gpu_partitioner::protocol {

template result<partitioning_profile> from_json(std::string_view);
template result<partitioning_plan> from_json(std::string_view);
template result<node_partitioning> from_json(std::string_view);
template result<partitioning_profile> from_json_value(const rapidjson::Value&);
template result<partitioning_plan> from_json_value(const rapidjson::Value&);
template result<node_partitioning> from_json_value(const rapidjson::Value&);
template std::string to_json(const partitioning_profile&);
template std::string to_json(const partitioning_plan&);
template std::string to_json(const node_partitioning&);
template std::string to_json(const partitioning_plan_status&);
template std::string to_json(const node_partitioning_status&);

} // namespace gpu_partitioner::protocol
