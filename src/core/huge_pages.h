// Memory for data read whole on every token (the packed weights, the KV cache): fresh
// anonymous pages, resident only once touched, aligned to 2 MiB and advised as transparent
// huge pages. Streaming a gigabyte through 4 KiB
// pages walks a quarter of a million page-table entries per token; 2 MiB pages make that 500.
// Where the kernel declines the advice (THP off), the memory works the same with small pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace kite {

// The transparent huge page of x86-64: the unit in which advised memory becomes resident.
constexpr size_t kHugePageBytes = size_t{2} << 20;

struct HugePageFree {
    size_t bytes = 0;  // the mapping's length
    void operator()(uint8_t* p) const;
};
using HugePageBytes = std::unique_ptr<uint8_t[], HugePageFree>;

// `bytes` zeroed bytes; kite::Error when the memory cannot be mapped.
HugePageBytes allocate_huge_pages(size_t bytes);

}  // namespace kite
