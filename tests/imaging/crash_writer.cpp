// Helper for test_crash_safety: exports images in a loop until killed (kill -9 from the test).
// usage: crash_writer DIR SIZE [index]  — writes DIR/img-00001.png, ... (SIZE x SIZE noise, deterministic per
// index); with "index", also adds each to the image library DIR/library.db with its thumbnail, as autosave does.
#include "core/library/library.h"
#include "core/library/scan.h"
#include "imaging/export.h"
#include "imaging/thumbnail.h"

#include <memory>

#include <cstdlib>
#include <string>

dd::api::Image pattern(int size, int index) {
    dd::api::Image img{size, size, {}};
    img.rgb.resize(std::size_t(size) * size * 3);
    uint32_t x = 2463534242u + uint32_t(index);
    for (auto& b : img.rgb) {  // xorshift: incompressible, so every write takes a while
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        b = uint8_t(x);
    }
    return img;
}

int main(int argc, char** argv) {
    if (argc != 3 && argc != 4) return 2;
    const std::string dir = argv[1];
    const int size = std::atoi(argv[2]);
    std::unique_ptr<dd::library::Library> lib;
    if (argc == 4) lib = std::make_unique<dd::library::Library>(dir + "/library.db");
    dd::settings::Sidecar sc;
    sc.settings.prompt = "crash test";
    for (int i = 1;; ++i) {
        sc.settings.seed = i;
        char name[32];
        std::snprintf(name, sizeof name, "/img-%05d.png", i);
        const auto image = pattern(size, i);
        dd::imaging::exportImageAs(dir + name, dd::imaging::ExportFormat::Png, 95, image, sc, "m");
        if (lib) dd::library::indexFile(*lib, dir + name, [&](const std::string&) { return dd::imaging::thumbnailOf(image); });
    }
}
