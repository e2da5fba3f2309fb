// Single-file checkpoint loader: family detection and assembly of the components.
// Ref: diffusers loaders/single_file_utils.py (infer_diffusers_model_type, CHECKPOINT_KEY_NAMES,
// SCHEDULER_DEFAULT_CONFIG); stable-diffusion.cpp src/model_loader.cpp (get_sd_version). Detection here
// goes by which encoders are present rather than by one fixed key such as resblocks.9, so that diffusers'
// tiny test models (5 text layers) are recognised as well.
#include "core/io/single_file.h"

#include "core/io/model_error.h"
#include "core/io/single_file_parts.h"

#include <algorithm>

namespace dd::io {
namespace sf {

KeyView::KeyView(const SafetensorsFile& file) : m_file(file) {
    for (const auto& t : file.tensors()) m_sorted.push_back(t.name);
    std::sort(m_sorted.begin(), m_sorted.end());
}

bool KeyView::hasPrefix(std::string_view prefix) const {
    auto it = std::lower_bound(m_sorted.begin(), m_sorted.end(), prefix);
    return it != m_sorted.end() && it->starts_with(prefix);
}

std::vector<std::string> KeyView::withPrefix(std::string_view prefix) const {
    std::vector<std::string> out;
    for (auto it = std::lower_bound(m_sorted.begin(), m_sorted.end(), prefix);
         it != m_sorted.end() && it->starts_with(prefix); ++it)
        out.push_back(*it);
    return out;
}

const std::vector<int64_t>& KeyView::shape(const std::string& name) const {
    const TensorInfo* t = m_file.header().find(name);
    if (!t) fail(*this, "expected tensor '" + name + "' is missing");
    return t->shape;
}

int64_t KeyView::dim(const std::string& name, int index) const {
    const auto& s = shape(name);
    const int rank = int(s.size());
    const int i = index < 0 ? rank + index : index;
    if (i < 0 || i >= rank)
        fail(*this, "tensor '" + name + "' has rank " + std::to_string(rank) + ", expected more dimensions");
    return s[size_t(i)];
}

int KeyView::countIndexed(std::string_view prefix) const {
    int count = 0;
    for (const auto& name : withPrefix(prefix)) {
        const auto rest = std::string_view(name).substr(prefix.size());
        if (auto n = parseIndex(rest.substr(0, rest.find('.'))); n && rest.find('.') != std::string_view::npos)
            count = std::max(count, *n + 1);
    }
    return count;
}

std::vector<std::string_view> splitDots(std::string_view s) {
    std::vector<std::string_view> parts;
    size_t start = 0;
    for (size_t dot; (dot = s.find('.', start)) != std::string_view::npos; start = dot + 1)
        parts.push_back(s.substr(start, dot - start));
    parts.push_back(s.substr(start));
    return parts;
}

std::string joinDots(const std::vector<std::string_view>& parts, size_t from) {
    std::string out;
    for (size_t i = from; i < parts.size(); ++i) {
        if (i > from) out += '.';
        out += parts[i];
    }
    return out;
}

std::optional<int> parseIndex(std::string_view s) {
    if (s.empty() || s.size() > 6) return std::nullopt;
    int value = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + (c - '0');
    }
    return value;
}

std::optional<std::string> renameHead(std::string_view rest,
                                      const std::vector<std::pair<std::string_view, std::string_view>>& table) {
    for (const auto& [from, to] : table)
        if (rest.starts_with(from) && rest.size() > from.size() && rest[from.size()] == '.')
            return std::string(to) + std::string(rest.substr(from.size()));
    return std::nullopt;
}

void fail(const KeyView& keys, const std::string& problem) { throw ModelFileError(keys.path(), problem); }

} // namespace sf

