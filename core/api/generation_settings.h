#pragma once
// The one value that describes a generation. The GUI, the CLI, sidecars and presets all go through this
// struct and its JSON functions, so a field added here appears everywhere.
#include "core/api/control_setting.h"
#include "core/api/memory_plan.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace dd::api {

// One LoRA of a run (docs/lora.md). Weights as A1111's <lora:name:te:unet>.
struct LoraSetting {
    std::string name;               // file name without .safetensors in a LoRA folder, or a path to the file
    double unetWeight = 1.0;
    double textEncoderWeight = 1.0;
    std::string hash{};             // A1111 "Lora hashes" short hash; filled in by the engine
    bool fromPrompt = false;        // came from a <lora:…> tag: reruns take it from the prompt again
    bool operator==(const LoraSetting&) const = default;
};

// A textual-inversion embedding a run's prompts named (A1111 "TI hashes"). The prompt decides which are used: the
// engine fills the list in; a restored list is what the image was made with, and a rerun warns when an embedding is
// missing or is another file.
struct EmbeddingSetting {
    std::string name;  // the file name without .safetensors, as the prompt writes it
    std::string hash;  // A1111's: the first 12 hex of the file's SHA-256
    bool operator==(const EmbeddingSetting&) const = default;
};

// The SDXL refiner pass (docs/refiner.md): the base denoises up to `switchAt` of the schedule and hands its
// latents, without new noise, to the refiner, which runs the rest of the same schedule (diffusers'
// denoising_end / denoising_start; A1111's "Refiner switch at").
struct RefinerSetting {
    std::string model;                    // diffusers folder or single file; "" = no refiner
    double switchAt = 0.8;                // fraction of the schedule the base runs, in (0, 1)
    double aestheticScore = 6.0;          // the refiner's time ids carry these instead of the target size
    double negativeAestheticScore = 2.5;
    std::string hash;                     // A1111 short hash of the refiner file; filled in by the engine
    bool enabled() const { return !model.empty(); }
    bool operator==(const RefinerSetting&) const = default;
};

// Inpainting (docs/inpainting.md): the init image is repainted where the mask is white. The imaging layer reads
// the mask file and prepares it as A1111 does (invert, "Mask blur"); the engine then computes diffusers'
// StableDiffusionInpaintPipeline, for 4-channel checkpoints (latents blended at every step) and 9-channel
// inpainting UNets (mask and masked image as extra input channels), and pastes the result over the init image
// through the prepared mask.
struct InpaintSetting {
    std::string mask;                        // mask image file, white = repaint; "" = no inpainting
    int maskBlur = 4;                        // A1111 "Mask blur": the Gaussian's sigma in pixels (0 = hard edge)
    bool invertMask = false;                 // A1111 "Mask mode: Inpaint not masked"
    std::string maskedContent = "original";  // A1111 "Masked content": "original", "fill", "latent noise", "latent nothing"
    std::string maskHash;                    // SHA-256 of the mask file; filled in when it is read
    // A1111 "Inpaint area: Only masked" (diffusers' padding_mask_crop): the run works at width × height on the
    // mask's box grown by `maskedPadding` pixels, and the picture keeps the init image's size.
    bool onlyMasked = false;
    int maskedPadding = 32;                  // A1111 "Masked area padding"
    bool enabled() const { return !mask.empty(); }
    bool operator==(const InpaintSetting&) const = default;
};

// Outpainting (docs/inpainting.md): the init image extended by these many pixels on each side, the new area
// pre-filled and inpainted through a mask that reaches `overlap` pixels into the picture, feathered by the
// inpainting's mask blur. width × height is the extended size.
struct OutpaintSetting {
    int left = 0, top = 0, right = 0, bottom = 0;
    std::string fill = "mirror";  // "mirror" (reflected at the border), "edge" (stretched), "blur" (edge, blurred), "noise"
    int overlap = 8;
    bool enabled() const { return left > 0 || top > 0 || right > 0 || bottom > 0; }
    bool operator==(const OutpaintSetting&) const = default;
};

