#pragma once
// Internals of the single-file loader, shared by single_file*.cpp. Not part of the public API.
#include "core/io/checkpoint.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dd::io::sf {

// Names and shapes of a file's tensors, looked up without touching the data.
class KeyView {
public:
    explicit KeyView(const SafetensorsFile& file);
    const SafetensorsFile& file() const { return m_file; }
    const std::string& path() const { return m_file.path(); }
    bool has(const std::string& name) const { return m_file.contains(name); }
    bool hasPrefix(std::string_view prefix) const;
    std::vector<std::string> withPrefix(std::string_view prefix) const;  // sorted
    // Shape of a tensor that must exist; a missing one is a ModelFileError naming it.
    const std::vector<int64_t>& shape(const std::string& name) const;
    int64_t dim(const std::string& name, int index) const;  // index < 0 counts from the end
    // 1 + the largest N for which some name starts with prefix + "N." (0 when there is none).
    int countIndexed(std::string_view prefix) const;

private:
    const SafetensorsFile& m_file;
    std::vector<std::string> m_sorted;
};

// One converted component: tensors under diffusers' names plus its derived config.json.
struct Component {
    TensorMap tensors;
    nlohmann::json config;
    std::vector<std::string> notes;
    std::vector<std::string> unmapped;  // source names under the component's prefix that map to nothing
};

std::vector<std::string_view> splitDots(std::string_view s);
std::string joinDots(const std::vector<std::string_view>& parts, size_t from);
std::optional<int> parseIndex(std::string_view s);
// Replaces a leading "old." segment group by "new." using the first matching pair of `table`.
std::optional<std::string> renameHead(std::string_view rest,
                                      const std::vector<std::pair<std::string_view, std::string_view>>& table);
// Error about the file's layout, worded for a person.
[[noreturn]] void fail(const KeyView& keys, const std::string& problem);

inline constexpr std::string_view kUnetPrefix = "model.diffusion_model.";

// single_file_unet.cpp. pooledDim: projection width of the second text encoder (SDXL), when known.
Component convertUnet(const KeyView& keys, ModelFamily family, std::optional<int64_t> pooledDim);
// single_file_unet.cpp: one LDM UNet key without "model.diffusion_model." ("input_blocks.1.0.in_layers.2.weight")
// → its diffusers name; nullopt for what has no diffusers counterpart. Also used by LoRA key matching (core/nn/lora).
std::optional<std::string> ldmUnetKeyToDiffusers(std::string_view key, int layersPerBlock);
// single_file_vae.cpp. Returns nullopt when the file holds no VAE.
std::optional<Component> convertVae(const KeyView& keys, ModelFamily family);
// single_file_clip.cpp. HF-named CLIP (OpenAI ViT-L): SD 1.x, SDXL text_encoder.
Component convertHfClip(const KeyView& keys, const std::string& prefix);
// OpenCLIP-named encoders. sd2: drop the last block and the projection (SD 2.x reads the penultimate layer).
Component convertOpenClip(const KeyView& keys, const std::string& prefix, bool sd2);

} // namespace dd::io::sf
