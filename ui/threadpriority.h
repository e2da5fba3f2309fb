#pragma once
// Lowers the calling thread's CPU priority (Linux: its nice value, per thread). Threads it creates afterwards
// (torch's OpenMP pool) inherit it, so on a busy machine the UI thread wins the CPU over the engine's
// threads. It only changes who goes first when both want a core: an otherwise idle CPU still runs the engine at
// full speed. Returns false where it is not supported.
namespace dd::ui {

bool lowerCurrentThreadPriority(int niceIncrement);

} // namespace dd::ui
