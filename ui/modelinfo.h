#pragma once
// What the model picker shows about a model: detected family, weight dtypes, size on disk, hash.
#include <QMetaType>
#include <QString>
#include <QStringList>

namespace dd::ui {

struct ModelInfo {
    QString path;          // what the user opened ("demo:tiny-sd1" for the built-in model)
    QString displayName;
    QString family;        // "SD 1.x", "SD 2.x", "SDXL", "SDXL refiner"
    QString format;        // "diffusers folder", "single file", "built in"
    QString dtypes;        // "unet fp16 · text_encoder fp16 · vae fp32"
    qint64 sizeBytes = 0;  // on disk (0 for the built-in model)
    qint64 parameters = 0; // all components
    QString hash;          // A1111 short hash of a single file ("" for folders and the demo)
    QStringList notes;     // guesses the loader made
    int nativeSize = 0;    // the image side it was trained at (pipeline::nativeImageSize); 0: unknown
    bool loaded = false;   // the engine has its networks in memory (EngineWorker::loadModel)
    double loadSeconds = 0;
    bool isXl() const { return family.startsWith(QLatin1String("SDXL")); }
};

QString formatBytes(qint64 bytes);  // "1.99 GiB", "512 MiB"

} // namespace dd::ui

Q_DECLARE_METATYPE(dd::ui::ModelInfo)
