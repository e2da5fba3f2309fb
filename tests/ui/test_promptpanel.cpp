// The prompt panel: token counts per 75-token chunk, emphasis highlighting, seed controls, size presets.
#include "ui/promptpanel.h"

#include "ui/dialoghooks.h"
#include "ui/peakprediction.h"
#include "ui/tokencounter.h"
#include "ui/stylesbox.h"
#include "core/settings/styles.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QApplication>
#include <QFile>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QSpinBox>
#include <QTextBlock>
#include <QTextLayout>
#include <QToolButton>
#include <QtTest>

using dd::ui::PromptPanel;

class TestPromptPanel : public QObject {
    Q_OBJECT

private slots:
    void countsTokensPerChunk() {
        const auto short_ = dd::ui::countTokens("a red apple");
        QVERIFY(short_.available);
        QCOMPARE(short_.total, 3);
        QCOMPARE(short_.target, 75);
        QCOMPARE(dd::ui::tokenCountLabel(short_), QString("3/75"));
        // 80 single-token words spill into a second chunk (A1111: 75 + 5, shown as 80/150).
        QStringList words;
        for (int i = 0; i < 80; ++i) words << "cat";
        const auto longer = dd::ui::countTokens(words.join(' '));
        QCOMPARE(longer.total, 80);
        QCOMPARE(longer.target, 150);
        QCOMPARE(longer.chunks.size(), 2);
        QCOMPARE(dd::ui::tokenCountLabel(longer), QString("80/150 (75 + 5)"));
        // Emphasis syntax is not counted as tokens.
        QCOMPARE(dd::ui::countTokens("a (red:1.3) apple").total, 3);
        // An edited prompt counts its longest text: "a big red apple" (4), not the brackets.
        QCOMPARE(dd::ui::countTokens("a [red:big red:0.5] apple").total, 4);
        QCOMPARE(dd::ui::countTokens("a [cat|small dog] in snow").total, 5);
        QCOMPARE(dd::ui::countTokens("a red apple AND a big green pear on a table:0.5").total, 7);  // the longest part
    }

    // Prompt editing's brackets, separators and switch step share one colour, apart from a weakening's [word].
    void highlightsPromptEditing() {
        PromptPanel p;
        auto* prompt = p.findChild<QPlainTextEdit*>("prompt");
        prompt->setPlainText("a [cat:dog:0.5] and [word]");
        QCoreApplication::processEvents();
        QHash<int, QColor> colour;
        for (const auto& f : prompt->document()->firstBlock().layout()->formats())
            for (int i = f.start; i < f.start + f.length; ++i) colour[i] = f.format.foreground().color();
        const QColor editing = colour.value(2);                 // '['
        QVERIFY(editing.isValid());
        QCOMPARE(colour.value(6), editing);                    // ':' after cat
        QCOMPARE(colour.value(10), editing);                   // ':0.5'
        QCOMPARE(colour.value(13), editing);                   // "0.5"'s last digit
        QCOMPARE(colour.value(14), editing);                   // ']'
        QVERIFY(!colour.contains(3));                          // "cat" is plain text
        QVERIFY(colour.value(20).isValid() && colour.value(20) != editing);  // [word]'s bracket: a weakening
    }

    // The embeddings folder's names: counted as their vectors, offered by the Embeddings menu (into the prompt box
    // used last: the common negative-embedding workflow).
    void embeddingsMenuAndCounter() {
        PromptPanel p;
        p.setEmbeddingFolders({DD_FIXTURES_DIR "/textual_inversion/embeddings"});
        auto* button = p.findChild<QToolButton*>("embeddingsButton");
        QCOMPARE(button->text(), QString("Embeddings (3)"));
        auto* negative = p.findChild<QPlainTextEdit*>("negativePrompt");
        negative->setPlainText("blurry");
        negative->setFocus();
        QApplication::setActiveWindow(&p);
        p.show();
        QVERIFY(QTest::qWaitForWindowActive(&p));
        negative->setFocus();
        QTRY_VERIFY(negative->hasFocus());
        QAction* tinyneg = nullptr;
        for (QAction* a : button->menu()->actions())
            if (a->text() == "tinyneg") tinyneg = a;
        QVERIFY(tinyneg);
        QVERIFY(tinyneg->toolTip().contains("3 vectors"));
        tinyneg->trigger();
        QCOMPARE(negative->toPlainText(), QString("blurry, tinyneg"));
        // "blurry" (1) + "," (1) + tinyneg's 3 vectors; the refused pickle is listed, not offered.
        QTRY_COMPARE(p.findChild<QLabel*>("negativeTokens")->text(), QString("5/75 · tinyneg"));
        const auto actions = button->menu()->actions();
        QVERIFY(std::any_of(actions.begin(), actions.end(), [](QAction* a) { return a->text().contains("pickle") && !a->isEnabled(); }));
    }

