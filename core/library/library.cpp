#include "core/library/library.h"

#include "core/io/app_data.h"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <utility>

namespace fs = std::filesystem;

namespace dd::library {
namespace {

// Bumped when the tables change; an index of another version is rebuilt from the folders.
constexpr int kSchemaVersion = 2;

constexpr const char* kSchema = R"sql(
CREATE TABLE images (
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL UNIQUE,
  sidecar TEXT NOT NULL DEFAULT '',
  created TEXT NOT NULL DEFAULT '',
  prompt TEXT NOT NULL DEFAULT '',
  negative TEXT NOT NULL DEFAULT '',
  model TEXT NOT NULL DEFAULT '',
  model_hash TEXT NOT NULL DEFAULT '',
  sampler TEXT NOT NULL DEFAULT '',
  seed INTEGER NOT NULL DEFAULT -1,
  width INTEGER NOT NULL DEFAULT 0,
  height INTEGER NOT NULL DEFAULT 0,
  steps INTEGER NOT NULL DEFAULT 0,
  cfg REAL NOT NULL DEFAULT 0,
  source TEXT NOT NULL DEFAULT '',
  rating INTEGER NOT NULL DEFAULT 0,
  favourite INTEGER NOT NULL DEFAULT 0,
  file_bytes INTEGER NOT NULL DEFAULT 0,
  file_mtime INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX images_created ON images(created);
CREATE INDEX images_model ON images(model);
CREATE INDEX images_seed ON images(seed);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('token', lower(hex(randomblob(16))));
CREATE VIRTUAL TABLE images_fts USING fts5(prompt, negative, content='images', content_rowid='id');
CREATE TRIGGER images_ai AFTER INSERT ON images BEGIN
  INSERT INTO images_fts(rowid, prompt, negative) VALUES (new.id, new.prompt, new.negative);
END;
CREATE TRIGGER images_ad AFTER DELETE ON images BEGIN
  INSERT INTO images_fts(images_fts, rowid, prompt, negative) VALUES ('delete', old.id, old.prompt, old.negative);
END;
CREATE TRIGGER images_au AFTER UPDATE OF prompt, negative ON images BEGIN
  INSERT INTO images_fts(images_fts, rowid, prompt, negative) VALUES ('delete', old.id, old.prompt, old.negative);
  INSERT INTO images_fts(rowid, prompt, negative) VALUES (new.id, new.prompt, new.negative);
END;
)sql";

// The thumbnails live in a file of their own beside the index: they are most of its bytes (15-20 KB an image)
// and only a cache, so the integrity check on open reads the index alone (30 MB, not 1 GB, at 50 000 images),
// and a damaged thumbnail file is simply started again. The token ties it to its index: thumbnails of an index
// that was deleted or rebuilt (whose ids mean other images) are dropped.
constexpr const char* kThumbnailSchema = R"sql(
CREATE TABLE IF NOT EXISTS thumbs.thumbnails (id INTEGER PRIMARY KEY, bytes BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS thumbs.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
)sql";

constexpr const char* kColumns =
    "id, path, sidecar, created, prompt, negative, model, model_hash, sampler, seed, width, height, steps, cfg, "
    "source, rating, favourite, file_bytes, file_mtime";

// One prepared statement; binds by position (1-based) and steps.
class Statement {
public:
    Statement(sqlite3* db, const std::string& sql, const std::string& file) : m_db(db), m_file(file) {
        if (sqlite3_prepare_v2(db, sql.c_str(), int(sql.size()), &m_stmt, nullptr) != SQLITE_OK) fail("prepare");
    }
    ~Statement() { sqlite3_finalize(m_stmt); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    Statement& bind(int i, const std::string& v) {
        check(sqlite3_bind_text(m_stmt, i, v.data(), int(v.size()), SQLITE_TRANSIENT));
        return *this;
    }
    Statement& bind(int i, std::string_view blob, bool /*isBlob*/) {
        check(sqlite3_bind_blob(m_stmt, i, blob.data(), int(blob.size()), SQLITE_TRANSIENT));
        return *this;
    }
    Statement& bind(int i, int64_t v) {
        check(sqlite3_bind_int64(m_stmt, i, v));
        return *this;
    }
    Statement& bind(int i, double v) {
        check(sqlite3_bind_double(m_stmt, i, v));
        return *this;
    }
    // True while a row is there.
    bool step() {
        const int rc = sqlite3_step(m_stmt);
        if (rc == SQLITE_ROW) return true;
        if (rc != SQLITE_DONE) fail("step");
        return false;
    }
    int64_t integer(int col) const { return sqlite3_column_int64(m_stmt, col); }
    double number(int col) const { return sqlite3_column_double(m_stmt, col); }
    std::string text(int col) const {
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_blob(m_stmt, col));
        return p ? std::string(p, size_t(sqlite3_column_bytes(m_stmt, col))) : std::string();
    }

private:
    void check(int rc) {
        if (rc != SQLITE_OK) fail("bind");
    }
    [[noreturn]] void fail(const char* what) const {
        throw LibraryError(m_file + ": library index " + what + ": " + sqlite3_errmsg(m_db));
    }
    sqlite3* m_db;
    sqlite3_stmt* m_stmt = nullptr;
    std::string m_file;
};

void exec(sqlite3* db, const char* sql, const std::string& file) {
    char* error = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
        std::string message = error ? error : sqlite3_errmsg(db);
        sqlite3_free(error);
        throw LibraryError(file + ": library index: " + message);
    }
}

Entry readEntry(const Statement& s) {
    Entry e;
    e.id = s.integer(0);
    e.path = s.text(1);
    e.sidecarPath = s.text(2);
    e.createdAt = s.text(3);
    e.prompt = s.text(4);
    e.negativePrompt = s.text(5);
    e.modelName = s.text(6);
    e.modelHash = s.text(7);
    e.sampler = s.text(8);
    e.seed = s.integer(9);
    e.width = int(s.integer(10));
    e.height = int(s.integer(11));
    e.steps = int(s.integer(12));
    e.cfgScale = s.number(13);
    e.source = s.text(14);
    e.rating = int(s.integer(15));
    e.favourite = s.integer(16) != 0;
    e.fileBytes = s.integer(17);
    e.fileMtime = s.integer(18);
    return e;
}

// The first free "<path>.corrupt-<n>".
std::string asideName(const std::string& path) {
    for (int n = 1;; ++n) {
        std::string candidate = path + ".corrupt-" + std::to_string(n);
        std::error_code ec;
        if (!fs::exists(candidate, ec)) return candidate;
    }
}

} // namespace

