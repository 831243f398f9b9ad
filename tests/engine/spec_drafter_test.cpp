// Prompt lookup and the drafter configuration, without a model: proposals checked against
// hand-worked sequences and against a brute-force search over random token strings.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/error.h"
#include "engine/drafter.h"
#include "engine/ngram_drafter.h"

namespace kite {
namespace {

std::vector<int32_t> propose(const std::vector<int32_t>& tokens, int64_t max_tokens) {
    std::vector<int32_t> out{-1};  // stale contents must be replaced
    NgramDrafter().lookup(tokens, max_tokens, out);
    return out;
}

TEST(SpecNgramDrafter, ProposesWhatFollowedTheLastOccurrence) {
    EXPECT_EQ(propose({1, 2, 3, 4, 5, 1, 2, 3}, 3), (std::vector<int32_t>{4, 5, 1}));
    EXPECT_EQ(propose({1, 2, 3, 4, 5, 1, 2, 3}, 1), (std::vector<int32_t>{4}));
    // The continuation stops at the end of the sequence.
    EXPECT_EQ(propose({1, 2, 3, 4, 5, 1, 2, 3}, 10), (std::vector<int32_t>{4, 5, 1, 2, 3}));
}

TEST(SpecNgramDrafter, PrefersTheLongestMatchThenTheMostRecent) {
    // "9 1 2" occurs once (at 0), "1 2" also more recently (followed by 7): the 3-gram wins.
    EXPECT_EQ(propose({9, 1, 2, 5, 8, 1, 2, 7, 9, 1, 2}, 1), (std::vector<int32_t>{5}));
    // Only 2-grams match: the most recent one (followed by 7, not 5).
    EXPECT_EQ(propose({1, 2, 5, 1, 2, 7, 3, 1, 2}, 1), (std::vector<int32_t>{7}));
    // Only the last token matches, most recently followed by 6.
    EXPECT_EQ(propose({4, 5, 4, 6, 8, 4}, 2), (std::vector<int32_t>{6, 8}));
}

TEST(SpecNgramDrafter, RepeatingPatternOverlapsTheTail) {
    EXPECT_EQ(propose({5, 5, 5, 5}, 4), (std::vector<int32_t>{5}));
    EXPECT_EQ(propose({1, 2, 1, 2, 1}, 4), (std::vector<int32_t>{2, 1}));
}

TEST(SpecNgramDrafter, NoMatchOrNoRoomProposesNothing) {
    EXPECT_TRUE(propose({1, 2, 3, 4}, 4).empty());
    EXPECT_TRUE(propose({7}, 4).empty());
    EXPECT_TRUE(propose({}, 4).empty());
    EXPECT_TRUE(propose({1, 1, 1}, 0).empty());
}

// Brute force: every earlier occurrence of the last n tokens for n = 3, 2, 1, the longest n
// first and the latest start among equals.
std::vector<int32_t> reference_proposal(const std::vector<int32_t>& t, size_t max_tokens) {
    for (size_t n = 3; n >= 1; --n) {
        if (t.size() <= n) continue;
        size_t best = t.size();
        for (size_t start = 0; start + n < t.size(); ++start) {
            bool same = true;
            for (size_t j = 0; j < n; ++j) same = same && t[start + j] == t[t.size() - n + j];
            if (same) best = start;
        }
        if (best == t.size()) continue;
        std::vector<int32_t> out;
        for (size_t i = best + n; i < t.size() && out.size() < max_tokens; ++i) out.push_back(t[i]);
        return out;
    }
    return {};
}

TEST(SpecNgramDrafter, MatchesABruteForceSearch) {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 2000; ++trial) {
        const int vocab = 2 + trial % 6;  // small vocabularies: many matches of every length
        std::vector<int32_t> tokens(rng() % 40);
        for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % vocab);
        const auto k = static_cast<int64_t>(1 + rng() % 8);
        ASSERT_EQ(propose(tokens, k), reference_proposal(tokens, static_cast<size_t>(k)))
            << "trial " << trial;
    }
}

TEST(SpecDrafterConfig, ParsesKindsAndChecksTheDraftLength) {
    EXPECT_EQ(parse_drafter_kind("ngram"), DrafterKind::Ngram);
    EXPECT_EQ(parse_drafter_kind("none"), DrafterKind::None);
    EXPECT_EQ(parse_drafter_kind("draft"), DrafterKind::Model);
    EXPECT_THROW(parse_drafter_kind("model"), Error);
    SpeculationConfig c;
    c.drafter = DrafterKind::Ngram;
    EXPECT_NE(make_drafter(c, {}), nullptr);
    c.draft_max = 0;
    EXPECT_THROW(make_drafter(c, {}), Error);
    c.draft_max = SpeculationConfig::kMaxDraft + 1;
    EXPECT_THROW(c.validate(), Error);
    c.drafter = DrafterKind::None;
    c.draft_max = 4;
    EXPECT_EQ(make_drafter(c, {}), nullptr);
    // The draft-model drafter without a model is refused before it is built.
    c.drafter = DrafterKind::Model;
    EXPECT_THROW(make_drafter(c, {}), Error);
}

}  // namespace
}  // namespace kite
