#include "core/io/controlnet_file.h"

#include "core/io/model_error.h"
#include "core/io/model_hash.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace dd::io {
namespace fs = std::filesystem;
namespace {

nlohmann::json readConfig(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw ModelFileError(p.string(), "cannot open");
    std::ostringstream text;
    text << in.rdbuf();
    try {
        return nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::exception& e) {
        throw ModelFileError(p.string(), std::string("not valid JSON: ") + e.what());
    }
}

TensorMap readWeights(const fs::path& file) {
    if (file.string().ends_with(".index.json")) {
        std::ifstream in(file, std::ios::binary);
        nlohmann::json index;
        try {
            index = nlohmann::json::parse(in);
        } catch (const nlohmann::json::exception& e) {
            throw ModelFileError(file.string(), std::string("not valid JSON: ") + e.what());
        }
        TensorMap out;
        std::map<std::string, std::shared_ptr<SafetensorsFile>> shards;
        for (const auto& [tensor, shard] : index.at("weight_map").items()) {
            const auto name = shard.get<std::string>();
            if (name.find('/') != std::string::npos || name.find("..") != std::string::npos)
                throw ModelFileError(file.string(), "shard '" + name + "' is not a file in this folder");
            auto& f = shards[name];
            if (!f) f = SafetensorsFile::open((file.parent_path() / name).string());
            out.emplace(tensor, f->tensor(tensor));
        }
        return out;
    }
    return SafetensorsFile::open(file.string())->all();
}

} // namespace

ControlNetFile openControlNet(const std::string& path) {
    ControlNetFile cn;
    cn.path = path;
    std::error_code ec;
    fs::path weights;
    fs::path dir;
    if (fs::is_directory(path, ec)) {
        dir = path;
        for (const char* name : {"diffusion_pytorch_model.safetensors", "diffusion_pytorch_model.fp16.safetensors",
                                 "diffusion_pytorch_model.safetensors.index.json",
                                 "diffusion_pytorch_model.fp16.safetensors.index.json"})
            if (fs::exists(dir / name, ec)) {
                weights = dir / name;
                break;
            }
        if (weights.empty()) {
            for (const char* pickle : {"diffusion_pytorch_model.bin", "diffusion_pytorch_model.fp16.bin"})
                if (fs::exists(dir / pickle, ec))
                    throw ModelFileError(path, "this ControlNet is a pickle file (diffusion_pytorch_model.bin); DiffusionDesk "
                                               "never unpickles files. Convert it to .safetensors in a trusted environment");
            throw ModelFileError(path, "no diffusion_pytorch_model.safetensors in this ControlNet folder");
        }
    } else if (fs::is_regular_file(path, ec)) {
        const auto ext = fs::path(path).extension().string();
        if (ext == ".pth" || ext == ".ckpt" || ext == ".pt" || ext == ".bin")
            throw ModelFileError(path, "this ControlNet is a pickle file; DiffusionDesk never unpickles files (loading a "
                                       "pickle can run code hidden in it). Use the .safetensors release or convert it in "
                                       "a trusted environment");
        weights = path;
        dir = weights.parent_path();
        if (dir.empty()) dir = ".";
    } else {
        throw ModelFileError(path, "no such ControlNet file or folder");
    }
    if (!fs::exists(dir / "config.json", ec)) {
        // No config: an original sd-webui-controlnet file carries its architecture in its tensor shapes.
        if (weights.extension() == ".safetensors")
            if (auto converted = convertLdmControlNet(weights.string())) {
                converted->path = path;
                return std::move(*converted);
            }
        throw ModelFileError(path, "no config.json beside the ControlNet weights, and not an original (LDM) ControlNet file");
    }
    cn.config = readConfig(dir / "config.json");
    const auto cls = cn.config.value("_class_name", std::string("ControlNetModel"));
    if (cls != "ControlNetModel")
        throw ModelFileError(path, "config.json describes a " + cls + ", not a ControlNetModel");
    cn.weightsPath = weights.string();
    cn.weights = readWeights(weights);
    return cn;
}

std::string controlNetHash(const std::string& weightsPath) {
    if (weightsPath.ends_with(".index.json")) return {};  // several files: no single hash
    return hashModelFile(weightsPath).sha256.substr(0, 8);
}

} // namespace dd::io
