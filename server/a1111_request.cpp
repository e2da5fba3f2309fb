#include "server/a1111_request.h"

#include "core/settings/generation_info_detail.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <mutex>
#include <functional>
#include <map>
#include <random>
#include <set>

namespace dd::server {

using nlohmann::json;

FieldError::FieldError(std::string field, const std::string& message, std::string type)
    : std::invalid_argument(field + ": " + message), m_field(std::move(field)), m_message(message), m_type(std::move(type)) {}

namespace {

// pydantic's coercions that clients rely on: 7.0 for an int field, a number for a float field; null = default.
int64_t integerOf(const json& v, const std::string& key) {
    if (v.is_number_integer() || v.is_number_unsigned()) return v.get<int64_t>();
    if (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>()) &&
        std::abs(v.get<double>()) < 9e15)
        return int64_t(v.get<double>());
    throw FieldError(key, "value is not a valid integer", "type_error.integer");
}
double numberOf(const json& v, const std::string& key) {
    if (v.is_number() && std::isfinite(v.get<double>())) return v.get<double>();
    throw FieldError(key, "value is not a valid float", "type_error.float");
}
std::string textOf(const json& v, const std::string& key) {
    if (v.is_string()) return v.get<std::string>();
    throw FieldError(key, "str type expected", "type_error.str");
}
bool boolOf(const json& v, const std::string& key) {
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_number_integer() && (v == 0 || v == 1)) return v == 1;
    throw FieldError(key, "value could not be parsed to a boolean", "type_error.bool");
}
int inRange(int64_t v, int64_t lo, int64_t hi, const std::string& key) {
    if (v < lo || v > hi)
        throw FieldError(key, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + " (got " + std::to_string(v) + ")");
    return int(v);
}

// A field at this value asks for nothing DiffusionDesk would do differently: what clients send by default.
bool isDefaultLike(const json& v) {
    return v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_number() && v.get<double>() == 0) ||
           (v.is_string() && v.get<std::string>().empty()) || ((v.is_array() || v.is_object()) && v.empty());
}

// Fields A1111 has and DiffusionDesk does not compute. Ignored silently at a value that changes nothing (their
// default-like values, plus those listed), with a warning otherwise.
const std::map<std::string, std::vector<json>>& unbuiltFields() {
    static const std::map<std::string, std::vector<json>> fields{
        {"styles", {}}, {"restore_faces", {}}, {"tiling", {}}, {"do_not_save_samples", {true}},
        {"do_not_save_grid", {true}}, {"eta", {1, 1.0}}, {"s_min_uncond", {}}, {"s_churn", {}}, {"s_tmax", {}},
        {"s_tmin", {}}, {"s_noise", {1, 1.0}}, {"override_settings_restore_afterwards", {true}}, {"script_name", {}},
        {"script_args", {}}, {"alwayson_scripts", {}}, {"firstphase_width", {}}, {"firstphase_height", {}},
        {"hr_checkpoint_name", {"Use same checkpoint"}}, {"hr_sampler_name", {"Use same sampler"}},
        {"hr_scheduler", {"Use same scheduler"}}, {"hr_prompt", {}}, {"hr_negative_prompt", {}},
        {"disable_extra_networks", {}}, {"comments", {}}, {"infotext", {}}, {"image_cfg_scale", {1.5, 1}},
        {"initial_noise_multiplier", {1, 1.0}}, {"include_init_images", {}}, {"latent_mask", {}},
        {"mask_round", {true}}, {"mask_blur_x", {4}}, {"mask_blur_y", {4}},
        {"save_images", {true}},
        // The image is kept in the output folder and the library either way: nothing is lost.
    };
    return fields;
}

std::vector<std::string> ignoreUnbuilt(const json& body, const std::set<std::string>& used) {
    std::vector<std::string> warnings;
    for (const auto& [key, value] : body.items()) {
        if (used.count(key)) continue;
        const auto unbuilt = unbuiltFields().find(key);
        if (unbuilt == unbuiltFields().end()) {
            warnings.push_back(key + ": not an A1111 field DiffusionDesk knows; ignored");
            continue;
        }
        bool harmless = isDefaultLike(value);
        for (const auto& d : unbuilt->second) harmless = harmless || value == d;
        if (!harmless) warnings.push_back(key + ": not supported by DiffusionDesk; ignored (" + value.dump() + ")");
    }
    return warnings;
}

