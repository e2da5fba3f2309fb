#pragma once
// What `verify` reruns for a file, for the CLI and the window alike: the recorded settings (the sidecar's when
// there is one: its batch index and environment too), the model found for them, the init image and mask next to
// the file (their paths in recorded.settings), and which image the rerun is compared with. Pixels are not read
// here: the caller reads `imagePath` and the settings' images with the imaging layer.
//
//   VerifyFile f = verifyFileFrom("out/00001-42.png", {}, {}, {"models/"});
//   f.recorded.images[0].image = imaging::readImage(f.imagePath);
//   compare::verify(engine, f.recorded, cancel, nullptr, imaging::readRunImages(f.recorded.settings));
#include "core/compare/verify.h"
#include "core/settings/generation_info.h"

#include <string>
#include <vector>

namespace dd::compare {

struct VerifyFile {
    Recorded recorded;          // images: one entry (index, no pixels yet) when imagePath is set, else none
    std::string imagePath;      // the image compared with; "" for a settings file alone (run twice)
    std::vector<std::string> notes;  // what the reader did not use or had to guess, one line each
    settings::GenerationInfo read;   // what the file's metadata said: its dialect, the fields it set, keys unused
};

// `file`: an image with metadata, a sidecar or a settings JSON. `image`: the image to compare with instead of
// `file` (or the image beside a sidecar). `model`: the model to use instead of the one found by hash or name in
// `modelFolders` (none given: the file's folder). Throws std::invalid_argument / MetadataError naming the file
// and the problem (no such file, no model found, the init image or mask missing).
VerifyFile verifyFileFrom(const std::string& file, const std::string& image, const std::string& model,
                          std::vector<std::string> modelFolders);

} // namespace dd::compare
