// Determinism on the CPU with the built-in demo model: the same settings twice in determinism mode give
// byte-identical images; different seeds differ; settings that must not change pixels (VAE slicing, offload
// modes) give identical images; those that may (VAE tiling, fp16/bf16, other attention backends, thread count)
// are measured and printed (max |diff|, PSNR, SSIM), with only sane bounds asserted. Also compare::verify.
#include "core/compare/ab_settings.h"
#include "core/compare/verify.h"
#include "core/pipeline/engine_test_hooks.h"
#include "imaging/compare.h"
#include "tests/common/test_program.h"

#include "core/memory/cpu_load.h"

#include "tests/common/busy_processes.h"

#include <ATen/Parallel.h>
#include <QtTest>

#include <cmath>
#include <optional>

namespace test_determinism {  // the test program is a unity build: each file keeps its names

using namespace dd;

namespace {

api::GenerationSettings base() {
    api::GenerationSettings s;
    s.model = pipeline::kDemoModel;
    s.prompt = "a lighthouse at dusk";
    s.negativePrompt = "blurry";
    s.seed = 1234;
    s.steps = 2;
    s.width = s.height = 32;
    s.sampler = "Euler a";  // ancestral: per-step noise from the per-image generators too
    s.deterministic = true;
    return s;
}

api::GenerationResult run(pipeline::Engine& engine, const api::GenerationSettings& s) {
    api::CancelToken cancel;
    return engine.generate(s, cancel, nullptr);
}

std::vector<std::string> hashes(const api::GenerationResult& r) {
    std::vector<std::string> out;
    for (const auto& img : r.images) out.push_back(compare::pixelSha256(img));
    return out;
}

// Prints how far `what` moves the pixels; returns the metrics of the first image.
imaging::ImageMetrics measure(const char* what, const api::GenerationResult& a, const api::GenerationResult& b) {
    const auto m = imaging::compareImages(a.images.at(0), b.images.at(0));
    qInfo("%-34s max |diff| %3d  mean |diff| %7.4f  PSNR %6.2f dB  SSIM %.5f  (%lld of %lld pixels differ)", what,
          m.pixels.maxAbs, m.pixels.meanAbs, m.pixels.psnr, m.ssim, static_cast<long long>(m.pixels.differingPixels),
          static_cast<long long>(m.pixels.totalPixels));
    return m;
}

} // namespace

class TestDeterminism : public QObject {
    Q_OBJECT
    pipeline::Engine m_engine;
    api::GenerationResult m_reference;  // base(), batch 2
    std::optional<api::GenerationResult> m_plain;  // base() outside determinism mode

private slots:
    void initTestCase() {
        auto s = base();
        s.batchSize = 2;
        m_reference = run(m_engine, s);
        QCOMPARE(m_reference.images.size(), size_t(2));
    }

    void sameSettingsTwiceAreByteIdentical() {
        auto s = base();
        s.batchSize = 2;
        QCOMPARE(hashes(run(m_engine, s)), hashes(m_reference));
        // A fresh engine (the model built and loaded again) gives the same bytes too.
        pipeline::Engine fresh;
        QCOMPARE(hashes(run(fresh, s)), hashes(m_reference));
    }

    void environmentIsRecorded() {
        const auto& e = m_reference.environment;
        QVERIFY(e.deterministic);
        QCOMPARE(e.appVersion, std::string(DD_VERSION));
        QVERIFY(!e.torchVersion.empty());
        QCOMPARE(e.device, std::string("CPU"));
        QVERIFY(e.threads > 0);
        QVERIFY(!e.attention.empty());
        QVERIFY(e.precision.find("unet=fp32") != std::string::npos);
        QCOMPARE(e.offload, std::string("none"));
    }

    void differentSeedsDiffer() {
        auto s = base();
        s.seed = 1235;
        const auto other = run(m_engine, s);
        const auto m = measure("seed 1234 vs 1235", m_reference, other);
        QVERIFY(compare::pixelSha256(other.images[0]) != compare::pixelSha256(m_reference.images[0]));
        QVERIFY(m.pixels.maxAbs > 0);
        QVERIFY(m.pixels.differingPixels > m.pixels.totalPixels / 2);  // a different picture, not a few pixels
    }

    // Exact by construction: decoding one image at a time, or keeping weights elsewhere between uses, runs the
    // same kernels on the same numbers.
    void vaeSlicingKeepsPixels() {
        auto s = base();
        s.batchSize = 2;
        s.plan.vaeSlicing = true;
        const auto sliced = run(m_engine, s);
        measure("VAE slicing (batch 2)", m_reference, sliced);
        QCOMPARE(hashes(sliced), hashes(m_reference));
    }