// Reads one field when present and not null; records that it was used.
class Body {
public:
    explicit Body(const json& body) : m_body(body) {
        if (!body.is_object()) throw FieldError("__root__", "the request body must be a JSON object", "type_error.dict");
    }
    bool read(const std::string& key, const std::function<void(const json&)>& apply) {
        m_used.insert(key);
        const auto it = m_body.find(key);
        if (it == m_body.end() || it->is_null()) return false;
        apply(*it);
        return true;
    }
    std::vector<std::string> leftovers() const { return ignoreUnbuilt(m_body, m_used); }
    const json& raw() const { return m_body; }

private:
    const json& m_body;
    std::set<std::string> m_used;
};

int64_t randomSeed() {
    static std::mt19937_64 rng{std::random_device{}()};
    static std::mutex lock;
    std::lock_guard<std::mutex> guard(lock);
    return int64_t(rng() % 4294967294u);  // A1111: random.randrange(4294967294)
}

void readSampler(Body& b, ApiRun& run) {
    std::string sampler = "Euler a", scheduler = "automatic";
    if (!b.read("sampler_name", [&](const json& v) { sampler = textOf(v, "sampler_name"); }))
        b.read("sampler_index", [&](const json& v) { sampler = textOf(v, "sampler_index"); });
    else
        b.read("sampler_index", [](const json&) {});
    b.read("scheduler", [&](const json& v) { scheduler = textOf(v, "scheduler"); });
    settings::GenerationInfo info;
    settings::detail::setSampler(info, sampler, scheduler, scheduler == "automatic" || scheduler == "Automatic", false);
    const auto& known = api::samplerNames();
    if (std::find(known.begin(), known.end(), info.settings.sampler) == known.end()) {
        std::string list;
        for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
        throw FieldError("sampler_name", "sampler '" + sampler + "' is not one DiffusionDesk has (" + list + ")");
    }
    run.settings.sampler = info.settings.sampler;  // A1111's: k-diffusion's sampler over the schedule asked for
    run.settings.scheduleType = info.settings.scheduleType;
    for (const auto& w : info.warnings) run.warnings.push_back("scheduler: " + w);
}

// override_settings: the model and clip skip are per-request settings here; other options are not.
void readOverrides(Body& b, ApiRun& run) {
    b.read("override_settings", [&](const json& o) {
        if (!o.is_object()) throw FieldError("override_settings", "value is not a valid dict", "type_error.dict");
        for (const auto& [key, v] : o.items()) {
            if (key == "sd_model_checkpoint") run.checkpoint = textOf(v, "override_settings.sd_model_checkpoint");
            else if (key == "CLIP_stop_at_last_layers")
                run.clipSkip = inRange(integerOf(v, "override_settings." + key), 1, 12, "override_settings." + key);
            else if (!v.is_null()) run.warnings.push_back("override_settings." + key + ": not an option DiffusionDesk has; ignored");
        }
    });
}

// A1111's variation seed: subseed -1 is a random one, as the seed; a resize of 0 or -1 is none.
void readVariation(Body& b, api::VariationSetting& v) {
    v.seed = -1;
    b.read("subseed", [&](const json& x) { v.seed = integerOf(x, "subseed"); });
    if (v.seed < 0) v.seed = randomSeed();
    if (v.seed > 0xFFFFFFFFll * 1024) throw FieldError("subseed", "is too large");
    b.read("subseed_strength", [&](const json& x) { v.strength = numberOf(x, "subseed_strength"); });
    if (v.strength < 0 || v.strength > 1) throw FieldError("subseed_strength", "must be between 0 and 1");
    const auto side = [&](const char* key, int& field) {
        b.read(key, [&](const json& x) { field = int(std::max<int64_t>(0, inRange(integerOf(x, key), -1, 8192, key))); });
    };
    side("seed_resize_from_w", v.resizeFromWidth);
    side("seed_resize_from_h", v.resizeFromHeight);
    if ((v.resizeFromWidth > 0) != (v.resizeFromHeight > 0)) v.resizeFromWidth = v.resizeFromHeight = 0;  // A1111 needs both
}

