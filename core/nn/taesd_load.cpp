// Loading TAESD weights in either layout. Original → diffusers names as in diffusers
// scripts/convert_tiny_autoencoder_to_diffusers.py: encoder keys keep their index, decoder keys lose one
// (the original Sequential's index 0 is the weightless Clamp). Architecture detection from shapes follows
// EncoderTiny / DecoderTiny (diffusers models/autoencoders/vae.py).
#include "core/io/model_error.h"
#include "core/nn/load_weights.h"
#include "core/nn/taesd.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <optional>

namespace dd::nn {
namespace {

namespace fs = std::filesystem;

enum class Layout { Diffusers, Original };

struct Weights {
    io::TensorMap tensors;  // diffusers names
    Layout layout = Layout::Diffusers;
};

bool startsWith(const std::string& s, std::string_view prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// The Sequential index before the first '.', or −1.
int64_t leadingIndex(const std::string& key) {
    const auto dot = key.find('.');
    if (dot == 0 || dot == std::string::npos || dot > 6) return -1;
    for (size_t i = 0; i < dot; ++i)
        if (!std::isdigit(static_cast<unsigned char>(key[i]))) return -1;
    return std::stoll(key.substr(0, dot));
}

// diffusers name → the original file's name, for error messages about original files.
std::string originalName(const std::string& key) {
    for (const std::string half : {"encoder.layers.", "decoder.layers."}) {
        if (!startsWith(key, half)) continue;
        const auto rest = key.substr(half.size());
        const int64_t n = leadingIndex(rest);
        if (n < 0) return key;
        return std::to_string(half[0] == 'd' ? n + 1 : n) + rest.substr(rest.find('.'));
    }
    return key;
}

Weights readWeights(const std::string& path) {
    const auto raw = io::SafetensorsFile::open(path)->all();
    if (raw.empty()) throw io::ModelFileError(path, "holds no tensors");
    const bool diffusers = startsWith(raw.begin()->first, "encoder.layers.") || startsWith(raw.begin()->first, "decoder.layers.");
    // The original encoder starts with conv `0.weight`; the decoder's index 0 is the Clamp, so it starts at `1.`.
    const bool encoder = raw.count("0.weight") > 0;
    Weights w;
    w.layout = diffusers ? Layout::Diffusers : Layout::Original;
    for (const auto& [key, t] : raw) {
        if (diffusers && (startsWith(key, "encoder.layers.") || startsWith(key, "decoder.layers."))) {
            w.tensors.emplace(key, t);
            continue;
        }
        const int64_t n = leadingIndex(key);
        if (diffusers || n < 0 || (!encoder && n == 0))
            throw io::ModelFileError(path, "unexpected key '" + key + "': neither a diffusers AutoencoderTiny file "
                                           "(encoder.layers.*, decoder.layers.*) nor an original TAESD encoder/decoder "
                                           "(0.weight / 1.weight, 3.conv.0.weight, …)");
        const auto rest = key.substr(key.find('.'));
        w.tensors.emplace((encoder ? "encoder.layers." + std::to_string(n) : "decoder.layers." + std::to_string(n - 1)) + rest, t);
    }
    return w;
}

bool hasHalf(const io::TensorMap& w, const std::string& half) {
    const auto it = w.lower_bound(half + ".");
    return it != w.end() && startsWith(it->first, half + ".");
}

int64_t maxIndex(const io::TensorMap& w, const std::string& prefix) {
    int64_t m = -1;
    for (auto it = w.lower_bound(prefix); it != w.end() && startsWith(it->first, prefix); ++it)
        m = std::max(m, leadingIndex(it->first.substr(prefix.size())));
    return m;
}

// Walks `<half>.layers.N` in order: a block has `N.conv.0.weight`, a stage-opening (encoder) or stage-closing
// (decoder) conv has `N.weight` without bias, the final conv has a bias; indices without weights are the
// ReLU / Upsample.
void readStages(const io::TensorMap& w, const std::string& half, const std::string& source, int64_t first,
                std::vector<int64_t>& blocks, std::vector<int64_t>& channels, int64_t& finalOut) {
    const std::string p = half + ".layers.";
    const int64_t last = maxIndex(w, p);
    blocks.assign(1, 0);
    for (int64_t n = first; n <= last; ++n) {
        const std::string k = p + std::to_string(n) + ".";
        if (w.count(k + "conv.0.weight")) {
            if (channels.size() < blocks.size()) channels.push_back(w.at(k + "conv.0.weight").size(0));
            ++blocks.back();
        } else if (w.count(k + "weight")) {
            const auto& t = w.at(k + "weight");
            if (t.dim() != 4) throw io::ModelFileError(source, "'" + k + "weight' is not a conv weight");
            if (w.count(k + "bias")) {
                if (n != last) throw io::ModelFileError(source, "'" + k + "bias': output conv before the last layer");
                finalOut = t.size(0);
                if (channels.size() < blocks.size()) channels.push_back(t.size(1));
                return;
            }
            if (half == "decoder" && channels.size() < blocks.size()) channels.push_back(t.size(1));
            blocks.push_back(0);
            if (half == "encoder") channels.push_back(t.size(0));
        }
    }
    throw io::ModelFileError(source, "the " + half + " has no output conv (a conv with a bias after its last block)");
}

} // namespace

TaesdConfig taesdConfigFromWeights(const io::TensorMap& w, const std::string& source) {
    TaesdConfig c;
    const bool enc = hasHalf(w, "encoder"), dec = hasHalf(w, "decoder");
    if (!enc && !dec) throw io::ModelFileError(source, "no TAESD weights (encoder.layers.* or decoder.layers.*)");
    auto first = [&](const std::string& key) -> const torch::Tensor& {
        const auto it = w.find(key);
        if (it == w.end() || it->second.dim() != 4) throw io::ModelFileError(source, "weight '" + key + "' is missing");
        return it->second;
    };
    if (enc) {
        const auto& w0 = first("encoder.layers.0.weight");
        c.inChannels = w0.size(1);
        c.encoderBlockOutChannels = {w0.size(0)};
        readStages(w, "encoder", source, 1, c.numEncoderBlocks, c.encoderBlockOutChannels, c.latentChannels);
    }
    if (dec) {
        const auto& w0 = first("decoder.layers.0.weight");
        if (enc && w0.size(1) != c.latentChannels)
            throw io::ModelFileError(source, "encoder and decoder disagree on the latent channels");
        c.latentChannels = w0.size(1);
        c.decoderBlockOutChannels.clear();
        readStages(w, "decoder", source, 2, c.numDecoderBlocks, c.decoderBlockOutChannels, c.outChannels);
    }
    if (!enc) {
        c.encoderBlockOutChannels = c.decoderBlockOutChannels;
        c.numEncoderBlocks.assign(c.numDecoderBlocks.rbegin(), c.numDecoderBlocks.rend());
    }
    if (!dec) {
        c.decoderBlockOutChannels = c.encoderBlockOutChannels;
        c.numDecoderBlocks.assign(c.numEncoderBlocks.rbegin(), c.numEncoderBlocks.rend());
    }
    return c;
}

AutoencoderTiny loadTaesd(const std::string& path, torch::Device device, const std::string& otherHalf) {
    std::string source = path, weightsPath = path;
    std::optional<TaesdConfig> config;
    if (fs::is_directory(path)) {
        weightsPath = (fs::path(path) / "diffusion_pytorch_model.safetensors").string();
        const auto configPath = (fs::path(path) / "config.json").string();
        if (!fs::exists(weightsPath) || !fs::exists(configPath))
            throw io::ModelFileError(path, "not a diffusers AutoencoderTiny folder (config.json and "
                                           "diffusion_pytorch_model.safetensors expected)");
        std::ifstream in(configPath);
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(in);
        } catch (const nlohmann::json::exception& e) {
            throw io::ModelFileError(configPath, std::string("malformed: ") + e.what());
        }
        config = TaesdConfig::fromJson(j, configPath);
    } else if (!fs::exists(path)) {
        throw io::ModelFileError(path, "file not found");
    }
    auto w = readWeights(weightsPath);
    if (fs::is_directory(path) && w.layout != Layout::Diffusers)
        throw io::ModelFileError(weightsPath, "holds original TAESD keys, not AutoencoderTiny ones");
    if (!otherHalf.empty()) {
        const auto more = readWeights(otherHalf);
        for (const auto& [k, t] : more.tensors)
            if (!w.tensors.emplace(k, t).second)
                throw io::ModelFileError(otherHalf, "repeats weight '" + originalName(k) + "' of " + path);
        source += " + " + otherHalf;
    }
    const auto sibling = fs::absolute(path).parent_path() / "config.json";
    if (!config && w.layout == Layout::Diffusers && otherHalf.empty() && fs::exists(sibling)) {
        std::ifstream in(sibling);
        const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
        if (j.is_object() && j.value("_class_name", "") == "AutoencoderTiny") config = TaesdConfig::fromJson(j, sibling.string());
    }
    const bool full = fs::is_directory(path);
    const bool enc = full || hasHalf(w.tensors, "encoder"), dec = full || hasHalf(w.tensors, "decoder");
    if (!config) config = taesdConfigFromWeights(w.tensors, source);
    AutoencoderTiny model(*config, enc, dec);
    const bool original = w.layout == Layout::Original;
    std::vector<std::string> unused;
    try {
        unused = loadWeights(*model, w.tensors, source);
    } catch (const io::ModelFileError& e) {
        const auto& msg = e.problem();
        const auto a = msg.find('\''), b = msg.find('\'', a + 1);
        if (!original || a == std::string::npos || b == std::string::npos) throw;
        throw io::ModelFileError(source, msg + " (key '" + originalName(msg.substr(a + 1, b - a - 1)) + "' in the file)");
    }
    if (!unused.empty())
        throw io::ModelFileError(source, "unexpected weight '" + (original ? originalName(unused.front()) : unused.front()) +
                                             "' (not part of AutoencoderTiny)");
    model->to(device);
    model->eval();
    return model;
}

} // namespace dd::nn