namespace {

using sf::KeyView;

// "foo.bar.baz" → "foo.*" ("model.diffusion_model.x" → "model.diffusion_model.*"): what a person recognises.
std::string summarize(const SafetensorsFile& file) {
    std::map<std::string, int> counts;
    for (const auto& t : file.tensors()) {
        const auto parts = sf::splitDots(t.name);
        std::string head(parts[0]);
        if (parts.size() > 2 && (head == "model" || head == "conditioner" || head == "cond_stage_model"))
            head += "." + std::string(parts[1]);
        ++counts[parts.size() > 1 ? head + ".*" : head];
    }
    std::vector<std::pair<int, std::string>> byCount;
    for (const auto& [prefix, n] : counts) byCount.emplace_back(-n, prefix);
    std::sort(byCount.begin(), byCount.end());
    std::string out = std::to_string(file.tensors().size()) + " tensors";
    for (size_t i = 0; i < byCount.size() && i < 8; ++i)
        out += (i ? ", " : ": ") + byCount[i].second + " (" + std::to_string(-byCount[i].first) + ")";
    if (byCount.size() > 8) out += ", and " + std::to_string(byCount.size() - 8) + " more prefixes";
    return out;
}

ModelFamily familyFromUnetOnly(const KeyView& keys, std::vector<std::string>& notes) {
    const std::string p(sf::kUnetPrefix);
    ModelFamily family = ModelFamily::SD1;
    if (keys.hasPrefix(p + "label_emb."))
        family = ModelFamily::SDXL;
    else if (keys.has(p + "input_blocks.2.1.transformer_blocks.0.attn2.to_k.weight") &&
             keys.dim(p + "input_blocks.2.1.transformer_blocks.0.attn2.to_k.weight", -1) == 1024)
        family = ModelFamily::SD2;  // diffusers' rule: 1024-wide cross-attention context (OpenCLIP ViT-H)
    notes.push_back("the file holds no text encoder; family " + std::string(familyName(family)) +
                    " guessed from the UNet alone");
    return family;
}

ModelFamily detectFamily(const KeyView& keys, std::vector<std::string>& notes) {
    if (!keys.hasPrefix(sf::kUnetPrefix))
        sf::fail(keys, "not a Stable Diffusion 1.x/2.x/XL single-file checkpoint: no UNet tensors under '" +
                           std::string(sf::kUnetPrefix) + "'; found " + summarize(keys.file()));
    if (keys.hasPrefix("conditioner.embedders.1.model.")) return ModelFamily::SDXL;
    if (keys.hasPrefix("conditioner.embedders.0.model.")) return ModelFamily::SDXLRefiner;
    if (keys.hasPrefix("cond_stage_model.model.")) return ModelFamily::SD2;
    if (keys.hasPrefix("cond_stage_model.transformer.")) return ModelFamily::SD1;
    return familyFromUnetOnly(keys, notes);
}

// diffusers' from_single_file takes the scheduler from the Hub repository it names for the checkpoint's model
// type (single_file_utils DIFFUSERS_DEFAULT_PIPELINE_PATHS), key for key as that scheduler_config.json has it.
// A key the file leaves out stays out: each sampler then keeps its own default (SD 1.5 and SD 2.1 predate
// timestep_spacing, so Euler steps "linspace" and DDIM "leading" on them). docs/single-file.md.
nlohmann::json schedulerConfig(ModelFamily family, std::vector<std::string>& notes) {
    nlohmann::json c = {{"beta_start", 0.00085}, {"beta_end", 0.012}, {"beta_schedule", "scaled_linear"},
                        {"num_train_timesteps", 1000}, {"steps_offset", 1}, {"set_alpha_to_one", false},
                        {"skip_prk_steps", true}, {"clip_sample", false}, {"trained_betas", nullptr}};
    switch (family) {
    case ModelFamily::SD1:  // stable-diffusion-v1-5/stable-diffusion-v1-5
        c["_class_name"] = "PNDMScheduler";
        break;
    case ModelFamily::SD2:  // stabilityai/stable-diffusion-2-1
        c["_class_name"] = "DDIMScheduler";
        c["prediction_type"] = "v_prediction";
        notes.push_back("scheduler: prediction type v_prediction, as diffusers gives SD 2.x single files (SD 2.1 "
                        "768-v); SD 2.x base models (512) predict epsilon, which the weights cannot tell: set "
                        "the prediction type to epsilon for them");
        break;
    default:  // stabilityai/stable-diffusion-xl-base-1.0 (the refiner repository's file is the same)
        c["_class_name"] = "EulerDiscreteScheduler";
        c["interpolation_type"] = "linear";
        c["prediction_type"] = "epsilon";
        c["sample_max_value"] = 1.0;
        c["timestep_spacing"] = "leading";
        c["use_karras_sigmas"] = false;
    }
    return c;
}

nlohmann::json modelIndex(ModelFamily family) {
    switch (family) {
    case ModelFamily::SDXL:
        return {{"_class_name", "StableDiffusionXLPipeline"}, {"force_zeros_for_empty_prompt", true}};
    case ModelFamily::SDXLRefiner:
        return {{"_class_name", "StableDiffusionXLImg2ImgPipeline"},
                {"force_zeros_for_empty_prompt", false},
                {"requires_aesthetics_score", true}};
    default: return {{"_class_name", "StableDiffusionPipeline"}};
    }
}

void addComponent(Checkpoint& ckpt, const std::string& name, sf::Component c) {
    for (auto& n : c.notes) ckpt.notes.push_back(name + ": " + n);
    if (!c.unmapped.empty()) {
        std::string list;
        for (size_t i = 0; i < c.unmapped.size() && i < 3; ++i) list += (i ? ", " : "") + c.unmapped[i];
        ckpt.notes.push_back(name + ": ignored " + std::to_string(c.unmapped.size()) +
                             " tensors with unknown names (" + list + (c.unmapped.size() > 3 ? ", …)" : ")"));
    }
    ckpt.components[name] = std::move(c.tensors);
    ckpt.configs[name] = std::move(c.config);
}

void loadTextEncoders(const KeyView& keys, Checkpoint& ckpt) {
    const std::string sdxlL = "conditioner.embedders.0.transformer.";
    switch (ckpt.family) {
    case ModelFamily::SD1:
        if (keys.hasPrefix("cond_stage_model.transformer."))
            addComponent(ckpt, "text_encoder", sf::convertHfClip(keys, "cond_stage_model.transformer."));
        break;
    case ModelFamily::SD2:
        if (keys.hasPrefix("cond_stage_model.model."))
            addComponent(ckpt, "text_encoder", sf::convertOpenClip(keys, "cond_stage_model.model.", true));
        break;
    case ModelFamily::SDXL:
        if (keys.hasPrefix(sdxlL)) addComponent(ckpt, "text_encoder", sf::convertHfClip(keys, sdxlL));
        addComponent(ckpt, "text_encoder_2", sf::convertOpenClip(keys, "conditioner.embedders.1.model.", false));
        break;
    case ModelFamily::SDXLRefiner:
        addComponent(ckpt, "text_encoder_2", sf::convertOpenClip(keys, "conditioner.embedders.0.model.", false));
        break;
    }
}

void applyOverrides(Checkpoint& ckpt, const SingleFileOptions& options) {
    for (const auto& [name, patch] : options.configOverrides) {
        auto it = ckpt.configs.find(name);
        if (it == ckpt.configs.end() || !patch.is_object()) {
            ckpt.notes.push_back("override for '" + name + "' ignored: no such component or not a JSON object");
            continue;
        }
        it->second.merge_patch(patch);
        std::string fields;
        for (const auto& [key, value] : patch.items()) fields += (fields.empty() ? "" : ", ") + key;
        ckpt.notes.push_back(name + ": " + fields + " set by the caller");
    }
}

} // namespace

Checkpoint loadSingleFile(const std::string& path, const SingleFileOptions& options) {
    const auto file = SafetensorsFile::open(path);
    const KeyView keys(*file);
    Checkpoint ckpt;
    ckpt.path = path;
    ckpt.format = CheckpointFormat::SingleFile;
    ckpt.family = detectFamily(keys, ckpt.notes);

    loadTextEncoders(keys, ckpt);
    std::optional<int64_t> pooledDim;
    if (auto it = ckpt.configs.find("text_encoder_2"); it != ckpt.configs.end())
        pooledDim = it->second.value("projection_dim", int64_t(0));
    addComponent(ckpt, "unet", sf::convertUnet(keys, ckpt.family, pooledDim));
    if (auto vae = sf::convertVae(keys, ckpt.family))
        addComponent(ckpt, "vae", std::move(*vae));
    else
        ckpt.notes.push_back("the file holds no VAE (no 'first_stage_model.' or 'vae.' tensors)");
    ckpt.configs["scheduler"] = schedulerConfig(ckpt.family, ckpt.notes);
    ckpt.configs["model_index"] = modelIndex(ckpt.family);
    applyOverrides(ckpt, options);
    return ckpt;
}

} // namespace dd::io
