#include "core/nn/upscaler_config.h"

#include "core/io/model_error.h"
#include "core/nn/config_value.h"

#include <cmath>
#include <regex>
#include <set>

namespace dd::nn {
// Named, not anonymous: the unity build joins this file with the other config readers.
namespace upscaler_detection {

using Shapes = std::map<std::string, std::vector<int64_t>>;

struct Reader {
    const Shapes& shapes;
    const std::string& path;

    bool has(const std::string& k) const { return shapes.count(k) > 0; }
    int64_t dim(const std::string& k, size_t i) const {
        const auto it = shapes.find(k);
        if (it == shapes.end()) throw io::ModelFileError(path, "upscaler weight '" + k + "' is missing");
        if (it->second.size() <= i) throw io::ModelFileError(path, "upscaler weight '" + k + "' has too few dimensions");
        const int64_t v = it->second[i];
        if (!plausibleSize(v)) throw io::ModelFileError(path, "upscaler weight '" + k + "' has an implausible shape");
        return v;
    }
    // spandrel's get_seq_len: one past the largest i of `prefix.i.…`.
    int sequenceLength(const std::string& prefix) const {
        int n = 0;
        for (const auto& [k, _] : shapes) {
            if (k.rfind(prefix + ".", 0) != 0) continue;
            const auto rest = k.substr(prefix.size() + 1);
            const auto dot = rest.find('.');
            const auto index = rest.substr(0, dot);
            if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos || index.size() > 6) continue;
            n = std::max(n, std::stoi(index) + 1);
        }
        return n;
    }
};

[[noreturn]] void bad(const std::string& path, const std::string& problem) { throw io::ModelFileError(path, problem); }

// ESRGAN's three layouts (ESRGAN's old `model.N` Sequential, BSRGAN's RRDB_trunk, Real-ESRGAN's body) → Real-ESRGAN.
std::map<std::string, std::string> esrganKeys(const Shapes& shapes, const std::string& path) {
    std::map<std::string, std::string> keys;
    const Reader r{shapes, path};
    if (r.has("model.0.weight")) {
        const int length = r.sequenceLength("model");
        const int blocks = r.sequenceLength("model.1.sub") - 1;
        if (length < 5 || (length - 5) % 3 != 0 || blocks < 1) bad(path, "ESRGAN layers are not in the expected order");
        const int steps = (length - 5) / 3;
        static const std::regex dense(R"(model\.1\.sub\.(\d+)\.RDB(\d)\.conv(\d)\.0\.(weight|bias))");
        static const std::regex plus(R"(model\.1\.sub\.(\d+)\.RDB(\d)\.conv1x1\.weight)");
        static const std::regex top(R"(model\.(\d+)\.(weight|bias))");
        for (const auto& [k, _] : shapes) {
            std::smatch m;
            if (std::regex_match(k, m, dense)) keys[k] = "body." + m[1].str() + ".rdb" + m[2].str() + ".conv" + m[3].str() + "." + m[4].str();
            else if (std::regex_match(k, m, plus)) keys[k] = "body." + m[1].str() + ".rdb" + m[2].str() + ".conv1x1.weight";
            else if (k == "model.1.sub." + std::to_string(blocks) + ".weight") keys[k] = "conv_body.weight";
            else if (k == "model.1.sub." + std::to_string(blocks) + ".bias") keys[k] = "conv_body.bias";
            else if (std::regex_match(k, m, top)) {
                const int i = std::stoi(m[1].str());
                const std::string kind = m[2].str();
                if (i == 0) keys[k] = "conv_first." + kind;
                else if (i == length - 3) keys[k] = "conv_hr." + kind;
                else if (i == length - 1) keys[k] = "conv_last." + kind;
                else if (i % 3 == 0 && i / 3 <= steps) keys[k] = "conv_up" + std::to_string(i / 3) + "." + kind;
                else keys[k] = k;  // unexpected: the loader names it as left over
            } else keys[k] = k;
        }
        return keys;
    }
    static const std::regex bsrgan(R"(RRDB_trunk\.(\d+)\.RDB(\d)\.conv(\d)\.(weight|bias))");
    static const std::regex upconv(R"(upconv(\d)\.(weight|bias))");
    for (const auto& [k, _] : shapes) {
        std::smatch m;
        if (std::regex_match(k, m, bsrgan)) keys[k] = "body." + m[1].str() + ".rdb" + m[2].str() + ".conv" + m[3].str() + "." + m[4].str();
        else if (std::regex_match(k, m, upconv)) keys[k] = "conv_up" + m[1].str() + "." + m[2].str();
        else if (k.rfind("trunk_conv.", 0) == 0) keys[k] = "conv_body." + k.substr(11);
        else if (k.rfind("HRconv.", 0) == 0) keys[k] = "conv_hr." + k.substr(7);
        else keys[k] = k;
    }
    return keys;
}

UpscalerConfig esrganConfig(const Shapes& renamed, const std::string& path) {
    const Reader r{renamed, path};
    UpscalerConfig c;
    c.arch = UpscalerArch::Esrgan;
    c.features = int(r.dim("conv_first.weight", 0));
    c.inChannels = int(r.dim("conv_first.weight", 1));
    c.outChannels = int(r.dim("conv_last.weight", 0));
    c.blocks = r.sequenceLength("body");
    c.growth = int(r.dim("body.0.rdb1.conv1.weight", 0));
    c.plus = r.has("body.0.rdb1.conv1x1.weight");
    c.upsampleSteps = 0;
    while (r.has("conv_up" + std::to_string(c.upsampleSteps + 1) + ".weight")) ++c.upsampleSteps;
    if (c.blocks < 1 || c.blocks > 1000 || c.upsampleSteps > 4) bad(path, "ESRGAN has an implausible number of blocks or upsampling layers");
    // Real-ESRGAN's x2 and x1 models pixel-unshuffle the input (spandrel's shuffle_factor).
    if (c.inChannels == c.outChannels * 4) c.unshuffle = 2;
    else if (c.inChannels == c.outChannels * 16) c.unshuffle = 4;
    c.inChannels /= c.unshuffle * c.unshuffle;
    const int own = 1 << c.upsampleSteps;
    if (own < c.unshuffle) bad(path, "ESRGAN unshuffles its input more than it upscales");
    c.scale = own / c.unshuffle;
    return c;
}

// spandrel's get_scale_and_output_channels: scale² · channels = n, channels most likely the input's, 3, 4 or 1.
std::pair<int, int> pixelShuffle(int64_t n, int inChannels, const std::string& path) {
    for (int c : {inChannels, 3, 4, 1}) {
        if (c <= 0 || n % c) continue;
        const auto s = int64_t(std::llround(std::sqrt(double(n / c))));
        if (s * s == n / c && s >= 1) return {int(s), c};
    }
    bad(path, "the last layer's " + std::to_string(n) + " channels are not scale² × colour channels");
}

UpscalerConfig compactConfig(const Shapes& shapes, const std::string& path) {
    const Reader r{shapes, path};
    UpscalerConfig c;
    c.arch = UpscalerArch::Compact;
    const int last = r.sequenceLength("body") - 1;
    if (last < 2 || last % 2) bad(path, "the compact network's layers are not in the expected order");
    c.inChannels = int(r.dim("body.0.weight", 1));
    c.features = int(r.dim("body.0.weight", 0));
    c.blocks = (last - 2) / 2;
    std::tie(c.scale, c.outChannels) = pixelShuffle(r.dim("body." + std::to_string(last) + ".bias", 0), c.inChannels, path);
    return c;
}

UpscalerConfig swinirConfig(const Shapes& shapes, const std::string& path) {
    const Reader r{shapes, path};
    UpscalerConfig c;
    c.arch = UpscalerArch::SwinIR;
    if (r.has("conv_before_upsample.0.weight")) c.upsampler = r.has("conv_up1.weight") ? "nearest+conv" : "pixelshuffle";
    else if (r.has("upsample.0.weight")) c.upsampler = "pixelshuffledirect";
    const std::string first = r.has("conv_first.1.weight") ? "conv_first.1" : "conv_first";
    const int inputs = int(r.dim(first + ".weight", 1));
    c.features = int(r.dim(first + ".weight", 0));
    if (first == "conv_first.1") c.unshuffle = int(std::lround(std::sqrt(inputs / 3)));
    c.inChannels = inputs / (c.unshuffle * c.unshuffle);
    if (c.inChannels * c.unshuffle * c.unshuffle != inputs) bad(path, "SwinIR's first layer does not fit its pixel unshuffle");
    c.outChannels = r.has("conv_last.weight") ? int(r.dim("conv_last.weight", 0)) : c.inChannels;
    const std::string block0 = "layers.0.residual_group.blocks.0.";
    c.hiddenFeatures = int(r.dim(block0 + "mlp.fc1.bias", 0));
    const auto table = r.dim(block0 + "attn.relative_position_bias_table", 0);
    const auto side = int64_t(std::llround(std::sqrt(double(table))));
    if (side * side != table || side % 2 == 0) bad(path, "SwinIR's position table is not (2·window − 1)²");
    c.window = int((side + 1) / 2);
    const std::string mask = "layers.0.residual_group.blocks.1.attn_mask";
    if (r.has(mask)) c.trainingSize = int(std::lround(std::sqrt(double(r.dim(mask, 0))) * c.window));
    const int layers = r.sequenceLength("layers");
    if (layers < 1 || layers > 64) bad(path, "SwinIR has an implausible number of layers");
    for (int i = 0; i < layers; ++i) {
        const std::string p = "layers." + std::to_string(i) + ".residual_group.blocks";
        c.depths.push_back(r.sequenceLength(p));
        c.heads.push_back(int(r.dim(p + ".0.attn.relative_position_bias_table", 1)));
        if (c.depths.back() < 1 || c.features % c.heads.back()) bad(path, "SwinIR layer " + std::to_string(i) + " has no blocks or heads that do not divide its width");
    }
    c.threeConvResidual = !r.has("conv_after_body.weight");
    c.imageRange = c.window == 7 ? 255.0 : 1.0;  // spandrel: the JPEG models are the only ones with window 7
    c.scale = 1;
    if (c.upsampler == "nearest+conv") {
        for (int i = 1; r.has("conv_up" + std::to_string(i) + ".weight"); ++i) c.scale *= 2;
    } else if (c.upsampler == "pixelshuffle") {
        c.upsampleFeatures = int(r.dim("conv_before_upsample.0.weight", 0));
        for (int i = 0; r.has("upsample." + std::to_string(i) + ".weight"); i += 2) {
            const int64_t ratio = r.dim("upsample." + std::to_string(i) + ".weight", 0) / c.upsampleFeatures;
            c.scale *= int(std::llround(std::sqrt(double(ratio))));
        }
    } else if (c.upsampler == "pixelshuffledirect") {
        c.scale = pixelShuffle(r.dim("upsample.0.bias", 0), c.outChannels, path).first;
    }
    if (c.upsampler == "nearest+conv") c.upsampleFeatures = int(r.dim("conv_before_upsample.0.weight", 0));
    if (c.scale < c.unshuffle || c.scale > 16) bad(path, "SwinIR has an implausible scale");
    c.scale /= c.unshuffle;
    return c;
}

std::map<std::string, std::string> swinirKeys(const Shapes& shapes) {
    std::map<std::string, std::string> keys;
    for (const auto& [k, _] : shapes) {
        if (k.find("relative_position_index") != std::string::npos || k.find("attn_mask") != std::string::npos) continue;
        if (k.rfind("conv_first.1.", 0) == 0) keys[k] = "conv_first." + k.substr(13);
        else keys[k] = k;
    }
    return keys;
}

bool hasAll(const Shapes& s, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (!s.count(n)) return false;
    return true;
}

// What the file holds instead, when it is a model of another kind.
std::string notAnUpscaler(const Shapes& s) {
    for (const auto& [k, _] : s) {
        if (k.rfind("model.diffusion_model.", 0) == 0 || k.rfind("down_blocks.", 0) == 0)
            return "it is a Stable Diffusion model, not an upscaler";
        if (k.find("lora_") != std::string::npos) return "it is a LoRA, not an upscaler";
        if (k.rfind("control_model.", 0) == 0 || k.rfind("controlnet_", 0) == 0) return "it is a ControlNet, not an upscaler";
    }
    return "its weights (the first is '" + (s.empty() ? std::string("none") : s.begin()->first) +
           "') match none of the upscaler architectures DiffusionDesk runs: ESRGAN / Real-ESRGAN (RRDBNet), "
           "Real-ESRGAN compact (SRVGGNet), SwinIR";
}

} // namespace upscaler_detection