    // On a machine without a GPU offloading is normally skipped; the test hook makes the engine really move
    // the weights between their home copy and the compute side, so the comparison is not vacuous.
    void offloadModesKeepPixels_data() {
        QTest::addColumn<int>("mode");
        QTest::newRow("model") << int(api::Offload::Model);
        QTest::newRow("sequential") << int(api::Offload::Sequential);
        QTest::newRow("group") << int(api::Offload::Group);
    }
    void offloadModesKeepPixels() {
        QFETCH(int, mode);
        pipeline::Engine offloading;
        pipeline::EngineTestHooks hooks;
        hooks.offloadOnCpu = true;
        offloading.setTestHooks(hooks);
        auto s = base();
        s.batchSize = 2;
        s.plan.offload = api::Offload(mode);
        const auto r = run(offloading, s);
        QCOMPARE(r.environment.offload, std::string(api::offloadName(api::Offload(mode))));
        QVERIFY2(offloading.ledger().peak("compute") > 0, "no weights went to the compute side: nothing was offloaded");
        QCOMPARE(hashes(r), hashes(m_reference));
    }

    // May change pixels: measured, printed; only sane bounds asserted (the same picture, not another one).
    void vaeTilingIsClose() {
        auto s = base();
        s.width = s.height = 128;  // larger than the demo VAE's 64-pixel tile, so it really tiles
        s.steps = 1;
        const auto whole = run(m_engine, s);
        s.plan.vaeTiling = true;
        const auto tiled = run(m_engine, s);
        const auto m = measure("VAE tiling (128x128)", whole, tiled);
        QVERIFY(m.pixels.sameSize);
        QVERIFY2(m.pixels.psnr > 20, "tiling changed the picture, not just the tile seams");
    }

    void precisionAndAttentionAreClose_data() {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("value");
        QTest::addColumn<double>("minPsnr");
        QTest::newRow("unet bf16") << "memory_plan.precision.unet" << "bf16" << 15.0;
        QTest::newRow("unet fp16") << "memory_plan.precision.unet" << "fp16" << 15.0;
        QTest::newRow("vae bf16") << "memory_plan.precision.vae" << "bf16" << 15.0;
        QTest::newRow("attention sliced") << "memory_plan.attention" << "sliced" << 30.0;
        QTest::newRow("attention chunked") << "memory_plan.attention" << "chunked" << 30.0;
        QTest::newRow("attention sdpa-math") << "memory_plan.attention" << "sdpa-math" << 30.0;
        QTest::newRow("threads 1") << "memory_plan.threads" << "1" << 30.0;
    }
    void precisionAndAttentionAreClose() {
        QFETCH(QString, field);
        QFETCH(QString, value);
        QFETCH(double, minPsnr);
        auto s = base();
        s.deterministic = false;  // determinism mode pins the attention backend; measure the toggle itself
        if (!m_plain) m_plain = run(m_engine, s);
        const auto& a = *m_plain;
        const auto pair = compare::abSettingFromText(s, field.toStdString(), value.toStdString());
        api::GenerationResult b;
        try {
            b = run(m_engine, pair.b);
        } catch (const std::exception& e) {
            QSKIP(qPrintable(QString("%1 = %2 does not run on this machine: %3").arg(field, value, e.what())));
        }
        const auto m = measure(pair.label.c_str(), a, b);
        QVERIFY(m.pixels.sameSize);
        QVERIFY2(m.pixels.psnr > minPsnr, qPrintable(QString("PSNR %1 dB").arg(m.pixels.psnr)));
    }

    void verifyReportsIdentical() {
        api::CancelToken cancel;
        const auto report = compare::verify(m_engine, compare::recordedFrom(m_reference), cancel);
        QVERIFY2(report.identical, compare::describe(report).c_str());
        QVERIFY(report.environmentKnown);
        QVERIFY(report.environment.empty());
        QCOMPARE(report.images.size(), size_t(2));
        QVERIFY(compare::describe(report).rfind("identical\n", 0) == 0);
    }

    void verifyReportsDifferences() {
        auto recorded = compare::recordedFrom(m_reference);
        recorded.images.erase(recorded.images.begin());  // only image 1 of the batch was kept
        recorded.images[0].image.rgb[5] ^= 0x10;
        recorded.environment->device = "NVIDIA H200";
        recorded.environment->torchVersion = "1.13.1";
        api::CancelToken cancel;
        const auto report = compare::verify(m_engine, recorded, cancel);
        QVERIFY(!report.identical);
        QCOMPARE(report.images.size(), size_t(1));
        QCOMPARE(report.images[0].index, 1);
        QCOMPARE(report.images[0].pixels.maxAbs, 16);
        QCOMPARE(report.images[0].pixels.differingPixels, int64_t(1));
        QCOMPARE(report.environment.size(), size_t(2));
        QCOMPARE(report.environment[0].field, std::string("device"));
        QCOMPARE(report.environment[0].a, std::string("NVIDIA H200"));
        QCOMPARE(report.environment[0].b, std::string("CPU"));
        const auto text = compare::describe(report);
        QVERIFY2(text.find("NOT identical") == 0 && text.find("device: NVIDIA H200") != std::string::npos &&
                     text.find("seed 1235") != std::string::npos && text.find("1 of 1024 pixels differ") != std::string::npos,
                 text.c_str());
    }

