#include "engine/calibration_text.h"

#include <algorithm>
#include <string_view>

namespace kite {

namespace {

// Written for this purpose; any varied text of a few hundred tokens would do.
constexpr const char* kText =
    R"(The lighthouse keeper kept two logs. In the first she wrote the weather: wind from the south-west, force five, visibility good, a ship passing at 06:40 heading north. In the second she wrote everything else, such as the gull that had learned to knock on the window, the letter from her brother in Lisbon, and the number of steps to the lamp room (one hundred and fourteen, though she counted one hundred and fifteen on cold mornings).

"Why keep two?" the inspector asked on his yearly visit.
"Because the sea only cares about the first," she said, "and I only care about the second."

Later that winter she taught herself to program, so that a small computer could keep the first log for her:

```python
def beaufort(speed_knots: float) -> int:
    """Returns the Beaufort force for a wind speed in knots."""
    limits = [1, 4, 7, 11, 17, 22, 28, 34, 41, 48, 56, 64]
    for force, limit in enumerate(limits):
        if speed_knots < limit:
            return force
    return 12

readings = {"06:00": 18.5, "12:00": 23.0, "18:00": 31.2}
for time, speed in sorted(readings.items()):
    print(f"{time}  force {beaufort(speed)}")
```

| month | ships seen | storms | letters |
|-------|-----------:|-------:|--------:|
| Nov   | 214        | 3      | 2       |
| Dec   | 187        | 5      | 4       |

By spring the computer kept the weather, and she kept the rest. Questions she wrote down to ask her brother: How does a fog signal carry 3 km? Is 1.5 kg of paraffin a week too much? Quelle heure est-il à Lisbonne quand il est midi ici?
)";

}  // namespace

CalibrationTokens calibration_tokens(const Tokenizer& tokenizer) {
    CalibrationTokens c{tokenizer.encode(kText, true, false), {}};
    if (tokenizer.adds_bos()) {
        c.firsts.push_back(tokenizer.bos());
        return c;
    }
    constexpr size_t kFirsts = 8;
    const std::string_view text = kText;
    for (size_t start = 0; start < text.size() && c.firsts.size() < kFirsts;) {
        const size_t end = std::min(text.find("\n\n", start), text.size());
        const std::vector<int32_t> paragraph =
            tokenizer.encode(text.substr(start, end - start), false, false);
        if (!paragraph.empty()) c.firsts.push_back(paragraph.front());
        start = end + 2;
    }
    return c;
}

}  // namespace kite
