// diffusiondesk-cli: the engine without the GUI. Every failure a user can cause ends in one clear line on
// stderr and a non-zero exit code; `COMMAND --help` prints that command's options from the table that parses them.
#include "app/cli_commands.h"

#include "core/api/errors.h"
#include "core/memory/release_memory.h"

#include <torch/version.h>

#include <iostream>

namespace dd::cli {

const std::vector<CommandEntry>& commands() {
    static const std::vector<CommandEntry> list = {
        {"inspect", makeInspectCommand}, {"generate", makeGenerateCommand}, {"batch", makeBatchCommand},
        {"upscale", makeUpscaleCommand}, {"verify", makeVerifyCommand},     {"bench", makeBenchCommand},
        {"serve", makeServeCommand},
        {"completion", makeCompletionCommand},
    };
    return list;
}

std::string versionLine() {
    return std::string("DiffusionDesk ") + DD_VERSION + " (libtorch " + TORCH_VERSION + ", " + memory::cpuAllocatorName() + ")";
}

} // namespace dd::cli

namespace {

std::string programUsage() {
    std::string out = "usage: diffusiondesk-cli COMMAND [options]   (COMMAND --help: its options; --version)\ncommands:\n";
    for (const auto& c : dd::cli::commands()) {
        const auto table = c.make()->options();
        const std::string summary = table.summary().substr(0, table.summary().find('\n'));
        out += "  " + std::string(c.name) + std::string(12 - std::min<size_t>(11, table.command().size()), ' ') + summary + "\n";
    }
    return out;
}

int runCommand(const std::vector<std::string>& args) {
    for (const auto& c : dd::cli::commands()) {
        if (args[0] != c.name) continue;
        const auto command = c.make();
        const auto table = command->options();
        switch (table.parse(args)) {
        case dd::cli::Parsed::Help: std::cout << table.usage(); return 0;
        case dd::cli::Parsed::Version: std::cout << dd::cli::versionLine() << "\n"; return 0;
        case dd::cli::Parsed::Run: return command->run();
        }
    }
    throw std::invalid_argument("unknown command '" + args[0] + "' (try --help)");
}

} // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        (args.empty() ? std::cerr : std::cout) << programUsage();
        return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version") {
        std::cout << dd::cli::versionLine() << "\n";
        return 0;
    }
    try {
        return runCommand(args);
    } catch (const std::invalid_argument& e) {
        bool known = false;
        for (const auto& c : dd::cli::commands()) known = known || args[0] == c.name;
        std::cerr << "error: " << e.what() << " (see diffusiondesk-cli " << (known ? args[0] + " " : "") << "--help)\n";
    } catch (const std::exception& e) {
        std::cerr << "error: " << dd::api::failureMessage(e) << "\n";
    }
    return 1;
}
