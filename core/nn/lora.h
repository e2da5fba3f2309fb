#pragma once
// Applying LoRA files (core/io/lora_file.h) to the UNet and CLIP text encoders, in two modes:
//  - Merge: W ← W + Σ scale · up·down, computed in fp32 from the original weight. The original tensor is kept
//    (not recomputed by subtraction), so `clear()` restores every weight bit for bit. Costs one extra copy of
//    each touched weight; runs at the plain model's speed.
//  - SidePath: the weights stay as they are; each touched LoraLinear / LoraConv2d adds scale · up(down(x)).
//    Costs the LoRA's own bytes and two small matmuls per touched layer and step.
// scale = user weight · alpha / rank (kohya, diffusers/PEFT). Module names are matched against the networks'
// own names (diffusers / transformers), kohya's underscore spelling and SDXL's LDM block names included.
// Merge writes the parameters themselves: a network under an offload (core/memory/offload, whose parameters
// are placeholders between uses) must have it detached around apply() and clear() (LoraStack does this).
// Not thread-safe: use it on the engine thread, between runs.
#include "core/io/lora_file.h"
#include "core/nn/clip_text.h"
#include "core/nn/unet.h"

#include <map>
#include <string>
#include <vector>

namespace dd::nn {

enum class LoraMode { Merge, SidePath };

// The networks one LoRA may touch (text encoders may be null: SDXL refiner, SD 1.x has no second one).
struct LoraNetworks {
    UNet2DConditionModel unet{nullptr};
    ClipTextModel textEncoder{nullptr}, textEncoder2{nullptr};
};

// One file layer bound to one model layer, down/up already in the layer's shape family.
struct LoraPatch {
    std::string layer;  // "unet:down_blocks.1.attentions.0.proj_in"
    torch::nn::Module* module = nullptr;  // a LoraLinearImpl or LoraConv2dImpl
    torch::Tensor down, up;
    double scale = 1;
};

struct LoraBinding {
    std::vector<LoraPatch> patches;
    // File layers with no counterpart in the model ("unet layer 'x'") or of the wrong shape (with why).
    std::vector<std::string> unmatched;
};

// Binds the file's layers to the networks; unetWeight / textEncoderWeight multiply alpha / rank.
LoraBinding bindLora(const io::LoraFile& file, const LoraNetworks& nets, double unetWeight, double textEncoderWeight);

class LoraApplier {
public:
    // Makes the networks carry exactly `patches` (what was applied before is removed first).
    void apply(const std::vector<LoraPatch>& patches, LoraMode mode);
    // Unmerges (originals back, bit for bit) and detaches every side path.
    void clear();
    // Extra bytes held: originals of merged weights, or the side paths' down/up.
    int64_t extraBytes() const;
    bool empty() const { return m_originals.empty() && m_withPaths.empty(); }
    bool merged() const { return !m_originals.empty(); }

private:
    std::map<torch::nn::Module*, torch::Tensor> m_originals;  // weight tensors as they were before merging
    std::vector<torch::nn::Module*> m_withPaths;
    int64_t m_sideBytes = 0;
};

} // namespace dd::nn
