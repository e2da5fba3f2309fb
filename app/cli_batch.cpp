// diffusiondesk-cli batch JOBS.jsonl --out DIR [--shard I/N]: a batch that can be killed at any instant and
// restarted (spot instances, Slurm preemption). Output names depend only on the job's line, so a restart finds
// what is finished; images are published atomically without replacing anything; a journal in DIR records every
// state change (core/queue/job_queue.h). docs/batch.md.
#include "app/cli_commands.h"
#include "app/cli_library.h"
#include "core/pipeline/engine.h"
#include "core/queue/durable_file.h"
#include "core/queue/job_queue.h"
#include "core/settings/file_name_template.h"
#include "core/settings/model_lookup.h"
#include "core/settings/sidecar.h"
#include "imaging/run_images.h"
#include "imaging/export.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>

namespace dd::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kBatchNameTemplate = "{counter:05}-{seed}";

struct BatchOptions {
    std::string jobsFile, out, model, nameTemplate = kBatchNameTemplate, format = "png";
    std::vector<std::string> modelFolders;
    int shard = 0, shards = 1, maxInterruptions = 2;
    bool shardGiven = false;
    int shardCount = 0;  // --shards N: the scheduler's task index is the shard, of N (0 = from the Slurm array's range)
    double pricePerHour = 0;
    bool retryFailed = false;
    bool library = true;
};

// What the table cannot check per option: the combination.
void check(const BatchOptions& o) {
    if (o.jobsFile.empty()) throw std::invalid_argument("batch needs a JOBS.jsonl file");
    if (o.out.empty()) throw std::invalid_argument("batch needs --out DIR");
    if (o.nameTemplate.find("{date") != std::string::npos || o.nameTemplate.find("{time") != std::string::npos)
        throw std::invalid_argument("batch --name must not use {date} or {time}: a restart would not find the finished images");
}

// A whole number from the environment, or nullopt when the variable is unset.
std::optional<int> environmentNumber(const char* name) {
    const char* v = std::getenv(name);
    if (!v || !*v) return std::nullopt;
    try {
        return toInt(name, v);
    } catch (const std::invalid_argument&) {
        throw std::invalid_argument(std::string(name) + "=" + v + " is not a whole number");
    }
}

