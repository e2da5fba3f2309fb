#include "core/text/embedding_library.h"

#include "core/io/model_error.h"
#include "core/text/clip_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <set>

namespace dd::text {
namespace fs = std::filesystem;

namespace {

bool isEmbeddingFileName(const fs::path& p) { return p.extension() == ".safetensors" || io::isPickleEmbedding(p.string()); }

std::vector<fs::path> filesUnder(const std::string& dir) {
    std::vector<fs::path> hits;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file(ec) && isEmbeddingFileName(it->path())) hits.push_back(it->path());
    std::sort(hits.begin(), hits.end());
    return hits;
}

std::string stamp(const fs::path& p) {
    std::error_code ec;
    const auto size = fs::file_size(p, ec);
    const auto time = fs::last_write_time(p, ec).time_since_epoch().count();
    return p.string() + "|" + std::to_string(size) + "|" + std::to_string(time) + "\n";
}

} // namespace

EmbeddingLibrary EmbeddingLibrary::scan(const std::vector<std::string>& folders) {
    EmbeddingLibrary lib;
    std::set<std::string> names;
    for (const auto& folder : folders) {
        for (const auto& path : filesUnder(folder)) {
            lib.signature += stamp(path);
            try {
                auto file = io::readEmbeddingFile(path.string());
                if (names.insert(file.name).second) lib.files.push_back(std::move(file));
            } catch (const io::ModelFileError& e) {
                lib.problems.push_back({path.stem().string(), e.what()});
            }
        }
    }
    std::sort(lib.files.begin(), lib.files.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return lib;
}

const io::EmbeddingFile* EmbeddingLibrary::find(std::string_view name) const {
    const auto it = std::lower_bound(files.begin(), files.end(), name, [](const auto& f, std::string_view n) { return f.name < n; });
    return it != files.end() && it->name == name ? &*it : nullptr;
}

EmbeddingVocabulary::EmbeddingVocabulary(const ClipTokenizer& tokenizer, const EmbeddingLibrary& library, int64_t width1,
                                         int64_t width2)
    : m_library(&library) {
    for (size_t i = 0; i < library.files.size(); ++i) {
        const auto& f = library.files[i];
        auto ids = tokenizer.encode(f.name);
        if (ids.empty()) continue;
        const bool fits = (width1 == 0 && width2 == 0) || f.fits(width1, width2);
        auto& list = (fits ? m_fit : m_unfit)[ids.front()];
        list.emplace_back(std::move(ids), i);
        // Longest first; of two names with the same tokens, the first by name (A1111 keeps its sort stable).
        std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    }
}

std::optional<EmbeddingVocabulary::Match> EmbeddingVocabulary::find(const Lookup& lookup, const std::vector<int>& tokens, size_t pos) {
    const auto it = lookup.find(tokens[pos]);
    if (it == lookup.end()) return std::nullopt;
    for (const auto& [ids, file] : it->second)
        if (pos + ids.size() <= tokens.size() && std::equal(ids.begin(), ids.end(), tokens.begin() + long(pos)))
            return Match{file, ids.size()};
    return std::nullopt;
}

std::optional<EmbeddingVocabulary::Match> EmbeddingVocabulary::at(const std::vector<int>& tokens, size_t pos) const {
    return find(m_fit, tokens, pos);
}

std::optional<EmbeddingVocabulary::Match> EmbeddingVocabulary::unfitAt(const std::vector<int>& tokens, size_t pos) const {
    return find(m_unfit, tokens, pos);
}

} // namespace dd::text
