// main() of a test program that holds several test classes (tests/common/test_program.h): runs the one named by
// the first argument as QTEST_GUILESS_MAIN would run it alone, with the arguments after the name as its own.
#include "tests/common/test_program.h"

#include <QCoreApplication>
#include <QtTest>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

namespace dd::test {
namespace {

std::map<std::string, TestFactory>& registry() {
    static std::map<std::string, TestFactory> tests;  // filled before main, in no set order
    return tests;
}

} // namespace

int registerTest(const char* sourceFile, TestFactory make) {
    registry().emplace(std::filesystem::path(sourceFile).stem().string(), make);
    return 0;
}

} // namespace dd::test

int main(int argc, char** argv) {
    const auto& tests = dd::test::registry();
    const auto test = argc > 1 ? tests.find(argv[1]) : tests.end();
    if (test == tests.end()) {
        std::fprintf(stderr, "usage: %s <test> [Qt Test options]\ntests:", argv[0]);
        for (const auto& [name, make] : tests) std::fprintf(stderr, " %s", name.c_str());
        std::fprintf(stderr, "\n");
        return 2;
    }
    // From here on the test's name stands where a standalone test program's own name would.
    int testArgc = argc - 1;
    char** testArgv = argv + 1;
    QCoreApplication app(testArgc, testArgv);
    app.setAttribute(Qt::AA_Use96Dpi, true);
    const auto object = test->second();
    return QTest::qExec(object.get(), testArgc, testArgv);
}