// Without --shard, a cluster scheduler's array task says which shard this process is (docs/farm.md): a Slurm job
// array (sbatch --array) or a Kubernetes Indexed Job (JOB_COMPLETION_INDEX). With --shards N the task's index is
// the shard, so one task can be resubmitted alone (sbatch --array=1); without it a Slurm array's own range gives
// the count. Returns how the shard was chosen, for the log ("" when it was not).
std::string shardFromScheduler(BatchOptions& o) {
    if (o.shardGiven) {
        if (o.shardCount) throw std::invalid_argument("--shards is for a scheduler's task index; --shard I/N already names the shard");
        return "";
    }
    if (const auto id = environmentNumber("SLURM_ARRAY_TASK_ID"); id && o.shardCount) {
        o.shards = o.shardCount, o.shard = *id;
        if (o.shard < 0 || o.shard >= o.shards)
            throw std::invalid_argument("SLURM_ARRAY_TASK_ID=" + std::to_string(*id) + " is not below --shards " + std::to_string(o.shards) +
                                        " (with --shards, submit --array=0-" + std::to_string(o.shards - 1) + ")");
        return "Slurm array task " + std::to_string(*id) + " (SLURM_ARRAY_TASK_ID) of --shards " + std::to_string(o.shards);
    } else if (id) {
        const auto count = environmentNumber("SLURM_ARRAY_TASK_COUNT");
        const int min = environmentNumber("SLURM_ARRAY_TASK_MIN").value_or(0);
        const int step = std::max(1, environmentNumber("SLURM_ARRAY_TASK_STEP").value_or(1));
        const auto max = environmentNumber("SLURM_ARRAY_TASK_MAX");
        if (!count && !max) throw std::invalid_argument("SLURM_ARRAY_TASK_ID is set but neither SLURM_ARRAY_TASK_COUNT nor _MAX: give --shard I/N");
        // --array=1-3 numbers the tasks 1, 2, 3; --array=0-10:5 numbers them 0, 5, 10. A list with gaps
        // (--array=1,4,9) has no arithmetic order: use --shard there.
        o.shards = count ? *count : (*max - min) / step + 1;
        o.shard = (*id - min) / step;
        if ((*id - min) % step != 0 || o.shard < 0 || o.shard >= o.shards)
            throw std::invalid_argument("SLURM_ARRAY_TASK_ID=" + std::to_string(*id) + " is not in a regular --array range of " +
                                        std::to_string(o.shards) + " tasks: give --shard I/N");
        return "Slurm array task " + std::to_string(*id) + " (SLURM_ARRAY_TASK_ID; tasks " + std::to_string(min) + ".." +
               std::to_string(min + (o.shards - 1) * step) + ")";
    }
    if (const auto index = environmentNumber("JOB_COMPLETION_INDEX")) {
        if (!o.shardCount) throw std::invalid_argument("JOB_COMPLETION_INDEX is set: give the Indexed Job's completions as --shards N");
        o.shards = o.shardCount;
        o.shard = *index;
        if (o.shard < 0 || o.shard >= o.shards)
            throw std::invalid_argument("JOB_COMPLETION_INDEX=" + std::to_string(*index) + " is not below --shards " + std::to_string(o.shards));
        return "Kubernetes Indexed Job index " + std::to_string(*index) + " (JOB_COMPLETION_INDEX) of --shards " + std::to_string(o.shards);
    }
    if (o.shardCount) throw std::invalid_argument("--shards needs SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX (a scheduler's array task)");
    return "";
}

struct LineJob {
    int line = 0;          // 1-based line number in JOBS.jsonl
    std::string text;
};

// The settings a job line asks for: a sidecar (model found by hash) or a settings object (model path as given).
api::GenerationSettings settingsOf(const std::string& text, const BatchOptions& o) {
    const json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw std::invalid_argument("not a JSON object");
    api::GenerationSettings s;
    if (j.contains("schema")) {
        const settings::Sidecar sc = settings::readSidecar(text);
        s = api::fromImage(sc.settings, sc.imageIndex);
        if (o.model.empty()) {
            const std::string name = sc.settings.model.rfind("demo:", 0) == 0 ? sc.settings.model : sc.modelName;
            s.model = settings::resolveRestoredModel(name, sc.modelHash, o.modelFolders);
        }
        s.refiner.model = settings::resolveRestoredRefiner(s.refiner.model, s.refiner.hash, o.modelFolders);
    } else {
        // A job file is the user's own: its model, init image and mask paths are used as written. The sidecar
        // reader holds the range and type checks.
        const settings::Sidecar sc = settings::readSidecar(json{{"schema", settings::kSidecarSchema}, {"settings", j}}.dump());
        s = sc.settings;
        s.model = j.value("model", std::string());
        s.initImage = j.value("init_image", std::string());
        if (const auto inpaint = j.find("inpaint"); inpaint != j.end() && inpaint->is_object())
            s.inpaint.mask = inpaint->value("mask", std::string());
    }
    if (!o.model.empty()) s.model = o.model;
    if (s.model.empty()) throw std::invalid_argument("no model (give \"model\" in the line or --model)");
    api::validate(s);
    return s;
}

std::vector<std::string> outputsOf(const std::string& base, int batch, const std::string& ext) {
    std::vector<std::string> out;
    for (int k = 0; k < batch; ++k) out.push_back(base + (batch > 1 ? "-" + std::to_string(k + 1) : "") + ext);
    return out;
}

class Batch : public Command {
public:
    OptionTable options() override;
    int run() override;

private:
    BatchOptions o;
};

