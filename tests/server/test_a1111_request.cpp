// A1111 API request bodies read into settings: webuiapi's full default payload reads without a warning, each bad
// field is a FieldError naming it (HTTP 422), A1111's arithmetic (floored sizes, one-sided hires resize) holds.
#include "server/a1111_request.h"
#include "server/a1111_response.h"
#include "server/base64.h"

#include <QtTest>
#include <nlohmann/json.hpp>

using dd::server::FieldError;
using nlohmann::json;

namespace {

// What webuiapi 0.9.17's txt2img() sends with its defaults (sampler "Euler a", scheduler "automatic", steps 20).
json webuiapiDefaults() {
    return json::parse(R"({"enable_hr": false, "denoising_strength": 0.7, "firstphase_width": 0, "firstphase_height": 0,
        "hr_scale": 2, "hr_upscaler": "Latent", "hr_second_pass_steps": 0, "hr_resize_x": 0, "hr_resize_y": 0,
        "hr_checkpoint_name": null, "hr_sampler_name": null, "hr_scheduler": null, "hr_prompt": "", "hr_negative_prompt": "",
        "prompt": "a fox", "styles": [], "seed": -1, "subseed": -1, "subseed_strength": 0.0, "seed_resize_from_h": 0,
        "seed_resize_from_w": 0, "batch_size": 1, "n_iter": 1, "steps": 20, "cfg_scale": 7.0, "width": 512, "height": 512,
        "restore_faces": false, "tiling": false, "do_not_save_samples": false, "do_not_save_grid": false,
        "negative_prompt": "", "eta": 1.0, "s_churn": 0, "s_tmax": 0, "s_tmin": 0, "s_noise": 1, "override_settings": {},
        "override_settings_restore_afterwards": true, "sampler_name": "Euler a", "scheduler": "automatic",
        "sampler_index": "Euler a", "script_name": null, "script_args": [], "send_images": true, "save_images": false,
        "alwayson_scripts": {}})");
}

QString fieldOf(const json& body, bool img2img = false) {
    try {
        img2img ? dd::server::readImg2Img(body) : dd::server::readTxt2Img(body);
    } catch (const FieldError& e) {
        return QString::fromStdString(e.field());
    }
    return {};
}

} // namespace

class TestA1111Request : public QObject {
    Q_OBJECT
private slots:
    void webuiapiDefaultsReadWithoutWarnings() {
        const auto run = dd::server::readTxt2Img(webuiapiDefaults());
        QVERIFY2(run.warnings.empty(), run.warnings.empty() ? "" : run.warnings.front().c_str());
        QCOMPARE(run.settings.prompt, std::string("a fox"));
        QCOMPARE(run.settings.steps, 20);
        QCOMPARE(run.settings.sampler, std::string("Euler a"));
        QVERIFY(run.settings.seed >= 0 && run.settings.seed < 4294967294);  // -1: drawn as A1111 draws it
        QVERIFY(!run.settings.hires.enabled);
    }

    // As A1111 runs them: k-diffusion's sampler over the schedule asked for.
    void aSamplerRunsOverItsSchedule() {
        json body = webuiapiDefaults();
        body["sampler_name"] = "DPM++ 2M";
        body["scheduler"] = "karras";
        auto s = dd::server::readTxt2Img(body).settings;
        QCOMPARE(s.sampler + " / " + s.scheduleType, std::string("DPM++ 2M / Karras"));
        body["scheduler"] = "automatic";  // A1111 1.9+: DPM++ 2M's own schedule (Karras), when it runs
        s = dd::server::readTxt2Img(body).settings;
        QCOMPARE(s.sampler + " / " + s.scheduleType, std::string("DPM++ 2M / Automatic"));
        body["sampler_name"] = "DPM++ 3M SDE", body["scheduler"] = "sgm_uniform";
        s = dd::server::readTxt2Img(body).settings;
        QCOMPARE(s.sampler + " / " + s.scheduleType, std::string("DPM++ 3M SDE / SGM Uniform"));
        body["scheduler"] = "align_your_steps";  // one we lack: the sampler's own, said
        const auto run = dd::server::readTxt2Img(body);
        QCOMPARE(run.settings.scheduleType, std::string("Automatic"));
        QVERIFY(!run.warnings.empty());
    }

    // A1111's variation fields: used, not ignored; -1 draws a variation seed, a one-sided resize is none.
    void variationFieldsAreRead() {
        json body = webuiapiDefaults();
        body["subseed"] = 77, body["subseed_strength"] = 0.4, body["seed_resize_from_w"] = 640, body["seed_resize_from_h"] = 448;
        auto run = dd::server::readTxt2Img(body);
        QVERIFY(run.warnings.empty());
        QCOMPARE(run.settings.variation, (dd::api::VariationSetting{77, 0.4, 640, 448}));
        body["subseed"] = -1, body["seed_resize_from_h"] = -1;
        run = dd::server::readTxt2Img(body);
        QVERIFY(run.settings.variation.seed >= 0);
        QVERIFY(!run.settings.variation.resizes());
        QCOMPARE(fieldOf({{"subseed_strength", 2}}), QString("subseed_strength"));
        QCOMPARE(fieldOf({{"seed_resize_from_w", 100000}}), QString("seed_resize_from_w"));
    }

