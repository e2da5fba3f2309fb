#pragma once
// The textual-inversion embeddings a prompt can name, and where a prompt names one. Torch-free: the window's
// token counter uses it as the engine does.
//
//   auto lib = text::EmbeddingLibrary::scan(pipeline::embeddingFolders(folders, loraFolders));
//   text::EmbeddingVocabulary vocab(tokenizer, lib, 768, 0);     // the words of those that fit SD 1.x
//   PromptOptions o; o.embeddings = &vocab;                      // tokenizePrompt marks where each is used
//
// Ref: A1111 modules/textual_inversion/textual_inversion.py (EmbeddingDatabase: register_embedding's ids_lookup,
// find_embedding_at_position): a name is matched by its tokens, the longest name first, in every weighted part of
// the prompt, so "(easynegative:1.2)" weights the embedding's vectors; names that differ in case match alike
// (the CLIP tokenizer lowercases).
#include "core/io/embedding_file.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dd::text {

class ClipTokenizer;

struct EmbeddingLibrary {
    std::vector<io::EmbeddingFile> files;  // by name; of two files with one name, the first folder's
    struct Problem {
        std::string name;     // the file name without extension: the word a prompt would use
        std::string message;  // "path: why"
    };
    std::vector<Problem> problems;         // files that cannot be used
    std::string signature;                 // the files' paths, sizes and times: changes when one does

    // Every .safetensors (and refused pickle) under `folders`, sub-folders too. A folder that does not exist is
    // skipped: the default folders are only suggestions.
    static EmbeddingLibrary scan(const std::vector<std::string>& folders);
    const io::EmbeddingFile* find(std::string_view name) const;
};

// Where one embedding's vectors go in a prompt chunk.
struct EmbeddingSpan {
    int position = 0;      // index in the chunk's 77 ids (BOS is 0)
    size_t file = 0;       // index in EmbeddingLibrary::files
    int vectors = 0;
    bool operator==(const EmbeddingSpan&) const = default;
};

// The library's names as one tokenizer's ids.
class EmbeddingVocabulary {
public:
    // Embeddings that fit encoders of widths (width1, width2) are used (width2 = 0: SD 1.x / 2.x); the others
    // are only reported. Widths (0, 0): every embedding is taken to fit (a counter without a model).
    EmbeddingVocabulary(const ClipTokenizer& tokenizer, const EmbeddingLibrary& library, int64_t width1, int64_t width2);

    struct Match {
        size_t file = 0;
        size_t length = 0;  // tokens of the name
    };
    // The longest fitting name whose tokens start at tokens[pos] (A1111's find_embedding_at_position).
    std::optional<Match> at(const std::vector<int>& tokens, size_t pos) const;
    // A name of an embedding that does not fit, starting at tokens[pos].
    std::optional<Match> unfitAt(const std::vector<int>& tokens, size_t pos) const;

    const EmbeddingLibrary& library() const { return *m_library; }
    bool empty() const { return m_fit.empty() && m_unfit.empty(); }

private:
    using Lookup = std::map<int, std::vector<std::pair<std::vector<int>, size_t>>>;  // first id → (ids, file), longest first
    static std::optional<Match> find(const Lookup& lookup, const std::vector<int>& tokens, size_t pos);
    const EmbeddingLibrary* m_library;
    Lookup m_fit, m_unfit;
};

} // namespace dd::text
