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

// threadsForFreeCores for the load now: the least of three samples a millisecond apart, so that a blip (a short
// command) takes no thread away.
int threadsForFreeCoresNow(int most);

} // namespace dd::memory
