#include "core/compare/verify.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace dd::compare {

std::string pixelSha256(const api::Image& image) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (!EVP_Digest(image.rgb.data(), image.rgb.size(), digest, &length, EVP_sha256(), nullptr))
        throw std::runtime_error("SHA-256 of the pixels failed (OpenSSL)");
    static const char* hex = "0123456789abcdef";
    std::string s;
    for (unsigned int i = 0; i < length; ++i) {
        s += hex[digest[i] >> 4];
        s += hex[digest[i] & 15];
    }
    return s;
}

Recorded recordedFrom(const api::GenerationResult& result) {
    Recorded r{result.settings, result.environment, {}};
    for (size_t i = 0; i < result.images.size(); ++i) r.images.push_back({int(i), result.images[i]});
    return r;
}

VerifyReport verify(pipeline::Engine& engine, const Recorded& recorded, const api::CancelToken& cancel,
                    api::Observer* observer, const api::RunImages& images) {
    for (const auto& img : recorded.images)
        if (img.index < 0 || img.index >= recorded.settings.batchSize)
            throw std::invalid_argument("image index " + std::to_string(img.index) + " is outside the batch of " +
                                        std::to_string(recorded.settings.batchSize));
    VerifyReport report;
    std::vector<RecordedImage> expected = recorded.images;
    std::optional<api::Environment> environment = recorded.environment;
    if (expected.empty()) {
        // Nothing recorded: the first run is the reference for the second.
        report.ranTwice = true;
        const auto first = engine.generate(recorded.settings, cancel, observer, images);
        for (size_t i = 0; i < first.images.size(); ++i) expected.push_back({int(i), first.images[i]});
        if (!environment) environment = first.environment;
    }
    // A run without its own thread count used its machine's default (determinism mode) or followed the load
    // (outside it); the rerun pins the recorded count, so that another machine, or a busier one, can still
    // reproduce it bit for bit (outside determinism mode: if the count stayed put during the recorded run).
    api::GenerationSettings rerun = recorded.settings;
    if (rerun.plan.threads <= 0 && environment && environment->threads > 0)
        rerun.plan.threads = environment->threads;
    report.rerun = engine.generate(rerun, cancel, observer, images);
    report.identical = true;
    for (const auto& e : expected) {
        if (size_t(e.index) >= report.rerun.images.size())
            throw std::runtime_error("the rerun returned " + std::to_string(report.rerun.images.size()) + " images, fewer than the batch");
        const auto& actual = report.rerun.images[size_t(e.index)];
        ImageVerdict v{e.index, pixelSha256(e.image), pixelSha256(actual), pixelDifference(e.image, actual)};
        report.identical = report.identical && v.identical();
        report.images.push_back(std::move(v));
    }
    report.environmentKnown = environment.has_value();
    if (environment) report.environment = diffEnvironment(*environment, report.rerun.environment);
    return report;
}

std::string describe(const VerifyReport& report) {
    std::string s = report.identical ? "identical" : "NOT identical";
    s += report.ranTwice ? " (no recorded image: the settings were run twice)\n" : "\n";
    for (const auto& v : report.images) {
        s += "image " + std::to_string(v.index) + " (seed " + std::to_string(api::imageSeeds(report.rerun.settings, v.index).seed) + "): ";
        if (v.identical()) s += "sha256 " + v.expectedSha256 + "\n";
        else s += "recorded " + v.expectedSha256 + ", rerun " + v.actualSha256 + "\n  " + describe(v.pixels) + "\n";
    }
    if (!report.environmentKnown) s += "environment of the recorded run: unknown (not in the file)\n";
    if (!report.environment.empty()) {
        s += "environment differences (recorded \u2192 now):\n";
        for (const auto& d : report.environment) s += "  " + d.field + ": " + d.a + " \u2192 " + d.b + "\n";
    }
    if (!report.identical && !report.rerun.settings.deterministic)
        s += "determinism mode was off for this run; turn it on to make reruns bit-identical on one machine\n";
    return s;
}

} // namespace dd::compare
