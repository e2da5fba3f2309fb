#pragma once
// Filling the library from the files, the truth it indexes: one image (after an export), or every image under a
// folder (the output folder on start, a watched folder, an import, a rebuild after the index was lost).
//
//   ScanReport r = scanFolder(lib, "/home/me/Pictures/DiffusionDesk", makeThumbnail);
//   r.added, r.updated, r.removed, r.problems   // problems name the file; the scan goes on
#include "core/library/library.h"

#include <functional>
#include <string>
#include <vector>

namespace dd::library {

// The form every path takes in the index (absolute, symlinks resolved as far as the path exists): what byPath
// is asked with.
std::string indexedPath(const std::string& path);

// The entry for one image file: its settings as the app restores them (every dialect settings/restore.h reads,
// the embedded sidecar first), its sidecar next to it when there is one (for the creation time), size and
// modification time. An image without readable settings is still an entry (prompt empty, seed -1; source "").
// Throws LibraryError naming the file when it cannot be read at all.
Entry entryFromFile(const std::string& imagePath);

// Encoded thumbnail bytes for an image file ("" when it cannot be made); supplied by a layer that decodes pixels.
using ThumbnailMaker = std::function<std::string(const std::string& imagePath)>;

// Indexes one file (entryFromFile, then the thumbnail when `thumbnail` is set). Returns its id.
int64_t indexFile(Library& library, const std::string& imagePath, const ThumbnailMaker& thumbnail = {});

struct ScanReport {
    int added = 0, updated = 0, unchanged = 0, removed = 0;
    std::vector<std::string> problems;  // one line per file that could not be indexed, naming it
};

// Every PNG / JPEG / WebP under `folder` (recursively; hidden files and the temporaries of interrupted writes
// skipped) that is new or changed since it was indexed; entries of files under `folder` that are gone are
// dropped. A folder that does not exist is an empty scan, not an error.
ScanReport scanFolder(Library& library, const std::string& folder, const ThumbnailMaker& thumbnail = {});

} // namespace dd::library
