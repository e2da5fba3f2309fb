// Offloading and fp8 layerwise storage, proven on the CPU: the compute side gets its own ledger
// label ("compute"), so the ledger shows what each mode keeps there, and every copy really is made (the
// parameters are NaN placeholders between uses). Networks: the demo model (diffusers' tiny SD test UNet,
// VAE and a full-vocabulary CLIP, seeded random weights); the SDXL case uses the tiny SDXL fixture.
#include "core/memory/offload.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/engine_test_hooks.h"
#include "core/pipeline/sd_model.h"
#include "tests/common/test_program.h"

#include "tests/common/demo_run.h"

#include <torch/torch.h>

#include <QtTest>

#include <algorithm>
#include <filesystem>

namespace test_offload {  // the test program is a unity build: each file keeps its names

using namespace dd;
using api::Offload;

namespace {

struct UnetInputs {
    torch::Tensor sample, context;
};

UnetInputs unetInputs() {
    torch::manual_seed(7);
    return {torch::randn({2, 4, 16, 16}), torch::randn({2, 77, 32})};
}

torch::Tensor runUnet(pipeline::SdModel& m, memory::NetworkOffload* offload, const UnetInputs& in) {
    c10::InferenceMode inference;
    const memory::NetworkUse use(offload);
    return m.unet->forward(in.sample.to(m.placement.unet), 500.0, in.context.to(m.placement.unet)).to(torch::kFloat32);
}

std::unique_ptr<pipeline::SdModel> demo(torch::ScalarType unetDtype = torch::kFloat32) {
    pipeline::Placement p;
    p.unet = unetDtype;
    return pipeline::makeDemoModel(p);
}

int64_t weightBytes(const torch::nn::Module& net) {
    int64_t n = 0;
    for (const auto& p : net.parameters()) n += p.numel() * int64_t(p.element_size());
    return n;
}

memory::OffloadConfig onCompute(Offload mode, int groupBlocks = 1) {
    memory::OffloadConfig c;
    c.mode = mode;
    c.groupBlocks = groupBlocks;
    c.homeLabel = "cpu";
    c.computeLabel = "compute";
    return c;
}

// What diffusers' enable_layerwise_casting stores in fp8 (conv, linear, embedding; names with "norm"
// skipped): the UNet's norms are GroupNorm/LayerNorm, so every norm weight stays bf16. {fp8 bytes, bf16 bytes}.
std::pair<int64_t, int64_t> fp8Bytes(torch::nn::Module& unet) {
    int64_t fp8 = 0, bf16 = 0;
    for (const auto& item : unet.named_modules()) {
        const bool norm = dynamic_cast<torch::nn::GroupNormImpl*>(item.value().get()) ||
                          dynamic_cast<torch::nn::LayerNormImpl*>(item.value().get());
        for (const auto& p : item.value()->parameters(false)) {
            fp8 += p.numel() * (norm ? 2 : 1);
            bf16 += p.numel() * 2;
        }
    }
    return {fp8, bf16};
}

// Disk offload files mapped into this process (their names are unlinked: "(deleted)" in /proc/self/maps).
int mappedOffloadFiles() {
    QFile maps("/proc/self/maps");
    if (!maps.open(QIODevice::ReadOnly)) return -1;
    int n = 0;
    for (const auto& line : maps.readAll().split('\n'))
        if (line.contains("diffusiondesk-offload-") && line.contains("(deleted)")) ++n;
    return n;
}

bool isPlaceholder(const torch::Tensor& w) { return w.isnan().all().item<bool>(); }

double relativeError(const torch::Tensor& a, const torch::Tensor& b) {
    return ((a - b).norm() / b.norm()).item<double>();
}

api::GenerationSettings base() {
    auto s = test::demoSettings();
    s.seed = 11;
    s.sampler = "Euler a";
    return s;
}

const auto generate = test::generateOnce;

} // namespace

class TestOffload : public QObject {
    Q_OBJECT

private slots:
    void sequentialKeepsOneLeafOnTheComputeDevice() {
        auto m = demo();
        const auto in = unetInputs();
        const auto plain = runUnet(*m, nullptr, in);
        const int64_t total = weightBytes(*m->unet);
        memory::ResidencyLedger ledger;
        memory::NetworkOffload offload(*m->unet, onCompute(Offload::Sequential), ledger);
        // Between uses the weights are NaN placeholders: nothing can use them without the guard.
        QVERIFY(isPlaceholder(m->unet->conv_in->weight));
        QCOMPARE(ledger.resident("cpu"), total);
        QCOMPARE(ledger.resident("compute"), int64_t(0));
        ledger.resetPeaks();
        const auto out = runUnet(*m, &offload, in);
        QVERIFY(torch::equal(out, plain));
        // Exactly the largest leaf at a time, never two.
        qInfo("sequential: compute peak %lld bytes of %lld", (long long)ledger.peak("compute"), (long long)total);
        QCOMPARE(ledger.peak("compute"), offload.largestLeafComputeBytes());
        QVERIFY(ledger.peak("compute") < total / 4);
        QCOMPARE(ledger.resident("compute"), int64_t(0));
    }