std::string ftsQuery(std::string_view text) {
    std::string out;
    size_t i = 0;
    while (i < text.size()) {
        // Words: runs of letters, digits and anything beyond ASCII (the tokenizer's unicode61 splits the same way).
        auto isWordByte = [](unsigned char c) { return std::isalnum(c) || c >= 0x80 || c == '_'; };
        while (i < text.size() && !isWordByte(static_cast<unsigned char>(text[i]))) ++i;
        const size_t start = i;
        while (i < text.size() && isWordByte(static_cast<unsigned char>(text[i]))) ++i;
        if (i > start) {
            if (!out.empty()) out += ' ';
            out += '"' + std::string(text.substr(start, i - start)) + "\"*";
        }
    }
    return out;
}

std::string defaultIndexPath(const std::string& appFolder) { return (io::appDataDir(appFolder) / "library.db").string(); }

Library::Library(const std::string& dbPath, Checked checked) : m_path(dbPath) {
    try {
        if (openExisting(checked)) return;
        openFresh();
    } catch (...) {
        sqlite3_close_v2(m_db);  // a constructor that throws runs no destructor: the connection would leak
        m_db = nullptr;
        throw;
    }
}

Library::~Library() { sqlite3_close_v2(m_db); }

// Opens the file when it exists and is an index of this schema; false (nothing open) otherwise.
bool Library::openExisting(Checked checked) {
    std::error_code ec;
    if (!fs::exists(m_path, ec)) return false;
    std::string problem;
    // CREATE although the file exists: an attached database (the thumbnails) is opened with these flags.
    if (sqlite3_open_v2(m_path.c_str(), &m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
        problem = sqlite3_errmsg(m_db);
    } else {
        try {
            sqlite3_busy_timeout(m_db, 5000);
            if (checked == Checked::Yes) {
                Statement check(m_db, "PRAGMA quick_check", m_path);
                if (check.step() && check.text(0) != "ok") problem = "damaged (" + check.text(0) + ")";
            }
            if (problem.empty()) {
                Statement version(m_db, "PRAGMA user_version", m_path);
                version.step();
                if (version.integer(0) != kSchemaVersion)
                    problem = "schema version " + std::to_string(version.integer(0)) + ", this app reads " +
                              std::to_string(kSchemaVersion);
            }
            if (problem.empty()) exec(m_db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", m_path);
        } catch (const LibraryError& e) {
            problem = e.what();
        }
        if (problem.empty()) {
            attachThumbnails();  // outside the check: the thumbnail cache never costs the index
            return true;
        }
    }
    sqlite3_close_v2(m_db);
    m_db = nullptr;
    const std::string aside = asideName(m_path);
    fs::rename(m_path, aside, ec);
    for (const char* suffix : {"-wal", "-shm"}) fs::remove(m_path + suffix, ec);
    removeThumbnailFile();
    m_rebuilt = true;
    m_note = m_path + ": the library index could not be read (" + problem + "); it was moved to " + aside +
             " and is rebuilt from the image folders";
    return false;
}

void Library::openFresh() {
    if (sqlite3_open_v2(m_path.c_str(), &m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
        std::string message = m_db ? sqlite3_errmsg(m_db) : "out of memory";
        sqlite3_close_v2(m_db);
        m_db = nullptr;
        throw LibraryError(m_path + ": cannot create the library index: " + message);
    }
    sqlite3_busy_timeout(m_db, 5000);
    exec(m_db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", m_path);
    // Another process may have created it meanwhile: then the schema is there already.
    int64_t version = 0;
    {
        Statement read(m_db, "PRAGMA user_version", m_path);
        if (read.step()) version = read.integer(0);
    }
    if (version == kSchemaVersion) {
        attachThumbnails();
        return;
    }
    exec(m_db, "BEGIN IMMEDIATE", m_path);
    try {
        exec(m_db, kSchema, m_path);
        exec(m_db, ("PRAGMA user_version=" + std::to_string(kSchemaVersion)).c_str(), m_path);
        exec(m_db, "COMMIT", m_path);
    } catch (...) {
        sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    attachThumbnails();
}

std::string Library::thumbnailPath() const { return m_path + ".thumbnails"; }

void Library::removeThumbnailFile() {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(thumbnailPath() + suffix, ec);
}

// Whether the thumbnail file at `path` reads as a database, looked at on a connection of its own (a file that
// fails once attached cannot always be detached again).
namespace {
bool readableDatabase(const std::string& path) {
    sqlite3* db = nullptr;
    bool ok = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK &&
              sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr) == SQLITE_OK;
    sqlite3_close_v2(db);
    return ok;
}
} // namespace

// Attaches the thumbnail file as "thumbs", creating it; one that does not read, or belongs to another index,
// is started again.
void Library::attachThumbnails() {
    std::string mine;
    {
        Statement token(m_db, "SELECT value FROM meta WHERE key = 'token'", m_path);
        if (token.step()) mine = token.text(0);
    }  // finished before the attach: an open read would keep the new file out of WAL mode
    std::error_code ec;
    if (fs::exists(thumbnailPath(), ec) && !readableDatabase(thumbnailPath())) removeThumbnailFile();
    Statement attach(m_db, "ATTACH DATABASE ?1 AS thumbs", m_path);
    attach.bind(1, thumbnailPath()).step();
    exec(m_db, "PRAGMA thumbs.journal_mode=WAL; PRAGMA thumbs.synchronous=NORMAL;", m_path);
    exec(m_db, kThumbnailSchema, m_path);
    std::string theirs;
    {
        Statement read(m_db, "SELECT value FROM thumbs.meta WHERE key = 'token'", m_path);
        if (read.step()) theirs = read.text(0);
    }
    if (!mine.empty() && theirs == mine) return;
    exec(m_db, "DELETE FROM thumbs.thumbnails; DELETE FROM thumbs.meta;", m_path);
    Statement set(m_db, "INSERT INTO thumbs.meta VALUES ('token', ?1)", m_path);
    set.bind(1, mine).step();
}

int64_t Library::put(const Entry& e) {
    Statement s(m_db,
                "INSERT INTO images(path, sidecar, created, prompt, negative, model, model_hash, sampler, seed, width, "
                "height, steps, cfg, source, file_bytes, file_mtime) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
                "?11, ?12, ?13, ?14, ?15, ?16) ON CONFLICT(path) DO UPDATE SET sidecar=?2, created=?3, prompt=?4, "
                "negative=?5, model=?6, model_hash=?7, sampler=?8, seed=?9, width=?10, height=?11, steps=?12, cfg=?13, "
                "source=?14, file_bytes=?15, file_mtime=?16 RETURNING id",
                m_path);
    s.bind(1, e.path).bind(2, e.sidecarPath).bind(3, e.createdAt).bind(4, e.prompt).bind(5, e.negativePrompt);
    s.bind(6, e.modelName).bind(7, e.modelHash).bind(8, e.sampler).bind(9, e.seed).bind(10, int64_t(e.width));
    s.bind(11, int64_t(e.height)).bind(12, int64_t(e.steps)).bind(13, e.cfgScale).bind(14, e.source);
    s.bind(15, e.fileBytes).bind(16, e.fileMtime);
    if (!s.step()) throw LibraryError(m_path + ": library index: no id for " + e.path);
    const int64_t id = s.integer(0);
    while (s.step()) {
    }
    return id;
}

bool Library::remove(int64_t id) {
    Statement s(m_db, "DELETE FROM images WHERE id = ?1", m_path);
    s.bind(1, id).step();
    const bool removed = sqlite3_changes(m_db) > 0;
    Statement thumb(m_db, "DELETE FROM thumbs.thumbnails WHERE id = ?1", m_path);
    thumb.bind(1, id).step();
    return removed;
}

void Library::setRating(int64_t id, int rating) {
    Statement s(m_db, "UPDATE images SET rating = ?2 WHERE id = ?1", m_path);
    s.bind(1, id).bind(2, int64_t(std::clamp(rating, 0, 5))).step();
}

void Library::setFavourite(int64_t id, bool favourite) {
    Statement s(m_db, "UPDATE images SET favourite = ?2 WHERE id = ?1", m_path);
    s.bind(1, id).bind(2, int64_t(favourite)).step();
}

void Library::setThumbnail(int64_t id, std::string_view encoded) {
    Statement s(m_db, "INSERT OR REPLACE INTO thumbs.thumbnails(id, bytes) VALUES (?1, ?2)", m_path);
    s.bind(1, id).bind(2, encoded, true).step();
}

std::string Library::thumbnail(int64_t id) const {
    Statement s(m_db, "SELECT bytes FROM thumbs.thumbnails WHERE id = ?1", m_path);
    s.bind(1, id);
    return s.step() ? s.text(0) : std::string();
}

std::optional<Entry> Library::byId(int64_t id) const {
    Statement s(m_db, std::string("SELECT ") + kColumns + " FROM images WHERE id = ?1", m_path);
    s.bind(1, id);
    if (!s.step()) return std::nullopt;
    return readEntry(s);
}

std::optional<Entry> Library::byPath(const std::string& path) const {
    Statement s(m_db, std::string("SELECT ") + kColumns + " FROM images WHERE path = ?1", m_path);
    s.bind(1, path);
    if (!s.step()) return std::nullopt;
    return readEntry(s);
}

std::vector<int64_t> Library::ids(const Query& q) const {
    std::string sql = "SELECT images.id FROM images";
    struct Value {
        bool isNumber;
        int64_t number;
        std::string text;
    };
    std::vector<Value> values;  // bound in order as ?1, ?2, ...
    auto bindText = [&values](const std::string& v) {
        values.push_back({false, 0, v});
        return "?" + std::to_string(values.size());
    };
    auto bindNumber = [&values](int64_t v) {
        values.push_back({true, v, {}});
        return "?" + std::to_string(values.size());
    };
    std::vector<std::string> where;
    const std::string fts = ftsQuery(q.text);
    if (!fts.empty()) {
        sql += " JOIN images_fts ON images_fts.rowid = images.id";
        where.push_back("images_fts MATCH " + bindText(fts));
    }
    if (!q.modelName.empty()) where.push_back("model = " + bindText(q.modelName));
    if (!q.sampler.empty()) where.push_back("sampler = " + bindText(q.sampler));
    if (q.seed) where.push_back("seed = " + bindNumber(*q.seed));
    if (q.width > 0) where.push_back("width = " + bindNumber(q.width));
    if (q.height > 0) where.push_back("height = " + bindNumber(q.height));
    if (!q.from.empty()) where.push_back("created >= " + bindText(q.from));
    if (!q.to.empty()) where.push_back("created < " + bindText(q.to + "~"));  // '~' sorts after "T12:00:00Z"
    if (q.favouritesOnly) where.push_back("favourite = 1");
    if (q.minRating > 0) where.push_back("rating >= " + bindNumber(q.minRating));
    for (size_t i = 0; i < where.size(); ++i) sql += (i ? " AND " : " WHERE ") + where[i];
    switch (q.sort) {
    case Sort::Newest: sql += " ORDER BY created DESC, images.id DESC"; break;
    case Sort::Oldest: sql += " ORDER BY created ASC, images.id ASC"; break;
    case Sort::Rating: sql += " ORDER BY rating DESC, created DESC, images.id DESC"; break;
    }
    Statement s(m_db, sql, m_path);
    for (size_t i = 0; i < values.size(); ++i) {
        if (values[i].isNumber) s.bind(int(i + 1), values[i].number);
        else s.bind(int(i + 1), values[i].text);
    }
    std::vector<int64_t> out;
    while (s.step()) out.push_back(s.integer(0));
    return out;
}

int64_t Library::count() const {
    Statement s(m_db, "SELECT count(*) FROM images", m_path);
    s.step();
    return s.integer(0);
}

namespace {
std::vector<std::string> distinct(sqlite3* db, const char* column, const std::string& file) {
    Statement s(db, std::string("SELECT DISTINCT ") + column + " FROM images WHERE " + column + " != '' ORDER BY 1", file);
    std::vector<std::string> out;
    while (s.step()) out.push_back(s.text(0));
    return out;
}
} // namespace

std::vector<std::string> Library::modelNames() const { return distinct(m_db, "model", m_path); }
std::vector<std::string> Library::samplers() const { return distinct(m_db, "sampler", m_path); }

std::vector<Library::FileStamp> Library::stamps() const {
    Statement s(m_db, "SELECT id, file_bytes, file_mtime, path FROM images", m_path);
    std::vector<FileStamp> out;
    while (s.step()) out.push_back({s.integer(0), s.integer(1), s.integer(2), s.text(3)});
    return out;
}

Library::Transaction::Transaction(Library& library) : m_library(library) {
    exec(library.m_db, "BEGIN IMMEDIATE", library.m_path);
}

Library::Transaction::~Transaction() {
    if (m_open) sqlite3_exec(m_library.m_db, "ROLLBACK", nullptr, nullptr, nullptr);
}

void Library::Transaction::commit() {
    exec(m_library.m_db, "COMMIT", m_library.m_path);
    m_open = false;
}

} // namespace dd::library
