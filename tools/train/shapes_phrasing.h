#pragma once
// How people phrase a scene. The trainer's captions vary the way prompts are written — synonyms (big, huge,
// middle, upper left, grey), word orders ("on a white background, a red star"), fillers ("a picture of",
// "please draw"), articles and plurals, tag lists ("red star, blue background"), punctuation — and mix in stray
// words, so that a prompt in other words, or with a word the model never learned, still draws its scene.
#include "tools/train/shapes_scene.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dd::shapes {

// One phrasing of `s` mentioning `parts`, chosen by `seed`. `strayWords` (may be empty) are words outside the
// scene's vocabulary; some captions carry one or two of them at random places.
std::string paraphrase(const Scene& s, CaptionParts parts, uint64_t seed, const std::vector<std::string>& strayWords);

// The stray words of CLIP's vocabulary (its tokens, "red</w>" for a whole word): whole words of 3 to 12 letters
// that no caption uses, in the vocabulary's order.
std::vector<std::string> strayWords(const std::vector<std::string>& vocabulary);

// What the recipe trains on: sample `i` of UNet step `step` shows latent `latent` (of `latentCount` fixed
// scenes, scene seed = sceneSeed(recipeSeed, latent)) with `caption` ("" for classifier-free guidance).
struct TrainingSample {
    int latent = 0;
    std::string caption;
};
// `varied`: a third of the captions keep the plain grammar (caption()), the rest are paraphrases; otherwise all
// are plain.
TrainingSample trainingSample(uint64_t recipeSeed, int step, int i, int latentCount,
                              const std::vector<std::string>& strayWords, bool varied = true);
uint64_t sceneSeed(uint64_t recipeSeed, int latent);

// A prompt compared as the tokenizer reads it: lower case, words separated by single spaces, punctuation kept
// as its own word.
std::string normalisedPrompt(const std::string& prompt);

} // namespace dd::shapes
