#pragma once
// The image library: a persistent index (SQLite) of every image the app, the CLI and batches wrote, and of
// images imported from other folders. The images and their sidecars are the truth; the index only makes them
// quick to find, and can always be rebuilt from the folders (library/scan.h).
//
//   Library lib(dataDir + "/library.db");          // a corrupt index is moved aside and started again: lib.note()
//   lib.put(entryFromFile("out/2025-01-31/00001-42-a_cat.png"));
//   for (auto id : lib.ids({.text = "cat", .sort = Sort::Newest})) ... lib.byId(id) ...
//
// Durability: WAL with synchronous=NORMAL. A committed write survives the process being killed at any instant
// (the WAL is only appended; a torn frame is ignored on the next open); only a power loss can undo the last
// transactions, and a rescan of the folders restores what they held. FULL would fsync every commit for nothing
// that cannot be rebuilt. Several processes (the window and the CLI) may write at once: each waits up to 5 s for
// the other's lock. Pure: no torch, no Qt; one Library per thread.
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;

namespace dd::library {

class LibraryError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct Entry {
    int64_t id = 0;             // 0 until stored
    std::string path;           // the image, absolute
    std::string sidecarPath;    // "" when it has none
    std::string createdAt;      // ISO 8601 UTC: the sidecar's, else the file's modification time
    std::string prompt, negativePrompt;
    std::string modelName, modelHash, sampler;
    int64_t seed = -1;          // -1: unknown (an image without settings)
    int width = 0, height = 0, steps = 0;
    double cfgScale = 0;
    std::string source;         // where its settings came from: "png", "sidecar", ... ("" = none found)
    int rating = 0;             // 0-5, kept when the file is indexed again
    bool favourite = false;     // kept when the file is indexed again
    int64_t fileBytes = 0, fileMtime = 0;  // to notice a changed file on a rescan
};

enum class Sort { Newest, Oldest, Rating };

struct Query {
    std::string text;           // words of the prompt or negative prompt, each a prefix ("cat" finds "cats")
    std::string modelName, sampler;
    std::optional<int64_t> seed;
    int width = 0, height = 0;  // 0 = any
    std::string from, to;       // createdAt dates "2025-01-31", inclusive; "" = open
    bool favouritesOnly = false;
    int minRating = 0;
    Sort sort = Sort::Newest;
};

class Library {
public:
    // Opens or creates the index. A file that is not a readable index of this schema (corrupt, truncated,
    // another program's, a newer version) is moved aside to "<dbPath>.corrupt-<n>" and a new index is
    // created: rebuilt() is then true and note() says what happened. Throws LibraryError naming the file when
    // not even a new index can be created (no such folder, no permission).
    // `Checked::No` skips the integrity check (it reads every page: seconds for a large index) for a second
    // connection to an index its owner has just opened checked, such as the window's reader.
    enum class Checked { Yes, No };
    explicit Library(const std::string& dbPath, Checked checked = Checked::Yes);
    ~Library();
    Library(const Library&) = delete;
    Library& operator=(const Library&) = delete;

    const std::string& path() const { return m_path; }
    bool rebuilt() const { return m_rebuilt; }
    const std::string& note() const { return m_note; }

    // Adds the entry, or updates the one with the same path (keeping its rating and favourite). Returns its id.
    int64_t put(const Entry& entry);
    bool remove(int64_t id);
    void setRating(int64_t id, int rating);
    void setFavourite(int64_t id, bool favourite);
    // Thumbnail bytes (an encoded image the caller made; the index does not decode it). "" when none. They are
    // kept in "<dbPath>.thumbnails", a cache the index does not need to be whole.
    void setThumbnail(int64_t id, std::string_view encoded);
    std::string thumbnail(int64_t id) const;

    std::optional<Entry> byId(int64_t id) const;
    std::optional<Entry> byPath(const std::string& path) const;
    // The ids of every matching entry, in the query's order: a view holds these and reads rows as they show.
    std::vector<int64_t> ids(const Query& query) const;
    int64_t count() const;
    std::vector<std::string> modelNames() const;  // distinct, sorted: the filter's choices
    std::vector<std::string> samplers() const;
    // Every indexed path with its size and modification time (for a rescan to skip unchanged files).
    struct FileStamp {
        int64_t id, bytes, mtime;
        std::string path;
    };
    std::vector<FileStamp> stamps() const;

    // Groups writes into one commit (a scan of thousands of files); rolled back when it ends uncommitted.
    class Transaction {
    public:
        explicit Transaction(Library& library);
        ~Transaction();
        void commit();

    private:
        Library& m_library;
        bool m_open = true;
    };

private:
    void openFresh();
    bool openExisting(Checked checked);
    void attachThumbnails();
    std::string thumbnailPath() const;
    void removeThumbnailFile();

    std::string m_path;
    sqlite3* m_db = nullptr;
    bool m_rebuilt = false;
    std::string m_note;
};

// Where the index lives: $XDG_DATA_HOME (else ~/.local/share)/<appFolder>/library.db. The window passes its
// organisation/application names (Qt's AppDataLocation is that same folder); the CLI the default.
std::string defaultIndexPath(const std::string& appFolder = "DiffusionDesk/DiffusionDesk");

// The FTS5 query for words typed by a person: each word quoted (so no character is FTS syntax) and a prefix,
// all of them required. "" for text with no word.
std::string ftsQuery(std::string_view text);

} // namespace dd::library
