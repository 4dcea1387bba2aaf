#pragma once

// Lists in messages and status fields, cut to a few entries and a count of the rest: their
// size stays the same whether a plan has ten nodes or ten thousand, or one node is selected
// by a hundred plans, and a condition's message stays within its 32 KiB.

#include <cstddef>
#include <string>
#include <vector>

namespace gpu_partitioner::controller {

/// "a, b, c and 7 more": the first `shown` of `names`, then how many are left out of
/// `total` (the whole list's length, when `names` holds only its first entries).
std::string comma_list(const std::vector<std::string>& names, std::size_t shown = 10,
                       std::size_t total = 0);

/// `parts` joined with "; ", stopping after 10 of them or 4000 characters, then
/// "... and N more" of `total` (as in comma_list).
std::string listed(const std::vector<std::string>& parts, std::size_t total = 0);

} // namespace gpu_partitioner::controller
