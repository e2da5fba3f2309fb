#pragma once
// What other programs leave of the CPU, read from Linux's /proc. An OpenMP team waits at every barrier for its
// slowest thread, and a thread whose core another program holds is slow: on a busy machine fewer threads
// finish sooner (docs/benchmarks.md, "A busy computer"). Torch-free; elsewhere than Linux nothing is known
// and every core counts as free.
namespace dd::memory {

int usableCpus();             // CPUs this process may run on (its affinity mask)
int otherRunnableThreads();   // threads of other processes on a run queue now; -1 when unknown

// The thread count for a team on `cpus` CPUs while `others` threads of other programs want to run: the free
// cores, at least 1 and at most `most`.
int threadsForFreeCores(int most, int cpus, int others);

// The thread count for a team of `base` threads doing long arithmetic while `others` threads of other programs
// want the CPU: one more thread per busy core, at most `cpus` more. The kernel shares the CPU out per thread, so
// with one busy program on 2 cores 2 threads get 2/3 of it and 3 threads 3/4 (SD 1.5: 1.56× idle time against
// 1.39×, docs/benchmarks.md "A busy computer"); on an idle machine the count stays `base`.
int threadsForSharedCores(int base, int cpus, int others);

// threadsForFreeCores / threadsForSharedCores for the load now: the least of three samples a millisecond apart,
// so that a blip (a short command) changes nothing.
int threadsForFreeCoresNow(int most);
int threadsForSharedCoresNow(int base);

} // namespace dd::memory
