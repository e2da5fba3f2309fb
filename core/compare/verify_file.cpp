#include "core/compare/verify_file.h"

#include "core/settings/image_metadata.h"
#include "core/settings/model_lookup.h"
#include "core/settings/restore.h"

#include <filesystem>
#include <stdexcept>

namespace dd::compare {
namespace {

namespace fs = std::filesystem;

bool isImageFile(const std::string& path) {
    return settings::imageFormatFromExtension(path) != settings::ImageFormat::Unknown;
}

// The image a sidecar describes: same name, an image extension.
std::string imageNextTo(const std::string& sidecar) {
    for (const char* ext : {".png", ".webp", ".jpg", ".jpeg"}) {
        const auto p = fs::path(sidecar).replace_extension(ext);
        if (fs::is_regular_file(p)) return p.string();
    }
    return "";
}

std::string folderOf(const std::string& path) {
    const auto parent = fs::path(path).parent_path();
    return parent.empty() ? "." : parent.string();
}

} // namespace

VerifyFile verifyFileFrom(const std::string& file, const std::string& image, const std::string& model,
                          std::vector<std::string> modelFolders) {
    if (!fs::is_regular_file(file)) throw std::invalid_argument(file + ": no such file");
    const settings::Restored r = settings::restoreFromFile(file);

    VerifyFile out;
    auto& recorded = out.recorded;
    recorded.settings = r.settings;
    int index = 0;
    if (r.sidecar) {
        recorded.settings = r.sidecar->settings;
        index = r.sidecar->imageIndex;
        // An environment without a torch version was never filled (older writers): unknown, not "different".
        if (!r.sidecar->environment.torchVersion.empty()) recorded.environment = r.sidecar->environment;
    }
    out.notes = r.warnings;
    out.read = r;

    // The model: as given, else the built-in one by name, else the recorded hash / name in the folders.
    if (modelFolders.empty()) modelFolders.push_back(folderOf(file));
    if (!model.empty()) {
        recorded.settings.model = model;
    } else {
        const std::string& recordedModel = r.sidecar ? r.sidecar->settings.model : r.settings.model;
        const std::string name = recordedModel.rfind("demo:", 0) == 0 ? recordedModel : r.modelName;
        recorded.settings.model = settings::resolveRestoredModel(name, r.modelHash, modelFolders);
    }
    recorded.settings.refiner.model =
        settings::resolveRestoredRefiner(recorded.settings.refiner.model, recorded.settings.refiner.hash, modelFolders);

    // Metadata names bare files; they are looked up only next to the file.
    const auto findNextToFile = [&](std::string& name, const char* what) {
        if (name.empty()) return;
        const auto inside = settings::resolveInsideFolder(folderOf(file), fs::path(name).filename().string());
        if (!inside) throw std::invalid_argument(file + " was made from the " + what + " '" + name + "'; put it next to " + file + " to verify it");
        name = *inside;
    };
    findNextToFile(recorded.settings.initImage, "init image");
    findNextToFile(recorded.settings.inpaint.mask, "inpainting mask");

    out.imagePath = !image.empty() ? image : isImageFile(file) ? file : imageNextTo(file);
    if (!out.imagePath.empty()) recorded.images.push_back({index, {}});
    return out;
}

} // namespace dd::compare
