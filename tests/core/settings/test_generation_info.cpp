// ComfyUI and InvokeAI readers, the reader chosen from PNG text chunks, and the untrusted-input rules.
#include "core/settings/a1111_parameters.h"
#include "core/settings/generation_info.h"
#include "core/settings/sidecar.h"

#include <QtTest>

#include <nlohmann/json.hpp>

using namespace dd::settings;

namespace {

// The shape of ComfyUI's default text-to-image graph in API format (what it stores as PNG text "prompt"),
// with the negative text fed through a ConditioningCombine and the checkpoint in a subfolder.
const char* kComfy = R"({
  "3": {"class_type": "KSampler", "inputs": {"seed": 156680208700286, "steps": 20, "cfg": 8, "sampler_name": "dpmpp_2m",
        "scheduler": "karras", "denoise": 1, "model": ["4", 0], "positive": ["6", 0], "negative": ["9", 0],
        "latent_image": ["5", 0]}},
  "4": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "SD1.5/v1-5-pruned-emaonly.safetensors"}},
  "5": {"class_type": "EmptyLatentImage", "inputs": {"width": 512, "height": 768, "batch_size": 2}},
  "6": {"class_type": "CLIPTextEncode", "inputs": {"text": "beautiful scenery nature glass bottle landscape", "clip": ["10", 0]}},
  "7": {"class_type": "CLIPTextEncode", "inputs": {"text": "text, watermark", "clip": ["10", 0]}},
  "9": {"class_type": "ConditioningCombine", "inputs": {"conditioning_1": ["7", 0], "conditioning_2": ["7", 0]}},
  "10": {"class_type": "CLIPSetLastLayer", "inputs": {"stop_at_clip_layer": -2, "clip": ["4", 1]}},
  "8": {"class_type": "VAEDecode", "inputs": {"samples": ["3", 0], "vae": ["4", 2]}}
})";

// The same graph as ComfyUI's UI saves it (PNG text "workflow"): widget values by position, links by id, and a
// muted second sampler that ComfyUI does not run.
const char* kComfyWorkflow = R"({"last_node_id": 11, "last_link_id": 12, "nodes": [
  {"id": 3, "type": "KSampler", "mode": 0, "inputs": [{"name": "model", "type": "MODEL", "link": 1},
    {"name": "positive", "type": "CONDITIONING", "link": 4}, {"name": "negative", "type": "CONDITIONING", "link": 6},
    {"name": "latent_image", "type": "LATENT", "link": 2}],
   "widgets_values": [156680208700286, "randomize", 20, 8, "dpmpp_2m", "karras", 1]},
  {"id": 4, "type": "CheckpointLoaderSimple", "inputs": [], "widgets_values": ["SD1.5/v1-5-pruned-emaonly.safetensors"]},
  {"id": 5, "type": "EmptyLatentImage", "widgets_values": [512, 768, 2]},
  {"id": 6, "type": "CLIPTextEncode", "inputs": [{"name": "clip", "type": "CLIP", "link": 3}],
   "widgets_values": ["beautiful scenery nature glass bottle landscape"]},
  {"id": 7, "type": "CLIPTextEncode", "inputs": [{"name": "clip", "type": "CLIP", "link": 5}], "widgets_values": ["text, watermark"]},
  {"id": 9, "type": "ConditioningCombine", "inputs": [{"name": "conditioning_1", "link": 7}, {"name": "conditioning_2", "link": 8}]},
  {"id": 10, "type": "CLIPSetLastLayer", "inputs": [{"name": "clip", "type": "CLIP", "link": 9}], "widgets_values": [-2]},
  {"id": 8, "type": "VAEDecode", "inputs": [{"name": "samples", "link": 10}, {"name": "vae", "link": 11}]},
  {"id": 11, "type": "KSampler", "mode": 2, "inputs": [{"name": "model", "link": 12}], "widgets_values": [1, "fixed", 5, 2, "euler", "normal", 1]}],
 "links": [[1, 4, 0, 3, 0, "MODEL"], [2, 5, 0, 3, 3, "LATENT"], [3, 10, 0, 6, 0, "CLIP"], [4, 6, 0, 3, 1, "CONDITIONING"],
   [5, 10, 0, 7, 0, "CLIP"], [6, 9, 0, 3, 2, "CONDITIONING"], [7, 7, 0, 9, 0, "CONDITIONING"], [8, 7, 0, 9, 1, "CONDITIONING"],
   [9, 4, 1, 10, 0, "CLIP"], [10, 3, 0, 8, 0, "LATENT"], [11, 4, 2, 8, 1, "VAE"], [12, 4, 0, 11, 0, "MODEL"]],
 "version": 0.4})";