std::string UpscalerConfig::architectureName() const {
    switch (arch) {
    case UpscalerArch::Esrgan: return plus ? "ESRGAN+" : "ESRGAN";
    case UpscalerArch::Compact: return "RealESRGAN Compact";
    case UpscalerArch::SwinIR: return "SwinIR";
    }
    return "?";
}

std::string UpscalerConfig::describe() const {
    std::string d = architectureName() + " " + std::to_string(scale) + "x, " + std::to_string(features) + " features";
    if (arch == UpscalerArch::SwinIR) {
        int total = 0;
        for (int b : depths) total += b;
        return d + ", " + std::to_string(depths.size()) + " layers of " + std::to_string(total / int(depths.size())) +
               " blocks, window " + std::to_string(window);
    }
    return d + ", " + std::to_string(blocks) + (arch == UpscalerArch::Esrgan ? " blocks" : " convolutions");
}

UpscalerDetection detectUpscaler(const std::vector<io::TensorInfo>& tensors, const std::string& path) {
    using namespace upscaler_detection;
    Shapes shapes;
    for (const auto& t : tensors) shapes[t.name] = t.shape;
    UpscalerDetection d;
    if (hasAll(shapes, {"model.0.weight", "model.1.sub.0.RDB1.conv1.0.weight"}) ||
        hasAll(shapes, {"model.0.weight", "model.1.sub.0.RDB1.conv1x1.weight"}) ||
        hasAll(shapes, {"conv_first.weight", "body.0.rdb1.conv1.weight", "conv_body.weight", "conv_last.weight"}) ||
        hasAll(shapes, {"conv_first.weight", "RRDB_trunk.0.RDB1.conv1.weight", "trunk_conv.weight", "conv_last.weight"})) {
        d.keys = esrganKeys(shapes, path);
        Shapes renamed;
        for (const auto& [from, to] : d.keys) renamed[to] = shapes.at(from);
        d.config = esrganConfig(renamed, path);
    } else if (hasAll(shapes, {"layers.0.residual_group.blocks.0.norm1.weight", "layers.0.residual_group.blocks.0.mlp.fc1.bias"}) &&
               (shapes.count("conv_first.weight") || shapes.count("conv_first.1.weight"))) {
        d.keys = swinirKeys(shapes);
        d.config = swinirConfig(shapes, path);
    } else if (hasAll(shapes, {"body.0.weight", "body.1.weight"})) {
        for (const auto& [k, _] : shapes) d.keys[k] = k;
        d.config = compactConfig(shapes, path);
    } else {
        bad(path, "not an upscaler DiffusionDesk knows: " + notAnUpscaler(shapes));
    }
    if (d.config.scale < 1 || d.config.scale > 16 || d.config.inChannels < 1 || d.config.inChannels > 4 || d.config.outChannels < 1 ||
        d.config.outChannels > 4)
        bad(path, "the " + d.config.architectureName() + " upscaler has an implausible scale or channel count");
    return d;
}

std::string pickleUpscalerMessage() {
    return "this upscaler is a pickle file; DiffusionDesk never unpickles files (loading a pickle can run code hidden in "
           "it). Convert it once in a trusted Python environment: python -c \"import sys, torch, safetensors.torch as st; "
           "d = torch.load(sys.argv[1], weights_only=True); d = d.get('params_ema', d.get('params', d)); "
           "st.save_file({k: v.contiguous() for k, v in d.items()}, sys.argv[1].rsplit('.', 1)[0] + '.safetensors')\" FILE.pth";
}

} // namespace dd::nn