    // The schedule box applies to k-diffusion's samplers; "as ComfyUI" shows only once a restored image set it.
    void scheduleTypeAndComfyUi() {
        PromptPanel p;
        auto* schedule = p.findChild<QComboBox*>("scheduleType");
        auto* comfy = p.findChild<QCheckBox*>("asComfyUi");
        QVERIFY(schedule && comfy);
        QVERIFY(comfy->isHidden());
        dd::api::GenerationSettings s;
        s.sampler = "DPM++ SDE", s.scheduleType = "Beta", s.sampleAs = "ComfyUI";
        p.setSettings(s);
        QCOMPARE(p.settings().scheduleType, std::string("Beta"));
        QCOMPARE(p.settings().sampleAs, std::string("ComfyUI"));
        QVERIFY(!comfy->isHidden() && comfy->isChecked());
        comfy->setChecked(false);
        QCOMPARE(p.settings().sampleAs, std::string("A1111"));
        s.sampler = "UniPC", s.scheduleType = "", s.sampleAs = "A1111";
        p.setSettings(s);
        QVERIFY(!schedule->isEnabled());  // UniPC has its own schedule
        QVERIFY(comfy->isHidden());
        QCOMPARE(p.settings().scheduleType, std::string());
        // A restored A1111 DDIM keeps Automatic, which runs A1111's own DDIM; timestep spacing is then not its.
        s.sampler = "DDIM", s.scheduleType = "Automatic";
        p.setSettings(s);
        QVERIFY(schedule->isEnabled());
        QCOMPARE(p.settings().scheduleType, std::string("Automatic"));
        QVERIFY(!p.findChild<QComboBox*>("timestepSpacing")->isEnabled());
    }

    // Clip skip, its SDXL reading, emphasis and pad conds: restored images set them, the artist can change them.
    void promptReadingRoundTrips() {
        PromptPanel p;
        auto* section = p.findChild<QWidget*>("textEncoderSection");
        auto* clipSkip = p.findChild<QSpinBox*>("clipSkip");
        auto* sdxl = p.findChild<QComboBox*>("sdxlClipSkip");
        auto* emphasis = p.findChild<QComboBox*>("emphasis");
        auto* pad = p.findChild<QCheckBox*>("padConds");
        QVERIFY(section && clipSkip && sdxl && emphasis && pad);
        const dd::api::GenerationSettings defaults;
        QCOMPARE(p.settings().clipSkip, defaults.clipSkip);
        QCOMPARE(p.settings().padConds, defaults.padConds);
        dd::api::GenerationSettings s;
        s.clipSkip = 2, s.sdxlClipSkip = "A1111", s.emphasis = "No norm", s.padConds = true;
        p.setSettings(s);
        const auto back = p.settings();
        QCOMPARE(back.clipSkip, 2);
        QCOMPARE(back.sdxlClipSkip, std::string("A1111"));
        QCOMPARE(back.emphasis, std::string("No norm"));
        QVERIFY(back.padConds);
        QVERIFY(clipSkip->isVisibleTo(&p));  // a restored non-default opens the section
        QSignalSpy edited(&p, &PromptPanel::edited);
        clipSkip->setValue(3);
        pad->setChecked(false);
        QCOMPARE(edited.count(), 2);
        QCOMPARE(p.settings().clipSkip, 3);
        QVERIFY(!p.settings().padConds);
        sdxl->setCurrentIndex(sdxl->findData("ComfyUI"));
        QCOMPARE(p.settings().sdxlClipSkip, std::string("ComfyUI"));
    }

    void counterFollowsTyping() {
        PromptPanel p;
        auto* prompt = p.findChild<QPlainTextEdit*>("prompt");
        prompt->clear();
        QTest::keyClicks(prompt, "a red apple");
        QTRY_COMPARE(p.findChild<QLabel*>("promptTokens")->text(), QString("3/75"));
    }

