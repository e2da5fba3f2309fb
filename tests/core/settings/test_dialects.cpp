// Other tools' images (tests/parity/fixtures_dialects.py, each in its tool's documented layout) restored: the fields
// must be what the sd-parsers package reads from the same files (or, for the formats it does not know, what the
// layout holds), the sampler the one the tool's name stands for, and nothing refused.
#include "core/settings/restore.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <filesystem>

using namespace dd::settings;

class TestDialects : public QObject {
    Q_OBJECT
    QJsonArray m_cases;
    const QString m_dir = QString(DD_FIXTURES_DIR) + "/dialects";

private slots:
    void initTestCase() {
        QFile f(m_dir + "/cases.json");
        QVERIFY2(f.open(QIODevice::ReadOnly), "run tests/parity/make_fixtures.py first");
        m_cases = QJsonDocument::fromJson(f.readAll()).array();
        QVERIFY(m_cases.size() >= 9);
    }

    void restoresWhatSdParsersReads_data() {
        QTest::addColumn<int>("index");
        for (int i = 0; i < m_cases.size(); ++i) QTest::newRow(qPrintable(m_cases[i].toObject()["name"].toString())) << i;
    }
    void restoresWhatSdParsersReads() {
        QFETCH(int, index);
        const auto c = m_cases[index].toObject();
        const Restored r = restoreFromFile((m_dir + "/" + c["name"].toString() + ".png").toStdString());
        const auto& s = r.settings;
        const auto at = [&](const char* field) { return qPrintable(c["name"].toString() + ": " + field); };
        QVERIFY2(s.prompt == c["prompt"].toString().toStdString(), at("prompt"));
        QVERIFY2(s.negativePrompt == c["negative"].toString().toStdString(), at("negative prompt"));
        QVERIFY2(s.seed == c["seed"].toInteger(), at("seed"));
        QVERIFY2(s.steps == c["steps"].toInt(), at("steps"));
        QVERIFY2(s.cfgScale == c["cfg"].toDouble(), at("cfg"));
        QVERIFY2(s.width == c["width"].toInt() && s.height == c["height"].toInt(), at("size"));
        // k-diffusion's sampler over the tool's schedule, named as A1111 names the pair (Uniform unsaid).
        const std::string named = s.sampler + (s.scheduleType.empty() || s.scheduleType == "Uniform" ? "" : " " + s.scheduleType);
        QVERIFY2(named == c["sampler"].toString().toStdString(), qPrintable(QString("%1: sampler %2 for '%3'")
                     .arg(c["name"].toString(), QString::fromStdString(named), c["sampler_written"].toString())));
        // Model names are file names here: sd-parsers keeps ComfyUI's folder.
        const std::string model = std::filesystem::path(c["model"].toString().toStdString()).filename().string();
        QVERIFY2(r.modelName == model, qPrintable(QString("%1: model '%2'").arg(c["name"].toString(), QString::fromStdString(r.modelName))));
        if (c.contains("hires_steps")) {
            QVERIFY2(s.hires.enabled && s.hires.steps == c["hires_steps"].toInt() && s.hires.denoising == c["hires_denoise"].toDouble(),
                     at("the second pass"));
        }
        for (const auto& w : r.warnings) qInfo("%s: %s", qPrintable(c["name"].toString()), w.c_str());
    }
};

QTEST_GUILESS_MAIN(TestDialects)
#include "test_dialects.moc"
