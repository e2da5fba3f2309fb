#pragma once
// The CLI's commands, one file each (cli_<name>.cpp). Each command's option table (app/cli_options.h) parses its
// arguments and is its --help; bad usage throws std::invalid_argument.
#include "app/cli_options.h"

#include <memory>
#include <string>
#include <vector>

namespace dd::cli {

std::unique_ptr<Command> makeInspectCommand();     // cli_inspect.cpp: what a model file holds
std::unique_ptr<Command> makeGenerateCommand();    // cli_generate.cpp: images with sidecars
std::unique_ptr<Command> makeBatchCommand();       // cli_batch.cpp: resumable JSONL batches
std::unique_ptr<Command> makeUpscaleCommand();     // cli_upscale.cpp: an image made bigger by an upscaler network
std::unique_ptr<Command> makeServeCommand();      // cli_serve.cpp: AUTOMATIC1111's web API
std::unique_ptr<Command> makeVerifyCommand();      // cli_verify.cpp: rerun a result, compare pixel hashes
std::unique_ptr<Command> makeBenchCommand();       // cli_bench.cpp: the memory/speed table per plan
std::unique_ptr<Command> makeCompletionCommand();  // cli_completion.cpp: the bash completion script

struct CommandEntry {
    const char* name;
    std::unique_ptr<Command> (*make)();
};
const std::vector<CommandEntry>& commands();  // cli.cpp: in the order --help lists them

std::string versionLine();  // "DiffusionDesk 0.x (libtorch 2.y, tcmalloc)"

} // namespace dd::cli