    void highlightsEmphasis() {
        PromptPanel p;
        auto* prompt = p.findChild<QPlainTextEdit*>("prompt");
        prompt->setPlainText("a (red:1.3) apple");
        QCoreApplication::processEvents();
        const auto formats = prompt->document()->firstBlock().layout()->formats();
        bool weightBold = false, redColoured = false;
        for (const auto& f : formats) {
            if (f.start <= 7 && f.start + f.length > 7 && f.format.fontWeight() == QFont::Bold) weightBold = true;  // ":1.3"
            if (f.start <= 4 && f.start + f.length > 4 && f.format.hasProperty(QTextFormat::ForegroundBrush)) redColoured = true;
        }
        QVERIFY(weightBold);
        QVERIFY(redColoured);
        prompt->setPlainText("a cat <lora:style:0.8>");
        QCoreApplication::processEvents();
        bool tagItalic = false;
        for (const auto& f : prompt->document()->firstBlock().layout()->formats())
            if (f.start == 6 && f.length == 16 && f.format.fontItalic()) tagItalic = true;
        QVERIFY2(tagItalic, "the <lora:…> tag is not marked");
        prompt->setPlainText("plain words");
        QCoreApplication::processEvents();
        QVERIFY(prompt->document()->firstBlock().layout()->formats().isEmpty());
    }

    // Styles: imported from an A1111 styles.csv, applied into both prompts and named in the settings, removed again,
    // exported, and the prompts saved as a new style; a bad file is a notice naming its line, the library unchanged.
    void stylesApplyRemoveImportExport() {
        QTemporaryDir dir;
        PromptPanel p;
        QSignalSpy notices(&p, &PromptPanel::notice);
        p.setStylesFile(dir.filePath("styles.csv"));
        auto* box = p.stylesBox();
        QVERIFY(box->names().isEmpty());
        const QString incoming = dir.filePath("theirs.csv");
        dd::settings::writeStylesFile(incoming.toStdString(), {{"Cinematic", "cinematic still of {prompt}, film grain", "cartoon"},
                                                               {"Oil", "oil painting", ""}});
        QVERIFY(box->importFrom(incoming));
        QCOMPARE(box->names(), QStringList({"Cinematic", "Oil"}));
        auto s = p.settings();
        s.prompt = "a fox";
        s.negativePrompt = "blurry";
        p.setSettings(s);
        box->apply("Cinematic");
        box->apply("Oil");
        QCOMPARE(p.settings().prompt, std::string("cinematic still of a fox, film grain, oil painting"));
        QCOMPARE(p.settings().negativePrompt, std::string("blurry, cartoon"));
        QCOMPARE(p.settings().styles, (std::vector<std::string>{"Cinematic", "Oil"}));
        box->remove("Oil");
        box->remove("Cinematic");
        QCOMPARE(p.settings().prompt, std::string("a fox"));
        QCOMPARE(p.settings().negativePrompt, std::string("blurry"));
        QVERIFY(p.settings().styles.empty());
        // Saved as a style, and the library file now holds three; exported whole.
        QVERIFY(box->saveCurrentAs("Mine"));
        QCOMPARE(dd::settings::readStylesFile(dir.filePath("styles.csv").toStdString()).size(), size_t(3));
        QVERIFY(box->exportTo(dir.filePath("out.csv")));
        QCOMPARE(dd::settings::readStylesFile(dir.filePath("out.csv").toStdString()).back(),
                 (dd::settings::PromptStyle{"Mine", "a fox", "blurry"}));
        // A damaged file: its name and line said, nothing imported.
        QFile bad(dir.filePath("bad.csv"));
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write("name,prompt\nA,\"open\n");
        bad.close();
        notices.clear();
        QVERIFY(!box->importFrom(bad.fileName()));
        QCOMPARE(notices.size(), 1);
        QVERIFY2(notices.at(0).at(0).toString().contains("bad.csv: styles.csv line 2"), qPrintable(notices.at(0).at(0).toString()));
        QCOMPARE(box->names().size(), 3);
        // The settings' styles come back with them (restore).
        s = p.settings();
        s.styles = {"Oil"};
        p.setSettings(s);
        QCOMPARE(p.settings().styles, (std::vector<std::string>{"Oil"}));
    }

