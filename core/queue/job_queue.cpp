#include "core/queue/job_queue.h"

#include "core/queue/durable_file.h"

#include <fstream>
#include <stdexcept>

namespace dd::queue {
namespace {

using nlohmann::json;

Job* findIn(std::vector<Job>& jobs, const std::string& id) {
    for (auto& j : jobs)
        if (j.id == id) return &j;
    return nullptr;
}

std::string str(const json& j, const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

} // namespace

const char* jobStateName(JobState s) {
    switch (s) {
    case JobState::Pending: return "pending";
    case JobState::Running: return "running";
    case JobState::Done: return "done";
    case JobState::Failed: return "failed";
    case JobState::Cancelled: return "cancelled";
    case JobState::Interrupted: return "interrupted";
    }
    return "?";
}

std::string JobQueue::applyLine(std::vector<Job>& jobs, const std::string& line) {
    if (line.size() > (16u << 20)) return "a journal line over 16 MiB was skipped";
    const json e = json::parse(line, nullptr, false);
    if (e.is_discarded() || !e.is_object()) return "a line that is not a JSON object was skipped (torn by a crash?)";
    const std::string event = str(e, "event"), id = str(e, "id");
    if (id.empty()) return "a journal event without an id was skipped";
    if (event == "enqueue") {
        if (findIn(jobs, id)) return "job '" + id.substr(0, 80) + "' was enqueued twice; the second was skipped";
        Job j;
        j.id = id;
        if (const auto it = e.find("spec"); it != e.end()) j.spec = *it;
        j.output = str(e, "output");
        jobs.push_back(std::move(j));
        return {};
    }
    Job* j = findIn(jobs, id);
    if (!j) return "an event for unknown job '" + id.substr(0, 80) + "' was skipped";
    if (event == "start") {
        j->state = JobState::Running;
    } else if (event == "done") {
        j->state = JobState::Done;
        j->files.clear();
        if (const auto it = e.find("files"); it != e.end() && it->is_array())
            for (const auto& f : *it) if (f.is_string()) j->files.push_back(f.get<std::string>());
    } else if (event == "failed") {
        j->state = JobState::Failed;
        j->error = str(e, "error");
    } else if (event == "cancelled") {
        j->state = JobState::Cancelled;
    } else if (event == "interrupted") {
        j->state = JobState::Interrupted;
        ++j->interruptions;
    } else if (event == "retry") {
        if (j->state != JobState::Running) {
            j->state = JobState::Pending;
            j->error.clear();  // a retried job's old failure no longer describes it
        }
    } else if (event == "remove") {
        jobs.erase(jobs.begin() + (j - jobs.data()));
    } else {
        return "unknown journal event '" + event.substr(0, 40) + "' was skipped";
    }
    return {};
}

JobQueue::JobQueue(const std::string& journalPath) {
    bool torn = false;
    {
        std::ifstream in(journalPath, std::ios::binary);
        std::string line;
        int number = 0;
        while (std::getline(in, line)) {
            ++number;
            torn = in.eof();  // the last line had no '\n': a kill during append
            if (line.empty()) continue;
            if (const std::string w = applyLine(m_jobs, line); !w.empty())
                m_warnings.push_back(journalPath + ":" + std::to_string(number) + ": " + w);
        }
    }
    m_log = std::make_unique<AppendLog>(journalPath);
    if (torn) m_log->append("");  // end the torn line, so the next event starts on a line of its own
    for (auto& j : m_jobs)
        if (j.state == JobState::Running) interrupt(j.id);  // its process died: never re-run it by itself
}

JobQueue::~JobQueue() = default;

void JobQueue::record(json event) {
    const std::string line = event.dump(-1, ' ', false, json::error_handler_t::replace);
    m_log->append(line);  // durable before the in-memory state changes
    if (const std::string w = applyLine(m_jobs, line); !w.empty()) throw std::logic_error(w);
}

Job& JobQueue::get(const std::string& id) {
    Job* j = findIn(m_jobs, id);
    if (!j) throw std::invalid_argument("no job '" + id + "' in the queue");
    return *j;
}

const Job* JobQueue::find(const std::string& id) const {
    for (const auto& j : m_jobs)
        if (j.id == id) return &j;
    return nullptr;
}

const Job* JobQueue::next() const {
    for (const auto& j : m_jobs)
        if (j.state == JobState::Pending) return &j;
    return nullptr;
}

std::string JobQueue::enqueue(std::string id, json spec, std::string output) {
    if (id.empty()) {
        for (std::size_t n = m_jobs.size() + 1;; ++n)
            if (!find(id = "job-" + std::to_string(n))) break;
    }
    if (find(id)) throw std::invalid_argument("job '" + id + "' is already in the queue");
    record({{"event", "enqueue"}, {"id", id}, {"output", output}, {"spec", std::move(spec)}});
    return id;
}

void JobQueue::start(const std::string& id) {
    get(id);
    record({{"event", "start"}, {"id", id}});
}
void JobQueue::done(const std::string& id, const std::vector<std::string>& files) {
    get(id);
    record({{"event", "done"}, {"id", id}, {"files", files}});
}
void JobQueue::fail(const std::string& id, const std::string& error) {
    get(id);
    record({{"event", "failed"}, {"id", id}, {"error", error}});
}
void JobQueue::cancel(const std::string& id) {
    get(id);
    record({{"event", "cancelled"}, {"id", id}});
}
void JobQueue::interrupt(const std::string& id) {
    get(id);
    record({{"event", "interrupted"}, {"id", id}});
}
void JobQueue::retry(const std::string& id) {
    get(id);
    record({{"event", "retry"}, {"id", id}});
}
void JobQueue::remove(const std::string& id) {
    if (get(id).state == JobState::Running) throw std::invalid_argument("job '" + id + "' is running: cancel it first");
    record({{"event", "remove"}, {"id", id}});
}

} // namespace dd::queue
