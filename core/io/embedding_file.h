#pragma once
// Textual-inversion embedding files as A1111 and diffusers save them, described from the safetensors header alone
// (torch-free: the window's token counter and the CLI's checks read it). The vectors are loaded by
// text/embedding_vectors.h.
//
// Layouts (Ref: A1111 modules/textual_inversion/textual_inversion.py create_embedding_from_data; diffusers
// loaders/textual_inversion.py load_textual_inversion):
//   * one tensor, any name ("emb_params" from A1111, "<token>" from diffusers): [n, C] or [C] (one vector);
//   * SDXL: "clip_l" [n, 768] and "clip_g" [n, 1280], the same n.
// Pickle files (.pt, .bin, .ckpt) are refused: loading one can run code.
#include <cstdint>
#include <string>

namespace dd::io {

struct EmbeddingFile {
    std::string name;        // the file name without .safetensors: the word a prompt uses
    std::string path;
    std::string tensorKey;   // the single tensor's name; "" for an SDXL pair
    int vectors = 0;         // token positions it takes, 1 … 75
    int64_t width = 0;       // the single tensor's C
    int64_t widthL = 0, widthG = 0;  // an SDXL pair's widths

    bool isXlPair() const { return tensorKey.empty(); }
    // Whether it fits text encoders of these widths (width2 = 0: one encoder, SD 1.x / 2.x).
    bool fits(int64_t width1, int64_t width2) const;
    // "SD 1.x (768)", "SD 2.x (1024)", "SDXL (768 + 1280)": for messages about one that does not fit.
    std::string kind() const;
};

// Throws ModelFileError naming the file and the problem (a pickle, no tensors, several unrelated tensors, a
// shape that is not [n, C], more than 75 vectors, a non-float dtype).
EmbeddingFile readEmbeddingFile(const std::string& path);

// Whether a file name is a pickle embedding (refused with the reason).
bool isPickleEmbedding(const std::string& path);

} // namespace dd::io
