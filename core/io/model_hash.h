#pragma once
// Model hashes as A1111 writes them ("Model hash: 6ce0161689" in PNG parameters).
#include <string>

namespace dd::io {

struct ModelHashes {
    std::string sha256;      // full hex digest of the whole file
    std::string shortHash;   // A1111 "Model hash": first 10 hex of sha256
    std::string legacyHash;  // A1111's old 8-hex hash: sha256 of 64 KiB at offset 1 MiB
};

// Streams the file once through OpenSSL (constant memory). Throws ModelFileError.
ModelHashes hashModelFile(const std::string& path);

} // namespace dd::io
