#pragma once
// Reads a model's layout without building networks: family, dtypes, size, hash. Runs on the engine thread
// (it maps the weights); the header stays torch-free.
#include "ui/modelinfo.h"

#include <functional>

namespace dd::api {
class CancelToken;
}

namespace dd::ui {

// `phase` is told what is happening ("reading weights", "hashing"); throws dd::io::ModelFileError for a bad
// model and api::Cancelled when `cancel` is set between phases.
ModelInfo inspectModel(const QString& path, const api::CancelToken& cancel,
                       const std::function<void(const QString& phase)>& phase = {});

} // namespace dd::ui
