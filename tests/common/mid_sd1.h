#pragma once
// The mid-sd1 fixture (tests/parity/fixtures_memory.py: the full CLIP ViT-L text encoder, a small UNet and VAE,
// 575 MB of fp32 safetensors) and the process state that RSS measurements on it need.
#include <QtTest>

#include <filesystem>
#include <malloc.h>
#include <string>

inline const std::string kMidSd1 = std::string(DD_FIXTURES_DIR) + "/models/mid-sd1";

// In a test's initTestCase: skips the test when the fixture was not made.
#define DD_REQUIRE_MID_SD1()                                                                                   \
    if (!std::filesystem::exists(kMidSd1 + "/model_index.json"))                                               \
    QSKIP("mid-sd1 fixture missing: run tests/parity/make_fixtures.py build/fixtures")

// glibc raises its mmap threshold each time a large mmapped block is freed, so later measurements' tensors
// would land in the heap and stay in RSS after they are freed (a stage drifted 1 -> 17 % over eight cases); a
// fixed threshold gives large blocks back when freed, so each measurement starts from the same baseline.
// Only under glibc malloc (DD_TCMALLOC=OFF, or tcmalloc missing): tcmalloc's mallopt does nothing, and there the
// engine gives kept memory back as each stage begins (memory::releaseFreedHostMemory).
inline void fixMmapThreshold() { mallopt(M_MMAP_THRESHOLD, 128 * 1024); }
