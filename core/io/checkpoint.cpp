// Ref: diffusers pipelines/pipeline_utils.py (from_pretrained: model_index.json, per-component folders, variants)
// and utils/hub_utils.py (_add_variant, sharded index loading).
#include "core/io/checkpoint.h"

#include "core/io/model_error.h"
#include "core/io/shard_index.h"
#include "core/io/single_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace dd::io {
namespace {

std::string readText(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw ModelFileError(p.string(), "cannot open");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Python's json writes float('-inf') as -Infinity (diffusers' lambda_min_clipped), which is not JSON.
// Such a value becomes null, which the config readers treat as "use the class default".
std::string withoutNonFiniteNumbers(std::string text) {
    for (const char* token : {"-Infinity", "Infinity", "NaN"}) {
        const std::string needle = std::string(": ") + token;
        for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at))
            text.replace(at, needle.size(), ": null");
    }
    return text;
}

nlohmann::json readJson(const fs::path& p) {
    try {
        return nlohmann::json::parse(withoutNonFiniteNumbers(readText(p)));
    } catch (const nlohmann::json::exception& e) {
        throw ModelFileError(p.string(), std::string("not valid JSON: ") + e.what());
    }
}

std::string lowerExtension(const fs::path& p) {
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return ext;
}

[[noreturn]] void refusePickle(const std::string& path) {
    throw ModelFileError(path,
                         "this is a pickle checkpoint. DiffusionDesk never unpickles files: loading a pickle can run "
                         "arbitrary code hidden in it. Convert it to .safetensors in a trusted Python environment "
                         "(e.g. `safetensors.torch.save_file(torch.load(path, weights_only=True)[\"state_dict\"], "
                         "\"model.safetensors\")`, or diffusers' save_pretrained), or download the .safetensors release");
}

// "diffusion_pytorch_model.safetensors" + "fp16" → "diffusion_pytorch_model.fp16.safetensors"
std::string withVariant(const std::string& file, const std::string& variant) {
    if (variant.empty()) return file;
    const auto dot = file.rfind('.');
    return file.substr(0, dot) + "." + variant + file.substr(dot);
}

TensorMap loadSharded(const fs::path& indexPath) {
    const ShardIndex index = parseShardIndex(indexPath.string(), readText(indexPath));
    TensorMap out;
    for (const auto& shard : index.shards) {
        const fs::path shardPath = indexPath.parent_path() / shard;
        if (!fs::exists(shardPath))
            throw ModelFileError(indexPath.string(), "shard '" + shard + "' listed in the index is missing");
        const auto file = SafetensorsFile::open(shardPath.string());
        for (const auto& [tensor, owner] : index.weightMap) {
            if (owner != shard) continue;
            if (!file->contains(tensor))
                throw ModelFileError(shardPath.string(), "tensor '" + tensor + "' is listed in the index but missing from this shard");
            out.emplace(tensor, file->tensor(tensor));
        }
    }
    return out;
}

// Weights of one component folder: single file, or sharded index; the requested variant first.
TensorMap loadComponentWeights(const fs::path& dir, const std::string& baseName, const std::string& variant) {
    std::vector<std::string> variants = {variant};
    if (!variant.empty()) variants.push_back("");
    for (const auto& v : variants) {
        const fs::path single = dir / withVariant(baseName + ".safetensors", v);
        if (fs::exists(single)) return SafetensorsFile::open(single.string())->all();
        const fs::path index = dir / withVariant(baseName + ".safetensors.index.json", v);
        if (fs::exists(index)) return loadSharded(index);
    }
    for (const char* pickle : {".bin", ".ckpt", ".pt", ".pth"}) {
        const fs::path p = dir / (baseName + pickle);
        if (fs::exists(p)) refusePickle(p.string());
    }
    throw ModelFileError(dir.string(), "no " + baseName + ".safetensors (or sharded index) in this component folder");
}

// transformers 5 saves CLIPTextModel without its "text_model." level; Hub files and single-file
// conversions keep it. Normalise to the Hub names so every loader yields the same keys.
TensorMap withTextModelPrefix(TensorMap weights) {
    TensorMap out;
    for (auto& [k, t] : weights) {
        const bool bare = k.rfind("embeddings.", 0) == 0 || k.rfind("encoder.", 0) == 0 || k.rfind("final_layer_norm.", 0) == 0;
        out.emplace(bare ? "text_model." + k : k, std::move(t));
    }
    return out;
}