// InvokeAI 3.3 "invokeai_metadata", as stored by its canvas / linear UI.
const char* kInvoke = R"({"app_version": "3.3.0post3", "generation_mode": "txt2img", "positive_prompt": "landscape",
  "negative_prompt": "low quality", "width": 768, "height": 432, "seed": 356120443, "rand_device": "cpu",
  "cfg_scale": 7.5, "steps": 50, "scheduler": "dpmpp_2m_k", "clip_skip": 1,
  "model": {"model_name": "amixx_3Prunedfp16", "base_model": "sd-1", "model_type": "main"}, "loras": []})";

bool anyWarningContains(const GenerationInfo& info, const std::string& part) {
    for (const auto& w : info.warnings)
        if (w.find(part) != std::string::npos) return true;
    return false;
}

} // namespace

class TestGenerationInfo : public QObject {
    Q_OBJECT
private slots:
    // Without the API prompt, the UI workflow gives the same settings.
    void readsComfyUiWorkflow() {
        const auto fromPrompt = readComfyUiPrompt(kComfy);
        const auto fromWorkflow = readComfyUiWorkflow(kComfyWorkflow);
        QCOMPARE(nlohmann::json(fromWorkflow.settings).dump(), nlohmann::json(fromPrompt.settings).dump());
        QCOMPARE(fromWorkflow.modelName, fromPrompt.modelName);
        QCOMPARE(fromWorkflow.settings.clipSkip, 2);
        QVERIFY(anyWarningContains(fromWorkflow, "workflow"));
        QVERIFY(anyWarningContains(fromWorkflow, "1 muted node"));
        const auto viaPng = readGenerationInfo({{"workflow", kComfyWorkflow}});
        QVERIFY(viaPng && viaPng->format == "comfyui" && viaPng->settings.seed == 156680208700286);
        // An older file without the seed's "control after generate" value reads the same.
        std::string older = kComfyWorkflow;
        const std::string control = "\"randomize\", ";
        older.erase(older.find(control), control.size());
        QCOMPARE(nlohmann::json(readComfyUiWorkflow(older).settings).dump(), nlohmann::json(fromPrompt.settings).dump());
        QVERIFY_THROWS_EXCEPTION(MetadataError, readComfyUiWorkflow(R"({"links": []})"));
        QVERIFY_THROWS_EXCEPTION(MetadataError, readComfyUiWorkflow("[1, 2]"));
        // Odd values are skipped, never thrown as anything but MetadataError.
        const auto odd = readComfyUiWorkflow(R"({"nodes": [{"id": "x", "type": 3}, {"id": 1, "type": "KSampler", "mode": "on",
            "widgets_values": {"seed": 1}, "inputs": [{"name": 5, "link": "q"}]}], "links": [[1], "z"]})");
        QVERIFY(odd.warnings.size() >= 1);
    }

    void readsComfyUiPrompt() {
        const auto info = readComfyUiPrompt(kComfy);
        QCOMPARE(info.format, std::string("comfyui"));
        QCOMPARE(info.settings.seed, int64_t(156680208700286));
        QCOMPARE(info.settings.steps, 20);
        QCOMPARE(info.settings.cfgScale, 8.0);
        QCOMPARE(info.settings.sampler, std::string("DPM++ 2M"));  // k-diffusion's, over ComfyUI's schedule
        QCOMPARE(info.settings.scheduleType, std::string("Karras"));
        QCOMPARE(info.settings.sampleAs, std::string("ComfyUI"));  // and as ComfyUI runs it
        QCOMPARE(info.settings.sdxlClipSkip, std::string("ComfyUI"));  // its CLIPSetLastLayer's −2
        QCOMPARE(info.settings.prompt, std::string("beautiful scenery nature glass bottle landscape"));
        QCOMPARE(info.settings.negativePrompt, std::string("text, watermark"));
        QCOMPARE(info.settings.width, 512);
        QCOMPARE(info.settings.height, 768);
        QCOMPARE(info.settings.batchSize, 2);
        QCOMPARE(info.settings.clipSkip, 2);
        QCOMPARE(info.modelName, std::string("v1-5-pruned-emaonly.safetensors"));  // no folder
        QVERIFY(!info.has("strength"));
        QVERIFY(info.settings.model.empty());
    }

    // The image's own chain: SaveImage ← VAEDecode ← the second pass ← LatentUpscaleBy ← the first pass, with LoRAs
    // on the model and clip skip on the clip; a PreviewImage of another sampler in the same graph is not it.
    void comfyUiFollowsTheSavedImagesChain() {
        const auto info = readComfyUiPrompt(R"({
          "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sdxl/juggernaut.safetensors"}},
          "2": {"class_type": "LoraLoader", "inputs": {"lora_name": "styles/detail.safetensors", "strength_model": 0.8,
                "strength_clip": 0.5, "model": ["1", 0], "clip": ["1", 1]}},
          "3": {"class_type": "CLIPSetLastLayer", "inputs": {"stop_at_clip_layer": -2, "clip": ["2", 1]}},
          "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a lighthouse", "clip": ["3", 0]}},
          "5": {"class_type": "CLIPTextEncode", "inputs": {"text": "blurry", "clip": ["3", 0]}},
          "6": {"class_type": "EmptyLatentImage", "inputs": {"width": 640, "height": 512, "batch_size": 1}},
          "7": {"class_type": "KSampler", "inputs": {"seed": 11, "steps": 24, "cfg": 6.5, "sampler_name": "sample_dpmpp_2m",
                "scheduler": "karras", "denoise": 1, "model": ["2", 0], "positive": ["4", 0], "negative": ["5", 0], "latent_image": ["6", 0]}},
          "8": {"class_type": "LatentUpscaleBy", "inputs": {"upscale_method": "nearest-exact", "scale_by": 1.5, "samples": ["7", 0]}},
          "9": {"class_type": "KSampler", "inputs": {"seed": 11, "steps": 12, "cfg": 6.5, "sampler_name": "dpmpp_2m",
                "scheduler": "karras", "denoise": 0.45, "model": ["2", 0], "positive": ["4", 0], "negative": ["5", 0], "latent_image": ["8", 0]}},
          "10": {"class_type": "VAEDecode", "inputs": {"samples": ["9", 0], "vae": ["1", 2]}},
          "11": {"class_type": "SaveImage", "inputs": {"images": ["10", 0], "filename_prefix": "ComfyUI"}},
          "0": {"class_type": "KSampler", "inputs": {"seed": 99, "steps": 5, "cfg": 1, "sampler_name": "euler", "scheduler": "normal",
                "denoise": 1, "model": ["1", 0], "positive": ["4", 0], "negative": ["5", 0], "latent_image": ["6", 0]}},
          "12": {"class_type": "VAEDecode", "inputs": {"samples": ["0", 0], "vae": ["1", 2]}},
          "13": {"class_type": "PreviewImage", "inputs": {"images": ["12", 0]}}})");
        const auto& s = info.settings;
        QCOMPARE(s.seed, int64_t(11));
        QCOMPARE(s.steps, 24);
        QCOMPARE(s.sampler, std::string("DPM++ 2M"));  // k-diffusion's function name read as its sampler
        QCOMPARE(s.scheduleType, std::string("Karras"));
        QCOMPARE(s.width, 640);
        QCOMPARE(s.prompt, std::string("a lighthouse"));
        QCOMPARE(s.negativePrompt, std::string("blurry"));
        QCOMPARE(s.clipSkip, 2);
        QVERIFY(s.hires.enabled);
        QCOMPARE(s.hires.scale, 1.5);
        QCOMPARE(s.hires.steps, 12);
        QCOMPARE(s.hires.denoising, 0.45);
        QCOMPARE(s.hires.upscaler, std::string("Latent (nearest-exact)"));
        QCOMPARE(int(s.loras.size()), 1);
        QCOMPARE(s.loras[0].name, std::string("detail"));
        QCOMPARE(s.loras[0].unetWeight, 0.8);
        QCOMPARE(s.loras[0].textEncoderWeight, 0.5);
        QCOMPARE(info.modelName, std::string("juggernaut.safetensors"));  // no folder
        QVERIFY2(info.warnings.empty(), info.warnings.empty() ? "" : info.warnings.front().c_str());
    }

    // The custom-sampler family: seed from RandomNoise, CFG and prompts from CFGGuider, sampler from KSamplerSelect,
    // steps and schedule from BasicScheduler.
    void comfyUiCustomSamplerAdvanced() {
        const auto info = readComfyUiPrompt(R"({
          "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "v1-5.safetensors"}},
          "2": {"class_type": "CLIPTextEncode", "inputs": {"text": "a fox", "clip": ["1", 1]}},
          "3": {"class_type": "CLIPTextEncode", "inputs": {"text": "ugly", "clip": ["1", 1]}},
          "4": {"class_type": "RandomNoise", "inputs": {"noise_seed": 1234}},
          "5": {"class_type": "CFGGuider", "inputs": {"cfg": 5.5, "model": ["1", 0], "positive": ["2", 0], "negative": ["3", 0]}},
          "6": {"class_type": "KSamplerSelect", "inputs": {"sampler_name": "euler_ancestral_cfg_pp"}},
          "7": {"class_type": "BasicScheduler", "inputs": {"scheduler": "simple", "steps": 25, "denoise": 1, "model": ["1", 0]}},
          "8": {"class_type": "EmptyLatentImage", "inputs": {"width": 512, "height": 768, "batch_size": 1}},
          "9": {"class_type": "SamplerCustomAdvanced", "inputs": {"noise": ["4", 0], "guider": ["5", 0], "sampler": ["6", 0],
                "sigmas": ["7", 0], "latent_image": ["8", 0]}},
          "10": {"class_type": "VAEDecode", "inputs": {"samples": ["9", 0], "vae": ["1", 2]}},
          "11": {"class_type": "SaveImage", "inputs": {"images": ["10", 0]}}})");
        const auto& s = info.settings;
        QCOMPARE(s.seed, int64_t(1234));
        QCOMPARE(s.steps, 25);
        QCOMPARE(s.cfgScale, 5.5);
        QCOMPARE(s.sampler, std::string("Euler a"));
        QCOMPARE(s.scheduleType, std::string("Simple"));
        QCOMPARE(s.prompt, std::string("a fox"));
        QCOMPARE(s.negativePrompt, std::string("ugly"));
        QCOMPARE(s.height, 768);
        QCOMPARE(info.modelName, std::string("v1-5.safetensors"));
        QVERIFY(!s.hires.enabled);
    }

    void comfyUiOddities() {
        // Advanced sampler, numeric link ids, a denoise below 1, an unknown sampler, a hostile model name.
        const auto info = readComfyUiPrompt(R"({"1": {"class_type": "KSamplerAdvanced", "inputs": {"noise_seed": 7,
            "steps": 12, "cfg": 4.5, "sampler_name": "res_multistep", "scheduler": "normal", "denoise": 0.6,
            "positive": [2, 0], "negative": ["3", 0]}},
            "2": {"class_type": "CLIPTextEncodeSDXL", "inputs": {"text_g": "a fox", "text_l": "a fox"}},
            "3": {"class_type": "CLIPTextEncode", "inputs": {"text": ["4", 0]}},
            "4": {"class_type": "PrimitiveString", "inputs": {"value": "blur"}},
            "5": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "..\\..\\secret\\.."}},
            "6": {"class_type": "KSampler", "inputs": {"seed": 1}}})");
        QCOMPARE(info.settings.seed, int64_t(7));
        QCOMPARE(info.settings.steps, 12);
        QCOMPARE(info.settings.strength, 0.6);
        QCOMPARE(info.settings.prompt, std::string("a fox"));
        QCOMPARE(info.settings.negativePrompt, std::string("blur"));
        // A sampler we lack: the nearest, said plainly (a restore never fails for one field).
        QCOMPARE(info.settings.sampler, std::string("DPM++ 2M"));
        QVERIFY(anyWarningContains(info, "sampler 'res_multistep' is not one DiffusionDesk has: restored as 'DPM++ 2M'"));
        QVERIFY(anyWarningContains(info, "no image output leads to a sampler"));
        QCOMPARE(info.modelName, std::string());
        QVERIFY(anyWarningContains(info, "not a safe file name"));

        // A cycle of links must end.
        const auto loop = readComfyUiPrompt(R"({"1": {"class_type": "KSampler", "inputs": {"positive": ["2", 0]}},
            "2": {"class_type": "ConditioningCombine", "inputs": {"conditioning_1": ["2", 0]}}})");
        QCOMPARE(loop.settings.prompt, std::string());
        QVERIFY_THROWS_EXCEPTION(MetadataError, readComfyUiPrompt("[1, 2]"));
        QVERIFY_THROWS_EXCEPTION(MetadataError, readComfyUiPrompt("{\"3\": "));
        QVERIFY(anyWarningContains(readComfyUiPrompt("{}"), "no KSampler"));
        // Deep nesting is refused before nlohmann's recursive code sees it; inside strings brackets do not count.
        QVERIFY_THROWS_EXCEPTION(MetadataError, readComfyUiPrompt("{\"a\": " + std::string(100000, '[')));
        QVERIFY_THROWS_EXCEPTION(MetadataError, readInvokeAiMetadata("{\"loras\": " + std::string(65, '[') + std::string(65, ']') + "}"));
        QCOMPARE(readInvokeAiMetadata("{\"positive_prompt\": \"" + std::string(500, '[') + "\"}").settings.prompt, std::string(500, '['));
    }

    void readsInvokeAiMetadata() {
        const auto info = readInvokeAiMetadata(kInvoke);
        QCOMPARE(info.format, std::string("invokeai"));
        QCOMPARE(info.settings.prompt, std::string("landscape"));
        QCOMPARE(info.settings.negativePrompt, std::string("low quality"));
        QCOMPARE(info.settings.width, 768);
        QCOMPARE(info.settings.height, 432);
        QCOMPARE(info.settings.seed, int64_t(356120443));
        QCOMPARE(info.settings.cfgScale, 7.5);
        QCOMPARE(info.settings.steps, 50);
        QCOMPARE(info.settings.sampler, std::string("DPM++ 2M Karras"));  // InvokeAI 3 samples with diffusers: so do we
        QCOMPARE(info.settings.scheduleType, std::string());
        QCOMPARE(info.settings.clipSkip, 2);  // InvokeAI counts skipped layers; A1111 counts from 1
        QCOMPARE(info.modelName, std::string("amixx_3Prunedfp16"));
        QCOMPARE(info.version, std::string("3.3.0post3"));
        QVERIFY(info.warnings.empty());

        const auto v5 = readInvokeAiMetadata(R"({"positive_prompt": "x", "scheduler": "euler_a", "rand_device": "cuda",
            "model": {"key": "k", "hash": "blake3:abcd", "name": "/abs/path/juggernaut", "base": "sdxl"}})");
        QCOMPARE(v5.settings.sampler, std::string("Euler a"));
        QCOMPARE(v5.modelName, std::string("juggernaut"));
        QVERIFY(anyWarningContains(v5, "cuda noise"));
        QVERIFY_THROWS_EXCEPTION(MetadataError, readInvokeAiMetadata("not json"));
    }

    void picksTheRightReader() {
        QVERIFY(!readGenerationInfo({}).has_value());
        QVERIFY(!readGenerationInfo({{"Software", "GIMP"}}).has_value());

        const std::string a1111 = "p\nSteps: 20, Sampler: Euler, CFG scale: 7, Seed: 1, Size: 512x512";
        QCOMPARE(readGenerationInfo({{"parameters", a1111}, {"prompt", kComfy}})->format, std::string("a1111"));
        QCOMPARE(readGenerationInfo({{"prompt", kComfy}, {"workflow", "{}"}})->format, std::string("comfyui"));
        QCOMPARE(readGenerationInfo({{"invokeai_metadata", kInvoke}})->format, std::string("invokeai"));

        Sidecar sc;
        sc.settings.prompt = "from the sidecar";
        sc.settings.model = "/home/me/models/m.safetensors";
        const auto dd = readGenerationInfo({{"parameters", a1111}, {kSidecarPngKey, writeSidecar(sc)}});
        QCOMPARE(dd->format, std::string("diffusiondesk"));
        QCOMPARE(dd->settings.prompt, std::string("from the sidecar"));
        QVERIFY(dd->settings.model.empty());

        // A broken best chunk falls back to the next one, with a warning; all broken: an error naming each.
        const auto fallback = readGenerationInfo({{kSidecarPngKey, "{\"schema\": \"other\"}"}, {"parameters", a1111}});
        QCOMPARE(fallback->format, std::string("a1111"));
        QVERIFY(anyWarningContains(*fallback, "not a DiffusionDesk sidecar"));
        QVERIFY_THROWS_EXCEPTION(MetadataError, readGenerationInfo({{"parameters", "\xff"}, {"prompt", "[]"}}));
        QVERIFY_THROWS_EXCEPTION(MetadataError, readGenerationInfo({{"prompt", std::string(kMaxMetadataText + 1, ' ')}}));
        // JSON in "parameters" is Fooocus' own scheme: read, not refused.
        const auto fooocus = readGenerationInfo({{"parameters", "{\"prompt\": \"fooocus\", \"steps\": 30}"}});
        QCOMPARE(fooocus->format, std::string("fooocus"));
        QCOMPARE(fooocus->settings.steps, 30);
        QVERIFY_THROWS_EXCEPTION(MetadataError, readGenerationInfo({{"parameters", "{\"prompt\": "}}));
    }

    void modelNamesAreBareFileNames() {
        const std::pair<const char*, const char*> table[] = {
            {"v1-5.safetensors", "v1-5.safetensors"}, {"SDXL/juggernaut.safetensors", "juggernaut.safetensors"},
            {"C:\\models\\a.ckpt", "a.ckpt"}, {"/etc/passwd", "passwd"}, {"..", ""}, {"a/..", ""}, {"x..y", ""},
            {"C:evil", ""}, {"", ""}, {"models/", ""}, {"bad\nname", ""}, {"demo:tiny-sd1", "demo:tiny-sd1"},
            {"  spaced.safetensors ", "spaced.safetensors"}};
        for (const auto& [in, want] : table) QVERIFY2(safeModelName(in) == want, in);
    }
};

QTEST_GUILESS_MAIN(TestGenerationInfo)
#include "test_generation_info.moc"
