// diffusiondesk-cli: the engine without the GUI. Every failure a user can cause ends in one clear line on
// stderr and a non-zero exit code.
#include "core/io/checkpoint.h"
#include "core/io/model_error.h"
#include "core/io/model_hash.h"
#include "core/io/text_format.h"

#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace dd::io;

namespace {

constexpr const char* kUsage =
    "usage: diffusiondesk-cli <command> [options]\n"
    "commands:\n"
    "  inspect PATH    family, components, dtypes, parameter counts, file sizes and hash of a model\n"
    "                  (a diffusers folder or a single-file .safetensors checkpoint)\n";

uint64_t bytesOnDisk(const fs::path& p) {
    if (fs::is_regular_file(p)) return fs::file_size(p);
    uint64_t total = 0;
    for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file() && e.path().extension() == ".safetensors") total += e.file_size();
    return total;
}

std::string withCommas(uint64_t v) { return withThousands(v); }

int inspect(const std::string& path) {
    const Checkpoint ck = loadCheckpoint(path);
    std::cout << "model:      " << path << "\n"
              << "format:     " << (ck.format == CheckpointFormat::SingleFile ? "single file" : "diffusers folder") << "\n"
              << "family:     " << familyName(ck.family) << "\n";
    uint64_t totalParams = 0;
    for (const auto& [name, tensors] : ck.components) {
        std::map<std::string, uint64_t> dtypes;  // dtype → parameter count
        uint64_t params = 0;
        for (const auto& [_, t] : tensors) {
            dtypes[c10::toString(t.scalar_type())] += uint64_t(t.numel());
            params += uint64_t(t.numel());
        }
        totalParams += params;
        std::cout << "component:  " << name << "  " << withCommas(params) << " parameters in " << tensors.size() << " tensors (";
        bool first = true;
        for (const auto& [dtype, n] : dtypes) {
            std::cout << (first ? "" : ", ") << dtype << " " << withCommas(n);
            first = false;
        }
        std::cout << ")";
        if (ck.format == CheckpointFormat::DiffusersFolder) std::cout << "  " << humanBytes(bytesOnDisk(fs::path(path) / name));
        std::cout << "\n";
    }
    std::cout << "parameters: " << withCommas(totalParams) << "\n"
              << "size:       " << humanBytes(bytesOnDisk(path)) << "\n";
    for (const auto& note : ck.notes) std::cout << "note:       " << note << "\n";
    if (fs::is_regular_file(path)) {
        const ModelHashes h = hashModelFile(path);
        std::cout << "hash:       " << h.shortHash << "  (A1111 \"Model hash\"; legacy " << h.legacyHash << ")\n"
                  << "sha256:     " << h.sha256 << "\n";
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        std::cout << kUsage;
        return args.empty() ? 2 : 0;
    }
    try {
        if (args[0] == "inspect") {
            if (args.size() != 2) throw std::invalid_argument("inspect takes exactly one PATH");
            return inspect(args[1]);
        }
        throw std::invalid_argument("unknown command '" + args[0] + "' (try --help)");
    } catch (const ModelFileError& e) {
        std::cerr << "error: " << e.what() << "\n";
    } catch (const std::invalid_argument& e) {
        std::cerr << "error: " << e.what() << "\n" << kUsage;
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << "\n";
    }
    return 1;
}
