#pragma once
// "Verify": rerun a result's settings and compare the pixels hash for hash. Reports identical, or not
// identical with the environment fields that differ from the recorded run and the pixel difference.
//
//   auto report = dd::compare::verify(engine, dd::compare::recordedFrom(result), cancel);
//   std::cout << dd::compare::describe(report);
//
// Runs the engine, so call it where the engine lives (the worker thread, the CLI). Torch-free header.
#include "core/compare/pixel_diff.h"
#include "core/compare/settings_diff.h"
#include "core/pipeline/engine.h"

#include <optional>
#include <string>
#include <vector>

namespace dd::compare {

// SHA-256 (lowercase hex) of the RGB bytes, row-major, no header: equal to
// hashlib.sha256(numpy.asarray(PIL.Image.open(p).convert("RGB")).tobytes()).hexdigest().
std::string pixelSha256(const api::Image& image);

struct RecordedImage {
    int index = 0;  // position in the batch (its seeds: api::imageSeeds(settings, index))
    api::Image image;
};

struct Recorded {
    api::GenerationSettings settings;
    std::optional<api::Environment> environment;  // unknown for a bare settings file
    std::vector<RecordedImage> images;                 // empty: run twice and compare the two runs
};

Recorded recordedFrom(const api::GenerationResult& result);

struct ImageVerdict {
    int index = 0;
    std::string expectedSha256, actualSha256;
    PixelDifference pixels;
    bool identical() const { return expectedSha256 == actualSha256; }
};

struct VerifyReport {
    bool identical = false;                  // every compared image has the same pixel hash
    bool ranTwice = false;                   // no recorded images: the settings were run twice
    std::vector<ImageVerdict> images;
    std::vector<FieldDifference> environment;  // recorded (a) vs this rerun (b); empty when unknown or equal
    bool environmentKnown = false;
    api::GenerationResult rerun;        // the (last) rerun, with its own environment
};

// Throws what Engine::generate throws, and std::invalid_argument when a recorded image's index is outside the
// batch. The run's images (init image, mask, control images) are passed as for Engine::generate.
VerifyReport verify(pipeline::Engine& engine, const Recorded& recorded, const api::CancelToken& cancel,
                    api::Observer* observer = nullptr, const api::RunImages& images = {});

// Several lines for people: the verdict, per image the hashes and the pixel difference, the fingerprint fields
// that differ, and a hint when determinism mode was off.
std::string describe(const VerifyReport& report);

} // namespace dd::compare
