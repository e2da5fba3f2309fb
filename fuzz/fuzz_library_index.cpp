// A damaged library index: a real index (a few entries, the search table, a thumbnail) with the input's bytes
// written over it (each 3-byte record: offset high, offset low, value; offsets wrap over the file). Opening it
// either works or moves it aside and starts again; whatever opens answers every query or throws LibraryError,
// never crashes. A rebuilt index is empty and usable.
#include "core/library/library.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using dd::library::Entry;
using dd::library::Library;
using dd::library::LibraryError;

namespace {

std::string scratch() {
    static const std::string dir = [] {
        auto d = std::filesystem::temp_directory_path() / ("fuzz_library_index." + std::to_string(::getpid()));
        std::filesystem::create_directories(d);
        static const std::string removeAtExit = d.string();
        std::atexit([] {
            std::error_code ec;
            std::filesystem::remove_all(removeAtExit, ec);
        });
        return d.string();
    }();
    return dir + "/library.db";
}

void removeIndex(const std::string& path) {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", ".corrupt-1", ".thumbnails", ".thumbnails-wal", ".thumbnails-shm"}) std::filesystem::remove(path + suffix, ec);
}

// The bytes of an undamaged index, made once.
const std::string& pristine() {
    static const std::string bytes = [] {
        const std::string path = scratch();
        removeIndex(path);
        {
            Library lib(path);
            for (int i = 0; i < 40; ++i) {
                Entry e;
                e.path = "/out/" + std::to_string(i) + ".png";
                e.prompt = "a cat number " + std::to_string(i);
                e.negativePrompt = "blurry";
                e.seed = i;
                e.createdAt = "2025-01-31T12:00:00Z";
                const auto id = lib.put(e);
                if (i % 8 == 0) lib.setThumbnail(id, std::string(300, char(i)));
            }
        }
        std::ifstream in(path, std::ios::binary);
        std::ostringstream all;
        all << in.rdbuf();
        return all.str();
    }();
    return bytes;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string bytes = pristine();
    for (size_t i = 0; i + 2 < size; i += 3) bytes[((size_t(data[i]) << 8 | data[i + 1]) * 7) % bytes.size()] = char(data[i + 2]);
    if (size % 3 == 1) bytes.resize(bytes.size() * data[size - 1] / 256);  // and sometimes truncated
    const std::string path = scratch();
    removeIndex(path);
    std::ofstream(path, std::ios::binary) << bytes;
    try {
        Library lib(path);
        lib.count();
        for (auto id : lib.ids({.text = "cat"})) {
            lib.byId(id);
            lib.thumbnail(id);
        }
        lib.ids({.seed = 3, .sort = dd::library::Sort::Rating});
        lib.stamps();
        Entry e;
        e.path = "/out/new.png";
        e.prompt = "a new cat";
        lib.put(e);
        if (lib.rebuilt() && lib.ids({.text = "new"}).size() != 1) __builtin_trap();
    } catch (const LibraryError&) {
        // a damage found only by a query after opening: reported, named; the next start rebuilds
    }
    return 0;
}
