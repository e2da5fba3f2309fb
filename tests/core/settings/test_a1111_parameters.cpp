// A1111 "parameters" text: real-world shapes (A1111's own docstring example, 1.9+ "Schedule type", old
// combined sampler names, Hires / ADetailer / Lora hashes extras), malformed values, and settings round trips.
#include "core/settings/a1111_parameters.h"
#include "core/settings/generation_info_detail.h"

#include <QtTest>
#include <nlohmann/json.hpp>

#include <algorithm>

using namespace dd::settings;
namespace api = dd::api;

namespace {

std::string unknownValue(const GenerationInfo& info, const std::string& key) {
    for (const auto& [k, v] : info.unknown)
        if (k == key) return v;
    return "<missing>";
}

using Extra = std::vector<std::pair<std::string, std::string>>;

A1111WriteOptions options(std::string model, std::string hash = {}, std::string version = {}, int batchIndex = 0, Extra extra = {}) {
    A1111WriteOptions o;
    o.modelName = std::move(model);
    o.modelHash = std::move(hash);
    o.version = std::move(version);
    o.batchIndex = batchIndex;
    o.extra = std::move(extra);
    return o;
}

bool anyWarningContains(const GenerationInfo& info, const std::string& part) {
    return std::any_of(info.warnings.begin(), info.warnings.end(), [&](const std::string& w) { return w.find(part) != std::string::npos; });
}

struct Case {
    const char* name;
    const char* text;
    const char* prompt;
    const char* negative;
    int steps;
    const char* sampler;
    const char* schedule;
    double cfg;
    int64_t seed;
    int width, height;
    const char* hash;
    const char* model;
    int clipSkip;
};

// Shapes taken from A1111's parse_generation_parameters docstring and from infotexts of 1.6-1.10.
const Case kCases[] = {
    {"a1111 docstring",
     "girl with an artist's beret, determined, blue eyes, desert scene, ((eyeshadow)), (coquettish), detailed, intricate\n"
     "Negative prompt: ugly, fat, obese, chubby, (((deformed))), [blurry], bad anatomy, disfigured\n"
     "Steps: 20, Sampler: Euler a, CFG scale: 7, Seed: 965400086, Size: 512x512, Model hash: 45dee52b",
     "girl with an artist's beret, determined, blue eyes, desert scene, ((eyeshadow)), (coquettish), detailed, intricate",
     "ugly, fat, obese, chubby, (((deformed))), [blurry], bad anatomy, disfigured", 20, "Euler a", "Uniform", 7, 965400086, 512, 512,
     "45dee52b", "", 1},
    {"1.9+ schedule type",
     "masterpiece, 1girl\nNegative prompt: lowres\nSteps: 30, Sampler: DPM++ 2M, Schedule type: Karras, CFG scale: 5.5, "
     "Seed: 1234567890, Size: 832x1216, Model hash: 6ce0161689, Model: v1-5-pruned-emaonly, Clip skip: 2, Version: v1.10.1",
     "masterpiece, 1girl", "lowres", 30, "DPM++ 2M", "Karras", 5.5, 1234567890, 832, 1216, "6ce0161689", "v1-5-pruned-emaonly", 2},
    {"old combined sampler",
     "a house\nSteps: 25, Sampler: DPM++ 2M Karras, CFG scale: 7.5, Seed: 1, Size: 512x768, Model hash: 6ce0161689, Model: v1-5",
     "a house", "", 25, "DPM++ 2M", "Karras", 7.5, 1, 512, 768, "6ce0161689", "v1-5", 1},
    {"1.9 Automatic means Karras for DPM++ 2M",
     "x\nSteps: 20, Sampler: DPM++ 2M, Schedule type: Automatic, CFG scale: 7, Seed: 5, Size: 512x512",
     "x", "", 20, "DPM++ 2M", "Automatic", 7, 5, 512, 512, "", "", 1},
    {"pre-1.9 DPM++ 2M is not Karras", "x\nSteps: 20, Sampler: DPM++ 2M, CFG scale: 7, Seed: 5, Size: 512x512",
     "x", "", 20, "DPM++ 2M", "Uniform", 7, 5, 512, 512, "", "", 1},
    {"schedule the sampler name cannot carry",
     "x\nSteps: 20, Sampler: Euler a, Schedule type: Exponential, CFG scale: 7, Seed: 5, Size: 512x512",
     "x", "", 20, "Euler a", "Exponential", 7, 5, 512, 512, "", "", 1},
    {"multi-line prompt and negative",
     "line one,\n  line two  \n\nNegative prompt: bad,\nworse\nSteps: 8, Sampler: LCM, CFG scale: 1.5, Seed: 0, Size: 1024x1024",
     "line one,\nline two\n", "bad,\nworse", 8, "LCM", "Uniform", 1.5, 0, 1024, 1024, "", "", 1},
    {"quoted model name", "p\nSteps: 20, Sampler: Euler, CFG scale: 7, Seed: 9, Size: 64x64, Model: \"my, model: v2\"",
     "p", "", 20, "Euler", "Uniform", 7, 9, 64, 64, "", "my, model: v2", 1},
    {"no prompt; A1111's own DDIM", "Steps: 20, Sampler: DDIM, CFG scale: 7, Seed: 9, Size: 64x64", "", "", 20, "DDIM", "Automatic", 7, 9, 64, 64, "", "", 1},
    {"float-typed integers from the API", "p\nSteps: 20.0, Sampler: Heun, CFG scale: 7.0, Seed: 3, Size: 512x512, Clip skip: 2.0",
     "p", "", 20, "Heun", "Uniform", 7, 3, 512, 512, "", "", 2},
};

} // namespace

