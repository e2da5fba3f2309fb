#pragma once
// A generation queue that survives crashes: every change is one JSON line appended to a journal and fsync'ed
// before the call returns (enqueue, start, done, failed, cancelled, interrupted, retry). Reopening replays the journal.
//
//   JobQueue q(dir + "/queue.jsonl");           // a job left "running" by a dead process is now "interrupted"
//   q.enqueue("", settingsJson, "cat-00001");   // returns the new id
//   while (const Job* j = q.next()) { q.start(j->id); ...; q.done(j->id, {"cat-00001.png"}); }
//
// Rules (InvokeAI's, not ComfyUI's endless crash loop): a job that was running when the process died is marked
// interrupted and next() never picks it again by itself; retry(id) is an explicit decision (a done job runs
// again too). Only pending jobs are ever picked by next().
// Removing a job is an event too (replay drops it). Pure (std + nlohmann_json), Qt-free: the CLI batch runner
// and the GUI share it. Not thread-safe: one owner.
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace dd::queue {

class AppendLog;

enum class JobState { Pending, Running, Done, Failed, Cancelled, Interrupted };
const char* jobStateName(JobState s);  // "pending", "running", "done", "failed", "cancelled", "interrupted"

struct Job {
    std::string id;
    nlohmann::json spec;              // what to generate (settings JSON or a sidecar), opaque to the queue
    std::string output;               // output base name, relative to the output folder
    JobState state = JobState::Pending;
    int interruptions = 0;            // how often a process died while running it
    std::string error;                // the last failure
    std::vector<std::string> files;   // what done() recorded
};

class JobQueue {
public:
    // Creates the journal when missing. Lines that do not parse (a torn last line after kill -9) are skipped
    // and reported in warnings(). Throws queue::FileWriteError when the journal cannot be opened.
    explicit JobQueue(const std::string& journalPath);
    ~JobQueue();
    JobQueue(const JobQueue&) = delete;
    JobQueue& operator=(const JobQueue&) = delete;

    // id "" = "job-<n>". Throws std::invalid_argument for an id that is already queued.
    std::string enqueue(std::string id, nlohmann::json spec, std::string output);
    void start(const std::string& id);
    void done(const std::string& id, const std::vector<std::string>& files);
    void fail(const std::string& id, const std::string& error);
    void cancel(const std::string& id);  // the user stopped it: not a failure, and not picked again by itself
    void interrupt(const std::string& id);
    void retry(const std::string& id);  // any job not running becomes pending again; its last error is cleared
    void remove(const std::string& id); // gone from the queue (the GUI's Remove); throws for a running job

    const std::vector<Job>& jobs() const { return m_jobs; }
    const Job* find(const std::string& id) const;
    const Job* next() const;  // the first pending job, or nullptr
    const std::vector<std::string>& warnings() const { return m_warnings; }

    // Applies one journal line to `jobs` (used by replay; exposed for the fuzzer). Returns "" or a warning.
    static std::string applyLine(std::vector<Job>& jobs, const std::string& line);

private:
    Job& get(const std::string& id);
    void record(nlohmann::json event);

    std::vector<Job> m_jobs;
    std::vector<std::string> m_warnings;
    std::unique_ptr<AppendLog> m_log;
};

} // namespace dd::queue
