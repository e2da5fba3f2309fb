#include "app/cli_library.h"

#include "core/library/library.h"
#include "core/library/scan.h"
#include "imaging/thumbnail.h"

#include <filesystem>
#include <iostream>

namespace dd::cli {

void addToLibrary(const std::vector<std::string>& images) {
    if (images.empty()) return;
    const std::string path = library::defaultIndexPath();
    try {
        std::filesystem::create_directories(std::filesystem::path(path).parent_path());
        library::Library lib(path);
        if (lib.rebuilt()) std::cerr << "note: " << lib.note() << "\n";
        library::Library::Transaction batch(lib);
        for (const auto& image : images)
            library::indexFile(lib, image, [](const std::string& p) { return imaging::thumbnailOfFile(p); });
        batch.commit();
    } catch (const std::exception& e) {
        std::cerr << "warning: the images are saved but not in the library: " << e.what() << "\n";
    }
}

} // namespace dd::cli