OptionTable Batch::options() {
    auto text = [](std::string& field) { return [&field](const std::string& v) { field = v; }; };
    return OptionTable("batch", "JOBS.jsonl --out DIR [options]",
                       "A resumable batch, one job per line (settings JSON or sidecar).\n"
                       "Kill it at any moment and run it again: it goes on where it stopped (docs/batch.md).")
        .positional("JOBS.jsonl", "the jobs, one JSON object per line", text(o.jobsFile))
        .value("--out", "DIR", "the output folder (it holds the batch's journal too)", text(o.out), Complete::Folder)
        .value("--shard", "I/N", "run every N-th job from the I-th (0-based), e.g. 0/4 on the first of four machines",
               [this](const std::string& v) {
                   const auto slash = v.find('/');
                   if (slash == std::string::npos) throw std::invalid_argument("--shard expects I/N, e.g. 0/4");
                   o.shard = toInt("--shard", v.substr(0, slash));
                   o.shards = toInt("--shard", v.substr(slash + 1));
                   o.shardGiven = true;
                   if (o.shards < 1 || o.shard < 0 || o.shard >= o.shards)
                       throw std::invalid_argument("--shard " + v + ": I must be in 0..N-1 and N at least 1");
               })
        .value("--shards", "N", "in a Slurm array or Kubernetes Indexed Job: N shards, the task's index is the shard "
                                "(without --shard and --shards: the Slurm array's own range)",
               [this](const std::string& v) { o.shardCount = toPositiveInt("--shards", v); })
        .value("--model", "PATH", "the model for jobs that name none (or override by path)", text(o.model), Complete::File)
        .value("--models", "DIR", "where sidecar jobs' models are found by hash (repeatable)",
               [this](const std::string& v) { o.modelFolders.push_back(v); }, Complete::Folder)
        .value("--name", "TEMPLATE", std::string("file names (default ") + kBatchNameTemplate + "; no {date} or {time})", text(o.nameTemplate))
        .choice("--format", {"png", "jpeg", "webp"}, "image format (png)", text(o.format))
        .value("--max-interruptions", "N", "a job interrupted this often is marked failed (2)",
               [this](const std::string& v) { o.maxInterruptions = toInt("--max-interruptions", v); })
        .flag("--retry-failed", "run the jobs that failed before again", [this] { o.retryFailed = true; })
        .flag("--no-library", "do not add the images to the window's image library", [this] { o.library = false; })
        .value("--price-per-hour", "X", "what the machine costs, for the sidecars' cost per image",
               [this](const std::string& v) { o.pricePerHour = toNumber("--price-per-hour", v); });
}

} // namespace