    // Determinism mode without a thread count pins torch's start-up count: a count changed in between (by
    // whatever else runs in the process) changes neither the recorded count nor the bytes.
    void determinismPinsTheStartupThreadCount() {
        const int startup = m_reference.environment.threads;
        at::set_num_threads(startup + 1);
        auto s = base();
        s.batchSize = 2;
        const auto r = run(m_engine, s);
        const int after = at::get_num_threads();
        at::set_num_threads(startup);
        QCOMPARE(r.environment.threads, startup);
        QCOMPARE(after, startup + 1);  // the run's count was put back when it ended
        QCOMPARE(hashes(r), hashes(m_reference));
    }

    // Outside determinism mode, with no count in the plan, a run of small steps takes the cores other programs
    // leave free: with two busy processes it runs on at most cpus - 2 threads (1 on a 2-core machine); big steps
    // take a thread more per busy core; determinism mode and a count in the plan keep theirs. Between runs torch's count is put back.
    void threadsFollowTheLoadOutsideDeterminismMode() {
        const int startup = m_reference.environment.threads;
        QCOMPARE(memory::threadsForFreeCores(4, 2, 0), 2);
        QCOMPARE(memory::threadsForFreeCores(4, 2, 1), 1);
        QCOMPARE(memory::threadsForFreeCores(4, 2, 7), 1);
        QCOMPARE(memory::threadsForFreeCores(8, 16, 4), 8);
        QCOMPARE(memory::threadsForFreeCores(8, 16, 12), 4);
        QCOMPARE(memory::threadsForFreeCores(8, 16, -1), 8);  // load unknown: the start-up count
        // Big steps: one more thread per busy core, the start-up count when idle or unknown.
        QCOMPARE(memory::threadsForSharedCores(2, 2, 0), 2);
        QCOMPARE(memory::threadsForSharedCores(2, 2, 1), 3);
        QCOMPARE(memory::threadsForSharedCores(2, 2, 2), 4);
        QCOMPARE(memory::threadsForSharedCores(2, 2, 9), 4);
        QCOMPARE(memory::threadsForSharedCores(8, 16, 3), 11);
        QCOMPARE(memory::threadsForSharedCores(8, 16, -1), 8);
        const test::BusyProcesses busy(2);
        QVERIFY(busy.running());
        QTest::qWait(100);
        QVERIFY2(memory::otherRunnableThreads() >= 2, qPrintable(QString::number(memory::otherRunnableThreads())));
        auto s = base();
        s.deterministic = false;
        const auto loaded = run(m_engine, s);
        QString steps;
        for (double t : loaded.timings.stepSeconds) steps += QString(" %1 s").arg(t, 0, 'f', 3);
        QVERIFY2(loaded.environment.threads <= memory::threadsForFreeCores(startup, memory::usableCpus(), 2),
                 qPrintable(QString("%1 threads with two busy processes on %2 CPUs; steps%3")
                                .arg(loaded.environment.threads).arg(memory::usableCpus()).arg(steps)));
        QCOMPARE(at::get_num_threads(), startup);
        s.plan.threads = startup;
        QCOMPARE(run(m_engine, s).environment.threads, startup);
        s.plan.threads = 0;
        s.deterministic = true;
        QCOMPARE(run(m_engine, s).environment.threads, startup);
    }

    // A result recorded on a machine whose default count differs: Verify reruns with the recorded count.
    void verifyPinsTheRecordedThreadCount() {
        const int other = m_reference.environment.threads + 1;
        auto s = base();
        s.plan.threads = other;
        auto recorded = compare::recordedFrom(run(m_engine, s));
        recorded.settings.plan.threads = 0;  // as recorded there: that machine's default was `other`
        api::CancelToken cancel;
        const auto report = compare::verify(m_engine, recorded, cancel);
        QCOMPARE(report.rerun.environment.threads, other);
        QVERIFY2(report.identical, compare::describe(report).c_str());
        QVERIFY(report.environment.empty());
    }

    void verifyWithoutImagesRunsTwice() {
        compare::Recorded r;
        r.settings = base();
        api::CancelToken cancel;
        const auto report = compare::verify(m_engine, r, cancel);
        QVERIFY(report.ranTwice);
        QVERIFY(report.identical);
        QVERIFY(report.environment.empty());
        r.images.push_back({3, m_reference.images[0]});
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, compare::verify(m_engine, r, cancel));
    }
};

DD_REGISTER_TEST(TestDeterminism)

} // namespace test_determinism
#include "test_determinism.moc"
