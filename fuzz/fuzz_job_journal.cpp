// Any bytes as a queue journal: every line is applied or skipped with a warning, never a crash.
#include "core/queue/job_queue.h"

#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::vector<dd::queue::Job> jobs;
    std::string line;
    for (size_t i = 0; i <= size; ++i) {
        if (i == size || data[i] == '\n') {
            dd::queue::JobQueue::applyLine(jobs, line);
            line.clear();
        } else {
            line += char(data[i]);
        }
    }
    return 0;
}