// A1111's hires fix (docs/hires.md): the image is made at width × height, enlarged by `scale` (or to
// resizeWidth × resizeHeight) — its latents by one of A1111's latent upscalers, or its pixels by an upscaler network
// — and a second pass denoises it again as img2img at `denoising` strength over `steps` steps (0: the run's own).
struct HiresSetting {
    bool enabled = false;
    double scale = 2.0;                 // A1111 "Hires upscale"
    int resizeWidth = 0;                // A1111 "Hires resize" (both set: this size instead of the scale)
    int resizeHeight = 0;
    int steps = 0;                      // A1111 "Hires steps"
    double denoising = 0.7;             // A1111 "Denoising strength" of a txt2img with hires fix
    std::string upscaler = "Latent";    // A1111 "Hires upscaler": one of hiresUpscalers(), or a network's name / file
    std::string upscalerHash;           // the network's A1111 short hash, recorded by the run ("" for latent ones)
    bool operator==(const HiresSetting&) const = default;
};

// A1111's variation seeds (docs/explore.md): the starting noise blended by spherical interpolation with the noise
// of another seed, `strength` of the way (0: off), and/or drawn at another size (`resizeFrom`, A1111's "Seed resize
// from") and placed in the middle, so a picture made at one size keeps its composition at another. With a strength,
// every image of a batch keeps the seed and image i uses variation seed + i: a batch is neighbours of one picture.
struct VariationSetting {
    int64_t seed = 0;          // A1111 "Variation seed"
    double strength = 0.0;     // A1111 "Variation seed strength"
    int resizeFromWidth = 0;   // A1111 "Seed resize from" (both set, or neither)
    int resizeFromHeight = 0;
    bool blends() const { return strength > 0; }
    bool resizes() const { return resizeFromWidth > 0 && resizeFromHeight > 0; }
    bool enabled() const { return blends() || resizes(); }
    bool operator==(const VariationSetting&) const = default;
};

struct GenerationSettings {
    std::string model;             // diffusers folder, single-file .safetensors, or "demo:tiny-sd1"
    std::string prompt;
    std::string negativePrompt;
    // The prompts as written when they held wildcards ("__name__", settings/wildcards.h); prompt is the picked one.
    std::string promptTemplate;
    std::string negativeTemplate;
    std::vector<std::string> styles;  // the prompt styles applied to the prompts (settings/styles.h), by name
    int64_t seed = 0;              // image i of a batch uses seed + i (A1111 convention; imageSeeds)
    int steps = 20;
    double cfgScale = 7.0;
    double guidanceRescale = 0.0;
    std::string sampler = "Euler a";
    // A1111 "Schedule type" label ("Karras", "Exponential", "SGM Uniform"...) when the sampler name does not
    // carry it; "" = the sampler's own default. "DPM++ 2M Karras" is written as sampler, not as sampler + this.
    std::string scheduleType;
    // Whose k-diffusion: "A1111" (fractional timesteps, noise per image) or "ComfyUI" (the UNet at whole timesteps,
    // the starting noise scaled by √(1 + σ²), one noise stream over the batch; restored from ComfyUI's graphs).
    std::string sampleAs = "A1111";
    // Set over the model's scheduler configuration for every sampler, as diffusers' from_config(config, key=…):
    // "" keeps the model's value, or the sampler's own default where the model has none (docs/single-file.md).
    std::string predictionType;    // "epsilon" | "v_prediction": SD 2.x base single files need "epsilon"
    std::string timestepSpacing;   // "linspace" | "leading" | "trailing"
    int width = 512;
    int height = 512;
    int batchSize = 1;
    int clipSkip = 1;              // A1111 numbering: 1 = last layer, 2 = penultimate
    // How clip skip N reaches SDXL's two text encoders, which tools read differently: "diffusers" (hidden state
    // −(N+1), diffusers' clip_skip = N−1), "A1111" (not at all: −2, its "Clip skip SDXL" off), "ComfyUI" (−N, its
    // CLIPSetLastLayer). Restored with the image's tool; SD 1.x and 2.x read N the same everywhere.
    std::string sdxlClipSkip = "diffusers";
    // "a1111": (x:1.2) weights, BREAK, prompts past 75 tokens in 77-token chunks; "reference": diffusers,
    // plain text cut at 75 tokens (what the parity tests compare against).
    std::string promptSyntax = "a1111";
    std::string emphasis = "Original";  // A1111 "Emphasis": "Original", "No norm", "Ignore", "None"
    // A1111 "Pad conds": a prompt and a negative of different lengths (in 77-token chunks) are padded with empty
    // chunks and run in one UNet batch; false, A1111's default (and what ComfyUI's tiling amounts to), runs each
    // side at its own length. Settings JSON without the key pads: it was written before the choice, when all did.
    bool padConds = false;
    std::string initImage;         // img2img source (empty: txt2img)
    double strength = 0.75;        // img2img denoising strength
    std::string initImageHash;     // SHA-256 of the init image file; filled in when it is read
    InpaintSetting inpaint;        // needs initImage
    HiresSetting hires;            // txt2img only
    OutpaintSetting outpaint;      // needs initImage; no inpaint.mask (its mask is made from the extension)
    VariationSetting variation;
    // Where the noise comes from (docs/reproduce.md): "CPU", torch's CPU generator (A1111's and diffusers' CPU noise),
    // or "NV", A1111's Philox on the CPU: the numbers NVIDIA cards draw (A1111's NV, and within 1e-6 its GPU).
    std::string rng = "CPU";
    // A1111's Eta noise seed delta ("ENSD"): after the starting noise, image i's later noise (ancestral and SDE
    // samplers) comes from a fresh stream of its seed + this. 0: the same stream goes on.
    int64_t ensd = 0;
    std::string preset;            // the memory preset the plan came from ("8gb", a custom name, "" = none)
    MemoryPlan plan;               // precision, attention, VAE slicing/tiling, offload (memory_plan.h)
    // Determinism mode: deterministic algorithms, no cuDNN benchmark, no TF32, deterministic attention,
    // fixed thread count, so a rerun is bit-identical on the same machine.
    bool deterministic = false;
    // LoRAs besides the prompt's <lora:…> tags; a result's settings list every LoRA applied, tags included.
    std::vector<LoraSetting> loras;
    std::string loraMode = "merge";  // "merge": into the weights; "side": added beside them (weights untouched)
    std::vector<EmbeddingSetting> embeddings;  // textual inversions the prompts used (filled in by the engine)
    RefinerSetting refiner;
    // ControlNets, applied together (their residuals summed), each with its weight and step range.
    std::vector<ControlNetSetting> controlnets;
};