class TestA1111Parameters : public QObject {
    Q_OBJECT
private slots:
    void parsesRealWorldShapes() {
        for (const auto& c : kCases) {
            const auto info = parseA1111Parameters(c.text);
            const QByteArray at = QByteArray("case: ") + c.name;
            QVERIFY2(info.settings.prompt == c.prompt, at + " prompt: " + info.settings.prompt.c_str());
            QVERIFY2(info.settings.negativePrompt == c.negative, at);
            QVERIFY2(info.settings.steps == c.steps, at);
            QVERIFY2(info.settings.sampler == c.sampler, at + " sampler: " + info.settings.sampler.c_str());
            QVERIFY2(info.settings.scheduleType == c.schedule, at);
            QVERIFY2(info.settings.cfgScale == c.cfg, at);
            QVERIFY2(info.settings.seed == c.seed, at);
            QVERIFY2(info.settings.width == c.width && info.settings.height == c.height, at);
            QVERIFY2(info.modelHash == c.hash, at);
            QVERIFY2(info.modelName == c.model, at);
            QVERIFY2(info.settings.clipSkip == c.clipSkip, at);
            QVERIFY2(info.settings.model.empty(), at);
            QVERIFY2(info.format == "a1111", at);
        }
    }

    void keepsExtrasAsUnknownKeys() {
        const auto info = parseA1111Parameters(
            "portrait\nSteps: 20, Sampler: Euler a, Schedule type: Automatic, CFG scale: 7, Seed: 42, Size: 512x512, "
            "Model hash: 6ce0161689, Model: v1-5, Denoising strength: 0.4, Clip skip: 2, ADetailer model: face_yolov8n.pt, "
            "ADetailer confidence: 0.3, Hires upscale: 2, Hires resize: 1024x1024, Hires upscaler: R-ESRGAN 4x+, "
            "Lora hashes: \"add_detail: 7c6bad76eb54, lcm: 0123456789ab\", TI hashes: \"easynegative: c74b4e810b03\", "
            "RNG: CPU, Version: v1.7.0");
        // The hires keys are read (the strength is the hires pass's); the others are kept as unknown.
        QCOMPARE(info.settings.hires.denoising, 0.4);
        QVERIFY(info.has("strength") && info.has("hires"));
        QCOMPARE(info.settings.hires.resizeWidth, 1024);
        QCOMPARE(info.version, std::string("v1.7.0"));
        QCOMPARE(unknownValue(info, "ADetailer model"), std::string("face_yolov8n.pt"));
        QCOMPARE(unknownValue(info, "ADetailer confidence"), std::string("0.3"));
        QCOMPARE(info.unknown.size(), std::size_t(2));  // known keys are consumed, RNG, Version, Lora and TI hashes too
        // TI hashes: what the image was made with; the prompt decides what a rerun uses (docs/explore.md).
        QCOMPARE(info.settings.embeddings.size(), std::size_t(1));
        QCOMPARE(info.settings.embeddings[0].name + "=" + info.settings.embeddings[0].hash, std::string("easynegative=c74b4e810b03"));
        QVERIFY(info.has("embeddings"));
        // Lora hashes whose tags are not in the prompt: restored at weight 1, with a warning each (docs/lora.md).
        QCOMPARE(info.settings.loras.size(), std::size_t(2));
        QCOMPARE(info.settings.loras[0].name + "=" + info.settings.loras[0].hash, std::string("add_detail=7c6bad76eb54"));
        QCOMPARE(info.settings.loras[1].name + "=" + info.settings.loras[1].hash, std::string("lcm=0123456789ab"));
        QCOMPARE(info.warnings.size(), std::size_t(3));  // and the upscaler network we lack
    }

