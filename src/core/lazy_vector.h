// A vector whose elements start uninitialised: creating a large one writes nothing, so its
// pages become resident only as they are first written (fresh anonymous memory), not all at
// once. For buffers sized for the largest case and mostly used far below it, e.g. the logits
// of a forward pass of 512 tokens when decoding needs one row.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace kite {

template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
    static_assert(std::is_trivially_default_constructible_v<T>);
    template <typename U>
    struct rebind {
        using other = DefaultInitAllocator<U>;
    };
    DefaultInitAllocator() = default;
    template <typename U>
    DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}

    // Value-initialisation (what resize and the size constructor ask for) as default
    // initialisation: nothing is written.
    template <typename U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;
    }
    template <typename U, typename... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};

template <typename T>
using LazyVector = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace kite
