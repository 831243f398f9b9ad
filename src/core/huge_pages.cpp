#include "core/huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace kite {

namespace {

size_t round_up(size_t n, size_t to) {
    return (n + to - 1) / to * to;
}

}  // namespace

void HugePageFree::operator()(uint8_t* p) const {
    if (p) ::munmap(p, bytes);
}

HugePageBytes allocate_huge_pages(size_t bytes) {
    const size_t length =
        round_up(std::max<size_t>(bytes, 1), static_cast<size_t>(::sysconf(_SC_PAGESIZE)));
    // Map a huge page more than needed, then unmap the ends around a 2 MiB-aligned start.
    void* p = ::mmap(nullptr, length + kHugePageBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail("cannot allocate {} bytes: {}", bytes, std::strerror(errno));
    auto* base = static_cast<uint8_t*>(p);
    auto* start =
        reinterpret_cast<uint8_t*>(round_up(reinterpret_cast<uintptr_t>(base), kHugePageBytes));
    if (start > base) ::munmap(base, static_cast<size_t>(start - base));
    const size_t tail = static_cast<size_t>(base + length + kHugePageBytes - (start + length));
    if (tail > 0) ::munmap(start + length, tail);
    // Advice only: without transparent huge pages the mapping simply keeps small pages.
    ::madvise(start, length, MADV_HUGEPAGE);
    return HugePageBytes(start, HugePageFree{length});
}

}  // namespace kite
