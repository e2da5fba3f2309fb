#pragma once
// Saving generated images the way users of A1111 expect, without ever losing or clobbering a file:
//
//   Sidecar sc = ...;   // settings, model, seeds, imageIndex, timings, memory, environment, cost (sidecar.h)
//   ExportRequest req{.folder = "out", .nameTemplate = "{date}-{counter:05}-{seed}-{prompt:6}"};
//   ExportedFile f = exportImage(req, image, sc, "v1-5-pruned-emaonly");   // out/2025-01-31-00001-42-a_cat.png + .json
//
// Metadata in the image: PNG: A1111 "parameters" (tEXt when Latin-1, else iTXt, as Pillow writes it) and an
// iTXt "diffusiondesk" with the embedded sidecar (settings incl. memory plan, model, seeds, environment; no
// times). JPEG / WebP: the A1111 text in EXIF UserComment ("UNICODE\0" + UTF-16BE, what A1111 writes and
// reads) and the embedded sidecar in XMP (diffusiondesk:settings). Nothing time-dependent goes into the
// image, so a deterministic rerun gives a byte-identical file; the time and cost go into the sidecar file.
#include "core/api/generation_result.h"
#include "core/settings/file_name_template.h"
#include "core/settings/sidecar.h"

#include <string>
#include <string_view>

namespace dd::imaging {

enum class ExportFormat { Png, Jpeg, Webp };
// "png", "jpg", "jpeg", "webp" (case-insensitive); throws std::invalid_argument naming the choices.
ExportFormat exportFormatFromName(std::string_view name);
const char* extensionOf(ExportFormat f);  // ".png", ".jpg", ".webp"
// Whether the path's extension is one of those formats (case-insensitive).
bool hasImageExtension(const std::string& path);

struct ImageMetadata {
    std::string parameters;    // A1111 text
    std::string settingsJson;  // writeSidecar(sc, SidecarParts::Embedded)
};

// The A1111 text and embedded sidecar for one image (A1111 "Model:" = `a1111ModelName`, "" = from the path).
ImageMetadata metadataFor(const settings::Sidecar& sc, const std::string& a1111ModelName);

// Encodes in memory. The same image and metadata always give the same bytes. quality: JPEG/WebP 1-100
// (WebP 100 = lossless). Throws std::runtime_error when encoding fails.
std::string encodeImage(const api::Image& image, ExportFormat format, const ImageMetadata& metadata, int quality = 95);

struct ExportRequest {
    std::string folder;
    std::string nameTemplate = settings::kDefaultFileNameTemplate;
    ExportFormat format = ExportFormat::Png;
    int quality = 95;
    bool sidecar = true;           // write <name>.json next to the image
    std::string date, time;        // for {date}/{time}; "" = now (UTC)
};

struct ExportedFile {
    std::string image;
    std::string sidecar;  // "" when not written
};

// Names the file from the template (with {counter}: the first free counter from the number of images in the
// folder + 1; without: "-2", "-3"... appended on a clash), writes the image durably without ever replacing an
// existing file (queue/durable_file.h), then the sidecar. Throws std::runtime_error naming the path.
ExportedFile exportImage(const ExportRequest& request, const api::Image& image, const settings::Sidecar& sc,
                         const std::string& a1111ModelName);

// Writes one image to exactly `path` (no template), never replacing it: queue::FileExistsError if it exists.
// The sidecar (when wanted, path with ".json") is written first and may replace a stale one; the image is
// published last, so an image never exists without its sidecar.
ExportedFile exportImageAs(const std::string& path, ExportFormat format, int quality, const api::Image& image,
                           const settings::Sidecar& sc, const std::string& a1111ModelName, bool sidecar = true);

// The sidecar of image `imageIndex` of a result: settings (model as given), model name and hash, seeds, timings,
// per-stage memory, environment (appVersion filled from `appVersion` when the engine left it empty), warnings,
// cost (`pricePerHour` x `wallSeconds` / images), creation time (now, UTC).
settings::Sidecar sidecarFor(const api::GenerationResult& result, int imageIndex, double wallSeconds,
                             double pricePerHour, const std::string& appVersion);


// UTC now as "2025-01-31", "120000" and ISO 8601 "2025-01-31T12:00:00Z".
struct UtcNow {
    std::string date, time, iso;
};
UtcNow utcNow();

// An upscaled copy of the image at `sourcePath`, as A1111's Extras tab saves one: the source PNG's text chunks
// (its generation parameters) kept, an "extras" chunk saying what was done (settings::writeA1111Extras); written
// durably to `path`, replacing it. Throws std::runtime_error naming the path.
void writeUpscaled(const std::string& path, const api::Image& image, const std::string& sourcePath, int upscaleBy,
                   const std::string& upscaler);
// The first free "<stem>-4x-<upscaler>.png" (then "-2", "-3"…) beside `sourcePath`.
std::string upscaledPathFor(const std::string& sourcePath, int upscaleBy, const std::string& upscaler);

} // namespace dd::imaging
