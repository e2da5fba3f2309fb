// The image library's index: what is put is found (by prompt words, filters, sorts), ratings survive a re-index,
// a scan follows the folder (added, changed, removed files), and a damaged or foreign index file is moved aside
// and started again without losing the images.
// GCC 12 warns when a designated initializer leaves fields at their defaults, which is what queries are for.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include "core/library/library.h"
#include "core/library/scan.h"
#include "core/library/search.h"
#include "imaging/export.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

using namespace dd;
using namespace dd::library;
namespace fs = std::filesystem;

namespace {

Entry entry(const std::string& path, const std::string& prompt, int64_t seed, const std::string& created) {
    Entry e;
    e.path = path;
    e.prompt = prompt;
    e.seed = seed;
    e.createdAt = created;
    e.modelName = "tiny-sd1";
    e.sampler = "Euler a";
    e.width = 64;
    e.height = 64;
    return e;
}

api::Image image(uint8_t shade) {
    api::Image img;
    img.width = 8;
    img.height = 8;
    img.rgb.assign(8 * 8 * 3, shade);
    return img;
}

// Exports one image with its metadata and sidecar as the window and the CLI do; returns the image path.
std::string exportOne(const std::string& folder, const std::string& prompt, int64_t seed) {
    settings::Sidecar sc;
    sc.settings.prompt = prompt;
    sc.settings.negativePrompt = "blurry";
    sc.settings.seed = seed;
    sc.settings.width = 64;
    sc.settings.height = 64;
    sc.seeds = {seed};
    sc.modelName = "tiny-sd1";
    sc.createdAt = "2025-01-31T12:00:00Z";
    imaging::ExportRequest req{.folder = folder, .nameTemplate = "{seed}-{prompt:4}"};
    return imaging::exportImage(req, image(uint8_t(seed)), sc, "tiny-sd1").image;
}

void writeBytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

} // namespace

class TestLibrary : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::string dbPath() const { return m_dir.filePath("library.db").toStdString(); }

