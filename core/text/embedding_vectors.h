#pragma once
// The vectors of a library's textual-inversion embeddings, read from their files on first use and kept (a
// negative embedding is used in nearly every run). Needs torch (dd_core); call from the engine thread.
#include "core/text/embedding_library.h"

#include <torch/types.h>

#include <map>
#include <utility>

namespace dd::text {

class EmbeddingVectors {
public:
    explicit EmbeddingVectors(EmbeddingLibrary library = {}) : m_library(std::move(library)) {}
    const EmbeddingLibrary& library() const { return m_library; }

    // float32 [n, C] on the CPU for the encoder on `side`: 0 is SD 1.x / 2.x's encoder or SDXL's CLIP-L (clip_l),
    // 1 SDXL's OpenCLIP bigG (clip_g). Throws io::ModelFileError when the file changed or cannot be read.
    const torch::Tensor& rows(size_t file, int side);

    // A1111's "TI hashes" hash: the first 12 hex of the file's SHA-256. Throws io::ModelFileError.
    const std::string& hash(size_t file);

private:
    EmbeddingLibrary m_library;
    std::map<size_t, std::string> m_hashes;
    std::map<std::pair<size_t, int>, torch::Tensor> m_loaded;
};

} // namespace dd::text
