// UNet2DConditionModel parity against diffusers (fixtures from tests/parity/fixtures_unet.py): tiny SD1 / SD2 /
// SDXL models, scalar and per-sample fractional timesteps, an odd latent size, all attention backends, weight
// and config errors. test_unet_slow.cpp runs a full-size SD 1.5 UNet.
#include "core/io/checkpoint.h"
#include "core/io/model_error.h"
#include "core/io/safetensors.h"
#include "core/nn/cpu_kernels.h"
#include "core/nn/flash_attention.h"
#include "core/nn/load_weights.h"
#include "core/nn/unet.h"
#include "tests/common/test_program.h"

#include <QtTest>

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <filesystem>

namespace test_unet {  // the test program is a unity build: each file keeps its names

using namespace dd;
using dd::nn::AttentionBackend;
using dd::nn::AttentionOptions;

namespace {

const std::string kFixtures = DD_FIXTURES_DIR;

struct Loaded {
    io::Checkpoint ck;
    nn::UNet2DConditionModel unet{nullptr};
};

Loaded loadTiny(const std::string& family, AttentionOptions attention = {}) {
    Loaded l{io::loadCheckpoint(kFixtures + "/models/tiny-" + family), nullptr};
    l.unet = nn::UNet2DConditionModel(nn::UNetConfig::fromJson(l.ck.configs.at("unet")), attention);
    const auto unused = nn::loadWeights(*l.unet, l.ck.components.at("unet"), "unet");
    if (!unused.empty()) throw std::runtime_error("unused unet weight " + unused.front());
    l.unet->eval();
    return l;
}

io::TensorMap fixture(const std::string& name) {
    return io::SafetensorsFile::open(kFixtures + "/unet/" + name + ".safetensors")->all();
}

double maxAbs(const torch::Tensor& a, const torch::Tensor& b) {
    if (a.sizes() != b.sizes()) return std::numeric_limits<double>::infinity();
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

std::optional<nn::AddedCond> addedCond(const io::TensorMap& f) {
    if (!f.count("text_embeds")) return std::nullopt;
    return nn::AddedCond{f.at("text_embeds"), f.at("time_ids")};
}

QString errorOf(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const io::ModelFileError& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

// The fused attention kernel runs wherever the CPU has AVX2 + FMA unless turned off; the tests check it does.
bool flashKernelExpected() {
    const char* off = std::getenv("DD_FLASH_ATTENTION");
    if (off && std::string(off) == "0") return false;
#if defined(__x86_64__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

void addFamilies() {
    QTest::addColumn<QString>("family");
    for (const char* f : {"sd1", "sd2", "sdxl"}) QTest::newRow(f) << f;
}

} // namespace

class TestUnet : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        if (!std::filesystem::exists(kFixtures + "/unet/sd1.safetensors"))
            QSKIP("fixtures missing: run tests/parity/fixtures_models.py and fixtures_unet.py <fixtures dir>");
        torch::manual_seed(0);
    }

    void timestepEmbeddingMatchesDiffusers() {
        c10::InferenceMode guard;
        const auto f = fixture("sd1");
        const auto emb = nn::timestepEmbedding(f.at("timesteps"), f.at("time_embedding").size(1), true, 0);
        QVERIFY2(maxAbs(emb, f.at("time_embedding")) < 1e-6, "timestep embedding differs");
        // sd_reference.md §3.1 check values (float64, t = 981, 320 channels).
        const auto ref = nn::timestepEmbedding(torch::tensor({981}), 320, true, 0)[0];
        const double want[] = {0.679957, -0.798430, 0.578088, 0.733252, 0.602088, 0.815974};
        const int64_t at[] = {0, 1, 2, 160, 161, 162};
        for (int i = 0; i < 6; ++i) QVERIFY(std::abs(ref[at[i]].item<double>() - want[i]) < 2e-4);
    }

    void matchesDiffusers_data() { addFamilies(); }
    void matchesDiffusers() {
        QFETCH(QString, family);
        c10::InferenceMode guard;
        auto [ck, unet] = loadTiny(family.toStdString());
        const auto f = fixture(family.toStdString());
        const auto& ehs = f.at("encoder_hidden_states");
        const auto added = addedCond(f);
        const double scalar = maxAbs(unet->forward(f.at("sample"), 981.0, ehs, added), f.at("out_scalar"));
        const double vector = maxAbs(unet->forward(f.at("sample"), f.at("timesteps"), ehs, added), f.at("out_vector"));
        const double odd = maxAbs(unet->forward(f.at("sample_odd"), f.at("timesteps"), ehs, added), f.at("out_odd"));
        qInfo("%s max abs error: scalar t %.3g, [2] t %.3g, 17x13 latent %.3g", qPrintable(family), scalar, vector, odd);
        QVERIFY(scalar < 1e-4);
        QVERIFY(vector < 1e-4);
        QVERIFY(odd < 1e-4);
    }

    void backendsAgree_data() { addFamilies(); }
    void backendsAgree() {
        QFETCH(QString, family);
        c10::InferenceMode guard;
        auto [ck, unet] = loadTiny(family.toStdString());
        const auto f = fixture(family.toStdString());
        auto run = [&](AttentionOptions o) {
            unet->setAttention(o);
            return unet->forward(f.at("sample"), f.at("timesteps"), f.at("encoder_hidden_states"), addedCond(f));
        };
        const auto sdpa = run({AttentionBackend::Sdpa, 0});
        const std::pair<const char*, AttentionOptions> others[] = {
            {"classic", {AttentionBackend::Classic, 0}},
            {"sliced auto", {AttentionBackend::Sliced, 0}},
            {"sliced 1", {AttentionBackend::Sliced, 1}},
            {"sliced 3", {AttentionBackend::Sliced, 3}},
        };
        for (const auto& [name, o] : others) {
            const auto out = run(o);
            const double vsSdpa = maxAbs(out, sdpa), vsRef = maxAbs(out, f.at("out_vector"));
            qInfo("%s %s: vs SDPA %.3g, vs diffusers %.3g", qPrintable(family), name, vsSdpa, vsRef);
            QVERIFY2(vsSdpa < 1e-5 && vsRef < 1e-4, name);
        }
    }

    // No reference in bf16: checks that every dtype cast is in place (timestep embedding, added cond) and that
    // the result stays near the fp32 one.
    void runsInBFloat16_data() { addFamilies(); }
    void runsInBFloat16() {
        QFETCH(QString, family);
        c10::InferenceMode guard;
        const auto ck = io::loadCheckpoint(kFixtures + "/models/tiny-" + family.toStdString());
        nn::UNet2DConditionModel unet(nn::UNetConfig::fromJson(ck.configs.at("unet")));
        unet->to(torch::kBFloat16);
        nn::loadWeights(*unet, ck.components.at("unet"), "unet");
        const auto f = fixture(family.toStdString());
        auto added = addedCond(f);
        if (added) added->textEmbeds = added->textEmbeds.to(torch::kBFloat16);
        const auto out = unet->forward(f.at("sample").to(torch::kBFloat16), f.at("timesteps"),
                                       f.at("encoder_hidden_states").to(torch::kBFloat16), added);
        QCOMPARE(out.scalar_type(), torch::kBFloat16);
        const double err = maxAbs(out, f.at("out_vector"));
        qInfo("%s bf16 vs fp32 reference: max abs %.3g", qPrintable(family), err);
        QVERIFY(err < 0.1);
    }

    void upcastAttentionKeepsFp32Result() {
        c10::InferenceMode guard;
        const auto ck = io::loadCheckpoint(kFixtures + "/models/tiny-sd2");
        auto cfg = ck.configs.at("unet");
        cfg["upcast_attention"] = true;
        nn::UNet2DConditionModel unet(nn::UNetConfig::fromJson(cfg), AttentionOptions{AttentionBackend::Classic, 0});
        nn::loadWeights(*unet, ck.components.at("unet"), "unet");
        const auto f = fixture("sd2");
        const auto out = unet->forward(f.at("sample"), f.at("timesteps"), f.at("encoder_hidden_states"));
        QVERIFY(maxAbs(out, f.at("out_vector")) < 1e-4);
    }

    // The oneDNN linear and fused GEGLU (core/nn/cpu_kernels.h) against torch's own ops, in fp64 for the
    // reference: shapes of the UNet's layers, a non-contiguous input, no bias. The parity tests above run
    // whole networks through them; this one also fails if the fp32 CPU path quietly stopped using oneDNN.
    void onednnLinearMatchesTorch() {
        c10::InferenceMode guard;
        const auto x = torch::randn({2, 96, 64}), w = torch::randn({320, 64}) * 0.1, b = torch::randn({320});
        QVERIFY(nn::usesOnednnLinear(x, w));
        QVERIFY(!nn::usesOnednnLinear(x.to(torch::kBFloat16), w.to(torch::kBFloat16)));
        auto d = [](const torch::Tensor& t) { return t.defined() ? t.to(torch::kFloat64) : t; };
        for (const auto& [input, bias] : {std::pair{x, b}, {x.transpose(0, 1), b}, {x, torch::Tensor()}}) {
            const auto ref = torch::linear(d(input), d(w), d(bias));
            QVERIFY(maxAbs(nn::linear(input, w, bias), ref) < 1e-5);
            const auto parts = ref.chunk(2, -1);
            QVERIFY(maxAbs(nn::geglu(input, w, bias), parts[0] * torch::gelu(parts[1])) < 1e-5);
        }
        // Where oneDNN does not apply the same functions are torch's ops.
        const auto xb = x.to(torch::kBFloat16), wb = w.to(torch::kBFloat16), bb = b.to(torch::kBFloat16);
        QVERIFY(torch::equal(nn::linear(xb, wb, bb), torch::linear(xb, wb, bb)));
    }

    // NNPACK's Winograd for large 3×3 convolutions, banded past ~16 MB of input rows (here 3 bands, padding
    // added at the image's top and bottom only), against an fp64 reference; off in a WinogradConvScope it is
    // torch's convolution exactly.
    void winogradConvMatchesTorch() {
        c10::InferenceMode guard;
        const auto x = torch::randn({2, 256, 150, 256}), w = torch::randn({64, 256, 3, 3}) * 0.05, b = torch::randn({64});
        QVERIFY(nn::usesWinogradConv(x, w, {1, 1}, {1, 1}, 1));
        QVERIFY(!nn::usesWinogradConv(x.slice(2, 0, 16).slice(3, 0, 16).contiguous(), w, {1, 1}, {1, 1}, 1));  // small image
        QVERIFY(!nn::usesWinogradConv(x, w, {2, 2}, {1, 1}, 1));
        const auto ref = torch::conv2d(x.to(torch::kFloat64), w.to(torch::kFloat64), b.to(torch::kFloat64), 1, 1);
        const auto fast = nn::conv2d(x, w, b, {1, 1}, {1, 1}, {1, 1}, 1);
        const double err = maxAbs(fast, ref) / ref.abs().max().item<double>();
        qInfo("Winograd vs fp64: max abs / max %.3g", err);
        QVERIFY(err < 5e-5);
        QVERIFY(maxAbs(fast, ref) > 0);  // the fast path ran (direct convolution rounds within ~1e-7)
        const auto valid = nn::conv2d(x, w, b, {1, 1}, {0, 0}, {1, 1}, 1);
        QVERIFY(maxAbs(valid, torch::conv2d(x.to(torch::kFloat64), w.to(torch::kFloat64), b.to(torch::kFloat64))) /
                    ref.abs().max().item<double>() < 5e-5);
        const nn::WinogradConvScope off(false);
        QVERIFY(!nn::usesWinogradConv(x, w, {1, 1}, {1, 1}, 1));
        QVERIFY(torch::equal(nn::conv2d(x, w, b, {1, 1}, {1, 1}, {1, 1}, 1), torch::conv2d(x, w, b, 1, 1)));
    }

    // Small images (≤ 128 output pixels) go through im2col and oneDNN's matmul: within fp32 rounding of an fp64
    // reference, as torch's direct convolution is, for 3×3 and the stride-2 downsampler, with and without bias and
    // padding; 1×1 kernels and larger images stay torch's; off in a WinogradConvScope it is torch's exactly.
    void smallConvAsMatmulMatchesTorch() {
        c10::InferenceMode guard;
        const auto w = torch::randn({96, 64, 3, 3}) * 0.05, b = torch::randn({96});
        auto fp64 = [](const torch::Tensor& t) { return t.to(torch::kFloat64); };
        struct Case { std::vector<int64_t> shape; int64_t stride, padding; bool bias; };
        for (const auto& c : {Case{{2, 64, 8, 8}, 1, 1, true}, Case{{1, 64, 12, 8}, 1, 1, false},
                              Case{{2, 64, 16, 16}, 2, 1, true}, Case{{2, 64, 10, 10}, 1, 0, true}}) {
            const auto x = torch::randn(c.shape);
            const std::vector<int64_t> st{c.stride, c.stride}, pad{c.padding, c.padding};
            QVERIFY(nn::usesMatmulConv(x, w, st, pad, {1, 1}, 1));
            const auto bias = c.bias ? b : torch::Tensor();
            const auto ref = torch::conv2d(fp64(x), fp64(w), c.bias ? fp64(b) : torch::Tensor(), st, pad);
            const auto fast = nn::conv2d(x, w, bias, st, pad, {1, 1}, 1);
            QCOMPARE(fast.sizes(), ref.sizes());
            QVERIFY(fast.is_contiguous());
            const double scale = ref.abs().max().item<double>();
            const double direct = maxAbs(torch::conv2d(x, w, bias, st, pad), ref) / scale;
            const double err = maxAbs(fast, ref) / scale;
            qInfo("small conv %s vs fp64: matmul %.3g, direct %.3g", c10::str(x.sizes()).c_str(), err, direct);
            QVERIFY(err < 5e-6);  // fp32 rounding: both ~1e-6 here (Winograd ~1e-5)
        }
        const auto x = torch::randn({2, 64, 8, 8});
        QVERIFY(!nn::usesMatmulConv(x, torch::randn({96, 64, 1, 1}), {1, 1}, {0, 0}, {1, 1}, 1));   // 1×1
        QVERIFY(!nn::usesMatmulConv(torch::randn({2, 64, 16, 12}), w, {1, 1}, {1, 1}, {1, 1}, 1));  // 192 pixels
        QVERIFY(!nn::usesMatmulConv(x.to(torch::kBFloat16), w.to(torch::kBFloat16), {1, 1}, {1, 1}, {1, 1}, 1));
        const nn::WinogradConvScope off(false);
        QVERIFY(!nn::usesMatmulConv(x, w, {1, 1}, {1, 1}, {1, 1}, 1));
        QVERIFY(torch::equal(nn::conv2d(x, w, b, {1, 1}, {1, 1}, {1, 1}, 1), torch::conv2d(x, w, b, 1, 1)));
    }

    // Our fused kernel against torch's attention math in fp64: several key blocks with a ragged last panel, query
    // rows that do not fill a tile, head sizes from one register to the VAE's 512, strided rows (a fused QKV
    // projection's slices), and scores large enough that the online softmax must rescale.
    void flashAttentionMatchesTorchMath_data() {
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("queries");
        QTest::addColumn<int>("keys");
        QTest::addColumn<int>("heads");
        QTest::addColumn<int>("headDim");
        QTest::addColumn<double>("qScale");
        QTest::newRow("sd15 64² shape, ragged") << 2 << 97 << 300 << 2 << 40 << 1.0;
        QTest::newRow("one key") << 1 << 5 << 1 << 1 << 8 << 1.0;
        QTest::newRow("cross-attention 77") << 2 << 50 << 77 << 3 << 80 << 1.0;
        QTest::newRow("two key blocks + 1") << 1 << 13 << 513 << 1 << 64 << 1.0;
        QTest::newRow("d 160") << 1 << 7 << 17 << 2 << 160 << 1.0;
        QTest::newRow("d 512") << 1 << 6 << 16 << 1 << 512 << 1.0;
        QTest::newRow("peaky scores") << 1 << 31 << 600 << 2 << 40 << 12.0;
    }
    void flashAttentionMatchesTorchMath() {
        QFETCH(int, batch);
        QFETCH(int, queries);
        QFETCH(int, keys);
        QFETCH(int, heads);
        QFETCH(int, headDim);
        QFETCH(double, qScale);
        if (!flashKernelExpected()) QSKIP("this CPU has no AVX2 + FMA, or DD_FLASH_ATTENTION=0");
        c10::InferenceMode guard;
        const int64_t inner = int64_t(heads) * headDim;
        const auto qkv = torch::randn({batch, queries, 3 * inner});
        const auto kv = torch::randn({batch, keys, 2 * inner});
        const auto q = qkv.narrow(2, inner, inner) * qScale, k = kv.narrow(2, 0, inner), v = kv.narrow(2, inner, inner);
        QVERIFY(k.stride(1) == 2 * inner);  // strided rows reach the kernel as they are
        const auto out = nn::flashAttention(q, k, v, heads);
        QCOMPARE(out.sizes(), q.sizes());
        auto split = [&](const torch::Tensor& t) {
            return t.to(torch::kFloat64).view({batch, -1, heads, headDim}).transpose(1, 2);
        };
        const auto ref = std::get<0>(at::_scaled_dot_product_attention_math(split(q), split(k), split(v)))
                             .transpose(1, 2).reshape({batch, queries, inner});
        // The bar: torch's own fp32 kernel on the same input (peaky scores carry more fp32 rounding for both).
        const auto torchFp32 = at::scaled_dot_product_attention(split(q).to(torch::kFloat32), split(k).to(torch::kFloat32),
                                                                split(v).to(torch::kFloat32))
                                   .transpose(1, 2).reshape({batch, queries, inner});
        const double err = (out.to(torch::kFloat64) - ref).abs().max().item<double>();
        const double torchErr = (torchFp32.to(torch::kFloat64) - ref).abs().max().item<double>();
        QVERIFY2(err < 2 * torchErr + 2e-6,
                 qPrintable(QString("max |error| vs fp64 math: ours %1, torch's fp32 SDPA %2").arg(err).arg(torchErr)));
    }

    // Where attend()'s Sdpa backend takes the fused kernel, and that it then returns exactly its result.
    void flashAttentionDispatch() {
        if (!flashKernelExpected()) QSKIP("this CPU has no AVX2 + FMA, or DD_FLASH_ATTENTION=0");
        c10::InferenceMode guard;
        const auto q = torch::randn({2, 70, 320}), k = torch::randn({2, 90, 320}), v = torch::randn({2, 90, 320});
        QVERIFY(nn::flashAttentionApplies(q, k, v, 8));  // d 40
        const auto viaAttend = nn::attend(q, k, v, 8, {AttentionBackend::Sdpa, 0}, false, false);
        QVERIFY(torch::equal(viaAttend, nn::flashAttention(q, k, v, 8)));
        QVERIFY(maxAbs(viaAttend, nn::attend(q, k, v, 8, {AttentionBackend::SdpaMath, 0}, false, false)) < 4e-6);
        const auto longKeys = torch::randn({2, 200, 320});
        QVERIFY(nn::flashAttentionApplies(q, longKeys, longKeys, 8));   // d 40: any number of keys
        QVERIFY(nn::flashAttentionApplies(q, k, v, 4));                  // d 80, at most 128 keys
        QVERIFY(!nn::flashAttentionApplies(q, longKeys, longKeys, 4));  // d 80 over 200 keys: torch's is as fast
        QVERIFY(!nn::flashAttentionApplies(q, k, v, 32));                // d 10: not whole registers
        QVERIFY(!nn::flashAttentionApplies(q.to(torch::kFloat64), k, v, 8));
        QVERIFY(!nn::flashAttentionApplies(q.to(torch::kBFloat16), k.to(torch::kBFloat16), v.to(torch::kBFloat16), 8));
        QVERIFY(!nn::flashAttentionApplies(q.transpose(0, 1).contiguous().transpose(0, 1).transpose(1, 2).contiguous()
                                               .transpose(1, 2), k, v, 8));  // last dimension not unit-stride
    }

    void flashAttentionLeavesAutogradToTorch() {
        if (!flashKernelExpected()) QSKIP("this CPU has no AVX2 + FMA, or DD_FLASH_ATTENTION=0");
        const auto q = torch::randn({1, 8, 40}, torch::requires_grad()), k = torch::randn({1, 8, 40});
        QVERIFY(!nn::flashAttentionApplies(q, k, k, 1));
        QVERIFY(nn::attend(q, k, k, 1, {AttentionBackend::Sdpa, 0}, false, false).requires_grad());
    }

    void classicUpcastScoresInFp32() {
        c10::InferenceMode guard;
        // bf16 inputs: the upcast path computes scores and softmax in fp32, so it lands closer to the fp32 result.
        const auto q = torch::randn({2, 64, 32}), k = torch::randn({2, 77, 32}) * 4, v = torch::randn({2, 77, 32});
        const auto ref = nn::attend(q, k, v, 4, {AttentionBackend::Classic, 0}, false, false);
        auto bf = [](const torch::Tensor& t) { return t.to(torch::kBFloat16); };
        const auto plain = nn::attend(bf(q), bf(k), bf(v), 4, {AttentionBackend::Classic, 0}, false, false);
        const auto up = nn::attend(bf(q), bf(k), bf(v), 4, {AttentionBackend::Sliced, 3}, true, true);
        QCOMPARE(up.scalar_type(), torch::kBFloat16);
        QVERIFY(maxAbs(up, ref) <= maxAbs(plain, ref));
    }

    void missingWeightIsNamed() {
        const auto ck = io::loadCheckpoint(kFixtures + "/models/tiny-sd1");
        auto weights = ck.components.at("unet");
        const std::string key = "down_blocks.1.attentions.0.transformer_blocks.0.attn2.to_k.weight";
        weights.erase(key);
        nn::UNet2DConditionModel unet(nn::UNetConfig::fromJson(ck.configs.at("unet")));
        const QString msg = errorOf([&] { nn::loadWeights(*unet, weights, "unet"); });
        QVERIFY2(msg.contains(QString::fromStdString(key)) && msg.contains("[64, 32]"), qPrintable(msg));
    }

    void wrongShapeIsNamed() {
        const auto ck = io::loadCheckpoint(kFixtures + "/models/tiny-sdxl");
        auto weights = ck.components.at("unet");
        weights["add_embedding.linear_1.weight"] = torch::zeros({128, 81});
        nn::UNet2DConditionModel unet(nn::UNetConfig::fromJson(ck.configs.at("unet")));
        const QString msg = errorOf([&] { nn::loadWeights(*unet, weights, "unet"); });
        QVERIFY2(msg.contains("add_embedding.linear_1.weight") && msg.contains("[128, 81]") && msg.contains("[128, 80]"),
                 qPrintable(msg));
    }

    void unsupportedConfigIsRefused() {
        const auto ck = io::loadCheckpoint(kFixtures + "/models/tiny-sd1");
        auto cfg = ck.configs.at("unet");
        cfg["class_embed_type"] = "timestep";
        QVERIFY(errorOf([&] { nn::UNetConfig::fromJson(cfg); }).contains("class_embed_type"));
        cfg = ck.configs.at("unet");
        cfg["attention_head_dim"] = nlohmann::json::array({8, 8, 8});
        QVERIFY(errorOf([&] { nn::UNetConfig::fromJson(cfg); }).contains("attention_head_dim"));
        cfg = ck.configs.at("unet");
        cfg["attention_head_dim"] = 5;
        QVERIFY(errorOf([&] { nn::UNetConfig::fromJson(cfg); }).contains("not divisible"));
    }

    void sdxlNeedsAddedCond() {
        c10::InferenceMode guard;
        auto [ck, unet] = loadTiny("sdxl");
        const auto f = fixture("sdxl");
        QVERIFY_THROWS_EXCEPTION(c10::Error, unet->forward(f.at("sample"), 981.0, f.at("encoder_hidden_states")));
    }
};

DD_REGISTER_TEST(TestUnet)

} // namespace test_unet
#include "test_unet.moc"