    void modelOffloadMovesTheWholeNetworkForOneUse() {
        auto m = demo();
        const auto in = unetInputs();
        const auto plain = runUnet(*m, nullptr, in);
        memory::ResidencyLedger ledger;
        memory::NetworkOffload offload(*m->unet, onCompute(Offload::Model), ledger);
        const auto out = runUnet(*m, &offload, in);
        QVERIFY(torch::equal(out, plain));
        QCOMPARE(ledger.peak("compute"), offload.storedBytes());
        QCOMPARE(ledger.resident("compute"), int64_t(0));
    }

    void groupOffloadKeepsAtMostTwoGroups_data() {
        QTest::addColumn<int>("blocks");
        QTest::newRow("1 block per group") << 1;
        QTest::newRow("2 blocks per group") << 2;
        QTest::newRow("leaf level") << 0;
    }
    void groupOffloadKeepsAtMostTwoGroups() {
        QFETCH(int, blocks);
        auto m = demo();
        const auto in = unetInputs();
        const auto plain = runUnet(*m, nullptr, in);
        const int64_t total = weightBytes(*m->unet);
        memory::ResidencyLedger ledger;
        memory::NetworkOffload offload(*m->unet, onCompute(Offload::Group, blocks), ledger);
        QVERIFY(offload.groupCount() > 3);
        // The first use learns the order of the groups, the second prefetches along it.
        for (int use = 0; use < 2; ++use) {
            ledger.resetPeaks();
            const auto out = runUnet(*m, &offload, in);
            QVERIFY(torch::equal(out, plain));
            qInfo("group (%d): use %d, compute peak %lld, bound %lld, whole UNet %lld", blocks, use,
                  (long long)ledger.peak("compute"), (long long)offload.groupBound(), (long long)total);
            QVERIFY(ledger.peak("compute") <= offload.groupBound());
            QVERIFY(ledger.peak("compute") < total);
            QCOMPARE(ledger.resident("compute"), int64_t(0));
        }
    }

