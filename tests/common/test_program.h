#pragma once
// The tests that compile against libtorch share one program per folder, built as a unity build: each
// translation unit spends ~12 s of the compiler's time on libtorch's precompiled header before its own code,
// and merged files also share their template instantiations (four core tests: 198 s one by one, 74 s as one
// unit under ASan). ctest still runs each test in its own process: `<program> <test name> [Qt Test options]`.
// Such a file wraps its names in a namespace named after it and registers its class there with
// DD_REGISTER_TEST(Class), where a standalone test ends in QTEST_GUILESS_MAIN(Class).
#include <QObject>

#include <memory>

namespace dd::test {

using TestFactory = std::unique_ptr<QObject> (*)();

// Registers the test class of `sourceFile` under the file's name without extension ("test_unet"); returns a
// dummy so that a namespace-scope variable can call it before main.
int registerTest(const char* sourceFile, TestFactory make);

} // namespace dd::test

#define DD_REGISTER_TEST(Class)                                                                                \
    [[maybe_unused]] const int ddRegistered##Class = ::dd::test::registerTest(                                 \
        __FILE__, []() -> std::unique_ptr<QObject> { return std::make_unique<Class>(); });
