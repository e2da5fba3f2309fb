// Low-memory loading: networks are built without random initialisation and each file tensor goes
// from the memory-mapped file straight to its target dtype, its mapped pages given back once copied. So
// loading an fp32 checkpoint into bf16 holds the bf16 weights plus about one tensor at a time, never the
// file plus the weights (the old path: an initialised fp32 model, its bf16 copy and the file's pages).
// Measured as process RSS on the mid-sd1 fixture (575 MB of fp32 safetensors: CLIP ViT-L, a small UNet and VAE).
#include "core/io/safetensors.h"
#include "core/memory/memory_probe.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/sd_model.h"

#include "tests/common/mid_sd1.h"

#include <QtTest>
#include <torch/torch.h>

#include <filesystem>

using namespace dd;

namespace {

const std::string& kModel = kMidSd1;
constexpr int64_t MB = 1 << 20;

struct FileSizes {
    int64_t total = 0;          // all tensors' bytes (fp32 on disk)
    int64_t largestTensor = 0;  // the largest one's
};

FileSizes fileSizes() {
    FileSizes s;
    for (const auto& e : std::filesystem::recursive_directory_iterator(kModel)) {
        if (e.path().extension() != ".safetensors") continue;
        const auto file = io::SafetensorsFile::open(e.path().string());
        for (const auto& t : file->tensors()) {
            s.total += int64_t(t.byteSize());
            s.largestTensor = std::max(s.largestTensor, int64_t(t.byteSize()));
        }
    }
    return s;
}

struct Measured {
    int64_t peak = 0, after = 0;  // over the baseline
    torch::ScalarType unetDtype = torch::kFloat32;
};

Measured load(torch::ScalarType dtype) {
    pipeline::Placement place;
    place.unet = place.textEncoder = place.vae = dtype;
    const int64_t baseline = memory::sampleMemory().hostRss;
    memory::resetPeaks();
    auto model = pipeline::loadSdModel(kModel, place);
    const auto sample = memory::sampleMemory();
    std::printf("  %s: peak +%lld MB, after the load +%lld MB\n", c10::toString(dtype),
                (long long)((sample.hostPeak - baseline) / MB), (long long)((sample.hostRss - baseline) / MB));
    return {sample.hostPeak - baseline, sample.hostRss - baseline, model->unet->parameters().front().scalar_type()};
}

} // namespace

class TestLowMemoryLoad : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        DD_REQUIRE_MID_SD1();
        fixMmapThreshold();
        (void)torch::ones({64, 64}).matmul(torch::ones({64, 64}));  // torch's own start-up memory before any baseline
        m_sizes = fileSizes();
        QVERIFY(m_sizes.total > 500 * MB);
    }

    // bf16 from an fp32 file: the weights end up half the file's size; the peak stays within the converted
    // weights plus the largest tensor in both dtypes (the one being converted), and the file's pages are gone.
    void bf16FromFp32HoldsOneTensorAtATime() {
        const Measured m = load(torch::kBFloat16);
        QCOMPARE(m.unetDtype, torch::kBFloat16);
        const int64_t weights = m_sizes.total / 2, slack = 64 * MB;
        QVERIFY2(m.peak < weights + m_sizes.largestTensor * 3 / 2 + slack,
                 qPrintable(QString("load peak +%1 MB; bf16 weights %2 MB, largest fp32 tensor %3 MB")
                                .arg(m.peak / MB).arg(weights / MB).arg(m_sizes.largestTensor / MB)));
        QVERIFY2(m.after < weights + slack,
                 qPrintable(QString("+%1 MB after the load; bf16 weights %2 MB: file pages kept").arg(m.after / MB).arg(weights / MB)));
    }

    // fp32 from an fp32 file: the weights are the mapped file (zero-copy), nothing else is allocated.
    void fp32FromFp32IsTheFileItself() {
        const Measured m = load(torch::kFloat32);
        QCOMPARE(m.unetDtype, torch::kFloat32);
        QVERIFY2(m.peak < m_sizes.total / 10,
                 qPrintable(QString("load peak +%1 MB for a %2 MB zero-copy load").arg(m.peak / MB).arg(m_sizes.total / MB)));
    }

    // A run in fp32 on the CPU uses the file's pages in place and gives each network's back when its stage is
    // done (nn::releaseMappedWeights): after the run the process holds none of them (it held all 575 MB before),
    // and a second run, reading them again from the file, makes the same picture.
    void fp32WeightsLeaveWithTheirStage() {
        api::GenerationSettings s;
        s.model = kModel;
        s.prompt = "a red cube";
        s.steps = 2;
        s.width = s.height = 64;
        s.plan.device = "cpu";
        s.plan.threads = 2;  // runs are compared bit for bit: not a count that follows the load
        pipeline::Engine engine;
        api::CancelToken cancel;
        const int64_t baseline = memory::sampleMemory().hostRss;
        const auto first = engine.generate(s, cancel, nullptr);
        const int64_t after = memory::sampleMemory().hostRss - baseline;
        std::printf("  after an fp32 run: +%lld MB for %lld MB of weights used in place\n", (long long)(after / MB),
                    (long long)(m_sizes.total / MB));
        QVERIFY2(after < m_sizes.total / 4, qPrintable(QString("+%1 MB after the run").arg(after / MB)));
        s.prompt = "a blue sphere";  // the text encoder runs again too
        const auto second = engine.generate(s, cancel, nullptr);
        s.prompt = "a red cube";
        QVERIFY(engine.generate(s, cancel, nullptr).images.at(0).rgb == first.images.at(0).rgb);
        QVERIFY(second.images.at(0).rgb != first.images.at(0).rgb);
    }

private:
    FileSizes m_sizes;
};

QTEST_APPLESS_MAIN(TestLowMemoryLoad)
#include "test_low_memory_load.moc"
