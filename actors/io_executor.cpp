#include "actors/io_executor.hpp"

#include "actors/executor.hpp"
#include "actors/log.hpp"

namespace gpu_partitioner::actors {

io_actor::behavior_type io_executor(io_actor::pointer self, io_config config) {
  auto x = std::make_shared<executor>(std::move(config));
  (void)self;
  return {
      [=](io_atom, const node_io& io) -> node_io_result { return x->perform(io); },
      [=](io_atom, const item_io& io) -> std::string {
        if (is_superseded(io))
          return item_io_superseded;
        auto error = x->perform(io);
        if (!error.empty())
          log_warning(error);
        return error;
      },
  };
}

} // namespace gpu_partitioner::actors
