#include "server/saved_images.h"

#include "core/settings/sidecar.h"
#include "imaging/png.h"

#include <fstream>
#include <sstream>

namespace dd::server {

void addSavedImages(const std::vector<std::string>& files, ServiceResult& r) {
    for (const auto& file : files) {
        ServiceImage image{file, "", 0, 0};
        try {
            const auto text = imaging::readPngText(file);
            if (auto p = text.find("parameters"); p != text.end()) image.infotext = p->second;
            std::ifstream in(settings::sidecarPathFor(file));
            std::stringstream body;
            body << in.rdbuf();
            const auto sc = settings::readSidecar(body.str());
            const api::ImageSeeds seeds = api::imageSeeds(sc.settings, sc.imageIndex);
            image.seed = seeds.seed, image.variationSeed = seeds.variationSeed;
            r.settings = sc.settings, r.modelName = sc.modelName, r.modelHash = sc.modelHash;
        } catch (const std::exception&) {
            continue;
        }
        r.images.push_back(std::move(image));
    }
}

} // namespace dd::server
