// Diffusers folders (plain, sharded, variants), refusals with their reasons, and A1111 model hashes checked
// against hashlib. Models are the tiny fixtures written by tests/parity/fixtures_models.py.
#include "core/io/checkpoint.h"
#include "core/io/model_error.h"
#include "core/io/model_hash.h"
#include "core/io/shard_index.h"
#include "tests/common/test_program.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

namespace test_checkpoint {  // the test program is a unity build: each file keeps its names

namespace fs = std::filesystem;
using namespace dd::io;

namespace {

const std::string kModels = std::string(DD_FIXTURES_DIR) + "/models";

QString errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const ModelFileError& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

} // namespace

class TestCheckpoint : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

private slots:
    void loadsDiffusersFolders_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("family");
        QTest::addColumn<QStringList>("components");
        QTest::newRow("sd1") << "tiny-sd1" << int(ModelFamily::SD1) << QStringList{"text_encoder", "unet", "vae"};
        QTest::newRow("sd2") << "tiny-sd2" << int(ModelFamily::SD2) << QStringList{"text_encoder", "unet", "vae"};
        QTest::newRow("sdxl") << "tiny-sdxl" << int(ModelFamily::SDXL) << QStringList{"text_encoder", "text_encoder_2", "unet", "vae"};
    }
    void loadsDiffusersFolders() {
        QFETCH(QString, name);
        QFETCH(int, family);
        QFETCH(QStringList, components);
        const Checkpoint ck = loadCheckpoint(kModels + "/" + name.toStdString());
        QCOMPARE(int(ck.family), family);
        QCOMPARE(ck.format, CheckpointFormat::DiffusersFolder);
        QStringList got;
        for (const auto& [c, _] : ck.components) got << QString::fromStdString(c);
        QCOMPARE(got, components);
        QVERIFY(ck.configs.count("scheduler"));
        QVERIFY(ck.tokenizerDirs.count("tokenizer"));
        QVERIFY(ck.components.at("unet").count("conv_in.weight"));
    }

    void shardedFolderEqualsUnsharded() {
        const Checkpoint plain = loadCheckpoint(kModels + "/tiny-sd1");
        const Checkpoint sharded = loadCheckpoint(kModels + "/tiny-sd1-sharded");
        QVERIFY(fs::exists(kModels + "/tiny-sd1-sharded/unet/diffusion_pytorch_model.safetensors.index.json"));
        const auto& a = plain.components.at("unet");
        const auto& b = sharded.components.at("unet");
        QCOMPARE(a.size(), b.size());
        for (const auto& [k, t] : a) QVERIFY2(b.count(k) && torch::equal(t, b.at(k)), k.c_str());
    }

    void missingShardIsNamed() {
        const fs::path copy = m_dir.filePath("sharded").toStdString();
        fs::copy(kModels + "/tiny-sd1-sharded", copy, fs::copy_options::recursive);
        const auto index = parseShardIndex("x", [&] {
            std::ifstream in(copy / "unet/diffusion_pytorch_model.safetensors.index.json");
            return std::string(std::istreambuf_iterator<char>(in), {});
        }());
        QVERIFY(index.shards.size() >= 2);
        fs::remove(copy / "unet" / index.shards.back());
        const QString msg = errorOf([&] { loadCheckpoint(copy.string()); });
        QVERIFY2(msg.contains(QString::fromStdString("shard '" + index.shards.back() + "' listed in the index is missing")), qPrintable(msg));
    }

    void prefersRequestedVariant() {
        const fs::path copy = m_dir.filePath("variant").toStdString();
        fs::copy(kModels + "/tiny-sd1", copy, fs::copy_options::recursive);
        // An fp16 variant beside the fp32 weights: the variant must win when asked for.
        const auto vae = loadCheckpoint(copy.string()).components.at("vae");
        TensorMap half;
        for (const auto& [k, t] : vae) half[k] = t.to(torch::kFloat16);
        writeSafetensors((copy / "vae/diffusion_pytorch_model.fp16.safetensors").string(), half);
        QCOMPARE(loadCheckpoint(copy.string(), "fp16").components.at("vae").begin()->second.scalar_type(), torch::kFloat16);
        QCOMPARE(loadCheckpoint(copy.string()).components.at("vae").begin()->second.scalar_type(), torch::kFloat32);
    }

    void refusesWithReasons_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("expected");
        QTest::newRow("ckpt") << "model.ckpt" << QByteArray("PK\x03\x04") << "never unpickles";
        QTest::newRow("pt") << "model.pt" << QByteArray("\x80\x02") << "arbitrary code";
        QTest::newRow("bin") << "pytorch_model.bin" << QByteArray("\x80\x02") << "Convert it to .safetensors";
        QTest::newRow("unknown type") << "model.gguf" << QByteArray("GGUF") << "unsupported file type '.gguf'";
        QTest::newRow("folder without index") << "emptydir" << QByteArray() << "no model_index.json";
        QTest::newRow("missing") << "nothing-here.safetensors" << QByteArray() << "no such file or folder";
    }
    void refusesWithReasons() {
        QFETCH(QString, file);
        QFETCH(QByteArray, bytes);
        QFETCH(QString, expected);
        const QString path = m_dir.filePath(file);
        if (file == "emptydir")
            QDir().mkpath(path);
        else if (!bytes.isEmpty()) {
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(bytes);
        }
        const QString msg = errorOf([&] { loadCheckpoint(path.toStdString()); });
        QVERIFY2(msg.startsWith(path), qPrintable(msg));
        QVERIFY2(msg.contains(expected), qPrintable(msg));
    }

    void pickleWeightsInsideAFolderAreRefused() {
        const fs::path copy = m_dir.filePath("picklefolder").toStdString();
        fs::copy(kModels + "/tiny-sd1", copy, fs::copy_options::recursive);
        fs::rename(copy / "vae/diffusion_pytorch_model.safetensors", copy / "vae/diffusion_pytorch_model.bin");
        const QString msg = errorOf([&] { loadCheckpoint(copy.string()); });
        QVERIFY2(msg.contains("diffusion_pytorch_model.bin") && msg.contains("never unpickles"), qPrintable(msg));
    }

    void hashesMatchA1111() {
        QFile ref(QString(DD_FIXTURES_DIR) + "/hashes.json");
        QVERIFY(ref.open(QIODevice::ReadOnly));
        const QJsonObject want = QJsonDocument::fromJson(ref.readAll()).object();
        const ModelHashes h = hashModelFile(std::string(DD_FIXTURES_DIR) + "/hash_input.bin");
        QCOMPARE(QString::fromStdString(h.sha256), want["sha256"].toString());
        QCOMPARE(QString::fromStdString(h.shortHash), want["short"].toString());
        QCOMPARE(QString::fromStdString(h.legacyHash), want["legacy"].toString());
    }
};

DD_REGISTER_TEST(TestCheckpoint)

} // namespace test_checkpoint
#include "test_checkpoint.moc"