private slots:
    void init() {
        for (const char* suffix : {"", "-wal", "-shm", ".thumbnails", ".thumbnails-wal", ".thumbnails-shm"})
            fs::remove(dbPath() + suffix);
    }

    void findsByPromptWordsAndFilters() {
        Library lib(dbPath());
        QVERIFY(!lib.rebuilt());
        const auto cat = lib.put(entry("/x/cat.png", "a tabby cat on a sofa", 1, "2025-01-30T10:00:00Z"));
        const auto dog = lib.put(entry("/x/dog.png", "a dog in the snow", 2, "2025-01-31T10:00:00Z"));
        auto cats = entry("/x/cats.png", "two cats, watercolor", 3, "2025-02-01T10:00:00Z");
        cats.negativePrompt = "dog";
        cats.sampler = "DPM++ 2M";
        const auto both = lib.put(cats);
        QCOMPARE(lib.count(), 3);

        QCOMPARE(lib.ids({.text = "cat"}), (std::vector<int64_t>{both, cat}));  // prefix: "cats" too; newest first
        QCOMPARE(lib.ids({.text = "dog"}), (std::vector<int64_t>{both, dog}));  // the negative prompt is searched
        QCOMPARE(lib.ids({.text = "tabby SOFA"}), (std::vector<int64_t>{cat}));  // every word, any case
        QCOMPARE(lib.ids({.text = "\"cat* ("}).size(), size_t(2));  // FTS syntax is only text
        QVERIFY(lib.ids({.text = "cat NEAR(dog"}).empty());
        QCOMPARE(lib.ids({.text = "cat", .sampler = "DPM++ 2M"}), (std::vector<int64_t>{both}));
        QCOMPARE(lib.ids({.seed = 2}), (std::vector<int64_t>{dog}));
        QCOMPARE(lib.ids({.from = "2025-01-31", .to = "2025-01-31"}), (std::vector<int64_t>{dog}));
        QCOMPARE(lib.ids({.sort = Sort::Oldest}), (std::vector<int64_t>{cat, dog, both}));
        QCOMPARE(lib.samplers(), (std::vector<std::string>{"DPM++ 2M", "Euler a"}));
        QCOMPARE(lib.modelNames(), (std::vector<std::string>{"tiny-sd1"}));
    }

    void reindexKeepsRatingAndFollowsThePrompt() {
        Library lib(dbPath());
        const auto id = lib.put(entry("/x/a.png", "old words", 1, "2025-01-30T10:00:00Z"));
        lib.setRating(id, 4);
        lib.setFavourite(id, true);
        lib.setThumbnail(id, std::string("\x89PNG\0thumb", 10));
        QCOMPARE(lib.put(entry("/x/a.png", "new words", 7, "2025-01-30T10:00:00Z")), id);
        const auto e = lib.byId(id);
        QVERIFY(e);
        QCOMPARE(e->rating, 4);
        QVERIFY(e->favourite);
        QCOMPARE(e->seed, int64_t(7));
        QVERIFY(lib.ids({.text = "old"}).empty());
        QCOMPARE(lib.ids({.text = "new"}), (std::vector<int64_t>{id}));
        QCOMPARE(lib.ids({.favouritesOnly = true, .minRating = 4}), (std::vector<int64_t>{id}));
        QCOMPARE(lib.thumbnail(id), std::string("\x89PNG\0thumb", 10));
        QVERIFY(lib.remove(id));
        QVERIFY(lib.ids({.text = "new"}).empty());
        QVERIFY(lib.thumbnail(id).empty());
        QVERIFY(!lib.remove(id));
    }

    // Thumbnails are a cache in a file of their own: one that belongs to a deleted index (whose ids now mean
    // other images) is dropped, a damaged one is started again; the index itself is untouched.
    void thumbnailsFollowTheirIndex() {
        {
            Library lib(dbPath());
            lib.setThumbnail(lib.put(entry("/x/a.png", "a", 1, "2025")), "old picture");
        }
        QVERIFY(fs::exists(dbPath() + ".thumbnails"));
        {
            Library lib(dbPath());
            QCOMPARE(lib.thumbnail(lib.ids({})[0]), std::string("old picture"));
        }
        for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(dbPath() + suffix);  // the index alone is lost
        {
            Library lib(dbPath());
            const auto id = lib.put(entry("/x/b.png", "b", 2, "2025"));
            QVERIFY(lib.thumbnail(id).empty());  // not a.png's
            lib.setThumbnail(id, "new picture");
        }
        writeBytes(dbPath() + ".thumbnails", "damaged");
        fs::remove(dbPath() + ".thumbnails-wal");
        Library lib(dbPath());
        QVERIFY(!lib.rebuilt());
        QCOMPARE(lib.count(), 1);
        QVERIFY(lib.thumbnail(lib.ids({})[0]).empty());
        lib.setThumbnail(lib.ids({})[0], "again");
        QCOMPARE(lib.thumbnail(lib.ids({})[0]), std::string("again"));
    }

    void survivesReopeningAndAnAbandonedTransaction() {
        {
            Library lib(dbPath());
            lib.put(entry("/x/kept.png", "kept", 1, "2025-01-30T10:00:00Z"));
            Library::Transaction t(lib);
            lib.put(entry("/x/lost.png", "lost", 2, "2025-01-30T10:00:00Z"));
        }  // never committed: rolled back
        Library again(dbPath());
        QVERIFY(!again.rebuilt());
        QCOMPARE(again.count(), 1);
        QVERIFY(again.byPath("/x/kept.png"));
    }

    void damagedOrForeignFileIsMovedAsideAndRebuilt_data() {
        QTest::addColumn<QByteArray>("bytes");
        QTest::newRow("text") << QByteArray("this is not a database\n");
        QTest::newRow("sqlite header, then garbage") << QByteArray("SQLite format 3\0", 16) + QByteArray(4080, '\x5a');
        QTest::newRow("truncated index") << QByteArray();  // filled in below from a real index
    }
    void damagedOrForeignFileIsMovedAsideAndRebuilt() {
        QFETCH(QByteArray, bytes);
        if (bytes.isEmpty()) {
            {
                Library lib(dbPath());
                for (int i = 0; i < 200; ++i)
                    lib.put(entry("/x/" + std::to_string(i) + ".png", "words " + std::to_string(i), i, "2025"));
            }
            QFile f(QString::fromStdString(dbPath()));
            QVERIFY(f.open(QIODevice::ReadWrite));
            const QByteArray all = f.readAll();
            QVERIFY(all.size() > 8192);
            f.resize(all.size() / 2 + 100);  // not on a page boundary
            f.seek(1024);
            f.write(QByteArray(512, '\xff'));  // and a damaged b-tree page
            f.close();
            fs::remove(dbPath() + "-wal");
        } else {
            writeBytes(dbPath(), bytes.toStdString());
        }
        const std::string original = dbPath();
        fs::remove(original + ".corrupt-1");
        Library lib(original);
        QVERIFY(lib.rebuilt());
        QVERIFY2(lib.note().find(original) != std::string::npos, lib.note().c_str());
        QVERIFY2(lib.note().find(".corrupt-1") != std::string::npos, lib.note().c_str());
        QVERIFY(fs::exists(original + ".corrupt-1"));  // kept for whoever wants to look at it
        QCOMPARE(lib.count(), 0);
        lib.put(entry("/x/new.png", "fresh start", 1, "2025"));
        QCOMPARE(lib.ids({.text = "fresh"}).size(), size_t(1));
        fs::remove(original + ".corrupt-1");
    }

    void newerSchemaIsNotOverwrittenInPlace() {
        {
            Library lib(dbPath());
        }
        // What a later version would leave: another user_version (the header's 4 bytes at 60, big endian).
        QFile f(QString::fromStdString(dbPath()));
        QVERIFY(f.open(QIODevice::ReadWrite));
        f.seek(60);
        f.write(QByteArray("\0\0\0\x09", 4));
        f.close();
        Library lib(dbPath());
        QVERIFY(lib.rebuilt());
        QVERIFY2(lib.note().find("schema version 9") != std::string::npos, lib.note().c_str());
        fs::remove(dbPath() + ".corrupt-1");
    }

    void missingFolderIsAClearError() {
        const std::string bad = m_dir.filePath("no/such/folder/library.db").toStdString();
        try {
            Library lib(bad);
            QFAIL("opened an index in a folder that does not exist");
        } catch (const LibraryError& e) {
            QVERIFY2(std::string(e.what()).find(bad) != std::string::npos, e.what());
        }
    }

    void scanFollowsTheFolder() {
        const std::string out = m_dir.filePath("out").toStdString();
        fs::create_directories(out + "/2025-01-31");
        const std::string a = exportOne(out + "/2025-01-31", "a lighthouse at dusk", 11);
        const std::string b = exportOne(out, "a red fox", 12);
        writeBytes(out + "/notes.txt", "not an image");
        writeBytes(out + "/.hidden.png", "skipped");
        writeBytes(out + "/.cat.png.ddtmp-1", "an interrupted write");
        writeBytes(out + "/broken.png", "not really a png");  // still an image file: indexed without settings

        Library lib(dbPath());
        int thumbnails = 0;
        const ThumbnailMaker thumb = [&](const std::string&) { return std::string("T") + std::to_string(++thumbnails); };
        ScanReport r = scanFolder(lib, out, thumb);
        QVERIFY2(r.problems.empty(), r.problems.empty() ? "" : r.problems.front().c_str());
        QCOMPARE(r.added, 3);
        QCOMPARE(thumbnails, 3);
        const auto lighthouse = lib.ids({.text = "lighthouse"});
        QCOMPARE(lighthouse.size(), size_t(1));
        const auto e = *lib.byId(lighthouse[0]);
        QCOMPARE(e.path, fs::weakly_canonical(a).string());
        QCOMPARE(e.seed, int64_t(11));
        QCOMPARE(e.modelName, std::string("tiny-sd1"));
        QCOMPARE(e.negativePrompt, std::string("blurry"));
        QCOMPARE(e.createdAt, std::string("2025-01-31T12:00:00Z"));  // the sidecar's time, not the file's
        QCOMPARE(e.sidecarPath, settings::sidecarPathFor(e.path));
        QVERIFY(!e.source.empty());
        const auto broken = lib.byPath(fs::weakly_canonical(out + "/broken.png").string());
        QVERIFY(broken);
        QCOMPARE(broken->seed, int64_t(-1));

        // Nothing changed: nothing is read again.
        r = scanFolder(lib, out, thumb);
        QCOMPARE(r.unchanged, 3);
        QCOMPARE(r.added + r.updated + r.removed, 0);

        // A file gone, one added, one replaced by another picture.
        fs::remove(b);
        exportOne(out, "a blue whale", 13);
        fs::remove(out + "/broken.png");
        fs::copy_file(a, out + "/broken.png");
        fs::last_write_time(out + "/broken.png", fs::file_time_type::clock::now() + std::chrono::seconds(5));
        r = scanFolder(lib, out, thumb);
        QCOMPARE(r.added, 1);
        QCOMPARE(r.updated, 1);
        QCOMPARE(r.removed, 1);
        QVERIFY(lib.ids({.text = "fox"}).empty());
        QCOMPARE(lib.ids({.text = "whale"}).size(), size_t(1));
        QCOMPARE(lib.ids({.text = "lighthouse"}).size(), size_t(2));
        QCOMPARE(lib.count(), 3);

        // An index lost entirely is rebuilt from the folder with every image.
        fs::remove(dbPath());
        fs::remove(dbPath() + "-wal");
        Library fresh(dbPath());
        QCOMPARE(scanFolder(fresh, out).added, 3);
        QCOMPARE(scanFolder(fresh, m_dir.filePath("absent").toStdString()).added, 0);
    }

    void ftsQueryQuotesEveryWord() {
        QCOMPARE(ftsQuery("  a\"b  OR c* "), std::string("\"a\"* \"b\"* \"OR\"* \"c\"*"));
        QCOMPARE(ftsQuery("((!!"), std::string());
        QCOMPARE(ftsQuery("ქალაქი قطة"), std::string("\"ქალაქი\"* \"قطة\"*"));
    }

    // The search box: filters come out of the words, a bad filter is named and not applied, the rest still runs.
    void searchFiltersAreReadFromTheTypedText() {
        const auto p = parseSearch(R"(red cat seed:42 size:512X768 sampler:"DPM++ 2M" model:tiny date:2026-12-01 rating:3 is:fav sort:oldest)");
        QVERIFY(p.problems.empty());
        QCOMPARE(p.query.text, std::string("red cat"));
        QCOMPARE(p.query.seed.value_or(-1), int64_t(42));
        QCOMPARE(p.query.width, 512);
        QCOMPARE(p.query.height, 768);
        QCOMPARE(p.query.sampler, std::string("DPM++ 2M"));
        QCOMPARE(p.query.modelName, std::string("tiny"));
        QCOMPARE(p.query.from, std::string("2026-12-01"));
        QCOMPARE(p.query.to, std::string("2026-12-01"));
        QCOMPARE(p.query.minRating, 3);
        QVERIFY(p.query.favouritesOnly);
        QVERIFY(p.query.sort == Sort::Oldest);

        const auto range = parseSearch("after:2026-11-01 before:2026-12-31 time:noon");
        QCOMPARE(range.query.from, std::string("2026-11-01"));
        QCOMPARE(range.query.to, std::string("2026-12-31"));
        QCOMPARE(range.query.text, std::string("time:noon"));  // not a filter: a word of a prompt

        const auto bad = parseSearch("cat seed:-3 size:512 date:2026-13-01 rating:9 is:nice sort:random");
        QCOMPARE(bad.query.text, std::string("cat"));
        QVERIFY(!bad.query.seed);
        QCOMPARE(bad.query.width, 0);
        QVERIFY(bad.query.from.empty());
        QCOMPARE(bad.query.minRating, 0);
        QVERIFY(!bad.query.favouritesOnly);
        QCOMPARE(bad.problems.size(), size_t(6));
        QVERIFY(QString::fromStdString(bad.problems[0]).startsWith("seed:-3: "));
    }

    // What the parsed search finds in an index: the filters and the words together.
    void parsedSearchFinds() {
        Library lib(dbPath());
        auto big = entry("/x/big.png", "a red barn", 7, "2026-12-01T09:00:00Z");
        big.width = 512;
        big.height = 768;
        const auto bigId = lib.put(big);
        const auto small = lib.put(entry("/x/small.png", "a red barn", 8, "2026-12-02T09:00:00Z"));
        lib.setFavourite(small, true);
        lib.setRating(bigId, 4);
        QCOMPARE(lib.ids(parseSearch("barn size:512x768").query), (std::vector<int64_t>{bigId}));
        QCOMPARE(lib.ids(parseSearch("red is:favourite").query), (std::vector<int64_t>{small}));
        QCOMPARE(lib.ids(parseSearch("rating:4").query), (std::vector<int64_t>{bigId}));
        QCOMPARE(lib.ids(parseSearch("before:2026-12-01").query), (std::vector<int64_t>{bigId}));
        QCOMPARE(lib.ids(parseSearch("sort:oldest").query), (std::vector<int64_t>{bigId, small}));
    }
};

QTEST_GUILESS_MAIN(TestLibrary)
#include "test_library.moc"