int Batch::run() {
    check(o);
    if (const std::string from = shardFromScheduler(o); !from.empty())
        std::cerr << "batch: shard " << o.shard << "/" << o.shards << " from the " << from << "\n";
    if (!fs::is_directory(o.out)) throw std::invalid_argument("output folder " + o.out + " does not exist");
    const auto format = imaging::exportFormatFromName(o.format);
    const std::string ext = imaging::extensionOf(format);
    std::ifstream in(o.jobsFile);
    if (!in) throw std::invalid_argument(o.jobsFile + ": cannot open");
    std::vector<LineJob> mine;
    std::string line;
    for (int index = 0; std::getline(in, line); ++index) {
        const auto first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos || line[first] == '#') continue;
        if (index % o.shards == o.shard) mine.push_back({index + 1, line});  // by line index: stable across restarts
    }
    const std::string journal = (fs::path(o.out) / (".diffusiondesk-batch-" + fs::path(o.jobsFile).stem().string() +
                                                    (o.shards > 1 ? "-shard-" + std::to_string(o.shard) + "-of-" + std::to_string(o.shards) : "") +
                                                    ".jsonl")).string();
    queue::JobQueue q(journal);
    for (const auto& w : q.warnings()) std::cerr << "note: " << w << "\n";

    pipeline::Engine engine;
    api::CancelToken cancel;
    int made = 0, skipped = 0, failed = 0;
    for (const auto& lj : mine) {
        const std::string id = "line-" + std::to_string(lj.line);
        const std::string where = o.jobsFile + ":" + std::to_string(lj.line);
        api::GenerationSettings s;
        std::string base;
        try {
            s = settingsOf(lj.text, o);
            settings::FileNameFields f;
            f.counter = lj.line;
            f.seed = s.seed;
            f.prompt = s.prompt;
            f.model = fs::path(s.model).stem().string();
            f.width = s.width, f.height = s.height, f.steps = s.steps, f.sampler = s.sampler;
            base = settings::expandFileName(o.nameTemplate, f);
        } catch (const std::exception& e) {
            if (!q.find(id)) q.enqueue(id, json(lj.text), "");
            if (q.find(id)->state != queue::JobState::Failed) q.fail(id, api::failureMessage(e));
            std::cerr << "error: " << where << ": " << api::failureMessage(e) << "\n";
            ++failed;
            continue;
        }
        if (!q.find(id)) q.enqueue(id, json::parse(lj.text), base);
        const queue::Job& job = *q.find(id);
        const auto names = outputsOf(base, s.batchSize, ext);
        const bool finished = std::all_of(names.begin(), names.end(), [&](const std::string& n) { return fs::exists(fs::path(o.out) / n); });
        if (finished) {  // finished images are never regenerated
            if (job.state != queue::JobState::Done) q.done(id, names);
            ++skipped;
            continue;
        }
        if (job.state == queue::JobState::Failed && !o.retryFailed) {
            std::cerr << "error: " << where << ": failed before (" << job.error << "); skipped (--retry-failed to run it)\n";
            ++failed;
            continue;
        }
        if (job.state == queue::JobState::Interrupted) {
            if (job.interruptions >= o.maxInterruptions) {
                q.fail(id, "the process died " + std::to_string(job.interruptions) +
                               " times while running this job; not run again (a crash loop?) — --retry-failed to try anyway");
                std::cerr << "error: " << where << ": " << q.find(id)->error << "\n";
                ++failed;
                continue;
            }
            std::cerr << "note: " << where << ": interrupted before; running it again\n";
        }
        if (job.state != queue::JobState::Pending) q.retry(id);
        q.start(id);
        try {
            const auto start = std::chrono::steady_clock::now();
            const auto result = engine.generate(s, cancel, nullptr, dd::imaging::readRunImages(s));
            const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            std::vector<std::string> written;
            for (std::size_t k = 0; k < result.images.size() && k < names.size(); ++k) {
                const std::string path = (fs::path(o.out) / names[k]).string();
                if (fs::exists(path)) continue;  // written before the last kill: keep it
                queue::removeStaleTemporaries(o.out, names[k]);
                queue::removeStaleTemporaries(o.out, fs::path(settings::sidecarPathFor(names[k])).filename().string());
                const auto sc = imaging::sidecarFor(result, int(k), wall, o.pricePerHour, DD_VERSION);
                imaging::exportImageAs(path, format, 95, result.images[k], sc, result.modelName);
                std::cout << path << "\n";
                written.push_back(path);
            }
            q.done(id, names);
            if (o.library) addToLibrary(written);
            ++made;
        } catch (const std::exception& e) {
            q.fail(id, api::failureMessage(e));
            std::cerr << "error: " << where << ": " << api::failureMessage(e) << "\n";
            ++failed;
        }
    }
    std::cerr << "batch: " << mine.size() << " jobs in shard " << o.shard << "/" << o.shards << ": " << made << " made, "
              << skipped << " already done, " << failed << " failed\n";
    return failed == 0 ? 0 : 1;
}

std::unique_ptr<Command> makeBatchCommand() { return std::make_unique<Batch>(); }

} // namespace dd::cli