    void fp8StorageHalvesTheWeights_data() {
        QTest::addColumn<QString>("format");
        QTest::addColumn<double>("tolerance");
        // e4m3fn keeps 3 mantissa bits (relative rounding up to 2^-4), e5m2 only 2 (2^-3): the tolerances
        // are the relative L2 error of the demo UNet's output (random weights, random inputs) against its
        // bf16 run; measured 0.103 and 0.176.
        QTest::newRow("e4m3fn") << "e4m3fn" << 0.15;
        QTest::newRow("e5m2") << "e5m2" << 0.25;
    }
    void fp8StorageHalvesTheWeights() {
        QFETCH(QString, format);
        QFETCH(double, tolerance);
        const auto fp8 = *memory::fp8DtypeOf(format.toStdString());
        const auto in = unetInputs();
        auto bf16 = demo(torch::kBFloat16);
        const auto plain = runUnet(*bf16, nullptr, in);

        auto m = demo(torch::kBFloat16);
        const auto [expected, bf16Bytes] = fp8Bytes(*m->unet);
        memory::ResidencyLedger ledger;
        memory::OffloadConfig c;
        c.computeDtype = torch::kBFloat16;
        c.fp8 = fp8;
        memory::NetworkOffload offload(*m->unet, c, ledger);
        qInfo("%s: stored %lld bytes, bf16 %lld", qPrintable(format), (long long)ledger.resident("cpu"), (long long)bf16Bytes);
        QCOMPARE(ledger.resident("cpu"), expected);
        QVERIFY(ledger.resident("cpu") < bf16Bytes * 55 / 100);
        // Norm layers keep their weights; a conv's are fp8 between uses.
        QCOMPARE(m->unet->conv_norm_out->weight.scalar_type(), torch::kBFloat16);
        QVERIFY(!isPlaceholder(m->unet->conv_norm_out->weight));
        QVERIFY(isPlaceholder(m->unet->conv_in->weight));

        ledger.resetPeaks();
        const auto out = runUnet(*m, &offload, in);
        const double err = relativeError(out, plain);
        qInfo("%s vs bf16: relative L2 error %.4f (tolerance %.2f); peak %lld bytes", qPrintable(format), err, tolerance,
              (long long)ledger.peak("cpu"));
        QVERIFY2(err < tolerance, qPrintable(QString::number(err)));
        QVERIFY(err > 0);  // the weights really were rounded
        // One leaf's upcast copy at a time on top of the stored bytes.
        QVERIFY(ledger.peak("cpu") <= expected + offload.largestLeafComputeBytes());
        QCOMPARE(ledger.resident("cpu"), expected);

        // Per-layer upcasting is exactly "round each weight through fp8, compute in bf16".
        auto rounded = demo(torch::kBFloat16);
        {
            torch::NoGradGuard noGrad;
            for (const auto& item : rounded->unet->named_modules())
                if (memory::castsToFp8(item.key(), *item.value()))
                    for (auto& p : item.value()->parameters(false)) p.set_data(p.to(fp8).to(torch::kBFloat16));
        }
        QVERIFY(torch::equal(out, runUnet(*rounded, nullptr, in)));
    }

    void fp8SkipsWhatDiffusersSkips() {
        const auto m = demo();
        QVERIFY(memory::castsToFp8("down_blocks.0.resnets.0.conv1", *m->unet->conv_in));
        QVERIFY(!memory::castsToFp8("down_blocks.0.resnets.0.norm1", *m->unet->conv_norm_out));
        QVERIFY(!memory::castsToFp8("conv_norm_out", *m->unet->conv_in));  // "norm" in the name
        QVERIFY(!memory::castsToFp8("proj_in", *m->unet->conv_in));        // ^proj_in$
        QVERIFY(memory::castsToFp8("down_blocks.1.attentions.0.proj_in", *m->unet->conv_in));
        QVERIFY(!memory::castsToFp8("pos_embed", *m->unet->conv_in));
    }

    // Disk-backed group offload: the stored copies are a memory-mapped file whose name is gone as soon as it is
    // mapped (nothing left behind, even by a crash); the ledger counts them on "disk", none in RAM.
    void groupOffloadToDiskKeepsTheStoredCopiesInAMappedFile() {
        auto m = demo();
        const auto in = unetInputs();
        const auto plain = runUnet(*m, nullptr, in);
        const int64_t total = weightBytes(*m->unet);
        QTemporaryDir folder;
        auto c = onCompute(Offload::Group, 1);
        c.diskFolder = folder.path().toStdString();
        c.homeLabel = "disk";
        {
            memory::ResidencyLedger ledger;
            memory::NetworkOffload offload(*m->unet, c, ledger);
            QVERIFY(QDir(folder.path()).isEmpty());
            QVERIFY(mappedOffloadFiles() > 0);
            QCOMPARE(ledger.resident("disk"), total);
            QCOMPARE(ledger.resident("cpu"), int64_t(0));
            for (int use = 0; use < 2; ++use) {
                const auto out = runUnet(*m, &offload, in);
                QVERIFY(torch::equal(out, plain));
                QVERIFY(ledger.peak("compute") <= offload.groupBound());
                QCOMPARE(ledger.resident("compute"), int64_t(0));
            }
        }
        // The network has its weights back (views of the mapped file: still not in RAM until used)...
        QVERIFY(torch::equal(runUnet(*m, nullptr, in), plain));
        // ...and the file is unmapped with the last of them.
        m.reset();
        QCOMPARE(mappedOffloadFiles(), 0);
    }