    void warnsButNeverFails() {
        // Missing params line: everything is the prompt (a cat: cute, Steps: 20 has only 2 matches).
        auto info = parseA1111Parameters("a cat: cute, Steps: 20");
        QCOMPARE(info.settings.prompt, std::string("a cat: cute, Steps: 20"));
        QVERIFY(!info.has("steps"));
        QVERIFY(anyWarningContains(info, "only the prompt"));

        info = parseA1111Parameters("p\nSteps: many, Sampler: , CFG scale: inf, Seed: -5, Size: 512x, Clip skip: 0, Model: ../../etc/passwd");
        QCOMPARE(info.settings.steps, 20);          // defaults kept
        QCOMPARE(info.settings.sampler, std::string("Euler a"));
        QVERIFY(!info.has("sampler"));               // empty values are dropped, as A1111 does
        QCOMPARE(info.settings.cfgScale, 7.0);
        QCOMPARE(info.settings.seed, int64_t(0));
        QCOMPARE(info.settings.width, 512);
        QCOMPARE(info.modelName, std::string("passwd"));  // file name only
        for (const char* w : {"Steps: many", "CFG scale: inf", "Seed: -5", "Size: 512x", "Clip skip: 0"})
            QVERIFY2(anyWarningContains(info, w), w);

        info = parseA1111Parameters("p\nSteps: 20, Sampler: Restart, CFG scale: 7, Seed: 1, Size: 8x8, RNG: GPU");
        QCOMPARE(info.settings.sampler, std::string("Heun"));  // the nearest we have: it runs, with a warning
        QVERIFY(anyWarningContains(info, "'Restart' is not one DiffusionDesk has: restored as 'Heun'"));
        QVERIFY(anyWarningContains(info, "GPU noise"));

        // A1111's noise sources: NV as it is, its default GPU (left out by A1111) as NV with a warning, ENSD read.
        info = parseA1111Parameters("p\nSteps: 20, Sampler: Euler a, CFG scale: 7, Seed: 1, Size: 8x8, ENSD: 31337, RNG: NV, Version: v1.10.1");
        QCOMPARE(info.settings.rng, std::string("NV"));
        QCOMPARE(info.settings.ensd, int64_t(31337));
        QVERIFY(info.has("rng") && info.has("ensd") && !anyWarningContains(info, "noise"));
        info = parseA1111Parameters("p\nSteps: 20, Sampler: Euler a, CFG scale: 7, Seed: 1, Size: 8x8, Version: v1.10.1");
        QCOMPARE(info.settings.rng, std::string("NV"));
        QVERIFY(anyWarningContains(info, "made with GPU noise (RNG): restored as NV"));
        QCOMPARE(parseA1111Parameters("p\nSteps: 20, Seed: 1, Size: 8x8, RNG: CPU").settings.rng, std::string("CPU"));
        {
            api::GenerationSettings nv;
            nv.rng = "NV";
            nv.ensd = 31337;
            const auto text = writeA1111Parameters(nv);
            QVERIFY2(text.find("ENSD: 31337, RNG: NV") != std::string::npos, text.c_str());
            const auto back = parseA1111Parameters(text).settings;
            QVERIFY(back.rng == "NV" && back.ensd == 31337);
        }

        info = parseA1111Parameters("");
        QCOMPARE(info.settings.prompt, std::string());

        // Found by fuzz_a1111_parameters: both read back differently from what they would write.
        info = parseA1111Parameters("p\nSteps: 20, Seed: 1, Refiner: xl_refiner.safetensors [7440042bbd], Refiner switch at: 0.5");
        QCOMPARE(info.settings.refiner.model, std::string("xl_refiner"));  // A1111's short title has no extension
        QCOMPARE(info.settings.refiner.switchAt, 0.5);
        info = parseA1111Parameters("p\nSteps: 20, Seed: 1, Refiner switch at: 0.3");
        QVERIFY(!info.settings.refiner.enabled());
        QCOMPARE(info.settings.refiner.switchAt, api::RefinerSetting().switchAt);
        QVERIFY(anyWarningContains(info, "Refiner switch at: 0.3"));
        info = parseA1111Parameters("p\nSteps: 20, Seed: 1, Refiner: xl refiner .ckpt, Refiner switch at: 0.5");
        QCOMPARE(info.settings.refiner.model, std::string("xl refiner"));  // no space left where the extension was
        info = parseA1111Parameters("p\nSteps: 20, Seed: 1, Refiner: xl hash.pt .ckpt, Refiner switch at: 0.5");
        QCOMPARE(info.settings.refiner.model, std::string("xl hash"));  // every extension, as it would be written
        // A1111's LCM (its own denoiser) is the LCM sampler over a schedule type, as A1111 runs it.
        info = parseA1111Parameters("p\nSteps: 4, Sampler: LCM, Schedule type: Karras, Seed: 1");
        QCOMPARE(info.settings.sampler, std::string("LCM"));
        QCOMPARE(info.settings.scheduleType, std::string("Karras"));
        QVERIFY(!anyWarningContains(info, "LCM"));
        // The hash before an extension: read as the "name [hash]" that is written back.
        info = parseA1111Parameters("p\nSteps: 20, Seed: 1, Refiner: xl_refiner.x [7440042bbd].pt, Refiner switch at: 0.5");
        QCOMPARE(info.settings.refiner.model, std::string("xl_refiner.x"));
        QCOMPARE(info.settings.refiner.hash, std::string("7440042bbd"));
        // A1111's DDIM and PLMS are its own timestep samplers, on their own grid whatever the schedule label; ours
        // from diffusers say so, and read back as diffusers'.
        info = parseA1111Parameters("p\nSteps: 20, Sampler: PLMS, Schedule type: Karras, Seed: 1");
        QCOMPARE(info.settings.sampler, std::string("PLMS"));
        QCOMPARE(info.settings.scheduleType, std::string("Automatic"));
        QVERIFY(anyWarningContains(info, "keeps its own timesteps"));
        api::GenerationSettings ddim;
        ddim.sampler = "DDIM";
        std::string text = writeA1111Parameters(ddim);
        QVERIFY2(text.find("Sampler: DDIM, Schedule type: Automatic, Sampler implementation: diffusers") != std::string::npos, text.c_str());
        QCOMPARE(parseA1111Parameters(text).settings.scheduleType, std::string());
        ddim.scheduleType = "Automatic";
        text = writeA1111Parameters(ddim);
        QVERIFY2(text.find("Sampler implementation") == std::string::npos, text.c_str());
        QCOMPARE(parseA1111Parameters(text).settings.scheduleType, std::string("Automatic"));
        // stable-diffusion.cpp's DDIM is neither A1111's nor k-diffusion's: diffusers' stands in.
        info = parseA1111Parameters("p\nSteps: 20, Sampler: ddim_trailing, Seed: 1, Version: stable-diffusion.cpp");
        QCOMPARE(info.settings.scheduleType, std::string());
        // An empty bracket holds no hash (the hash is the one before it); one without hex is part of the name.
        info = parseA1111Parameters("p\nSteps: 20, Seed: 1, Refiner: xl [7440042bbd] [], Refiner switch at: 0.5");
        QCOMPARE(info.settings.refiner.model, std::string("xl"));
        QCOMPARE(info.settings.refiner.hash, std::string("7440042bbd"));
        info = parseA1111Parameters("p\nSteps: 20, Seed: 1, Refiner: xl [v2] [], Refiner switch at: 0.5");
        QCOMPARE(info.settings.refiner.model, std::string("xl [v2]"));
        QCOMPARE(info.settings.refiner.hash, std::string());
    }

