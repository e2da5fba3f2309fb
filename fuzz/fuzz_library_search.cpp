// The library's search box: any typed text is read into a query (filters and words; a bad filter is a named
// problem, never an exception) and that query runs on a real index, whatever the words hold: quotes, FTS5
// operators, NULs, invalid UTF-8, huge numbers.
#include "core/library/library.h"
#include "core/library/search.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

using dd::library::Entry;
using dd::library::Library;

namespace {

Library& index() {
    static Library* lib = [] {
        const auto dir = std::filesystem::temp_directory_path() / ("fuzz_library_search." + std::to_string(::getpid()));
        std::filesystem::create_directories(dir);
        static const std::string removeAtExit = dir.string();
        std::atexit([] {
            std::error_code ec;
            std::filesystem::remove_all(removeAtExit, ec);
        });
        auto* l = new Library((dir / "library.db").string());
        for (int i = 0; i < 20; ++i) {
            Entry e;
            e.path = "/out/" + std::to_string(i) + ".png";
            e.prompt = "a red cat number " + std::to_string(i);
            e.seed = i;
            e.width = e.height = 512;
            e.sampler = i % 2 ? "Euler a" : "DPM++ 2M";
            e.createdAt = "2026-12-0" + std::to_string(1 + i % 9) + "T12:00:00Z";
            l->setRating(l->put(e), i % 6);
        }
        return l;
    }();
    return *lib;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto parsed = dd::library::parseSearch(std::string_view(reinterpret_cast<const char*>(data), size));
    const auto ids = index().ids(parsed.query);  // a query the parser made must be one the index answers
    if (ids.size() > 20) std::abort();
    return 0;
}
