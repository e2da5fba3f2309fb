// Ref: peft tuners/lora/layer.py (get_delta_weight, merge / unmerge), diffusers loaders/lora_conversion_utils.py
// (kohya names → diffusers names), kohya-ss sd-scripts networks/lora.py (alpha / rank scaling).
#include "core/nn/lora.h"

#include "core/nn/load_weights.h"

#include "core/io/single_file_parts.h"

#include <torch/torch.h>

namespace dd::nn {
namespace {

std::string underscored(std::string s) {
    std::replace(s.begin(), s.end(), '.', '_');
    return s;
}

// A network's LoRA-capable layers by dotted name, and kohya's underscore spelling of each.
struct LayerTable {
    std::map<std::string, torch::nn::Module*> byName;
    std::map<std::string, std::string> byUnderscored;

    explicit LayerTable(torch::nn::Module* net) {
        if (!net) return;
        for (const auto& item : net->named_modules("", false)) {
            auto* m = item.value().get();
            if (!dynamic_cast<LoraLinearImpl*>(m) && !dynamic_cast<LoraConv2dImpl*>(m)) continue;
            byName[item.key()] = m;
            byUnderscored[underscored(item.key())] = item.key();
        }
    }
    std::optional<std::string> find(const std::string& module, bool kohya) const {
        if (kohya) {
            const auto it = byUnderscored.find(module);
            return it == byUnderscored.end() ? std::nullopt : std::optional(it->second);
        }
        return byName.count(module) ? std::optional(module) : std::nullopt;
    }
};

std::optional<int> leadingInt(std::string_view& s) {
    size_t n = 0;
    while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) ++n;
    if (n == 0 || n > 6) return std::nullopt;
    const int v = std::stoi(std::string(s.substr(0, n)));
    s.remove_prefix(n);
    return v;
}

// kohya's SDXL names follow the LDM UNet ("input_blocks_4_1_transformer_blocks_0_attn1_to_q"): put the dots back
// where the LDM layout has them and let the single-file loader's table rename the block.
std::optional<std::string> ldmToDiffusers(std::string_view name, int layersPerBlock) {
    static const std::pair<std::string_view, std::string_view> kFixed[] = {
        {"time_embed_0", "time_embedding.linear_1"}, {"time_embed_2", "time_embedding.linear_2"},
        {"label_emb_0_0", "add_embedding.linear_1"}, {"label_emb_0_2", "add_embedding.linear_2"},
        {"input_blocks_0_0", "conv_in"},             {"out_2", "conv_out"}};
    for (const auto& [from, to] : kFixed)
        if (name == from) return std::string(to);
    std::string dotted;
    const bool middle = name.starts_with("middle_block_");
    for (std::string_view head : {"input_blocks_", "output_blocks_", "middle_block_"}) {
        if (!name.starts_with(head)) continue;
        name.remove_prefix(head.size());
        dotted = std::string(head.substr(0, head.size() - 1)) + ".";
        const auto i = leadingInt(name);
        if (!i || !name.starts_with("_")) return std::nullopt;
        name.remove_prefix(1);
        dotted += std::to_string(*i) + ".";
        if (!middle) {
            const auto j = leadingInt(name);
            if (!j || !name.starts_with("_")) return std::nullopt;
            name.remove_prefix(1);
            dotted += std::to_string(*j) + ".";
        }
        break;
    }
    if (dotted.empty()) return std::nullopt;
    std::string rest(name);
    for (std::string_view resnetPart : {"in_layers_", "out_layers_", "emb_layers_"})
        if (rest.starts_with(resnetPart)) rest[resnetPart.size() - 1] = '.';
    const auto mapped = io::sf::ldmUnetKeyToDiffusers(dotted + rest + ".weight", layersPerBlock);
    if (!mapped || !mapped->ends_with(".weight")) return std::nullopt;
    return mapped->substr(0, mapped->size() - 7);
}

torch::Tensor& weightOf(torch::nn::Module* m) {
    if (auto* l = dynamic_cast<LoraLinearImpl*>(m)) return l->weight;
    return dynamic_cast<LoraConv2dImpl*>(m)->weight;
}

// down/up in the layer's shape family, or why they do not fit.
std::optional<std::string> fit(torch::nn::Module* m, torch::Tensor& down, torch::Tensor& up) {
    const auto& w = weightOf(m);
    const bool conv = w.dim() == 4;
    const int64_t r = down.size(0);
    if (conv) {
        if (down.dim() == 2) down = down.view({r, down.size(1), 1, 1});
        if (up.dim() == 2) up = up.view({up.size(0), r, 1, 1});
        if (down.size(1) != w.size(1) || up.size(0) != w.size(0) || down.size(2) != w.size(2) || down.size(3) != w.size(3))
            return "down " + shapeText(down.sizes()) + " / up " + shapeText(up.sizes()) + " do not fit the weight " + shapeText(w.sizes());
    } else {
        if (down.dim() == 4 && (down.size(2) != 1 || down.size(3) != 1))
            return "a " + std::to_string(down.size(2)) + "x" + std::to_string(down.size(3)) + " convolution LoRA on a linear layer";
        down = down.reshape({r, -1});
        up = up.reshape({up.size(0), r});
        if (down.size(1) != w.size(1) || up.size(0) != w.size(0))
            return "down " + shapeText(down.sizes()) + " / up " + shapeText(up.sizes()) + " do not fit the weight " + shapeText(w.sizes());
    }
    return std::nullopt;
}

} // namespace