    // A folder that cannot be written: a clear error, and the network keeps its weights and has no hook left
    // (fp8: its weights come back upcast from the fp8 copies already made, finite, never NaN placeholders).
    void diskOffloadThatCannotWriteLeavesTheNetworkWhole() {
        for (const bool fp8 : {false, true}) {
            auto m = demo(torch::kBFloat16);
            const auto in = unetInputs();
            const auto plain = runUnet(*m, nullptr, in);
            auto c = onCompute(Offload::Group, 1);
            c.computeDtype = torch::kBFloat16;
            if (fp8) c.fp8 = torch::kFloat8_e4m3fn;
            c.diskFolder = "/nonexistent-folder/offload";
            c.homeLabel = "disk";
            memory::ResidencyLedger ledger;
            try {
                memory::NetworkOffload offload(*m->unet, c, ledger);
                QFAIL("expected the disk write to fail");
            } catch (const std::exception& e) {
                QVERIFY2(std::string(e.what()).find("/nonexistent-folder/offload") != std::string::npos, e.what());
            }
            QVERIFY(m->unet->conv_in->leafHook == nullptr);
            const auto out = runUnet(*m, nullptr, in);
            if (fp8) {
                const double err = relativeError(out, plain);
                qInfo("fp8 copies given back: relative L2 error %.4f", err);
                QVERIFY2(torch::isfinite(out).all().item<bool>() && err < 0.15, qPrintable(QString::number(err)));  // e4m3fn rounding, as above
            }
            else {
                QVERIFY(torch::equal(out, plain));
            }
        }
    }

    void diskOffloadThroughTheEngineGivesThePlainImage() {
        QTemporaryDir folder;
        qputenv("DD_OFFLOAD_DIR", folder.path().toUtf8());
        pipeline::Engine engine;
        const auto plain = generate(engine, base());
        engine.setTestHooks({.offloadOnCpu = true});
        auto s = base();
        s.plan.offload = Offload::Group;
        s.plan.offloadToDisk = true;
        const auto r = generate(engine, s);
        QCOMPARE(r.environment.offload, std::string("group (stored on disk)"));
        QVERIFY(r.images.at(0).rgb == plain.images.at(0).rgb);
        QVERIFY(engine.ledger().resident("disk") > 0);
        QCOMPARE(engine.ledger().resident("cpu"), int64_t(0));
        QVERIFY(QDir(folder.path()).isEmpty());
        qunsetenv("DD_OFFLOAD_DIR");
    }