    // The refiner picker and switch field carry RefinerSetting both ways; a new path drops the old hash.
    void refinerFields() {
        PromptPanel p;
        QVERIFY(!p.settings().refiner.enabled());
        // Folded to one line until a refiner is wanted; settings that use one unfold it.
        auto* header = p.findChild<QToolButton*>("refinerBoxSection");
        QVERIFY(header && !header->isChecked());
        QVERIFY(header->text().endsWith("none"));
        dd::api::GenerationSettings s;
        s.refiner = {"/models/sd_xl_refiner_1.0.safetensors", 0.7, 6.0, 2.5, "7440042bbd"};
        p.setSettings(s);
        QVERIFY(header->isChecked());
        header->click();  // folded again: the summary names it
        QCOMPARE(header->text(), QString("Refiner (SDXL) · sd_xl_refiner_1.0.safetensors from 0.70"));
        QCOMPARE(p.findChild<QLineEdit*>("refiner")->text(), QString("/models/sd_xl_refiner_1.0.safetensors"));
        QVERIFY(p.settings().refiner == s.refiner);
        p.findChild<QDoubleSpinBox*>("refinerSwitch")->setValue(0.85);
        p.findChild<QLineEdit*>("refiner")->setText("/models/other.safetensors");
        QCOMPARE(p.settings().refiner.switchAt, 0.85);
        QCOMPARE(p.settings().refiner.model, std::string("/models/other.safetensors"));
        QVERIFY(p.settings().refiner.hash.empty());
        dd::ui::setNextChosenPath("/models/picked.safetensors");
        p.findChild<QToolButton*>("chooseRefiner")->click();
        QCOMPARE(p.settings().refiner.model, std::string("/models/picked.safetensors"));
        p.findChild<QLineEdit*>("refiner")->clear();
        QVERIFY(!p.settings().refiner.enabled());
        // The peak prediction counts the refiner's weights (kept beside the base on the CPU).
        dd::api::GenerationSettings run;
        run.model = DD_FIXTURES_DIR "/pipeline/tiny-sdxl-e2e";
        run.width = run.height = 64;
        const auto plain = dd::ui::predictPeak(run);
        run.refiner.model = DD_FIXTURES_DIR "/refiner/tiny-sdxl-refiner-e2e";
        const auto refined = dd::ui::predictPeak(run);
        QVERIFY(plain.peakBytes > 0);
        QVERIFY2(refined.peakBytes > plain.peakBytes, qPrintable(QString("%1 vs %2").arg(refined.peakBytes).arg(plain.peakBytes)));
    }

    void seedControls() {
        PromptPanel p;
        p.findChild<QDoubleSpinBox*>("seed")->setValue(1234);
        QCOMPARE(p.takeSeed(), int64_t(1234));
        p.findChild<QCheckBox*>("randomSeed")->setChecked(true);
        const int64_t a = p.takeSeed(), b = p.takeSeed();
        QVERIFY(a != b || a != 1234);  // fresh each run (two equal draws in 2^32 would be a fluke)
        QCOMPARE(p.lastSeed(), b);
        p.findChild<QDoubleSpinBox*>("seed")->setValue(7);
        p.findChild<QToolButton*>("reuseSeed")->click();
        QVERIFY(!p.randomSeed());
        QCOMPARE(p.settings().seed, b);
        QCOMPARE(p.settings().seed, p.lastSeed());
    }

    void sizePresetsFollowFamily() {
        PromptPanel p;
        auto* presets = p.findChild<QComboBox*>("sizePreset");
        p.setModelFamily("SDXL", false);
        QVERIFY(presets->findText("1024 × 1024") > 0);
        QCOMPARE(presets->findText("512 × 512"), -1);
        p.setModelFamily("SD 1.x", false);
        const int i = presets->findText("512 × 768");
        QVERIFY(i > 0);
        presets->setCurrentIndex(i);
        emit presets->activated(i);
        QCOMPARE(p.settings().width, 512);
        QCOMPARE(p.settings().height, 768);
    }

    void settingsRoundTrip() {
        PromptPanel p;
        dd::api::GenerationSettings s;
        s.prompt = "x";
        s.negativePrompt = "y";
        s.seed = 4000000000LL;  // past int: A1111 seeds reach 2^32 - 1
        s.steps = 33;
        s.cfgScale = 5.5;
        s.sampler = "DPM++ 2M Karras";
        s.width = 640;
        s.height = 448;
        s.batchSize = 3;
        s.clipSkip = 2;  // not edited here, kept
        p.setSettings(s);
        const auto back = p.settings();
        QCOMPARE(back.seed, s.seed);
        QCOMPARE(back.sampler, s.sampler);
        QCOMPARE(back.steps, 33);
        QCOMPARE(back.width, 640);
        QCOMPARE(back.batchSize, 3);
        QCOMPARE(back.clipSkip, 2);
    }
};

QTEST_MAIN(TestPromptPanel)
#include "test_promptpanel.moc"
