#pragma once
// Finding the model an image was made with, among the models this machine has: by A1111 hash ("Model hash:
// 6ce0161689", or the legacy 8-hex hash), with the name as a hint for which file to hash first.
//
//   auto m = findModelByHash(listModelFiles("/models"), r.modelHash, r.modelName);
//   if (m.path.empty()) tell(m.message);   // "needs model 'v1-5-pruned-emaonly' (hash 6ce0161689); not among 12 models in ..."
//
// Hashing reads whole files (seconds per GB); names that match are hashed first and the search stops at the
// first hash match. Torch-free (OpenSSL via core/io/model_hash).
#include <string>
#include <vector>

namespace dd::settings {

struct ModelMatch {
    std::string path;     // the matching file, or "" when none matched
    std::string message;  // why it matched ("hash 6ce0161689"), or what is needed and where it was looked for
};

// *.safetensors / *.ckpt / *.sft files under `folder` (recursive, sorted, symlinks followed, max depth 4).
std::vector<std::string> listModelFiles(const std::string& folder);

// `hash`: 10-hex A1111 short hash or 8-hex legacy hash (case-insensitive); empty: match by name only
// (file name with or without extension equals `name`). Unreadable candidates are skipped.
ModelMatch findModelByHash(const std::vector<std::string>& candidates, const std::string& hash, const std::string& name);

// The model a restored file needs: "demo:..." as is, else the hash (or name) match among the model files in
// `folders`. Throws std::invalid_argument with findModelByHash's "needs model ..." message when none matches.
std::string resolveRestoredModel(const std::string& name, const std::string& hash, const std::vector<std::string>& folders);

// The SDXL refiner of restored settings (docs/refiner.md): `recorded` as is when that file or folder exists (a
// sidecar from this machine), else its file name looked up by hash / name like the model. Throws
// std::invalid_argument naming the refiner when none matches.
std::string resolveRestoredRefiner(const std::string& recorded, const std::string& hash, const std::vector<std::string>& folders);

} // namespace dd::settings