    void everyModeThroughTheEngineGivesThePlainImage_data() {
        QTest::addColumn<int>("mode");
        QTest::addColumn<int>("blocks");
        QTest::newRow("model") << int(Offload::Model) << 1;
        QTest::newRow("sequential") << int(Offload::Sequential) << 1;
        QTest::newRow("group, 1 block") << int(Offload::Group) << 1;
        QTest::newRow("group, leaf level") << int(Offload::Group) << 0;
    }
    void everyModeThroughTheEngineGivesThePlainImage() {
        QFETCH(int, mode);
        QFETCH(int, blocks);
        pipeline::Engine engine;
        const auto plain = generate(engine, base());
        const int64_t resident = engine.ledger().resident("cpu");
        QVERIFY(resident > 0);
        engine.setTestHooks({.offloadOnCpu = true});
        auto s = base();
        s.plan.offload = Offload(mode);
        s.plan.groupBlocks = blocks;
        const auto r = generate(engine, s);
        QCOMPARE(r.environment.offload, std::string(api::offloadName(Offload(mode))));
        QVERIFY(r.images.at(0).rgb == plain.images.at(0).rgb);
        const auto& ledger = engine.ledger();
        qInfo("%s: compute peak %lld of %lld weight bytes", api::offloadName(Offload(mode)),
              (long long)ledger.peak("compute"), (long long)resident);
        QCOMPARE(ledger.resident("cpu"), resident);  // every weight is at home after the run
        QCOMPARE(ledger.resident("compute"), int64_t(0));
        // The bounds, from the demo model's own layers (its largest leaf is the CLIP token embedding).
        const auto model = demo();
        int64_t largestLeaf = 0, largestNetwork = 0;
        for (torch::nn::Module* net : {static_cast<torch::nn::Module*>(model->unet.get()), static_cast<torch::nn::Module*>(model->vae.get()),
                                       static_cast<torch::nn::Module*>(model->textEncoder.get())}) {
            largestNetwork = std::max(largestNetwork, weightBytes(*net));
            for (const auto& leaf : net->modules()) {
                int64_t own = 0;
                for (const auto& p : leaf->parameters(false)) own += p.numel() * int64_t(p.element_size());
                largestLeaf = std::max(largestLeaf, own);
            }
        }
        if (Offload(mode) == Offload::Model) QCOMPARE(ledger.peak("compute"), largestNetwork);
        if (Offload(mode) == Offload::Sequential) QCOMPARE(ledger.peak("compute"), largestLeaf);
        if (Offload(mode) == Offload::Group && blocks == 0) QVERIFY(ledger.peak("compute") <= 2 * largestLeaf);
        if (Offload(mode) == Offload::Group && blocks > 0) QVERIFY(ledger.peak("compute") < largestNetwork);
    }

    void sdxlGroupOffloadGivesThePlainImage() {
        const auto model = std::filesystem::path(DD_FIXTURES_DIR) / "pipeline" / "tiny-sdxl-e2e";
        if (!std::filesystem::exists(model)) QSKIP("run tests/parity/make_fixtures.py first");
        auto s = base();
        s.model = model.string();
        s.width = s.height = 64;
        // Determinism mode (math attention): with one thread, torch's fused CPU attention kernel gave the offloaded
        // run a 1/255 difference on this model (equal with two or more threads); bit-identical offload is what
        // determinism mode promises (docs/determinism.md).
        s.deterministic = true;
        pipeline::Engine engine;
        const auto plain = generate(engine, s);
        engine.setTestHooks({.offloadOnCpu = true});
        s.plan.offload = Offload::Group;
        const auto r = generate(engine, s);
        QVERIFY(r.images.at(0).rgb == plain.images.at(0).rgb);
        QCOMPARE(engine.ledger().resident("compute"), int64_t(0));
    }

    void fp8ThroughTheEngine() {
        pipeline::Engine engine;
        auto s = base();
        s.plan.unet = api::Precision::BF16;
        const auto plain = generate(engine, s);
        const int64_t withBf16Unet = engine.ledger().resident("cpu");
        s.plan.fp8Storage = "e4m3fn";
        const auto r = generate(engine, s);
        QVERIFY(r.environment.offload.find("fp8-e4m3fn") != std::string::npos);
        // Only the UNet's castable weights shrink, to one byte each.
        const auto [fp8, bf16] = fp8Bytes(*demo(torch::kBFloat16)->unet);
        qInfo("all networks: %lld bytes with a bf16 UNet, %lld with fp8 storage", (long long)withBf16Unet,
              (long long)engine.ledger().resident("cpu"));
        QCOMPARE(engine.ledger().resident("cpu"), withBf16Unet - (bf16 - fp8));
        const auto& a = r.images.at(0).rgb;
        const auto& b = plain.images.at(0).rgb;
        double sum = 0;
        for (size_t i = 0; i < a.size(); ++i) sum += std::abs(int(a[i]) - int(b[i]));
        const double mean = sum / double(a.size());
        qInfo("fp8 vs bf16 image: mean abs difference %.2f levels", mean);
        QVERIFY(a != b);
        QVERIFY(mean < 8);
    }
};

DD_REGISTER_TEST(TestOffload)

} // namespace test_offload
#include "test_offload.moc"
