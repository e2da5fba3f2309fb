#include "ui/threadpriority.h"

#ifdef __linux__
#include <cerrno>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace dd::ui {

bool lowerCurrentThreadPriority(int niceIncrement) {
#ifdef __linux__
    // On Linux the nice value belongs to the thread (PRIO_PROCESS with a thread id), not the whole process.
    const auto tid = id_t(syscall(SYS_gettid));
    errno = 0;
    const int current = getpriority(PRIO_PROCESS, tid);
    if (errno != 0) return false;
    return setpriority(PRIO_PROCESS, tid, current + niceIncrement) == 0;
#else
    (void)niceIncrement;
    return false;
#endif
}

} // namespace dd::ui
