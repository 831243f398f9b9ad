#include "grammar/expr_length.h"

#include <algorithm>

namespace kite::grammar {

namespace {

constexpr uint64_t kNoLimit = kUnbounded;

uint64_t add(uint64_t a, uint64_t b) {
    return std::min(a + b, kNoLimit);
}

uint64_t times(uint64_t a, uint64_t n) {
    if (a == 0 || n == 0) return 0;
    if (a >= kNoLimit || n >= kNoLimit) return kNoLimit;
    return std::min(a * n, kNoLimit);
}

uint64_t code_points(const std::string& bytes) {
    uint64_t n = 0;
    for (const char c : bytes) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

bool fixed(const LengthRange& r) {
    return r.lo == r.hi;
}

}  // namespace

LengthRange length_range(const Expr& e) {
    switch (e.kind) {
        case Expr::Kind::Empty:
            return {0, 0};
        case Expr::Kind::Literal:
            return {code_points(e.text), code_points(e.text)};
        case Expr::Kind::Class:
            return {1, 1};
        case Expr::Kind::Ref:
            return {0, kNoLimit};
        case Expr::Kind::Seq: {
            LengthRange r{0, 0};
            for (const Expr& item : e.items) {
                const LengthRange p = length_range(item);
                r = {add(r.lo, p.lo), add(r.hi, p.hi)};
            }
            return r;
        }
        case Expr::Kind::Alt: {
            LengthRange r{kNoLimit, 0};
            for (const Expr& item : e.items) {
                const LengthRange p = length_range(item);
                r = {std::min(r.lo, p.lo), std::max(r.hi, p.hi)};
            }
            return r;
        }
        case Expr::Kind::Regular:
            return length_range(e.items[0]);
        case Expr::Kind::Repeat: {
            const LengthRange p = length_range(e.items[0]);
            return {times(p.lo, e.min), times(p.hi, e.max)};
        }
    }
    return {0, kNoLimit};
}

std::optional<Expr> restrict_length(const Expr& e, uint64_t lo, uint64_t hi) {
    const LengthRange r = length_range(e);
    if (r.lo >= lo && r.hi <= hi) return e;
    if (r.lo > hi || r.hi < lo) return alt({});
    if (e.kind == Expr::Kind::Regular) {
        std::optional<Expr> part = restrict_length(e.items[0], lo, hi);
        if (!part) return std::nullopt;
        return regular(std::move(*part));
    }
    if (e.kind == Expr::Kind::Alt) {
        std::vector<Expr> parts;
        for (const Expr& item : e.items) {
            std::optional<Expr> p = restrict_length(item, lo, hi);
            if (!p) return std::nullopt;
            parts.push_back(std::move(*p));
        }
        return alt(std::move(parts));
    }
    if (e.kind == Expr::Kind::Seq) {
        // Only one part may vary: it takes what the others leave.
        uint64_t rest = 0;
        size_t varying = e.items.size();
        for (size_t i = 0; i < e.items.size(); ++i) {
            const LengthRange p = length_range(e.items[i]);
            if (!fixed(p) && varying != e.items.size()) return std::nullopt;
            if (!fixed(p))
                varying = i;
            else
                rest = add(rest, p.lo);
        }
        if (varying == e.items.size() || rest >= kNoLimit) return std::nullopt;
        std::optional<Expr> part = restrict_length(e.items[varying], lo > rest ? lo - rest : 0,
                                                   hi >= kNoLimit ? kNoLimit : hi - rest);
        if (!part) return std::nullopt;
        Expr out = e;
        out.items[varying] = std::move(*part);
        return out;
    }
    if (e.kind == Expr::Kind::Repeat) {
        const Expr& item = e.items[0];
        const LengthRange p = length_range(item);
        if (e.max == 1) return restrict_length(e.min == 1 ? item : alt({empty(), item}), lo, hi);
        if (!fixed(p) || p.lo == 0 || p.lo >= kNoLimit) return std::nullopt;
        // n copies of a part of length k: n*k in [lo, hi].
        const uint64_t k = p.lo;
        const uint64_t n_lo = std::max<uint64_t>(e.min, (lo + k - 1) / k);
        const uint64_t n_hi = std::min<uint64_t>(e.max, hi >= kNoLimit ? kNoLimit : hi / k);
        if (n_lo > n_hi) return alt({});
        return repeat(item, static_cast<uint32_t>(n_lo), static_cast<uint32_t>(n_hi));
    }
    return std::nullopt;
}

}  // namespace kite::grammar
