#pragma once
// The prompt-following cases: every shape colour × every shape, twice (different sizes, positions,
// backgrounds and seeds), phrased as the training captions are.
#include "tools/train/shapes_scene.h"

#include <string>
#include <vector>

namespace dd::shapes {

struct PromptCase {
    std::string prompt;
    int64_t seed = 0;
    int colour = 0, shape = 0;  // what the picture must show
};

inline std::vector<PromptCase> promptCases() {
    std::vector<PromptCase> cases;
    const int colours = int(shapeColours().size()), kinds = int(shapeNames().size());
    for (int round = 0; round < 2; ++round)
        for (int c = 0; c < colours; ++c)
            for (int k = 0; k < kinds; ++k) {
                Scene s;
                s.colour = c;
                s.shape = k;
                const int n = (round * colours + c) * kinds + k;
                s.size = n % 2;
                s.position = (n / 2) % int(positionNames().size());
                s.background = int(backgroundColours().size()) - 1 - n % 3;  // gray, white, black
                // Half of the prompts say everything, the rest leave the background or more to the model.
                const CaptionParts parts{round == 0 || n % 3 != 0, round == 0 || n % 3 != 1, round == 0};
                cases.push_back({caption(s, parts), 1000 + n, c, k});
            }
    return cases;
}

} // namespace dd::shapes