    // A1111's inpainting keys: written for an inpainting (Mode and Masked content only off their defaults), read
    // back without the mask (A1111 names none), and what cannot be read is reported, not fatal.
    void inpaintingKeys() {
        api::GenerationSettings s;
        s.prompt = "a door";
        s.initImage = "wall.png";
        s.inpaint.mask = "door-mask.png";
        s.inpaint.maskBlur = 0;
        s.strength = 0.6;
        std::string text = writeA1111Parameters(s, {});
        QVERIFY(text.find("Denoising strength: 0.6, Mask blur: 0") != std::string::npos);
        QVERIFY(text.find("Mask mode") == std::string::npos);
        QVERIFY(text.find("Masked content") == std::string::npos);
        s.inpaint.invertMask = true;
        s.inpaint.maskedContent = "latent noise";
        text = writeA1111Parameters(s, {});
        QVERIFY(text.find("Mask mode: Inpaint not masked, Masked content: latent noise") != std::string::npos);
        auto info = parseA1111Parameters(text);
        QCOMPARE(info.settings.inpaint.maskBlur, 0);
        QVERIFY(info.settings.inpaint.invertMask);
        QCOMPARE(info.settings.inpaint.maskedContent, std::string("latent noise"));
        QVERIFY(!info.settings.inpaint.enabled());
        QVERIFY(info.has("mask_blur") && info.has("invert_mask") && info.has("masked_content"));
        // Without the mask, the values still read back as written.
        QCOMPARE(parseA1111Parameters(writeA1111Parameters(info.settings, {})).settings.inpaint, info.settings.inpaint);
        // txt2img writes none of them.
        QVERIFY(writeA1111Parameters(api::GenerationSettings{}, {}).find("Mask") == std::string::npos);
        // "Only masked" and its padding, as A1111 writes them; "Whole picture" (its default) reads too.
        s.inpaint.onlyMasked = true;
        s.inpaint.maskedPadding = 48;
        text = writeA1111Parameters(s, {});
        QVERIFY(text.find("Inpaint area: Only masked, Masked area padding: 48") != std::string::npos);
        info = parseA1111Parameters(text);
        QVERIFY(info.settings.inpaint.onlyMasked && info.has("only_masked") && info.has("masked_padding"));
        QCOMPARE(info.settings.inpaint.maskedPadding, 48);
        QVERIFY(!parseA1111Parameters("p\nSteps: 20, Seed: 1, Inpaint area: Whole picture").settings.inpaint.onlyMasked);
        info = parseA1111Parameters("p\nSteps: 20, Seed: 1, Masked area padding: 999");
        QVERIFY(anyWarningContains(info, "Masked area padding: 999"));
        // A1111's pixel "fill" reads back; a content A1111 lacks is reported, the rest restored.
        info = parseA1111Parameters("p\nSteps: 20, Seed: 1, Denoising strength: 0.75, Mask blur: 4, Masked content: fill");
        QCOMPARE(info.settings.inpaint.maskedContent, std::string("fill"));
        QVERIFY(info.warnings.empty());
        info = parseA1111Parameters("p\nSteps: 20, Seed: 1, Denoising strength: 0.75, Masked content: smudge");
        QCOMPARE(info.settings.inpaint.maskedContent, std::string("original"));
        QVERIFY(anyWarningContains(info, "Masked content: smudge"));
        QCOMPARE(info.settings.strength, 0.75);
    }

