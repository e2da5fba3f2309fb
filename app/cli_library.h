#pragma once
// What the CLI writes joins the image library the window shows (core/library), as the window's own images do.
#include <string>
#include <vector>

namespace dd::cli {

// Indexes the images (with thumbnails) into library::defaultIndexPath(). The images are already safe on disk: a
// library that cannot be written is a warning on stderr, never a failed command (the window's next scan of
// its output folder, or an import, finds them anyway).
void addToLibrary(const std::vector<std::string>& images);

} // namespace dd::cli