// What txt2img and img2img share (StableDiffusionProcessing's fields).
ApiRun readCommon(Body& b) {
    ApiRun run;
    auto& s = run.settings;
    s.steps = 50;  // A1111's API default (its UI's is 20)
    b.read("prompt", [&](const json& v) { s.prompt = textOf(v, "prompt"); });
    b.read("negative_prompt", [&](const json& v) { s.negativePrompt = textOf(v, "negative_prompt"); });
    s.seed = -1;
    b.read("seed", [&](const json& v) { s.seed = integerOf(v, "seed"); });
    if (s.seed < 0) s.seed = randomSeed();
    if (s.seed > 0xFFFFFFFFll * 1024) throw FieldError("seed", "is too large");
    readVariation(b, s.variation);
    b.read("steps", [&](const json& v) { s.steps = inRange(integerOf(v, "steps"), 1, 1000, "steps"); });
    b.read("cfg_scale", [&](const json& v) { s.cfgScale = numberOf(v, "cfg_scale"); });
    if (s.cfgScale < 0 || s.cfgScale > 100) throw FieldError("cfg_scale", "must be between 0 and 100");
    b.read("width", [&](const json& v) { s.width = inRange(integerOf(v, "width"), 8, 8192, "width"); });
    b.read("height", [&](const json& v) { s.height = inRange(integerOf(v, "height"), 8, 8192, "height"); });
    // A1111 floors the latent size: a width of 500 makes a 496-pixel image.
    s.width = s.width / 8 * 8, s.height = s.height / 8 * 8;
    b.read("batch_size", [&](const json& v) { s.batchSize = inRange(integerOf(v, "batch_size"), 1, 64, "batch_size"); });
    b.read("n_iter", [&](const json& v) { run.iterations = inRange(integerOf(v, "n_iter"), 1, 100, "n_iter"); });
    readSampler(b, run);
    readOverrides(b, run);
    b.read("refiner_checkpoint", [&](const json& v) { run.refinerCheckpoint = textOf(v, "refiner_checkpoint"); });
    if (run.refinerCheckpoint == "None") run.refinerCheckpoint.clear();
    b.read("refiner_switch_at", [&](const json& v) { s.refiner.switchAt = numberOf(v, "refiner_switch_at"); });
    b.read("force_task_id", [&](const json& v) { run.taskId = textOf(v, "force_task_id"); });
    if (run.taskId.size() > 128) throw FieldError("force_task_id", "longer than 128 characters");
    b.read("send_images", [&](const json& v) { run.sendImages = boolOf(v, "send_images"); });
    return run;
}

void finish(Body& b, ApiRun& run) {
    for (auto& w : b.leftovers()) run.warnings.push_back(std::move(w));
    try {
        api::GenerationSettings check = run.settings;
        if (check.model.empty()) check.model = "demo:tiny-sd1";  // the model is the server's to choose
        if (check.initImage.empty() && !run.initImages.empty()) check.initImage = "init";
        if (check.inpaint.mask.empty() && !run.mask.empty()) check.inpaint.mask = "mask";  // kept as a file later
        if (check.refiner.enabled() || !run.refinerCheckpoint.empty()) check.refiner.model = "refiner";
        api::validate(check);
    } catch (const std::invalid_argument& e) {
        throw FieldError("__root__", e.what());
    }
}

} // namespace

