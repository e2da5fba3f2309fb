// The CPU half of the memory probe: VmHWM follows a 200 MB allocation and resetPeaks() starts a new window;
// the CUDA half answers sensibly on a machine without a GPU; libtorch's CUDA backend is loaded only where the driver is.
#include "core/memory/cuda_backend.h"
#include "core/memory/memory_probe.h"
#include "core/memory/release_memory.h"
#include "tests/common/test_program.h"

#include <QtTest>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <dlfcn.h>
#include <sys/mman.h>

namespace test_memory_probe {  // the test program is a unity build: each file keeps its names

using namespace dd::memory;

namespace {

bool mapped(const std::string& library) {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line))
        if (line.find("/" + library) != std::string::npos) return true;
    return false;
}

} // namespace

class TestMemoryProbe : public QObject {
    Q_OBJECT
private slots:
    // Not linked, loaded at start only where the NVIDIA driver exists (here it is mapped iff libcuda is).
    void cudaBackendOnlyWithADriver() {
        const bool driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) != nullptr;
        QCOMPARE(mapped("libtorch_cuda.so"), driver);
        QCOMPARE(cudaBackendLoaded(), driver);
        QCOMPARE(ensureCudaBackend(), driver);
        if (!driver) QCOMPARE(cudaDeviceCount(), 0);
    }

    void hostPeakFollowsAllocation() {
        constexpr int64_t kBytes = int64_t(200) << 20;
        resetPeaks();
        const auto before = sampleMemory();
        QVERIFY(before.hostRss > 0);
        QVERIFY(before.hostPeak >= before.hostRss - (int64_t(4) << 20));
        QVERIFY(before.hostTotal > 0);

        // mmap, not malloc: the block must go back to the system at once, whatever the allocator (AddressSanitizer's
        // keeps freed memory in quarantine, so RSS would not fall under ./test.sh --sanitize).
        void* mapped = mmap(nullptr, size_t(kBytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        QVERIFY(mapped != MAP_FAILED);
        auto* block = static_cast<volatile char*>(mapped);
        std::memset(mapped, 1, size_t(kBytes));  // touch every page
        const auto during = sampleMemory();
        QVERIFY(block[kBytes - 1] == 1);
        QCOMPARE(munmap(mapped, size_t(kBytes)), 0);

        const auto after = sampleMemory();
        const double grew = double(during.hostPeak - before.hostPeak);
        QVERIFY2(grew > 0.9 * double(kBytes) && grew < 1.1 * double(kBytes),
                 qPrintable(QString("peak grew by %1 MB for a 200 MB block").arg(grew / (1 << 20))));
        QVERIFY(after.hostPeak >= during.hostPeak - (int64_t(1) << 20));  // the peak outlives the block (RSS counters lag by a few pages)
        QVERIFY(after.hostRss < during.hostRss - kBytes / 2);        // unmapped

        resetPeaks();
        const auto reset = sampleMemory();
        QVERIFY2(reset.hostPeak < during.hostPeak - kBytes / 2,
                 qPrintable(QString("peak after reset %1 MB, before %2 MB").arg(reset.hostPeak >> 20).arg(during.hostPeak >> 20)));
    }

    // The engine calls releaseFreedMemory() when a model is released: tensor memory the allocator keeps for reuse
    // (tcmalloc keeps every freed span) must then leave the process. Under glibc a 200 MB block is unmapped at
    // free already; AddressSanitizer's quarantine keeps it whatever we call, so only the name is checked there.
    void freedMemoryLeavesOnRelease() {
        QCOMPARE(QString(cpuAllocatorName()), QString(DD_EXPECT_TCMALLOC ? "tcmalloc" : "glibc malloc"));
#if !defined(__SANITIZE_ADDRESS__)
        constexpr size_t kBytes = size_t(200) << 20;
        const auto before = sampleMemory();
        auto* block = static_cast<char*>(std::malloc(kBytes));
        QVERIFY(block);
        std::memset(block, 1, kBytes);
        asm volatile("" : : "r"(block) : "memory");  // the block is used: the compiler may not drop the pair
        const auto during = sampleMemory();
        QVERIFY(during.hostRss > before.hostRss + int64_t(kBytes) / 2);
        std::free(block);
        releaseFreedMemory();
        const auto after = sampleMemory();
        QVERIFY2(after.hostRss < during.hostRss - int64_t(kBytes) / 2,
                 qPrintable(QString("RSS %1 MB with the block, %2 MB after free + release")
                                .arg(during.hostRss >> 20).arg(after.hostRss >> 20)));
#endif
    }

    void cudaFieldsWithoutGpu() {
        const int devices = cudaDeviceCount();
        QVERIFY(devices >= 0);
        const auto s = sampleMemory(devices);  // one past the last device: host only, never a crash
        QVERIFY(!s.cuda);
        QCOMPARE(s.deviceName, std::string("CPU"));
        QCOMPARE(s.deviceAllocated, int64_t(0));
        resetPeaks(devices);
        if (devices > 0) {
            const auto g = sampleMemory(0);
            QVERIFY(g.cuda);
            QVERIFY(g.deviceTotal > 0 && g.deviceFree <= g.deviceTotal);
            QVERIFY(!g.deviceName.empty());
        }
    }

    void presetTargetIsDeviceOrRam() {
        const auto t = presetTarget();
        QVERIFY(t.bytes > 0);
        if (cudaDeviceCount() == 0) {
            QVERIFY(!t.cuda);
            QCOMPARE(t.bytes, physicalMemoryBytes());
            QCOMPARE(t.deviceName, std::string("CPU"));
        } else {
            QVERIFY(t.cuda);
            QCOMPARE(t.bytes, sampleMemory(0).deviceTotal);
        }
    }
};

DD_REGISTER_TEST(TestMemoryProbe)

} // namespace test_memory_probe
#include "test_memory_probe.moc"