LoraBinding bindLora(const io::LoraFile& file, const LoraNetworks& nets, double unetWeight, double textEncoderWeight) {
    const LayerTable unet(nets.unet ? nets.unet.ptr().get() : nullptr);
    const LayerTable te1(nets.textEncoder ? nets.textEncoder.ptr().get() : nullptr);
    const LayerTable te2(nets.textEncoder2 ? nets.textEncoder2.ptr().get() : nullptr);
    const int layersPerBlock = nets.unet && !nets.unet->config().layersPerBlock.empty()
                                   ? int(nets.unet->config().layersPerBlock.front()) : 2;
    LoraBinding out;
    for (const auto& layer : file.layers) {
        const std::string label = std::string(io::loraComponentName(layer.component)) + " layer '" + layer.module + "'";
        const LayerTable& table = layer.component == io::LoraComponent::Unet ? unet
                                  : layer.component == io::LoraComponent::TextEncoder ? te1 : te2;
        std::optional<std::string> name = table.find(layer.module, layer.kohya);
        if (!name && layer.component != io::LoraComponent::Unet)  // transformers 5 saves CLIPTextModel without "text_model."
            name = table.find((layer.kohya ? "text_model_" : "text_model.") + layer.module, layer.kohya);
        if (!name && layer.component == io::LoraComponent::Unet && layer.kohya)
            if (const auto d = ldmToDiffusers(layer.module, layersPerBlock)) name = table.find(underscored(*d), true);
        if (!name) {
            out.unmatched.push_back(label + " (no such layer in this model)");
            continue;
        }
        LoraPatch p;
        p.module = table.byName.at(*name);
        p.layer = std::string(io::loraComponentName(layer.component)) + ":" + *name;
        p.down = layer.down;
        p.up = layer.up;
        if (const auto why = fit(p.module, p.down, p.up)) {
            out.unmatched.push_back(label + " (" + *why + ")");
            continue;
        }
        const double weight = layer.component == io::LoraComponent::Unet ? unetWeight : textEncoderWeight;
        p.scale = weight * layer.alpha / double(layer.rank());
        out.patches.push_back(std::move(p));
    }
    return out;
}

void LoraApplier::apply(const std::vector<LoraPatch>& patches, LoraMode mode) {
    torch::NoGradGuard noGrad;
    clear();
    if (mode == LoraMode::SidePath) {
        for (const auto& p : patches) {
            auto path = std::make_shared<LoraSidePath>();
            path->down = p.down;
            path->up = p.up;
            path->scale = p.scale;
            if (auto* l = dynamic_cast<LoraLinearImpl*>(p.module)) l->sidePaths.push_back(path);
            else dynamic_cast<LoraConv2dImpl*>(p.module)->sidePaths.push_back(path);
            m_withPaths.push_back(p.module);
            m_sideBytes += p.down.nbytes() + p.up.nbytes();
        }
        return;
    }
    // Merge: every delta of a layer is summed in fp32 onto the original, then cast once to the weight's dtype.
    std::map<torch::nn::Module*, torch::Tensor> deltas;
    for (const auto& p : patches) {
        const auto& w = weightOf(p.module);
        const auto up = p.up.to(w.device(), torch::kFloat32).flatten(1);
        const auto down = p.down.to(w.device(), torch::kFloat32).flatten(1);
        const auto delta = torch::mm(up, down).view(w.sizes()) * p.scale;
        auto& sum = deltas[p.module];
        sum = sum.defined() ? sum + delta : delta;
    }
    for (auto& [module, delta] : deltas) {
        auto& w = weightOf(module);
        const torch::Tensor original = w.detach();  // the same storage; set_data below leaves it alone
        const auto merged = (original.to(torch::kFloat32) + delta).to(original.scalar_type()).contiguous(original.suggest_memory_format());
        w.set_data(merged);
        m_originals.emplace(module, original);
    }
}

void LoraApplier::clear() {
    torch::NoGradGuard noGrad;
    for (auto& [module, original] : m_originals) weightOf(module).set_data(original);
    m_originals.clear();
    for (auto* m : m_withPaths) {
        if (auto* l = dynamic_cast<LoraLinearImpl*>(m)) l->sidePaths.clear();
        else dynamic_cast<LoraConv2dImpl*>(m)->sidePaths.clear();
    }
    m_withPaths.clear();
    m_sideBytes = 0;
}

int64_t LoraApplier::extraBytes() const {
    int64_t bytes = m_sideBytes;
    for (const auto& [_, t] : m_originals) bytes += int64_t(t.nbytes());
    return bytes;
}

} // namespace dd::nn