    // A1111's variation keys, as its create_infotext places them (after Model, before Denoising strength): a batch's
    // image i keeps the seed and writes variation seed + i; Seed resize from alone (no strength) keeps seed + i.
    void variationKeysRoundTrip() {
        api::GenerationSettings s;
        s.seed = 100;
        s.batchSize = 3;
        s.variation = {5000, 0.3, 0, 0};
        std::string text = writeA1111Parameters(s, {.batchIndex = 2});
        QVERIFY2(text.find("Seed: 100,") != std::string::npos, text.c_str());
        QVERIFY2(text.find("Variation seed: 5002, Variation seed strength: 0.3") != std::string::npos, text.c_str());
        QVERIFY(text.find("Seed resize from") == std::string::npos);
        auto info = parseA1111Parameters(text);
        QCOMPARE(info.settings.seed, int64_t(100));
        QCOMPARE(info.settings.variation.seed, int64_t(5002));
        QCOMPARE(info.settings.variation.strength, 0.3);
        QVERIFY(info.has("variation"));
        s.variation = {5000, 0.0, 512, 768};
        text = writeA1111Parameters(s, {.batchIndex = 2});
        QVERIFY2(text.find("Seed: 102,") != std::string::npos, text.c_str());
        QVERIFY(text.find("Variation seed:") == std::string::npos);
        QVERIFY(text.find("Seed resize from: 512x768") != std::string::npos);
        info = parseA1111Parameters(text);
        QCOMPARE(info.settings.variation.resizeFromWidth, 512);
        QCOMPARE(info.settings.variation.resizeFromHeight, 768);
        // A1111's own text (its order and spelling), and values out of range reported, the rest restored.
        info = parseA1111Parameters("p\nSteps: 20, Sampler: Euler a, CFG scale: 7, Seed: 1, Size: 512x512, Variation seed: "
                                    "3000000000, Variation seed strength: 0.05, Seed resize from: 640x448");
        QCOMPARE(info.settings.variation, (api::VariationSetting{3000000000, 0.05, 640, 448}));
        info = parseA1111Parameters("p\nSteps: 20, Seed: 1, Variation seed strength: 1.5, Seed resize from: 9x");
        QVERIFY(anyWarningContains(info, "Variation seed strength: 1.5"));
        QVERIFY(anyWarningContains(info, "Seed resize from: 9x"));
        QCOMPARE(info.settings.variation, api::VariationSetting{});
    }

