// torch headers before any Qt header: Qt's `slots` macro breaks c10's ivalue.
#include "core/io/checkpoint.h"
#include "core/io/model_hash.h"
#include "core/pipeline/engine.h"
#include "ui/modelinspector.h"

#include <QDateTime>
#include <QDirIterator>
#include <QFileInfo>
#include <QSettings>

#include <map>

namespace dd::ui {
namespace {

QString dtypeName(c10::ScalarType t) {
    switch (t) {
    case c10::ScalarType::Float: return QStringLiteral("fp32");
    case c10::ScalarType::Half: return QStringLiteral("fp16");
    case c10::ScalarType::BFloat16: return QStringLiteral("bf16");
    case c10::ScalarType::Double: return QStringLiteral("fp64");
    default: return QString::fromLatin1(c10::toString(t)).toLower();
    }
}

// The dtype holding most of a component's bytes, plus any others ("fp16+fp32").
QString componentDtypes(const io::TensorMap& tensors, qint64& parameters) {
    std::map<QString, qint64> bytes;
    for (const auto& [name, t] : tensors) {
        bytes[dtypeName(t.scalar_type())] += qint64(t.nbytes());
        parameters += qint64(t.numel());
    }
    QStringList names;
    for (const auto& [n, b] : bytes) names << n;
    std::sort(names.begin(), names.end(), [&](const QString& a, const QString& b) { return bytes[a] > bytes[b]; });
    return names.join('+');
}

qint64 sizeOnDisk(const QString& path) {
    const QFileInfo fi(path);
    if (fi.isFile()) return fi.size();
    qint64 total = 0;
    QDirIterator it(path, {"*.safetensors", "*.json", "*.txt"}, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) total += it.nextFileInfo().size();
    return total;
}

// Hashing reads the whole file (seconds for a 2 GB checkpoint): remember it per path, size and mtime.
QString cachedHash(const QString& path) {
    const QFileInfo fi(path);
    if (!fi.isFile()) return {};
    const QString stamp = QString::number(fi.size()) + ':' + QString::number(fi.lastModified().toMSecsSinceEpoch());
    QSettings settings;
    const QString key = QStringLiteral("modelHashes/") + QString::fromLatin1(path.toUtf8().toBase64(QByteArray::Base64UrlEncoding));
    const QStringList cached = settings.value(key).toStringList();
    if (cached.size() == 2 && cached[0] == stamp) return cached[1];
    const QString hash = QString::fromStdString(io::hashModelFile(path.toStdString()).shortHash);
    settings.setValue(key, QStringList{stamp, hash});
    return hash;
}

} // namespace

QString formatBytes(qint64 bytes) {
    const double b = double(bytes);
    if (b >= 1024.0 * 1024 * 1024) return QString::number(b / (1024.0 * 1024 * 1024), 'f', 2) + QStringLiteral(" GiB");
    if (b >= 1024.0 * 1024) return QString::number(b / (1024.0 * 1024), 'f', 0) + QStringLiteral(" MiB");
    if (b >= 1024.0) return QString::number(b / 1024.0, 'f', 0) + QStringLiteral(" KiB");
    return QString::number(bytes) + QStringLiteral(" B");
}

ModelInfo inspectModel(const QString& path, const api::CancelToken& cancel,
                       const std::function<void(const QString&)>& phase) {
    ModelInfo info;
    info.path = path;
    if (path.isEmpty() || path == QLatin1String(pipeline::kDemoModel)) {
        info.path = QString::fromLatin1(pipeline::kDemoModel);
        info.displayName = QObject::tr("Built-in demo (tiny random weights)");
        info.family = QStringLiteral("SD 1.x");
        info.format = QObject::tr("built in");
        info.dtypes = QStringLiteral("fp32");
        info.nativeSize = pipeline::nativeImageSize(pipeline::kDemoModel);
        return info;
    }
    if (phase) phase(QObject::tr("reading weights"));
    const io::Checkpoint ckpt = io::loadCheckpoint(path.toStdString());
    if (cancel.cancelled()) throw api::Cancelled();
    info.family = QString::fromStdString(std::string(io::familyName(ckpt.family)));
    info.format = ckpt.format == io::CheckpointFormat::DiffusersFolder ? QObject::tr("diffusers folder") : QObject::tr("single file");
    QStringList parts;
    for (const auto& [component, tensors] : ckpt.components)
        parts << QString::fromStdString(component) + ' ' + componentDtypes(tensors, info.parameters);
    info.dtypes = parts.join(QStringLiteral(" · "));
    for (const auto& n : ckpt.notes) info.notes << QString::fromStdString(n);
    info.nativeSize = io::nativeImageSize(ckpt);
    const QFileInfo fi(path);
    info.displayName = fi.isDir() ? fi.fileName() : fi.completeBaseName();
    if (info.displayName.isEmpty()) info.displayName = path;
    info.sizeBytes = sizeOnDisk(path);
    if (cancel.cancelled()) throw api::Cancelled();
    if (fi.isFile()) {
        if (phase) phase(QObject::tr("hashing"));
        info.hash = cachedHash(path);
    }
    return info;
}

} // namespace dd::ui
