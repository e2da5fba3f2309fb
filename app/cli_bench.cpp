// diffusiondesk-cli bench: seconds per image and per step, and peak memory per stage (measured and predicted),
// for one memory plan per row. Each row runs in a child process (this binary, re-executed) so that every row
// starts from the same clean process: peaks are not inflated by what an earlier row left in the allocator.
#include "app/cli_commands.h"

#include "core/io/atomic_file.h"
#include "core/memory/memory_probe.h"
#include "core/memory/predictor.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/memory_prediction.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <sys/wait.h>
#include <unistd.h>

namespace dd::cli {
namespace {

using api::Attention;
using api::MemoryPlan;
using api::Precision;

struct Row {
    const char* name;
    const char* what;
    void (*apply)(MemoryPlan&);
};

void allFp16(MemoryPlan& p) { p.unet = p.textEncoder = p.vae = Precision::FP16; }

// The rows of seed 004's table that apply to this engine, in the order a reader compares them.
const std::vector<Row>& allRows() {
    static const std::vector<Row> rows = {
        {"fp32", "fp32, SDPA (torch picks the kernel)", [](MemoryPlan&) {}},
        {"bf16", "bf16 UNet + text encoder + VAE", [](MemoryPlan& p) { p.unet = p.textEncoder = p.vae = Precision::BF16; }},
        {"fp16", "fp16 UNet + text encoder + VAE", allFp16},
        {"sdpa-math", "fp32, SDPA forced to the math kernel", [](MemoryPlan& p) { p.attention = Attention::SdpaMath; }},
        {"sliced", "fp32, attention slicing (auto: heads/2)", [](MemoryPlan& p) { p.attention = Attention::Sliced; }},
        {"chunked", "fp32, query-chunked attention (1024)", [](MemoryPlan& p) { p.attention = Attention::Chunked; }},
        {"vae-slicing", "fp32, SDPA, VAE slicing", [](MemoryPlan& p) { p.vaeSlicing = true; }},
        {"vae-tiling", "fp32, SDPA, VAE tiling", [](MemoryPlan& p) { p.vaeTiling = true; }},
        {"fp8", "UNet weights stored in fp8 (e4m3fn), bf16 compute", [](MemoryPlan& p) {
             p.unet = Precision::BF16;
             p.fp8Storage = "e4m3fn";
         }},
        // Offload moves weights between host and GPU; on the CPU there is nowhere to move them, so these rows
        // are only in the default list with --device cuda.
        {"offload-model", "fp16, model CPU offload", [](MemoryPlan& p) {
             allFp16(p);
             p.offload = api::Offload::Model;
         }},
        {"offload-sequential", "fp16, sequential CPU offload", [](MemoryPlan& p) {
             allFp16(p);
             p.offload = api::Offload::Sequential;
         }},
        {"offload-group", "fp16, group offload (1 block per group)", [](MemoryPlan& p) {
             allFp16(p);
             p.offload = api::Offload::Group;
         }},
    };
    return rows;
}

const Row& rowNamed(const std::string& name) {
    for (const auto& r : allRows())
        if (name == r.name) return r;
    std::string known;
    for (const auto& r : allRows()) known += std::string(known.empty() ? "" : ", ") + r.name;
    throw std::invalid_argument("unknown bench row '" + name + "' (known: " + known + ")");
}

struct Options {
    std::string model;
    int steps = 4, width = 512, height = 512, batch = 1, threads = 0;
    std::string device = "cpu";  // or "cuda", "cuda:1"
    std::vector<std::string> rows;
    std::string json;
    std::string oneRow;  // child mode: run this row, write its JSON to `json`
};

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Whether the engine ran what the row asked for (a toggle not wired yet must not be reported as measured).
std::string notApplied(const MemoryPlan& plan, const api::Environment& env) {
    const std::string want = std::string("unet=") + api::precisionName(plan.unet);
    if (env.precision.find(want) == std::string::npos) return "the engine ran " + env.precision;
    if (env.attention.rfind(api::attentionName(plan.attention), 0) != 0) return "the engine ran attention " + env.attention;
    if (env.offload.rfind(api::offloadName(plan.offload), 0) != 0)  // "none, unet fp8-e4m3fn storage"
        return "the engine ran offload " + env.offload + (env.device == "CPU" ? " (nothing to offload to on the CPU)" : "");
    return "";
}

// {"load": …, "encode": …, "denoise": …, "decode": …}: one kind of peak (host RSS or CUDA allocator) per stage.
nlohmann::json stagePeaks(const api::StageMemory& m, int64_t api::StagePeak::*kind) {
    return {{"load", m.load.*kind}, {"encode", m.encode.*kind}, {"denoise", m.denoise.*kind}, {"decode", m.decode.*kind}};
}

// Child: one generation with the row's plan; prints nothing, writes the row's JSON.
int runOneRow(const Options& o) {
    const Row& row = rowNamed(o.oneRow);
    api::GenerationSettings s;
    s.model = o.model;
    s.prompt = "a lighthouse on a cliff at sunset, oil painting";
    s.steps = o.steps;
    s.width = o.width;
    s.height = o.height;
    s.batchSize = o.batch;
    s.seed = 1;
    s.sampler = "Euler";
    s.plan.device = o.device;
    s.plan.threads = o.threads;
    row.apply(s.plan);

    const auto baseline = memory::sampleMemory();
    memory::PredictInput in;
    in.width = o.width;
    in.height = o.height;
    in.batch = o.batch;
    in.plan = s.plan;
    in.cfg = s.cfgScale > 1.0;
    in.cuda = o.device != "cpu";  // then the peaks compared are the GPU's (CUDA allocator), not the process RSS
    if (!in.cuda) in.baselineBytes = baseline.hostRss;
    const auto prediction = memory::predict(pipeline::modelShapeOf(o.model), in);

    pipeline::Engine engine;
    api::CancelToken cancel;
    const auto r = engine.generate(s, cancel, nullptr);
    const auto& t = r.timings;
    double steps = 0;
    for (double x : t.stepSeconds) steps += x;
    const auto& m = r.memory;
    nlohmann::json j = {
        {"row", row.name},
        {"what", row.what},
        {"plan", s.plan},
        {"environment", {{"precision", r.environment.precision}, {"attention", r.environment.attention},
                         {"threads", r.environment.threads}, {"device", r.environment.device},
                         {"offload", r.environment.offload}}},
        {"not_applied", notApplied(s.plan, r.environment)},
        {"seconds", {{"load", t.loadSeconds}, {"encode", t.encodeSeconds}, {"steps", steps}, {"decode", t.decodeSeconds},
                     {"per_step_median", median(t.stepSeconds)},
                     {"per_image", (t.encodeSeconds + steps + t.decodeSeconds) / o.batch}}},
        {"peak_bytes", stagePeaks(m, in.cuda ? &api::StagePeak::device : &api::StagePeak::host)},
        {"peak_kind", in.cuda ? "cuda allocator" : "process rss"},
        {"peak_host_bytes", stagePeaks(m, &api::StagePeak::host)},
        {"baseline_bytes", baseline.hostRss},
        {"predicted", prediction},
    };
    io::writeFileAtomically(o.json, [&](std::ostream& out) { out << j.dump(1); });
    return 0;
}

std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

std::string selfPath() {
    char buf[4096];
    const auto n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) throw std::runtime_error("cannot find this program's path (/proc/self/exe)");
    return std::string(buf, size_t(n));
}

std::string gb(int64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", double(bytes) / double(int64_t(1) << 30));
    return buf;
}

std::string cell(const nlohmann::json& row, const char* stage) {
    const int64_t measured = row["peak_bytes"][stage];
    const int64_t predicted = row["predicted"][stage]["total"];
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s / %s", gb(measured).c_str(), gb(predicted).c_str());
    return buf;
}

std::vector<std::string> rowNames() {
    std::vector<std::string> names;
    for (const auto& r : allRows()) names.push_back(r.name);
    return names;
}

class Bench : public Command {
public:
    OptionTable options() override {
        auto positive = [](int& field, const char* flag) { return [&field, flag](const std::string& v) { field = toPositiveInt(flag, v); }; };
        return OptionTable("bench", "--model PATH [options]",
                           "Seconds and peak memory per stage for each memory plan, one process per row (docs/benchmarks.md).")
            .value("--model", "PATH", "the model (a folder, a .safetensors file or demo:tiny-sd1)",
                   [this](const std::string& v) { o.model = v; }, Complete::File)
            .value("--steps", "N", "sampling steps (4)", positive(o.steps, "--steps"))
            .value("--size", "WxH", "image size (512x512)",
                   [this](const std::string& v) {
                       const auto x = v.find('x');
                       if (x == std::string::npos) throw std::invalid_argument("--size expects WxH, e.g. 512x512");
                       o.width = toPositiveInt("--size", v.substr(0, x));
                       o.height = toPositiveInt("--size", v.substr(x + 1));
                   })
            .value("--batch", "N", "images per run (1)", positive(o.batch, "--batch"))
            .value("--threads", "N", "CPU threads (default: they follow the load; docs/cli.md)", positive(o.threads, "--threads"))
            .value("--device", "cpu|cuda[:N]", "where to run (cpu)", [this](const std::string& v) { o.device = v; })
            .value("--rows", "ROW[,ROW]", "the rows to run (" + [] {
                       std::string list;
                       for (const auto& n : rowNames()) list += (list.empty() ? "" : " ") + n;
                       return list;
                   }() + "; offload rows need a GPU)",
                   [this](const std::string& v) {
                       std::stringstream list(v);
                       for (std::string name; std::getline(list, name, ',');) o.rows.push_back(rowNamed(name).name);
                   })
            .value("--json", "FILE", "also write the rows as JSON", [this](const std::string& v) { o.json = v; }, Complete::File)
            .hidden("--one-row", [this](const std::string& v) { o.oneRow = v; });
    }
    int run() override;

private:
    Options o;
};

int Bench::run() {
    if (o.model.empty()) throw std::invalid_argument("bench needs --model PATH (or demo:tiny-sd1)");
    if (o.rows.empty())
        for (const auto& r : allRows())
            if (o.device != "cpu" || std::string(r.name).rfind("offload-", 0) != 0) o.rows.push_back(r.name);
    if (!o.oneRow.empty()) return runOneRow(o);

    const std::string self = selfPath();
    const std::string tmp = (o.json.empty() ? std::string("/tmp/diffusiondesk-bench") : o.json) + "." + std::to_string(getpid());
    nlohmann::json rows = nlohmann::json::array();
    std::cout << "model " << o.model << ", " << o.width << "x" << o.height << ", batch " << o.batch << ", " << o.steps
              << " steps (Euler, CFG 7), device " << o.device << ", one process per row\n\n"
              << "| row | s/image | s/step | load s | peak GB load | encode | denoise | decode | what sets the predicted peak |\n"
              << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n"
              << std::flush;
    for (const auto& name : o.rows) {
        const std::string out = tmp + "." + name + ".json";
        std::string cmd = quote(self) + " bench --model " + quote(o.model) + " --steps " + std::to_string(o.steps) + " --size " +
                          std::to_string(o.width) + "x" + std::to_string(o.height) + " --batch " + std::to_string(o.batch) +
                          " --device " + quote(o.device) + " --one-row " + name + " --json " + quote(out);
        if (o.threads) cmd += " --threads " + std::to_string(o.threads);
        const int status = std::system(cmd.c_str());
        const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        std::ifstream in(out);
        if (rc != 0 || !in) {
            std::cout << "| " << name << " | failed (exit " << rc << ") | | | | | | | |\n" << std::flush;
            rows.push_back({{"row", name}, {"error", "exit status " + std::to_string(rc)}});
            continue;
        }
        const auto row = nlohmann::json::parse(in);
        std::remove(out.c_str());
        rows.push_back(row);
        const auto& sec = row["seconds"];
        const std::string skipped = row["not_applied"];
        char times[96];
        std::snprintf(times, sizeof times, "%.2f | %.3f | %.2f", sec["per_image"].get<double>(),
                      sec["per_step_median"].get<double>(), sec["load"].get<double>());
        std::cout << "| " << name << (skipped.empty() ? "" : " (not applied: " + skipped + ")") << " | " << times << " | "
                  << cell(row, "load") << " | " << cell(row, "encode") << " | " << cell(row, "denoise") << " | "
                  << cell(row, "decode") << " | " << row["predicted"][row["predicted"]["peak_stage"].get<std::string>()]["peak_at"].get<std::string>()
                  << " |\n"
                  << std::flush;
    }
    std::cout << "\npeak GB: measured " << (o.device == "cpu" ? "process RSS" : "CUDA allocator")
              << " peak / predicted (core/memory/predictor, docs/memory.md)\n";
    if (!o.json.empty()) {
        const nlohmann::json doc = {{"model", o.model}, {"device", o.device}, {"width", o.width}, {"height", o.height}, {"batch", o.batch},
                                    {"steps", o.steps}, {"hardware_threads", std::thread::hardware_concurrency()},
                                    {"rows", rows}};
        io::writeFileAtomically(o.json, [&](std::ostream& out) { out << doc.dump(1) << "\n"; });
    }
    return 0;
}

} // namespace

std::unique_ptr<Command> makeBenchCommand() { return std::make_unique<Bench>(); }

} // namespace dd::cli