    // A1111's hires fix keys: written when it is on, its Denoising strength the second pass's; an upscaler network
    // we lack is a warning and Latent, never a failure.
    void hiresKeys() {
        api::GenerationSettings s;
        s.prompt = "a castle";
        s.hires.enabled = true;
        s.hires.scale = 1.5;
        s.hires.steps = 12;
        s.hires.denoising = 0.45;
        s.hires.upscaler = "Latent (bicubic antialiased)";
        const std::string text = writeA1111Parameters(s, {});
        QVERIFY2(text.find("Denoising strength: 0.45, Hires upscale: 1.5, Hires steps: 12, Hires upscaler: Latent (bicubic antialiased)") !=
                     std::string::npos, text.c_str());
        auto info = parseA1111Parameters(text);
        QCOMPARE(info.settings.hires, s.hires);
        QCOMPARE(info.settings.strength, api::GenerationSettings().strength);  // a txt2img's strength is the hires one
        s.hires.resizeWidth = 1024, s.hires.resizeHeight = 768;
        info = parseA1111Parameters(writeA1111Parameters(s, {}));
        QCOMPARE(info.settings.hires.resizeWidth, 1024);
        QCOMPARE(info.settings.hires.resizeHeight, 768);
        info = parseA1111Parameters("p\nSteps: 20, Seed: 1, Size: 512x512, Denoising strength: 0.5, Hires upscale: 2, Hires upscaler: R-ESRGAN 4x+");
        QVERIFY(info.settings.hires.enabled);
        QCOMPARE(info.settings.hires.upscaler, std::string("R-ESRGAN 4x+"));  // kept: the run looks for its file
        QCOMPARE(info.settings.hires.denoising, 0.5);
        QVERIFY(anyWarningContains(info, "R-ESRGAN 4x+"));
        // A1111's resizers need no file: read without a warning.
        info = parseA1111Parameters("p\nSteps: 20, Seed: 1, Size: 512x512, Denoising strength: 0.5, Hires upscale: 2, Hires upscaler: Lanczos");
        QCOMPARE(info.settings.hires.upscaler, std::string("Lanczos"));
        QVERIFY(info.warnings.empty());
        QVERIFY(writeA1111Parameters(api::GenerationSettings{}, {}).find("Hires") == std::string::npos);
    }

    void rejectsUntrustedText() {
        QVERIFY_THROWS_EXCEPTION(MetadataError, parseA1111Parameters(std::string("Steps: 20, \xff\xfe, Seed: 1")));
        QVERIFY_THROWS_EXCEPTION(MetadataError, parseA1111Parameters(std::string("\xed\xa0\x80")));  // surrogate
        QVERIFY_THROWS_EXCEPTION(MetadataError, parseA1111Parameters(std::string("\xc0\xaf")));      // overlong '/'
        QVERIFY_THROWS_EXCEPTION(MetadataError, parseA1111Parameters(std::string(kMaxMetadataText + 1, 'a')));
        const auto big = parseA1111Parameters(std::string(kMaxMetadataText, 'a'));  // at the cap: fine, and fast
        QCOMPARE(big.settings.prompt.size(), kMaxMetadataText);
    }

