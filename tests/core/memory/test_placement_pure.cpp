// The pure parts of placement: the residency ledger and "balanced" multi-device placement
// (diffusers' _assign_components_to_devices, worked through by hand below).
#include "core/memory/balanced.h"
#include "core/memory/ledger.h"

#include <QtTest>

using namespace dd::memory;

class TestPlacementPure : public QObject {
    Q_OBJECT

private slots:
    void ledgerCountsPerDeviceAndPeaks() {
        ResidencyLedger l;
        int a = 0, b = 0;
        l.place(&a, "cuda:0", 100);
        l.place(&b, "cuda:0", 50);
        QCOMPARE(l.resident("cuda:0"), int64_t(150));
        l.place(&a, "cpu", 100);  // a moves: its record is replaced
        QCOMPARE(l.resident("cuda:0"), int64_t(50));
        QCOMPARE(l.resident("cpu"), int64_t(100));
        QCOMPARE(l.peak("cuda:0"), int64_t(150));
        l.resetPeaks();
        QCOMPARE(l.peak("cuda:0"), int64_t(50));
        l.remove(&b);
        l.remove(&b);  // twice is harmless
        QCOMPARE(l.resident("cuda:0"), int64_t(0));
        QCOMPARE(l.peak("cuda:0"), int64_t(50));
        QCOMPARE(l.resident("nowhere"), int64_t(0));
        QVERIFY(l.summary().find("cpu 0.00 GB") != std::string::npos);
    }

    void balancedZigZagsOverDevicesLargestFirst() {
        // SDXL fp16 sizes (GB ×100), two GPUs with caps 8 and 6 (sorted: cuda:0 8, cuda:1 6).
        const std::vector<ComponentSize> parts{{"vae", 17}, {"text_encoder", 25}, {"unet", 513}, {"text_encoder_2", 139}};
        const auto p = placeBalanced(parts, {{"cuda:1", 600}, {"cuda:0", 800}});
        // unet (513) → cuda:0 (left 287); te2 (139) → cuda:1 (left 461); te (25) → cuda:1 again (zig-zag,
        // left 436); vae (17) → cuda:0 (left 270).
        QCOMPARE(p.deviceOf.at("unet"), std::string("cuda:0"));
        QCOMPARE(p.deviceOf.at("text_encoder_2"), std::string("cuda:1"));
        QCOMPARE(p.deviceOf.at("text_encoder"), std::string("cuda:1"));
        QCOMPARE(p.deviceOf.at("vae"), std::string("cuda:0"));
        QCOMPARE(p.usedBytes.at("cuda:0"), int64_t(530));
        QCOMPARE(p.usedBytes.at("cuda:1"), int64_t(164));
    }

    void whatFitsNowhereGoesToTheCpu() {
        const auto p = placeBalanced({{"unet", 513}, {"text_encoder_2", 139}, {"vae", 17}}, {{"cuda:0", 400}, {"cuda:1", 150}});
        // unet fits neither next device (cuda:0, 400): CPU, and the cycle does not advance; te2 → cuda:0; vae → cuda:1.
        QCOMPARE(p.deviceOf.at("unet"), std::string("cpu"));
        QCOMPARE(p.deviceOf.at("text_encoder_2"), std::string("cuda:0"));
        QCOMPARE(p.deviceOf.at("vae"), std::string("cuda:1"));
        QCOMPARE(p.usedBytes.at("cpu"), int64_t(513));
        // No GPU at all: everything on the CPU.
        QCOMPARE(placeBalanced({{"vae", 1}}, {}).deviceOf.at("vae"), std::string("cpu"));
    }
};

QTEST_GUILESS_MAIN(TestPlacementPure)
#include "test_placement_pure.moc"