ModelFamily familyFromConfigs(const Checkpoint& ck) {
    const auto& unet = ck.configs.at("unet");
    const bool hasFirstEncoder = ck.components.count("text_encoder") > 0;
    if (ck.components.count("text_encoder_2")) return hasFirstEncoder ? ModelFamily::SDXL : ModelFamily::SDXLRefiner;
    if (unet.value("addition_embed_type", nlohmann::json()).is_string()) return ModelFamily::SDXL;
    // SD 2.x: OpenCLIP text encoder (gelu) and linear transformer projections.
    const auto& te = ck.configs.count("text_encoder") ? ck.configs.at("text_encoder") : nlohmann::json::object();
    if (te.value("hidden_act", "") == "gelu" || unet.value("use_linear_projection", false)) return ModelFamily::SD2;
    return ModelFamily::SD1;
}

Checkpoint loadDiffusersFolder(const fs::path& root, const std::string& variant) {
    Checkpoint ck;
    ck.path = root.string();
    ck.format = CheckpointFormat::DiffusersFolder;
    const fs::path indexPath = root / "model_index.json";
    if (!fs::exists(indexPath))
        throw ModelFileError(root.string(), "folder has no model_index.json: not a diffusers pipeline folder");
    ck.configs["model_index"] = readJson(indexPath);
    const auto& modelIndex = ck.configs["model_index"];

    struct Component {
        const char* name;
        const char* weights;
    };
    for (const Component c : {Component{"unet", "diffusion_pytorch_model"}, Component{"vae", "diffusion_pytorch_model"},
                              Component{"text_encoder", "model"}, Component{"text_encoder_2", "model"}}) {
        const auto entry = modelIndex.find(c.name);
        if (entry == modelIndex.end() || !entry->is_array() || entry->size() != 2 || (*entry)[0].is_null()) continue;
        const fs::path dir = root / c.name;
        if (!fs::exists(dir / "config.json"))
            throw ModelFileError((dir / "config.json").string(), "missing: model_index.json lists this component");
        ck.configs[c.name] = readJson(dir / "config.json");
        auto weights = loadComponentWeights(dir, c.weights, variant);
        ck.components[c.name] = std::string(c.name).rfind("text_encoder", 0) == 0 ? withTextModelPrefix(std::move(weights)) : std::move(weights);
    }
    for (const char* required : {"unet", "vae"})
        if (!ck.components.count(required))
            throw ModelFileError(indexPath.string(), std::string("the pipeline has no '") + required + "' component");
    if (fs::exists(root / "scheduler" / "scheduler_config.json"))
        ck.configs["scheduler"] = readJson(root / "scheduler" / "scheduler_config.json");
    for (const char* tok : {"tokenizer", "tokenizer_2"})
        if (fs::exists(root / tok / "vocab.json")) ck.tokenizerDirs[tok] = (root / tok).string();
    ck.family = familyFromConfigs(ck);
    return ck;
}

} // namespace

std::string_view familyName(ModelFamily f) {
    switch (f) {
    case ModelFamily::SD1: return "SD 1.x";
    case ModelFamily::SD2: return "SD 2.x";
    case ModelFamily::SDXL: return "SDXL";
    case ModelFamily::SDXLRefiner: return "SDXL refiner";
    }
    return "?";
}

int nativeImageSize(const nlohmann::json& unet, const nlohmann::json& vae) {
    const auto sampleSize = unet.is_object() && unet.contains("sample_size") && unet["sample_size"].is_number_integer()
                                ? unet["sample_size"].get<int>() : 0;
    int scale = 8;
    if (vae.is_object() && vae.contains("block_out_channels") && vae["block_out_channels"].is_array() &&
        !vae["block_out_channels"].empty())
        scale = 1 << (int(vae["block_out_channels"].size()) - 1);
    return (sampleSize > 0 ? sampleSize : 64) * scale;
}

int nativeImageSize(const Checkpoint& ck) {
    const auto config = [&](const char* name) { return ck.configs.count(name) ? ck.configs.at(name) : nlohmann::json(); };
    return nativeImageSize(config("unet"), config("vae"));
}

Checkpoint loadCheckpoint(const std::string& path, const std::string& variant) {
    const fs::path p(path);
    std::error_code ec;
    if (!fs::exists(p, ec)) throw ModelFileError(path, "no such file or folder");
    if (fs::is_directory(p)) return loadDiffusersFolder(p, variant);
    const std::string ext = lowerExtension(p);
    if (ext == ".ckpt" || ext == ".pt" || ext == ".pth" || ext == ".bin") refusePickle(path);
    if (ext == ".json" && p.filename() == "model_index.json") return loadDiffusersFolder(p.parent_path(), variant);
    if (ext != ".safetensors")
        throw ModelFileError(path, "unsupported file type '" + ext + "': open a diffusers folder or a .safetensors checkpoint");
    return loadSingleFile(path);
}

} // namespace dd::io