ApiRun readTxt2Img(const json& body) {
    Body b(body);
    ApiRun run = readCommon(b);
    auto& h = run.settings.hires;
    b.read("enable_hr", [&](const json& v) { h.enabled = boolOf(v, "enable_hr"); });
    b.read("denoising_strength", [&](const json& v) { h.denoising = numberOf(v, "denoising_strength"); });
    b.read("hr_scale", [&](const json& v) { h.scale = numberOf(v, "hr_scale"); });
    b.read("hr_upscaler", [&](const json& v) { h.upscaler = textOf(v, "hr_upscaler"); });
    b.read("hr_second_pass_steps", [&](const json& v) { h.steps = inRange(integerOf(v, "hr_second_pass_steps"), 0, 1000, "hr_second_pass_steps"); });
    b.read("hr_resize_x", [&](const json& v) { h.resizeWidth = inRange(integerOf(v, "hr_resize_x"), 0, 8192, "hr_resize_x"); });
    b.read("hr_resize_y", [&](const json& v) { h.resizeHeight = inRange(integerOf(v, "hr_resize_y"), 0, 8192, "hr_resize_y"); });
    if (!h.enabled) h = api::HiresSetting{};
    // A1111 takes one of the two resize numbers as "keep the aspect ratio"; here both or neither.
    if (h.enabled && (h.resizeWidth > 0) != (h.resizeHeight > 0)) {
        const double aspect = double(run.settings.width) / run.settings.height;
        if (h.resizeWidth == 0) h.resizeWidth = int(h.resizeHeight * aspect);
        else h.resizeHeight = int(h.resizeWidth / aspect);
    }
    finish(b, run);
    return run;
}

ApiRun readImg2Img(const json& body) {
    Body b(body);
    ApiRun run = readCommon(b);
    auto& s = run.settings;
    b.read("init_images", [&](const json& v) {
        if (!v.is_array()) throw FieldError("init_images", "value is not a valid list", "type_error.list");
        for (const auto& i : v) run.initImages.push_back(textOf(i, "init_images"));
    });
    if (run.initImages.empty()) throw FieldError("init_images", "img2img needs at least one init image", "value_error.missing");
    if (run.initImages.size() > 1) run.warnings.push_back("init_images: only the first of " + std::to_string(run.initImages.size()) + " is used");
    b.read("denoising_strength", [&](const json& v) { s.strength = numberOf(v, "denoising_strength"); });
    b.read("resize_mode", [&](const json& v) { run.resizeMode = inRange(integerOf(v, "resize_mode"), 0, 3, "resize_mode"); });
    b.read("mask", [&](const json& v) { run.mask = textOf(v, "mask"); });
    b.read("mask_blur", [&](const json& v) { s.inpaint.maskBlur = inRange(integerOf(v, "mask_blur"), 0, 64, "mask_blur"); });
    b.read("inpainting_mask_invert", [&](const json& v) { s.inpaint.invertMask = inRange(integerOf(v, "inpainting_mask_invert"), 0, 1, "inpainting_mask_invert") == 1; });
    b.read("inpainting_fill", [&](const json& v) {
        static const char* contents[] = {"fill", "original", "latent noise", "latent nothing"};
        s.inpaint.maskedContent = contents[inRange(integerOf(v, "inpainting_fill"), 0, 3, "inpainting_fill")];
    });
    b.read("inpaint_full_res", [&](const json& v) { s.inpaint.onlyMasked = boolOf(v, "inpaint_full_res"); });
    b.read("inpaint_full_res_padding", [&](const json& v) {
        s.inpaint.maskedPadding = inRange(integerOf(v, "inpaint_full_res_padding"), 0, 256, "inpaint_full_res_padding");
    });
    if (run.mask.empty()) {
        s.inpaint.onlyMasked = false;  // webuiapi sends these with every img2img; without a mask they mean nothing
        s.inpaint.maskedContent = "original";
    }
    finish(b, run);
    return run;
}

const std::vector<ApiScheduler>& apiSchedulers() {
    static const std::vector<ApiScheduler> list = [] {
        std::vector<ApiScheduler> out;
        for (const auto& label : api::scheduleTypes()) {  // A1111's names: "SGM Uniform" → "sgm_uniform"
            std::string name;
            for (char c : label) name += c == ' ' ? '_' : char(std::tolower(static_cast<unsigned char>(c)));
            out.push_back({name, label});
        }
        return out;
    }();
    return list;
}

} // namespace dd::server
