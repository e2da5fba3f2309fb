// How OpenMP threads wait, chosen before libgomp (torch's OpenMP) reads its environment — once, in its
// constructor, before main() — so that users need not export OMP_WAIT_POLICY or GOMP_SPINCOUNT themselves.
//
// libgomp's default spins about 3 ms (300000 iterations) at each barrier before it sleeps: on a busy machine
// those spins take the cores other programs need, and our own descheduled threads stall the team. Not spinning
// at all (PASSIVE) is slow on an idle machine, where waking a sleeping thread costs more than a step of the small
// models. A short spin keeps idle speed and stops early; the thread count that follows the load does the rest
// (core/memory/cpu_load.h). Measured in docs/benchmarks.md, "A busy computer".
//
// Why this way: an executable's .preinit_array runs before every shared library's constructor, but also before
// libc's, which then points `environ` back at the process' original environment array: a setenv() there is
// lost. So the preinit function lends itself one slot of that original array (the "_" variable shells set, or
// failing that the last one), and a constructor of the executable — run after every library's — gives the slot
// back and keeps the choice with setenv(), so child processes inherit it. Each shipped program links this file
// as an object (app/CMakeLists.txt); test_cli checks through OMP_DISPLAY_ENV what libgomp saw.
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

namespace {

char kChoice[] = "GOMP_SPINCOUNT=10000";

char* lentValue = nullptr;  // the entry whose slot holds kChoice until the libraries have started

bool isOpenMpChoice(const char* entry) {
    return std::strncmp(entry, "OMP_WAIT_POLICY=", 16) == 0 || std::strncmp(entry, "GOMP_SPINCOUNT=", 15) == 0;
}

void lendSlotBeforeLibrariesStart(int, char**, char** envp) {
    if (!envp || !envp[0]) return;  // no slot to lend: libgomp keeps its default
    char** slot = nullptr;
    for (char** e = envp; *e; ++e) {
        if (isOpenMpChoice(*e)) return;  // the user's choice stands
        if (std::strncmp(*e, "_=", 2) == 0) slot = e;
    }
    if (!slot)
        for (slot = envp; slot[1]; ++slot) {
        }
    lentValue = *slot;
    *slot = kChoice;
}

// A library's constructor may have copied the environment (setenv): the slot is looked for where it is now.
__attribute__((constructor)) void giveSlotBack() {
    if (!lentValue) return;
    for (char** e = environ; e && *e; ++e)
        if (*e == kChoice) *e = lentValue;
    const char* eq = std::strchr(kChoice, '=');
    setenv(std::string(kChoice, std::size_t(eq - kChoice)).c_str(), eq + 1, 0);
}

} // namespace

__attribute__((section(".preinit_array"), used)) void (*const ddLendEnvironmentSlot)(int, char**, char**) = lendSlotBeforeLibrariesStart;
