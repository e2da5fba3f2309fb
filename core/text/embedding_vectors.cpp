#include "core/text/embedding_vectors.h"

#include "core/io/model_error.h"
#include "core/io/model_hash.h"
#include "core/io/safetensors.h"

namespace dd::text {

const torch::Tensor& EmbeddingVectors::rows(size_t file, int side) {
    const auto key = std::make_pair(file, side);
    if (const auto it = m_loaded.find(key); it != m_loaded.end()) return it->second;
    const io::EmbeddingFile& f = m_library.files.at(file);
    const std::string name = !f.isXlPair() ? f.tensorKey : side == 0 ? "clip_l" : "clip_g";
    const auto st = io::SafetensorsFile::open(f.path);
    if (!st->contains(name)) throw io::ModelFileError(f.path, "has no tensor '" + name + "' any more (the file changed)");
    torch::Tensor t = st->tensor(name).to(torch::kFloat32).clone();  // a copy: the file is not kept mapped
    if (t.dim() == 1) t = t.unsqueeze(0);
    if (t.size(0) != f.vectors) throw io::ModelFileError(f.path, "changed while in use: read it again (Refresh)");
    return m_loaded.emplace(key, std::move(t)).first->second;
}

const std::string& EmbeddingVectors::hash(size_t file) {
    if (const auto it = m_hashes.find(file); it != m_hashes.end()) return it->second;
    return m_hashes.emplace(file, io::hashModelFile(m_library.files.at(file).path).sha256.substr(0, 12)).first->second;
}

} // namespace dd::text
