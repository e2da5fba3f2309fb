// diffusiondesk-cli inspect: family, components, dtypes, parameter counts, sizes and hash of a model.
#include "app/cli_commands.h"

#include "core/io/checkpoint.h"
#include "core/io/model_hash.h"
#include "core/io/text_format.h"

#include <filesystem>
#include <iostream>
#include <map>

namespace fs = std::filesystem;

namespace dd::cli {
namespace {

uint64_t bytesOnDisk(const fs::path& p) {
    if (fs::is_regular_file(p)) return fs::file_size(p);
    uint64_t total = 0;
    for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file() && e.path().extension() == ".safetensors") total += e.file_size();
    return total;
}

class Inspect : public Command {
public:
    OptionTable options() override {
        return OptionTable("inspect", "PATH",
                           "Family, components, dtypes, parameter counts, file sizes and hash of a model.")
            .positional("PATH", "a diffusers folder or a single-file .safetensors checkpoint",
                        [this](const std::string& v) { m_path = v; });
    }

    int run() override {
        using namespace dd::io;
        const Checkpoint ck = loadCheckpoint(m_path);
        std::cout << "model:      " << m_path << "\n"
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
            std::cout << "component:  " << name << "  " << withThousands(params) << " parameters in " << tensors.size() << " tensors (";
            bool first = true;
            for (const auto& [dtype, n] : dtypes) {
                std::cout << (first ? "" : ", ") << dtype << " " << withThousands(n);
                first = false;
            }
            std::cout << ")";
            if (ck.format == CheckpointFormat::DiffusersFolder) std::cout << "  " << humanBytes(bytesOnDisk(fs::path(m_path) / name));
            std::cout << "\n";
        }
        std::cout << "parameters: " << withThousands(totalParams) << "\n"
                  << "size:       " << humanBytes(bytesOnDisk(m_path)) << "\n";
        for (const auto& note : ck.notes) std::cout << "note:       " << note << "\n";
        if (fs::is_regular_file(m_path)) {
            const ModelHashes h = hashModelFile(m_path);
            std::cout << "hash:       " << h.shortHash << "  (A1111 \"Model hash\"; legacy " << h.legacyHash << ")\n"
                      << "sha256:     " << h.sha256 << "\n";
        }
        return 0;
    }

private:
    std::string m_path;
};

} // namespace

std::unique_ptr<Command> makeInspectCommand() { return std::make_unique<Inspect>(); }

} // namespace dd::cli
