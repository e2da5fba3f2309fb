// Ref: A1111 modules/images.py (save_image_with_geninfo: PNG text, JPEG/WebP EXIF UserComment through
// piexif "unicode"), modules/infotext_utils / read_info_from_image (what it reads back); Exiv2 0.27 API.
#include "imaging/export.h"

#include "core/queue/durable_file.h"
#include "core/settings/a1111_parameters.h"
#include "core/settings/image_metadata.h"
#include "imaging/png.h"

// Exiv2 0.27's API hands out std::auto_ptr (deprecated since C++11): silenced up to the end of addExifAndXmp.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <exiv2/exiv2.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>

namespace dd::imaging {
namespace fs = std::filesystem;
namespace {

constexpr const char* kXmpNamespace = "https://diffusiondesk.invalid/ns/1.0/";

void initExiv2() {
    static std::once_flag once;
    std::call_once(once, [] {
        Exiv2::LogMsg::setLevel(Exiv2::LogMsg::mute);
        Exiv2::XmpParser::initialize();
        Exiv2::XmpProperties::registerNs(kXmpNamespace, "diffusiondesk");
    });
}

std::string encodeWithOpenCv(const api::Image& image, ExportFormat format, int quality) {
    if (image.width <= 0 || image.height <= 0 || image.rgb.size() != std::size_t(image.width) * image.height * 3)
        throw std::runtime_error("image buffer does not match its size");
    cv::Mat rgb(image.height, image.width, CV_8UC3, const_cast<uint8_t*>(image.rgb.data()));
    cv::Mat bgr;
    cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
    std::vector<uchar> out;
    const int q = std::clamp(quality, 1, 100);
    const bool ok = format == ExportFormat::Jpeg
                        ? cv::imencode(".jpg", bgr, out, {cv::IMWRITE_JPEG_QUALITY, q})
                        : cv::imencode(".webp", bgr, out, {cv::IMWRITE_WEBP_QUALITY, q == 100 ? 101 : q});
    if (!ok) throw std::runtime_error(std::string(format == ExportFormat::Jpeg ? "JPEG" : "WebP") + " encoding failed");
    return {out.begin(), out.end()};
}

// Adds EXIF UserComment + XMP to JPEG or WebP bytes in memory.
std::string addExifAndXmp(const std::string& encoded, const ImageMetadata& m) {
    initExiv2();
    try {
        auto img = Exiv2::ImageFactory::open(reinterpret_cast<const Exiv2::byte*>(encoded.data()), long(encoded.size()));
        img->readMetadata();
        Exiv2::ExifData exif;
        if (!m.parameters.empty()) {
            // Raw bytes, not Exiv2's CommentValue: A1111 (piexif) reads "UNICODE\0" + UTF-16 big-endian.
            const std::string uc = settings::encodeUserComment(m.parameters);
            Exiv2::DataValue v(Exiv2::undefined);
            v.read(reinterpret_cast<const Exiv2::byte*>(uc.data()), long(uc.size()), Exiv2::bigEndian);
            exif.add(Exiv2::ExifKey("Exif.Photo.UserComment"), &v);
        }
        img->setByteOrder(Exiv2::bigEndian);
        img->setExifData(exif);
        Exiv2::XmpData xmp;
        if (!m.settingsJson.empty()) xmp["Xmp.diffusiondesk.settings"] = m.settingsJson;
        img->setXmpData(xmp);
        img->writeMetadata();
        Exiv2::BasicIo& io = img->io();
        io.seek(0, Exiv2::BasicIo::beg);
        const Exiv2::DataBuf buf = io.read(long(io.size()));
        return {reinterpret_cast<const char*>(buf.pData_), std::size_t(buf.size_)};
    } catch (const Exiv2::AnyError& e) {
        throw std::runtime_error(std::string("writing EXIF/XMP metadata failed: ") + e.what());
    }
}
#pragma GCC diagnostic pop

bool isImageFile(const fs::path& p) {
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".webp";
}

} // namespace

ExportFormat exportFormatFromName(std::string_view name) {
    std::string n(name);
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (!n.empty() && n[0] == '.') n.erase(0, 1);
    if (n == "png") return ExportFormat::Png;
    if (n == "jpg" || n == "jpeg") return ExportFormat::Jpeg;
    if (n == "webp") return ExportFormat::Webp;
    throw std::invalid_argument("image format '" + std::string(name) + "' is unknown (use png, jpeg or webp)");
}

bool hasImageExtension(const std::string& path) {
    return settings::imageFormatFromExtension(path) != settings::ImageFormat::Unknown;
}

const char* extensionOf(ExportFormat f) {
    switch (f) {
    case ExportFormat::Png: return ".png";
    case ExportFormat::Jpeg: return ".jpg";
    case ExportFormat::Webp: return ".webp";
    }
    return ".png";
}

ImageMetadata metadataFor(const settings::Sidecar& sc, const std::string& a1111ModelName) {
    settings::A1111WriteOptions o;
    o.modelName = a1111ModelName;
    o.modelHash = sc.modelHash;
    o.version = sc.appVersion.empty() ? std::string() : "DiffusionDesk " + sc.appVersion;
    o.batchIndex = sc.imageIndex;
    return {settings::writeA1111Parameters(sc.settings, o), settings::writeSidecar(sc, settings::SidecarParts::Embedded)};
}

std::string encodeImage(const api::Image& image, ExportFormat format, const ImageMetadata& m, int quality) {
    if (format == ExportFormat::Png) {
        std::vector<std::pair<std::string, std::string>> text;
        if (!m.parameters.empty()) text.emplace_back("parameters", m.parameters);
        if (!m.settingsJson.empty()) text.emplace_back(settings::kSidecarPngKey, m.settingsJson);
        return encodePng(image, text, {settings::kSidecarPngKey});
    }
    return addExifAndXmp(encodeWithOpenCv(image, format, quality), m);
}

namespace {

// An img2img or inpainting result keeps what it was made from beside it (settings::sourcePathFor; a source
// already in the image's folder stays where it is), so that verify and --from find it next to the image: the
// metadata names those files. The copies are durable, like the image.
settings::Sidecar keepingSources(const std::string& path, const settings::Sidecar& sc) {
    settings::Sidecar out = sc;
    const fs::path folder = fs::absolute(path).parent_path();
    const auto keep = [&](std::string& source, const char* role) {
        std::error_code ec;
        if (source.empty() || !fs::is_regular_file(source, ec) || fs::equivalent(fs::absolute(source).parent_path(), folder, ec))
            return;
        std::ifstream in(source, std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), {});
        if (!in.good() && !in.eof()) throw std::runtime_error(source + ": cannot be read to keep it beside " + path);
        const std::string copy = settings::sourcePathFor(path, role, source);
        queue::writeFileDurably(copy, bytes, queue::Replace::Allowed);
        source = copy;
    };
    keep(out.settings.initImage, "init");
    keep(out.settings.inpaint.mask, "mask");
    return out;
}

} // namespace

