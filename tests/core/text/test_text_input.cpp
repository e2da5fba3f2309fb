// What the text encoders see of a run (core/text/text_input): the prompt without its LoRA tags, the negative only
// under CFG, and the check the window makes before predicting a run's memory: which changes of the settings make
// the engine encode the prompts again.
#include "core/text/text_input.h"

#include <QtTest>

using namespace dd;

namespace {

api::GenerationSettings base() {
    api::GenerationSettings s;
    s.model = "model.safetensors";
    s.prompt = "a red fox <lora:ink:0.8> in snow";
    s.negativePrompt = "blurry";
    s.cfgScale = 7;
    return s;
}

} // namespace

class TestTextInput : public QObject {
    Q_OBJECT

private slots:
    void theInputIsThePromptWithoutItsTags() {
        auto s = base();
        const auto in = text::textInputOf(s);
        QVERIFY2(in.prompt.find("<lora") == std::string::npos && in.prompt.find("a red fox") == 0, in.prompt.c_str());
        QVERIFY(in.prompt.find("in snow") != std::string::npos);
        QCOMPARE(in.negative, std::optional<std::string>("blurry"));
        s.cfgScale = 1;  // no guidance: no negative side is encoded
        QVERIFY(!text::textInputOf(s).negative);
    }

    void onlyWhatTheEncodersSeeCounts() {
        const auto a = base();
        auto same = a;
        same.seed = 99;
        same.steps = 5;
        same.width = 768;
        same.sampler = "DDIM";
        same.cfgScale = 4;
        same.plan.unet = api::Precision::FP16;
        QVERIFY(text::sameTextEncoding(a, same));
        // A finished run's settings list the prompt's LoRAs too, with their hashes: the same encoding.
        auto result = a;
        result.loras.push_back({"ink", 1.0, 0.8, "abcdef123456", true});
        QVERIFY(text::sameTextEncoding(a, result));

        auto change = [&](auto edit) {
            auto b = a;
            edit(b);
            return !text::sameTextEncoding(a, b);
        };
        QVERIFY(change([](auto& b) { b.prompt = "a red fox <lora:ink:0.8> in rain"; }));
        QVERIFY(change([](auto& b) { b.prompt = "a red fox <lora:ink:0.5> in snow"; }));  // the tag's text-encoder weight
        QVERIFY(change([](auto& b) { b.negativePrompt = "sharp"; }));
        QVERIFY(change([](auto& b) { b.cfgScale = 1; }));
        QVERIFY(change([](auto& b) { b.clipSkip = 2; }));
        QVERIFY(change([](auto& b) { b.emphasis = "No norm"; }));
        QVERIFY(change([](auto& b) { b.promptSyntax = "reference"; }));
        QVERIFY(change([](auto& b) { b.model = "other.safetensors"; }));
        QVERIFY(change([](auto& b) { b.plan.textEncoder = api::Precision::FP16; }));
        QVERIFY(change([](auto& b) { b.loras.push_back({"style", 1.0, 1.0, "", false}); }));
        QVERIFY(change([](auto& b) { b.loraMode = "side"; }));
        QVERIFY(change([](auto& b) { b.prompt = "a red fox <lora:ink:oops> in snow"; }));  // malformed: encode again
    }
};

QTEST_GUILESS_MAIN(TestTextInput)
#include "test_text_input.moc"
