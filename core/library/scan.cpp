#include "core/library/scan.h"

#include "core/queue/durable_file.h"
#include "core/settings/image_metadata.h"
#include "core/settings/restore.h"
#include "core/settings/sidecar.h"

#include <sys/stat.h>

#include <ctime>
#include <filesystem>
#include <map>
#include <optional>

namespace fs = std::filesystem;

namespace dd::library {
namespace {

std::string isoUtc(int64_t seconds) {
    const std::time_t t = std::time_t(seconds);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::optional<settings::Restored> restoreImage(const std::string& path) {
    try {
        settings::Restored r = settings::restoreFromFile(path);
        if (r.source == "png" || r.source == "jpeg" || r.source == "webp") return r;
    } catch (const settings::MetadataError&) {
        // an image without settings (a photo, another tool's plain export) is still part of the library
    }
    return std::nullopt;
}

std::optional<settings::Restored> restoreSidecar(const std::string& path) {
    try {
        return settings::restoreFromFile(path);
    } catch (const settings::MetadataError&) {
        return std::nullopt;
    }
}

bool isImageFile(const fs::path& p) {
    const std::string name = p.filename().string();
    return !name.empty() && name[0] != '.' && !queue::isTemporaryName(name) && !settings::isSourceFile(name) &&
           settings::imageFormatFromExtension(name) != settings::ImageFormat::Unknown;
}

} // namespace

std::string indexedPath(const std::string& path) {
    std::error_code ec;
    fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
    return ec ? fs::absolute(path).lexically_normal().string() : p.string();
}

Entry entryFromFile(const std::string& imagePath) {
    Entry e;
    e.path = indexedPath(imagePath);
    struct stat st{};
    if (::stat(e.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        throw LibraryError(imagePath + ": cannot be read (no such file)");
    e.fileBytes = int64_t(st.st_size);
    e.fileMtime = int64_t(st.st_mtime);
    // The sidecar beside it, read once: its creation time, and the settings when the image carries none.
    std::optional<settings::Restored> fromSidecar;
    const std::string sidecar = settings::sidecarPathFor(e.path);
    std::error_code ec;
    if (fs::is_regular_file(sidecar, ec)) {
        e.sidecarPath = sidecar;
        fromSidecar = restoreSidecar(sidecar);
        if (fromSidecar && fromSidecar->sidecar) e.createdAt = fromSidecar->sidecar->createdAt;
    }
    // The image's own metadata first; a file whose bytes are not an image (read as plain text) has none.
    std::optional<settings::Restored> r = restoreImage(e.path);
    if (!r) r = std::move(fromSidecar);
    if (r) {
        const auto& s = r->settings;
        e.prompt = s.prompt;
        e.negativePrompt = s.negativePrompt;
        e.sampler = s.sampler;
        e.seed = s.seed;
        e.width = s.width;
        e.height = s.height;
        e.steps = s.steps;
        e.cfgScale = s.cfgScale;
        e.modelName = r->modelName;
        e.modelHash = r->modelHash;
        e.source = r->source;
    }
    if (e.createdAt.empty()) e.createdAt = isoUtc(e.fileMtime);
    return e;
}

int64_t indexFile(Library& library, const std::string& imagePath, const ThumbnailMaker& thumbnail) {
    const Entry e = entryFromFile(imagePath);
    const int64_t id = library.put(e);
    if (thumbnail) {
        const std::string bytes = thumbnail(e.path);
        if (!bytes.empty()) library.setThumbnail(id, bytes);
    }
    return id;
}

ScanReport scanFolder(Library& library, const std::string& folder, const ThumbnailMaker& thumbnail) {
    ScanReport report;
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) return report;
    const std::string root = indexedPath(folder);
    std::map<std::string, Library::FileStamp> known;
    for (auto& s : library.stamps())
        if (s.path.compare(0, root.size() + 1, root + "/") == 0) known.emplace(s.path, s);

    // Commits every few hundred files: a long scan neither holds the lock for minutes nor loses its work.
    std::optional<Library::Transaction> batch;
    int inBatch = 0;
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        const fs::path& p = it->path();
        if (it->is_directory(ec) && p.filename().string().starts_with(".")) {
            it.disable_recursion_pending();
            continue;
        }
        if (!it->is_regular_file(ec) || !isImageFile(p)) continue;
        const std::string path = indexedPath(p.string());
        const auto found = known.find(path);
        struct stat st{};
        if (found != known.end() && ::stat(path.c_str(), &st) == 0 && int64_t(st.st_size) == found->second.bytes &&
            int64_t(st.st_mtime) == found->second.mtime) {
            ++report.unchanged;
            known.erase(found);
            continue;
        }
        try {
            if (!batch) batch.emplace(library);
            indexFile(library, path, thumbnail);
            ++(found == known.end() ? report.added : report.updated);
        } catch (const std::exception& e) {
            report.problems.push_back(e.what());
        }
        if (found != known.end()) known.erase(found);
        if (batch && ++inBatch == 256) {
            batch->commit();
            batch.reset();
            inBatch = 0;
        }
    }
    if (ec) report.problems.push_back(root + ": " + ec.message());
    if (!batch) batch.emplace(library);
    for (const auto& [path, stamp] : known) {
        if (fs::exists(path, ec)) continue;  // not reached by the walk (permissions): keep it
        if (library.remove(stamp.id)) ++report.removed;
    }
    batch->commit();
    return report;
}

} // namespace dd::library
