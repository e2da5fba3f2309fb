#include "core/io/embedding_file.h"

#include "core/io/model_error.h"
#include "core/io/safetensors_header.h"

#include <filesystem>

namespace dd::io {
namespace {

constexpr int kMaxVectors = 75;  // one prompt chunk's content

std::string shapeText(const TensorInfo& t) {
    std::string s = "[";
    for (size_t i = 0; i < t.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
    return s + "]";
}

// [n, C] or [C]: the vector count n (1 for [C]).
int64_t vectorCount(const std::string& path, const TensorInfo& t) {
    if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
        throw ModelFileError(path, "'" + t.name + "' is " + std::string(dtypeName(t.dtype)) + "; an embedding holds F32, F16 or BF16 vectors");
    if (t.shape.empty() || t.shape.size() > 2 || t.numel() == 0)
        throw ModelFileError(path, "'" + t.name + "' has shape " + shapeText(t) + "; an embedding is [vectors, width] or [width]");
    const int64_t n = t.shape.size() == 2 ? t.shape[0] : 1;
    if (n > kMaxVectors)
        throw ModelFileError(path, "'" + t.name + "' has " + std::to_string(n) + " vectors; at most 75 fit in a prompt chunk");
    return n;
}

} // namespace

bool EmbeddingFile::fits(int64_t width1, int64_t width2) const {
    if (isXlPair()) return width2 > 0 && widthG == width2 && (width1 == 0 || widthL == width1);
    return width2 == 0 && width == width1;
}

std::string EmbeddingFile::kind() const {
    if (isXlPair()) return "SDXL (" + std::to_string(widthL) + " + " + std::to_string(widthG) + ")";
    const std::string family = width == 768 ? "SD 1.x " : width == 1024 ? "SD 2.x " : "";
    return family + "(" + std::to_string(width) + ")";
}

bool isPickleEmbedding(const std::string& path) {
    const std::string ext = std::filesystem::path(path).extension().string();
    return ext == ".pt" || ext == ".bin" || ext == ".ckpt" || ext == ".pth";
}

EmbeddingFile readEmbeddingFile(const std::string& path) {
    if (isPickleEmbedding(path))
        throw ModelFileError(path, "a pickle embedding: loading one can run any code, so it is not read; "
                                   "convert it to .safetensors (A1111's and diffusers' format)");
    const SafetensorsHeader h = readSafetensorsHeader(path);
    EmbeddingFile e;
    e.path = path;
    e.name = std::filesystem::path(path).stem().string();
    if (h.tensors.empty()) throw ModelFileError(path, "holds no tensors; an embedding holds its vectors");
    const TensorInfo* l = h.find("clip_l");
    const TensorInfo* g = h.find("clip_g");
    if (l && g) {
        const int64_t nl = vectorCount(path, *l), ng = vectorCount(path, *g);
        if (nl != ng)
            throw ModelFileError(path, "clip_l has " + std::to_string(nl) + " vectors and clip_g " + std::to_string(ng) + "; they must match");
        e.vectors = int(nl);
        e.widthL = l->shape.back();
        e.widthG = g->shape.back();
        return e;
    }
    if (h.tensors.size() != 1)
        throw ModelFileError(path, "holds " + std::to_string(h.tensors.size()) +
                                   " tensors; an embedding holds one (or SDXL's clip_l and clip_g)");
    const TensorInfo& t = h.tensors.front();
    e.tensorKey = t.name;
    e.vectors = int(vectorCount(path, t));
    e.width = t.shape.back();
    return e;
}

} // namespace dd::io
