// The image library at scale: an index of N images (default 50 000, each with a real 256-pixel JPEG thumbnail
// and a 12-word prompt), then what an artist waits for: opening it (integrity check included), the first
// thumbnails on screen in the library panel, and a search. Timings are printed, never asserted.
//
//   library_bench [--images N] [--dir DIR] [--cold]      (QT_QPA_PLATFORM=offscreen when there is no display)
//
// --cold: the kernel's page cache is dropped (root: /proc/sys/vm/drop_caches) before the open and again before
// the first screen, as after a reboot: the index and thumbnails come from the disk.
#include "core/library/library.h"
#include "core/library/search.h"
#include "imaging/thumbnail.h"
#include "ui/librarypanel.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QLineEdit>
#include <QListView>
#include <QTemporaryDir>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

using namespace dd;

namespace {

double ms(const QElapsedTimer& t) { return double(t.nsecsElapsed()) / 1e6; }

// A picture with detail, so the thumbnail's JPEG is as large as a real one's.
api::Image picture(std::mt19937& rng) {
    api::Image img;
    img.width = img.height = 512;
    img.rgb.resize(size_t(512) * 512 * 3);
    std::uniform_int_distribution<int> noise(0, 40);
    for (int y = 0; y < 512; ++y)
        for (int x = 0; x < 512; ++x)
            for (int c = 0; c < 3; ++c)
                img.rgb[(size_t(y) * 512 + x) * 3 + c] = uint8_t((x * (c + 1) / 4 + y / (c + 2) + noise(rng)) & 0xff);
    return img;
}

std::vector<std::string> vocabulary(std::mt19937& rng, int n) {
    std::vector<std::string> words;
    std::uniform_int_distribution<int> letter('a', 'z'), length(3, 9);
    for (int i = 0; i < n; ++i) {
        std::string w;
        for (int k = length(rng); k > 0; --k) w += char(letter(rng));
        words.push_back(w);
    }
    return words;
}

void build(const std::string& path, int images) {
    std::mt19937 rng(7);
    const auto words = vocabulary(rng, 2000);
    std::vector<std::string> thumbnails;
    for (int i = 0; i < 8; ++i) thumbnails.push_back(imaging::thumbnailOf(picture(rng)));
    std::uniform_int_distribution<size_t> pick(0, words.size() - 1);
    QElapsedTimer t;
    t.start();
    library::Library lib(path);
    library::Library::Transaction batch(lib);
    for (int i = 0; i < images; ++i) {
        library::Entry e;
        e.path = "/pictures/DiffusionDesk/2025-" + std::to_string(1 + i % 12) + "/" + std::to_string(i) + ".png";
        for (int k = 0; k < 12; ++k) e.prompt += (k ? " " : "") + words[pick(rng)];
        e.negativePrompt = "lowres, watermark";
        e.seed = i;
        e.width = e.height = 512;
        e.steps = 20;
        e.sampler = i % 3 ? "Euler a" : "DPM++ 2M";
        e.modelName = i % 5 ? "v1-5-pruned-emaonly" : "sdxl-base";
        char created[32];
        std::snprintf(created, sizeof created, "2025-%02d-%02dT12:%02d:%02dZ", 1 + i % 12, 1 + i % 28, i / 60 % 60, i % 60);
        e.createdAt = created;
        lib.setThumbnail(lib.put(e), thumbnails[size_t(i) % thumbnails.size()]);
    }
    batch.commit();
    std::printf("built: %d images, %.1f MB index, thumbnail %zu bytes, %.1f s\n", images,
                double(std::filesystem::file_size(path)) / 1e6, thumbnails[0].size(), ms(t) / 1000);
}

// Empties the page cache (clean pages only, so sync first). False when not permitted.
bool dropPageCache() {
    ::sync();
    std::FILE* f = std::fopen("/proc/sys/vm/drop_caches", "w");
    if (!f) return false;
    const bool ok = std::fputs("1", f) >= 0;
    return std::fclose(f) == 0 && ok;
}

} // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    int images = 50000;
    QTemporaryDir scratch;
    std::string dir = scratch.path().toStdString();
    bool cold = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--cold") cold = true;
        else if (a == "--images" && i + 1 < argc) images = std::stoi(argv[++i]);
        else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    }
    const std::string path = dir + "/library.db";
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
    build(path, images);

    const auto coldStart = [&] {
        if (cold && !dropPageCache()) {
            std::fprintf(stderr, "--cold: cannot drop the page cache (needs root); measured warm\n");
            cold = false;
        }
    };
    coldStart();
    QElapsedTimer t;
    t.start();
    { library::Library checked(path); }
    const double open = ms(t);

    ui::LibraryPanel panel;
    panel.resize(1100, 480);
    panel.show();
    coldStart();
    t.restart();
    panel.open(QString::fromStdString(path));
    panel.view()->grab();  // lays out and paints the first screen of thumbnails
    const double firstScreen = ms(t);

    auto search = [&](const QString& text) {
        QElapsedTimer s;
        s.start();
        library::Query q;
        q.text = text.toStdString();
        panel.model()->setQuery(q);
        panel.view()->grab();
        return std::pair{ms(s), panel.model()->rowCount()};
    };
    const auto common = search("a");   // a prefix most prompts have
    const auto first = panel.model()->item(0);
    const auto word = search(first ? first->prompt.section(' ', 3, 3) : QStringLiteral("x"));
    const auto none = search("zzzzzz");
    // Typed filters (the search box's seed:, size:, sampler:) on top of a word.
    const auto filtered = [&](const QString& text) {
        QElapsedTimer s;
        s.start();
        panel.model()->setQuery(library::parseSearch(text.toStdString()).query);
        panel.view()->grab();
        return std::pair{ms(s), panel.model()->rowCount()};
    };
    const auto bySeed = filtered("seed:31337");
    const auto wordAndFilters = filtered("a size:512x512 sampler:\"DPM++ 2M\" after:2025-06-01");

    std::printf("| step | time | note |\n| --- | --- | --- |\n");
    std::printf("| open the index (integrity check) | %.0f ms | %d images |\n", open, images);
    std::printf("| first thumbnails on screen | %.0f ms | ids of all, first screen read and painted |\n", firstScreen);
    std::printf("| search, one word | %.1f ms | %d found, repainted |\n", word.first, word.second);
    std::printf("| search, a prefix most prompts match | %.1f ms | %d found, repainted |\n", common.first, common.second);
    std::printf("| search, no match | %.1f ms | %d found |\n", none.first, none.second);
    std::printf("| search, seed:31337 | %.1f ms | %d found |\n", bySeed.first, bySeed.second);
    std::printf("| search, a prefix + size + sampler + after: | %.1f ms | %d found |\n", wordAndFilters.first,
                wordAndFilters.second);
    std::printf("page cache: %s\n", cold ? "dropped before the open and before the first screen" : "warm");
    return 0;
}