ExportedFile exportImageAs(const std::string& path, ExportFormat format, int quality, const api::Image& image,
                           const settings::Sidecar& made, const std::string& a1111ModelName, bool sidecar) {
    std::string bytes;
    if (fs::exists(fs::symlink_status(path))) throw queue::FileExistsError(path + ": already exists");
    const settings::Sidecar sc = keepingSources(path, made);
    try {
        bytes = encodeImage(image, format, metadataFor(sc, a1111ModelName), quality);
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
    // The image is the commit point: its sidecar goes first, so a kill between the two leaves a sidecar without
    // an image (replaced by the rerun), never an image without its sidecar.
    ExportedFile out{path, ""};
    if (sidecar) {
        out.sidecar = settings::sidecarPathFor(path);
        queue::writeFileDurably(out.sidecar, settings::writeSidecar(sc), queue::Replace::Allowed);
    }
    queue::writeFileDurably(path, bytes, queue::Replace::Never);
    return out;
}

ExportedFile exportImage(const ExportRequest& req, const api::Image& image, const settings::Sidecar& sc,
                         const std::string& a1111ModelName) {
    if (!fs::is_directory(req.folder)) throw std::runtime_error(req.folder + ": output folder does not exist");
    const UtcNow now = utcNow();
    settings::FileNameFields f;
    f.date = req.date.empty() ? now.date : req.date;
    f.time = req.time.empty() ? now.time : req.time;
    f.seed = api::imageSeeds(sc.settings, sc.imageIndex).seed;
    f.prompt = sc.settings.prompt;
    f.model = fs::path(sc.modelName.empty() ? sc.settings.model : sc.modelName).stem().string();
    f.width = sc.settings.width;
    f.height = sc.settings.height;
    f.steps = sc.settings.steps;
    f.sampler = sc.settings.sampler;
    f.index = sc.imageIndex + 1;
    const bool counter = settings::hasCounter(req.nameTemplate);
    if (counter) {
        std::error_code ec;
        int64_t images = 0;
        for (const auto& e : fs::directory_iterator(req.folder, ec))
            if (isImageFile(e.path())) ++images;
        f.counter = images + 1;
    }
    const std::string ext = extensionOf(req.format);
    const std::string base = settings::expandFileName(req.nameTemplate, f);
    for (int attempt = 0; attempt < 100000; ++attempt) {
        std::string name = counter || attempt == 0 ? base : base + "-" + std::to_string(attempt + 1);
        if (counter && attempt > 0) {
            ++f.counter;
            name = settings::expandFileName(req.nameTemplate, f);
        }
        const std::string path = (fs::path(req.folder) / (name + ext)).string();
        // A sidecar of that name (its image deleted by hand, or being written by another process) blocks it too.
        if (fs::exists(path) || (req.sidecar && fs::exists(settings::sidecarPathFor(path)))) continue;
        try {
            return exportImageAs(path, req.format, req.quality, image, sc, a1111ModelName, req.sidecar);
        } catch (const queue::FileExistsError&) {
            // another process took the name between the check and the link: count on
        }
    }
    throw std::runtime_error(req.folder + ": no free file name for template '" + req.nameTemplate + "'");
}

settings::Sidecar sidecarFor(const api::GenerationResult& r, int imageIndex, double wallSeconds,
                             double pricePerHour, const std::string& appVersion) {
    settings::Sidecar sc;
    sc.settings = r.settings;
    const std::string& model = r.settings.model;
    sc.modelName = model.rfind("demo:", 0) == 0 ? model : fs::path(model).filename().string();
    if (sc.modelName.empty() && !model.empty()) sc.modelName = fs::path(model).parent_path().filename().string();  // "folder/"
    sc.modelHash = r.modelHash;
    for (int i = 0; i < r.settings.batchSize; ++i) sc.seeds.push_back(api::imageSeeds(r.settings, i).seed);
    sc.imageIndex = imageIndex;
    sc.timings = r.timings;
    sc.memory = r.memory;
    sc.environment = r.environment;
    if (sc.environment.appVersion.empty()) sc.environment.appVersion = appVersion;
    sc.warnings = r.warnings;
    sc.cost.pricePerHour = pricePerHour;
    sc.cost.secondsPerImage = r.images.empty() ? wallSeconds : wallSeconds / double(r.images.size());
    sc.appVersion = appVersion;
    sc.createdAt = utcNow().iso;
    return sc;
}

UtcNow utcNow() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char date[16], time[16], iso[32];
    std::strftime(date, sizeof date, "%Y-%m-%d", &tm);
    std::strftime(time, sizeof time, "%H%M%S", &tm);
    std::strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return {date, time, iso};
}

void writeUpscaled(const std::string& path, const api::Image& image, const std::string& sourcePath, int upscaleBy,
                   const std::string& upscaler) {
    std::map<std::string, std::string> text;
    try {
        text = readPngText(sourcePath);
    } catch (const std::exception&) {
    }  // not a PNG (or unreadable text): nothing to keep
    text[settings::kA1111ExtrasKey] = settings::writeA1111Extras(upscaleBy, upscaler);
    writePng(path, image, text);
}

std::string upscaledPathFor(const std::string& sourcePath, int upscaleBy, const std::string& upscaler) {
    const fs::path source(sourcePath);
    const std::string base = source.stem().string() + "-" + std::to_string(upscaleBy) + "x-" + upscaler;
    fs::path candidate = source.parent_path() / (base + ".png");
    for (int n = 2; fs::exists(candidate); ++n) candidate = source.parent_path() / (base + "-" + std::to_string(n) + ".png");
    return candidate.string();
}

} // namespace dd::imaging