void to_json(nlohmann::json& j, const LoraSetting& l);
void from_json(const nlohmann::json& j, LoraSetting& l);
void to_json(nlohmann::json& j, const EmbeddingSetting& e);
void from_json(const nlohmann::json& j, EmbeddingSetting& e);
void to_json(nlohmann::json& j, const RefinerSetting& r);
void from_json(const nlohmann::json& j, RefinerSetting& r);
void to_json(nlohmann::json& j, const InpaintSetting& p);
void from_json(const nlohmann::json& j, InpaintSetting& p);
void to_json(nlohmann::json& j, const OutpaintSetting& o);
void from_json(const nlohmann::json& j, OutpaintSetting& o);
void to_json(nlohmann::json& j, const HiresSetting& h);
void from_json(const nlohmann::json& j, HiresSetting& h);
void to_json(nlohmann::json& j, const VariationSetting& v);
void from_json(const nlohmann::json& j, VariationSetting& v);
void to_json(nlohmann::json& j, const GenerationSettings& s);
// Missing fields keep their defaults; wrong types throw nlohmann::json::exception.
void from_json(const nlohmann::json& j, GenerationSettings& s);

// Image i of a batch (or of a run's batches, counted on): its seed and variation seed. A1111's convention: seed + i,
// or, while the variation blends, the seed for all and variation seed + i.
struct ImageSeeds {
    int64_t seed = 0, variationSeed = 0;
};
ImageSeeds imageSeeds(const GenerationSettings& s, int64_t i);
// The settings that make image i first: the job after `i` images of a batch count, or image i of a batch alone.
GenerationSettings fromImage(GenerationSettings s, int64_t i);

// Throws std::invalid_argument with a message a person can act on (size not a multiple of 8, steps < 1...).
void validate(const GenerationSettings& s);

