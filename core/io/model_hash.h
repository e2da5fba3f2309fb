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

namespace dd::io {

// A1111's LoRA hash ("Lora hashes: \"name: 0123456789ab\""): the first 12 hex of the SHA-256 of a safetensors
// file's bytes after its header (sd-webui-additional-networks' "addnet" hash, which A1111 adopted).
// Throws ModelFileError when the file cannot be read or is shorter than its header says.
std::string loraShortHash(const std::string& path);

} // namespace dd::io