    void writesA1111Layout() {
        api::GenerationSettings s;
        s.prompt = "a cat";
        s.negativePrompt = "blurry";
        s.seed = 42;
        const std::string text = writeA1111Parameters(s, options("v1-5-pruned-emaonly", "6ce0161689", "DiffusionDesk 0.1.0"));
        // diffusers' Euler a: our key says so, for our own reader; A1111 reads the rest as its nearest.
        QCOMPARE(text, std::string("a cat\nNegative prompt: blurry\nSteps: 20, Sampler: Euler a, Schedule type: Automatic, "
                                   "Sampler implementation: diffusers, CFG scale: 7, Seed: 42, Size: 512x512, Model hash: 6ce0161689, "
                                   "Model: v1-5-pruned-emaonly, RNG: CPU, Version: DiffusionDesk 0.1.0"));
        // Clip skip on SDXL as the tool that wrote the text reads it.
        QCOMPARE(parseA1111Parameters(text).settings.sdxlClipSkip, std::string("diffusers"));  // ours
        QCOMPARE(parseA1111Parameters("x\nSteps: 20, Sampler: Euler, Clip skip: 2, Version: v1.10.1").settings.sdxlClipSkip, std::string("A1111"));
        QCOMPARE(parseA1111Parameters("x\nSteps: 20, Sampler: Euler, Clip skip: 2, Version: Fooocus v2.5.5").settings.sdxlClipSkip,
                 std::string("ComfyUI"));
        s.sampleAs = "ComfyUI";  // ours, as ComfyUI samples: said, and read back
        const std::string comfy = writeA1111Parameters(s);
        QVERIFY2(comfy.find(", Sample as: ComfyUI") != std::string::npos, comfy.c_str());
        QCOMPARE(parseA1111Parameters(comfy).settings.sampleAs, std::string("ComfyUI"));
        s.sampleAs = "A1111";
        s.scheduleType = "Automatic";  // k-diffusion's Euler a, as A1111 runs it: A1111's own text
        s.padConds = true;             // and A1111's key for padded sides
        QCOMPARE(writeA1111Parameters(s, options("v1-5-pruned-emaonly", "6ce0161689", "DiffusionDesk 0.1.0")),
                 std::string("a cat\nNegative prompt: blurry\nSteps: 20, Sampler: Euler a, Schedule type: Automatic, "
                             "CFG scale: 7, Seed: 42, Size: 512x512, Model hash: 6ce0161689, "
                             "Model: v1-5-pruned-emaonly, RNG: CPU, Pad conds: True, Version: DiffusionDesk 0.1.0"));

        s = {};
        s.prompt = "x";
        s.sampler = "DPM++ 2M";
        s.scheduleType = "Karras";
        s.cfgScale = 7.5;
        s.clipSkip = 2;
        s.initImage = "/home/me/in.png";
        s.strength = 0.55;
        s.width = 768;
        s.model = "/models/SD/Juggernaut, XL.safetensors";
        s.batchSize = 4;
        s.guidanceRescale = 0.7;
        QCOMPARE(writeA1111Parameters(s, options("", "", "", 2, {{"Hires upscale", "2"}, {"Lora hashes", "a: 1, b: 2"}})),
                 std::string("x\nSteps: 20, Sampler: DPM++ 2M, Schedule type: Karras, CFG scale: 7.5, Seed: 2, Size: 768x512, "
                             "Model: \"Juggernaut, XL\", Denoising strength: 0.55, Clip skip: 2, RNG: CPU, Batch size: 4, "
                             "CFG Rescale: 0.7, Hires upscale: 2, Lora hashes: \"a: 1, b: 2\""));

        s = {};
        s.sampler = "DPM++ 2M";  // A1111 1.9+ would read "Automatic" as Karras here
        QVERIFY(writeA1111Parameters(s).find("Sampler: DPM++ 2M, Schedule type: Uniform,") != std::string::npos);
        s.prompt = "say \"hi\"\nsecond line";
        s.model = "demo:tiny-sd1";
        const auto t = writeA1111Parameters(s, options("", "", "", 0, {{"Note", "\"quoted\""}, {"Unicode", "ünï ✓"}}));
        QVERIFY(t.find("Model: \"demo:tiny-sd1\"") != std::string::npos);
        QVERIFY(t.find("Note: \"\\\"quoted\\\"\"") != std::string::npos);
        QVERIFY(t.find("Unicode: ünï ✓") != std::string::npos);  // ensure_ascii=False
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, writeA1111Parameters(s, options("", "", "", 0, {{"bad:key", "1"}})));
    }

    void roundTripsEveryWrittenField() {
        std::vector<std::pair<std::string, std::string>> samplers;
        for (const auto& n : api::samplerNames()) samplers.emplace_back(n, "");
        samplers.insert(samplers.end(), {{"Euler", "Karras"}, {"Euler a", "Exponential"}, {"DPM++ 2M SDE", "Karras"},
                                         {"Heun", "SGM Uniform"}, {"DPM++ SDE", "Beta"}, {"DPM2 a", "Automatic"}, {"LMS", "DDIM"}});
        for (const auto& [sampler, schedule] : samplers) {
            api::GenerationSettings s;
            s.prompt = "a (red:1.2) car, [night]\nsecond: line";
            s.negativePrompt = "blurry, \"low\" quality\nugly";
            s.seed = 4294967295;
            s.steps = 37;
            s.cfgScale = 6.25;
            s.guidanceRescale = 0.3;
            s.sampler = sampler;
            s.scheduleType = schedule;
            s.width = 640;
            s.height = 896;
            s.batchSize = 3;
            s.clipSkip = 2;
            s.initImage = "in.png";
            s.strength = 0.35;
            s.predictionType = "epsilon";
            s.timestepSpacing = "trailing";
            const auto info = parseA1111Parameters(writeA1111Parameters(s, options("m", "0123456789")));
            const QByteArray at = QByteArray("sampler: ") + sampler.c_str() + " / " + schedule.c_str();
            api::GenerationSettings back = info.settings;
            back.model = s.model;          // written as Model name, returned in info.modelName
            back.initImage = s.initImage;  // never written: a local path
            back.preset = s.preset;        // sidecar only
            // A k-diffusion run comes back with its schedule named; a diffusers one as it was ("Sampler implementation").
            api::GenerationSettings want = s;
            if (api::runsKDiffusion(s) && s.scheduleType.empty()) want.scheduleType = "Automatic";
            want.sdxlClipSkip = "A1111";  // a text without "Version: DiffusionDesk …" is another tool's
            QVERIFY2(nlohmann::json(back) == nlohmann::json(want), at + "\n" + nlohmann::json(back).dump().c_str());
            QCOMPARE(info.modelName, std::string("m"));
            QCOMPARE(info.modelHash, std::string("0123456789"));
            QVERIFY2(info.unknown.empty(), at);
            for (const char* f : {"prompt", "negative_prompt", "seed", "steps", "cfg_scale", "guidance_rescale", "sampler",
                                  "schedule_type", "width", "height", "batch_size", "clip_skip", "prompt_syntax", "emphasis",
                                  "strength", "prediction_type", "timestep_spacing"})
                QVERIFY2(info.has(f), at + " field " + f);
        }
    }

    // Our scheduler keys: written only when set, a value we do not know is a warning, never a failure.
    void schedulerOverrideKeys() {
        api::GenerationSettings s;
        s.prompt = "p";
        QVERIFY(writeA1111Parameters(s).find("Prediction type") == std::string::npos);
        QVERIFY(writeA1111Parameters(s).find("Timestep spacing") == std::string::npos);
        const auto plain = parseA1111Parameters(writeA1111Parameters(s));
        QVERIFY(plain.settings.predictionType.empty() && plain.settings.timestepSpacing.empty());
        QVERIFY(plain.has("prediction_type"));  // missing means the model's own: restoring resets it
        const auto bad = parseA1111Parameters("p\nSteps: 20, Sampler: Euler, Prediction type: x0, Timestep spacing: odd");
        QVERIFY(bad.settings.predictionType.empty() && bad.settings.timestepSpacing.empty());
        QVERIFY(anyWarningContains(bad, "Prediction type: x0"));
        QVERIFY(anyWarningContains(bad, "Timestep spacing: odd"));
    }

    // A1111 writes "Emphasis" only when it is not the default, Original; prompt syntax stays in the sidecar.
    void emphasisAndPromptSyntax() {
        api::GenerationSettings s;
        s.prompt = "a (cat:1.2)";
        QVERIFY(writeA1111Parameters(s).find("Emphasis") == std::string::npos);
        for (const char* e : {"No norm", "Ignore", "None"}) {
            s.emphasis = e;
            const auto text = writeA1111Parameters(s);
            QVERIFY2(text.find(std::string(", RNG: CPU, Emphasis: ") + e) != std::string::npos, text.c_str());
            QCOMPARE(parseA1111Parameters(text).settings.emphasis, std::string(e));
        }
        s.emphasis = "Original";
        s.promptSyntax = "reference";
        const auto info = parseA1111Parameters(writeA1111Parameters(s));
        QCOMPARE(info.settings.promptSyntax, std::string("a1111"));
        QCOMPARE(info.settings.emphasis, std::string("Original"));
        QVERIFY(info.has("emphasis") && info.has("prompt_syntax"));

        const auto bad = parseA1111Parameters("p\nSteps: 20, Sampler: Euler, CFG scale: 7, Emphasis: Strong");
        QCOMPARE(bad.settings.emphasis, std::string("Original"));
        QVERIFY(anyWarningContains(bad, "Emphasis: Strong"));
    }

    void formatsNumbersLikePython() {
        using detail::formatNumber;
        const std::pair<double, const char*> table[] = {
            {7, "7"}, {7.5, "7.5"}, {0.1, "0.1"}, {0.3, "0.3"}, {1e-5, "1e-05"}, {0.0001, "0.0001"}, {2.5e-7, "2.5e-07"},
            {1e16, "1e+16"}, {1.5e16, "1.5e+16"}, {123456789012345.6, "123456789012345.6"}, {-0.75, "-0.75"}, {0, "0"}};
        for (const auto& [v, want] : table) QCOMPARE(formatNumber(v), std::string(want));
    }
};

QTEST_GUILESS_MAIN(TestA1111Parameters)
#include "test_a1111_parameters.moc"
