#pragma once
// Memory-mapped safetensors files (reader) and a writer. Tensors are zero-copy views of the mapping
// when the dtype has a torch equivalent and the bytes are aligned; otherwise they are copied.
#include "core/io/safetensors_header.h"

#include <torch/types.h>

#include <map>
#include <memory>
#include <string>

namespace dd::io {

// Name → tensor, ordered so that iteration and printing are deterministic.
using TensorMap = std::map<std::string, torch::Tensor>;

class SafetensorsFile {
public:
    static std::shared_ptr<SafetensorsFile> open(const std::string& path);  // throws ModelFileError
    ~SafetensorsFile();
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;

    const std::string& path() const { return m_path; }
    uint64_t fileSize() const { return m_size; }
    const SafetensorsHeader& header() const { return m_header; }
    const std::vector<TensorInfo>& tensors() const { return m_header.tensors; }
    const std::map<std::string, std::string>& metadata() const { return m_header.metadata; }
    bool contains(std::string_view name) const { return m_header.find(name) != nullptr; }

    // Raw bytes of one tensor inside the mapping.
    const uint8_t* data(const TensorInfo& t) const { return m_base + m_header.dataOffset + t.begin; }

    // A CPU tensor. The view keeps this file mapped for as long as it lives. Throws on unknown name.
    torch::Tensor tensor(std::string_view name) const;
    TensorMap all() const;

private:
    SafetensorsFile() = default;
    std::string m_path;
    uint64_t m_size = 0;
    const uint8_t* m_base = nullptr;
    SafetensorsHeader m_header;
    std::shared_ptr<void> m_mapping;  // the mmap; tensor views share it
};

// Gives the pages that hold `t`'s bytes back to the kernel when `t` views a SafetensorsFile mapping (a no-op for
// any other tensor). For a loader that has copied the tensor to another dtype or device and will not read the
// view again: the file's pages would otherwise stay in the process's memory until the mapping is unmapped, so
// loading a 4 GB file into bf16 or onto a GPU would hold the whole file at once. Pages are re-read from the
// file if the view is read after all; only pages wholly inside the tensor's bytes are given back, and only when
// none of them was written through the view (a written page of the private mapping is the process's own copy:
// giving it back would lose the write). Also what the engine does on the CPU with a network's zero-copy weights
// between uses (nn::releaseMappedWeights).
void releaseMappedPages(const torch::Tensor& t);

torch::ScalarType toTorch(DType d);
std::optional<DType> fromTorch(torch::ScalarType t);

// Writes atomically (temporary file + rename): a failed write never leaves a partial file behind.
void writeSafetensors(const std::string& path, const TensorMap& tensors,
                      const std::map<std::string, std::string>& metadata = {});

} // namespace dd::io
