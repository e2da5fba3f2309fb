// Any bytes as a tokenizer folder: vocab.json, merges.txt and tokenizer_config.json separated by NUL bytes.
// Loaded (then it tokenizes text without crashing, every id inside the vocabulary), or rejected with
// ModelFileError naming the file.
#include "core/io/model_error.h"
#include "core/text/clip_tokenizer.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const fs::path dir = fs::temp_directory_path() / ("dd_fuzz_tokenizer_" + std::to_string(getpid()));
    static const bool made = fs::create_directories(dir) || true;
    (void)made;
    std::string_view in(reinterpret_cast<const char*>(data), size);
    std::string_view parts[3];
    for (int i = 0; i < 3; ++i) {
        const auto cut = i < 2 ? in.find('\0') : std::string_view::npos;
        parts[i] = in.substr(0, cut);
        in = cut == std::string_view::npos ? std::string_view() : in.substr(cut + 1);
    }
    const char* names[3] = {"vocab.json", "merges.txt", "tokenizer_config.json"};
    for (int i = 0; i < 3; ++i) std::ofstream(dir / names[i], std::ios::binary | std::ios::trunc) << parts[i];
    try {
        const auto tok = dd::text::ClipTokenizer::fromFolder(dir);
        for (const int id : tok.encode("a (red:1.2) circle, hello wörld 123 !!"))
            if (id < 0 || id >= tok.vocabSize()) __builtin_trap();
    } catch (const dd::io::ModelFileError&) {
    }
    return 0;
}
