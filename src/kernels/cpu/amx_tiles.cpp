#include "kernels/cpu/amx_tiles.h"

#include "core/error.h"
#include "kernels/cpu/amx_state.h"

#include <cstdint>

namespace kite {

namespace {

// ldtilecfg's 64-byte operand (palette 1).
struct alignas(64) TileConfig {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
};

constexpr int kShapes[8][2] = {{16, 64}, {16, 64}, {16, 32}, {8, 64},
                               {16, 32}, {8, 64},  {0, 0},   {0, 0}};
constexpr int kFullShapes[8][2] = {{16, 64}, {16, 64}, {16, 64}, {16, 64},
                                   {16, 64}, {16, 64}, {16, 64}, {16, 64}};

}  // namespace

#if defined(__x86_64__)
#define KITE_AMX_TILE __attribute__((target("amx-tile")))
#else
#define KITE_AMX_TILE
#endif

KITE_AMX_TILE static void load([[maybe_unused]] const int (&shapes)[8][2]) {
#if defined(__x86_64__)
    TileConfig c;
    for (int i = 0; i < 8; ++i) {
        c.rows[i] = static_cast<uint8_t>(shapes[i][0]);
        c.colsb[i] = static_cast<uint16_t>(shapes[i][1]);
    }
    // Not _tile_loadconfig: GCC 12's says its asm reads a pointer's 8 bytes of the operand,
    // and the stores of the rest of the configuration were dropped as dead (SIGILL at the
    // first tile instruction). The whole struct as the operand keeps them.
    asm volatile("ldtilecfg %0" ::"m"(c));
#endif
}

// The configuration this thread loaded last (none: nullptr).
static thread_local const int (*loaded)[2] = nullptr;

static void configure(const int (&shapes)[8][2]) {
    if (loaded == shapes) return;
    // The permission is asked for at the level's detection; a caller that reached the tile
    // kernels without it (a test picking them by level) gets it asked here, before any tile
    // instruction.
    if (!amx_refusal().empty()) fail("AMX tiles: {}", amx_refusal());
    load(shapes);
    loaded = shapes;
}

void configure_amx_tiles() {
    configure(kShapes);
}

void configure_full_amx_tiles() {
    configure(kFullShapes);
}

}  // namespace kite
