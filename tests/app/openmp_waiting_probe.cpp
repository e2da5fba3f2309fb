// Prints, from main(), the environment app/openmp_waiting.cpp leaves (sorted, one VAR=VALUE a line): every
// variable the process was given, the one whose slot it lent given back, and the OpenMP choice kept for child
// processes. test_cli runs it.
#include <algorithm>
#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

int main() {
    std::vector<std::string> entries;
    for (char** e = environ; *e; ++e) entries.emplace_back(*e);
    std::sort(entries.begin(), entries.end());
    for (const auto& e : entries) std::printf("%s\n", e.c_str());
}