// The scheduler keys the settings set over the model's configuration (predictionType, timestepSpacing, and
// sampleAs as "sample_as", which only the k-diffusion samplers read).
nlohmann::json schedulerOverrides(const GenerationSettings& s);
// The values those two settings take besides "" (the model's own).
bool isPredictionType(const std::string& v);
bool isTimestepSpacing(const std::string& v);
// A1111's "Emphasis" modes: "Original" (its default), "No norm", "Ignore", "None".
const std::vector<std::string>& emphasisModes();
bool isEmphasis(const std::string& v);
// How clip skip reaches SDXL's encoders (GenerationSettings::sdxlClipSkip): "diffusers" (the default), "A1111",
// "ComfyUI".
const std::vector<std::string>& sdxlClipSkipModes();
// Whose k-diffusion (GenerationSettings::sampleAs): "A1111" (the default), "ComfyUI".
const std::vector<std::string>& sampleAsTools();
// A1111's latent upscalers, spelled as its UI does: "Latent" (bilinear), "Latent (antialiased)", "Latent (bicubic)",
// "Latent (bicubic antialiased)", "Latent (nearest)", "Latent (nearest-exact)".
const std::vector<std::string>& hiresUpscalers();
// One of those; any other name but resizeUpscalers()' is an upscaler network's (pipeline/model_search.h finds its file).
bool isLatentUpscaler(const std::string& name);
// A1111's built-in pixel upscalers, which resize without a network: "None" (Lanczos straight to the size),
// "Lanczos", "Nearest" (docs/hires.md).
const std::vector<std::string>& resizeUpscalers();
bool isResizeUpscaler(const std::string& name);
// Neither: an upscaler network, found by name in the upscaler folders.
bool isUpscalerNetwork(const std::string& name);
// The second pass's size: width × height times the scale, or the resize size, floored to a multiple of 8.
struct Size {
    int width = 0, height = 0;
};
Size hiresSize(const GenerationSettings& s);
// The size an outpainting of an image_width × image_height picture runs at; grows o.right and o.bottom so that it
// is a multiple of 8.
Size fitOutpaint(OutpaintSetting& o, int imageWidth, int imageHeight);
// The outpainting pre-fills: "edge", "mirror", "blur", "noise".
bool isOutpaintFill(const std::string& v);
// A1111's "Masked content" values: "fill" pre-fills the pixels (pipeline/masked_fill.h), the others act on latents.
bool isMaskedContent(const std::string& v);

// The samplers DiffusionDesk runs, spelled as A1111's UI does ("Euler a", "DPM++ 2M Karras"...): the one list
// the window, the CLI, the A1111 reader and the scheduler factory (core/sched/factory.cpp) all use.
const std::vector<std::string>& samplerNames();
// Two implementations stand behind those names. With no schedule type, a sampler diffusers has runs as diffusers
// runs it (the parity the engine is verified by). With a schedule type ("Automatic", "Karras"…), or for the
// samplers only k-diffusion has (DPM2, DPM2 a, DPM++ 2S a, DPM++ SDE, DPM++ 2M SDE Heun, DPM++ 3M SDE), it runs
// as A1111 and ComfyUI run it: k-diffusion's sampler over A1111's schedule, or A1111's own DDIM and PLMS
// (docs/reproduce.md).
const std::vector<std::string>& diffusersSamplers();
const std::vector<std::string>& kDiffusionSamplers();
bool isKDiffusionSampler(const std::string& sampler);
bool runsKDiffusion(const GenerationSettings& s);
// A1111's DDIM and PLMS are not k-diffusion's: they are CompVis's samplers at whole timesteps over A1111's own grid.
// With a schedule type (only "Automatic": they keep that grid) they run as A1111 runs them; without, as diffusers.
const std::vector<std::string>& a1111TimestepSamplers();
bool runsA1111Timesteps(const GenerationSettings& s);
// Whether a schedule type applies to `sampler`: one of either A1111 family.
bool takesScheduleType(const std::string& sampler);
// A1111's schedule types, "Automatic" first (the sampler's own: automaticSchedule).
const std::vector<std::string>& scheduleTypes();
bool isScheduleType(const std::string& v);
// What A1111 1.10 takes for "Automatic": Karras for DPM++ 2M, DPM++ SDE, DPM++ 2S a, DPM2 and DPM2 a,
// Exponential for the DPM++ 2M SDE and 3M SDE family, Uniform for the rest.
std::string automaticSchedule(const std::string& sampler);

} // namespace dd::api