    void badFieldsNameThemselves() {
        QCOMPARE(fieldOf({{"steps", "many"}}), QString("steps"));
        QCOMPARE(fieldOf({{"steps", 0}}), QString("steps"));
        QCOMPARE(fieldOf({{"cfg_scale", "high"}}), QString("cfg_scale"));
        QCOMPARE(fieldOf({{"sampler_name", "Nope"}}), QString("sampler_name"));
        QCOMPARE(fieldOf({{"width", 100000}}), QString("width"));
        QCOMPARE(fieldOf({{"override_settings", {{"CLIP_stop_at_last_layers", 99}}}}), QString("override_settings.CLIP_stop_at_last_layers"));
        QCOMPARE(fieldOf(json::array()), QString("__root__"));
        QCOMPARE(fieldOf({{"prompt", "x"}}, true), QString("init_images"));
        QCOMPARE(fieldOf({{"init_images", "not a list"}}, true), QString("init_images"));
        QCOMPARE(fieldOf({{"init_images", {"x"}}, {"inpainting_fill", 7}}, true), QString("inpainting_fill"));
        const auto body = dd::server::validationError("override_settings.sd_model_checkpoint", "no model", "value_error");
        QCOMPARE(body["detail"][0]["loc"], json({"body", "override_settings", "sd_model_checkpoint"}));
    }

    void a1111Arithmetic() {
        json body = webuiapiDefaults();
        body["width"] = 500, body["height"] = 300;  // A1111 floors the latent size
        auto run = dd::server::readTxt2Img(body);
        QCOMPARE(run.settings.width, 496);
        QCOMPARE(run.settings.height, 296);
        body["enable_hr"] = true, body["hr_resize_x"] = 992;  // one side given: the aspect ratio is kept
        run = dd::server::readTxt2Img(body);
        QCOMPARE(run.settings.hires.resizeWidth, 992);
        QCOMPARE(run.settings.hires.resizeHeight, int(992 / (496.0 / 296)));
        QCOMPARE(run.settings.hires.denoising, 0.7);
        body["override_settings"] = {{"sd_model_checkpoint", "sd15.safetensors [6ce0161689]"}, {"CLIP_stop_at_last_layers", 2}};
        body["n_iter"] = 3;
        run = dd::server::readTxt2Img(body);
        QCOMPARE(run.checkpoint, std::string("sd15.safetensors [6ce0161689]"));
        QCOMPARE(run.clipSkip, 2);
        QCOMPARE(run.iterations, 3);
    }

    void unsupportedValuesWarnAndDoNotRefuse() {
        json body = webuiapiDefaults();
        body["tiling"] = true;
        body["restore_faces"] = true;
        body["my_field"] = 1;
        const auto run = dd::server::readTxt2Img(body);
        QCOMPARE(int(run.warnings.size()), 3);
        json i2i = {{"init_images", {"a", "b"}}, {"mask", "m"}, {"inpainting_fill", 0}, {"inpaint_full_res", true}};
        const auto inpaint = dd::server::readImg2Img(i2i);
        QCOMPARE(inpaint.settings.inpaint.maskedContent, std::string("fill"));
        QCOMPARE(int(inpaint.warnings.size()), 1);  // the second init image
        QVERIFY(inpaint.settings.inpaint.onlyMasked);
        QCOMPARE(inpaint.settings.inpaint.maskedPadding, 32);
        i2i["inpaint_full_res_padding"] = 300;
        QVERIFY_THROWS_EXCEPTION(dd::server::FieldError, dd::server::readImg2Img(i2i));
        QCOMPARE(inpaint.initImages.size(), size_t(2));
    }

    void base64RoundTripsAndAcceptsDataUrls() {
        const std::string bytes("\x89PNG\r\n\x1a\n\0\xff", 10);
        const std::string text = dd::server::toBase64(bytes);
        QCOMPARE(dd::server::fromBase64(text), bytes);
        QCOMPARE(dd::server::fromBase64("data:image/png;base64," + text), bytes);
        std::string unpadded = text;
        while (!unpadded.empty() && unpadded.back() == '=') unpadded.pop_back();
        QCOMPARE(dd::server::fromBase64(unpadded), bytes);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, dd::server::fromBase64("!!!!"));
    }
};

QTEST_GUILESS_MAIN(TestA1111Request)
#include "test_a1111_request.moc"
