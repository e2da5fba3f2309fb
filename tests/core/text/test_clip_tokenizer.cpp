// Parity of dd::text::ClipTokenizer with transformers' CLIPTokenizer (fixtures written by
// tests/parity/fixtures_tokenizer.py), plus reference ids and malformed vocabulary files.
#include "core/io/model_error.h"
#include "core/text/clip_tokenizer.h"

#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <fstream>

using dd::text::ClipPad;
using dd::text::ClipTokenizer;
namespace fs = std::filesystem;

namespace {

const fs::path kBundled = fs::path(DD_SOURCE_DIR) / "resources/clip/bpe_simple_vocab_16e6.txt.gz";
const fs::path kFixtures = fs::path(DD_FIXTURES_DIR);

QString describe(const std::vector<int>& v) {
    QStringList s;
    for (int id : v) s << QString::number(id);
    return s.join(',');
}

void writeFile(const fs::path& p, const std::string& data) {
    std::ofstream(p, std::ios::binary) << data;
}

} // namespace

class TestClipTokenizer : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        m_bundled = std::make_unique<ClipTokenizer>(ClipTokenizer::fromBundledVocab(kBundled));
        m_bundledZero = std::make_unique<ClipTokenizer>(ClipTokenizer::fromBundledVocab(kBundled, ClipPad::Exclamation));
    }

    void referenceIds_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("ids");
        // sd_reference.md §5.3
        QTest::newRow("cat") << "a photo of a cat" << "49406,320,1125,539,320,2368,49407";
        QTest::newRow("astronaut") << "a photo of an astronaut riding a horse on mars"
                                   << "49406,320,1125,539,550,18376,6765,320,4558,525,7496,49407";
        QTest::newRow("punctuation") << "hello,world!!" << "49406,3306,267,1002,748,49407";
        QTest::newRow("empty") << "" << "49406,49407";
    }
    void referenceIds() {
        QFETCH(QString, text);
        QFETCH(QString, ids);
        std::vector<int> all{m_bundled->bosId()};
        for (int id : m_bundled->encode(text.toStdString())) all.push_back(id);
        all.push_back(m_bundled->eosId());
        QCOMPARE(describe(all), ids);
    }

    void vocabularyLayout() {
        QCOMPARE(m_bundled->vocabSize(), 49408);
        QCOMPARE(m_bundled->bosId(), 49406);
        QCOMPARE(m_bundled->eosId(), 49407);
        QCOMPARE(m_bundled->tokenId("!").value_or(-1), 0);
        QCOMPARE(m_bundled->tokenId("!</w>").value_or(-1), 256);
        QCOMPARE(m_bundled->tokenId(",</w>").value_or(-1), 267);
        QCOMPARE(m_bundled->token(49407), std::string("<|endoftext|>"));
        QCOMPARE(m_bundled->token(-1), std::string());
    }

    void paddingAndTruncation() {
        QCOMPARE(m_bundled->padId(), ClipTokenizer::kPadWithEos);
        QCOMPARE(m_bundledZero->padId(), ClipTokenizer::kPadWithZero);
        const auto padded = m_bundledZero->encodePadded("a cat");
        QCOMPARE(int(padded.ids.size()), 77);
        QCOMPARE(describe({padded.ids.begin(), padded.ids.begin() + 5}), QString("49406,320,2368,49407,0"));
        QCOMPARE(padded.ids.back(), 0);
        std::string longText;
        for (int i = 0; i < 80; ++i) longText += "cat ";
        const auto cut = m_bundled->encodePadded(longText);
        QCOMPARE(int(cut.ids.size()), 77);
        QCOMPARE(cut.contentTokens, 75);
        QCOMPARE(cut.droppedTokens, 5);
        QCOMPARE(cut.ids[75], 2368);
        QCOMPARE(cut.ids[76], 49407);
    }

    void specialTokensInText() {
        QCOMPARE(describe(m_bundled->encode("a <|endoftext|> b")), QString("320,49407,321"));
        QCOMPARE(describe(m_bundled->encode("a<|startoftext|>b")), QString("320,49406,321"));
        // Upper case is not the special token: lowercased, then split into "<|", word, "|>".
        QCOMPARE(describe(m_bundled->encode("<|ENDOFTEXT|>")), describe(m_bundled->encode("<| endoftext |>")));
        // A "!" pad token is special too (transformers' SD2 / SDXL tokenizer_2 behaviour).
        QCOMPARE(describe(m_bundled->encode("hello,world!!")), QString("3306,267,1002,748"));
        QCOMPARE(describe(m_bundledZero->encode("hello,world!!")), QString("3306,267,1002,0,0"));
    }

    void invalidUtf8DoesNotThrow() {
        const auto ids = m_bundled->encode(std::string("a\xff\xfe b\xc3", 6));
        QVERIFY(!ids.empty());
    }

    void parity_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<bool>("padZero");
        QTest::newRow("tokenizer/ (pad 49407)") << "tokenizer" << false;
        QTest::newRow("tokenizer_2/ (pad 0)") << "tokenizer_2" << true;
        QTest::newRow("bundled .gz, pad 49407") << "" << false;
        QTest::newRow("bundled .gz, pad 0") << "" << true;
    }
    void parity() {
        QFETCH(QString, source);
        QFETCH(bool, padZero);
        const fs::path casesPath = kFixtures / "tokenizer_cases.json";
        if (!fs::exists(casesPath))
            QFAIL(qPrintable("missing " + QString::fromStdString(casesPath.string()) +
                             ": run tests/parity/make_fixtures.py (or fixtures_tokenizer.py) into DD_FIXTURES_DIR"));
        const auto tok = source.isEmpty() ? (padZero ? *m_bundledZero : *m_bundled)
                                          : ClipTokenizer::fromFolder(kFixtures / source.toStdString());
        QCOMPARE(tok.padId(), padZero ? ClipTokenizer::kPadWithZero : ClipTokenizer::kPadWithEos);
        const auto json = nlohmann::json::parse(std::ifstream(casesPath));
        const auto& cases = json.at("cases");
        QVERIFY(cases.size() >= 300);
        int checked = 0;
        for (const auto& c : cases) {
            const auto text = c.at("text").get<std::string>();
            const auto expect = [&](const char* key) { return describe(c.at(key).get<std::vector<int>>()); };
            const QString where = QString::fromStdString(nlohmann::json(text).dump()).left(120);
            QVERIFY2(describe(tok.encode(text)) == expect(padZero ? "ids_zero" : "ids"), qPrintable("ids: " + where));
            QVERIFY2(describe(tok.encodePadded(text).ids) == expect(padZero ? "padded_zero" : "padded_eos"),
                     qPrintable("padded: " + where));
            ++checked;
        }
        qInfo("%d cases identical (content ids and 77 padded ids)", checked);
    }

    void malformedFiles_data() {
        QTest::addColumn<QString>("vocab");   // vocab.json content; "" = absent
        QTest::addColumn<QString>("merges");  // merges.txt content; "" = absent
        QTest::addColumn<QString>("problem"); // expected part of the message
        const QString tiny = R"({"<|startoftext|>": 0, "<|endoftext|>": 1})";
        QTest::newRow("no vocab.json") << "" << "#version: 0.2\n" << "cannot be opened";
        QTest::newRow("not json") << "{\"a\": " << "#version: 0.2\n" << "not valid JSON";
        QTest::newRow("json array") << "[1, 2]" << "#version: 0.2\n" << "JSON object";
        QTest::newRow("string id") << R"({"a": "1"})" << "#version: 0.2\n" << "invalid id";
        QTest::newRow("negative id") << R"({"a": -3})" << "#version: 0.2\n" << "invalid id";
        QTest::newRow("id used twice") << R"({"a": 1, "b": 1})" << "#version: 0.2\n" << "used twice";
        QTest::newRow("no byte symbols") << tiny << "#version: 0.2\n" << "is missing";
        QTest::newRow("no merges.txt") << tiny << "" << "cannot be opened";
        QTest::newRow("three-part merge") << tiny << "#version: 0.2\na b c\n" << "line 2";
        QTest::newRow("one-part merge") << tiny << "#version: 0.2\nab\n" << "line 2";
        QTest::newRow("unknown pad token") << tiny << "#version: 0.2\n" << "pad_token '<pad>'";
    }
    void malformedFiles() {
        QFETCH(QString, vocab);
        QFETCH(QString, merges);
        QFETCH(QString, problem);
        QTemporaryDir dir;
        const fs::path root = dir.path().toStdString();
        if (!vocab.isEmpty()) writeFile(root / "vocab.json", vocab.toStdString());
        if (!merges.isEmpty()) writeFile(root / "merges.txt", merges.toStdString());
        if (problem.contains("pad_token")) writeFile(root / "special_tokens_map.json", R"({"pad_token": {"content": "<pad>"}})");
        try {
            ClipTokenizer::fromFolder(root);
            QFAIL("no error");
        } catch (const dd::io::ModelFileError& e) {
            QVERIFY2(QString(e.what()).contains(problem), e.what());
            QVERIFY2(QString(e.what()).startsWith(dir.path()), e.what());
        }
    }

    void malformedBundledVocab_data() {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<bool>("gzip");
        QTest::addColumn<QString>("problem");
        QTest::newRow("too short") << QByteArray("#version\ni n\n") << true << "lines";
        QTest::newRow("plain text, too short") << QByteArray("#version\ni n\n") << false << "lines";
        QTest::newRow("bad merge") << QByteArray("#version\n") + QByteArray("abc\n").repeated(48894) << true << "line 2";
        QTest::newRow("truncated gzip") << QByteArray() << true << "gzip";
    }
    void malformedBundledVocab() {
        QFETCH(QByteArray, content);
        QFETCH(bool, gzip);
        QFETCH(QString, problem);
        QTemporaryDir dir;
        const fs::path file = fs::path(dir.path().toStdString()) / "vocab.txt.gz";
        if (gzip && content.isEmpty()) {
            // A real vocabulary cut after 1000 bytes: zlib reports the stream as broken.
            std::ifstream in(kBundled, std::ios::binary);
            std::string head(1000, '\0');
            in.read(head.data(), 1000);
            writeFile(file, head);
        } else if (gzip) {
            gzFile f = gzopen(file.string().c_str(), "wb");
            gzwrite(f, content.constData(), unsigned(content.size()));
            gzclose(f);
        } else {
            writeFile(file, content.toStdString());
        }
        try {
            ClipTokenizer::fromBundledVocab(file);
            QFAIL("no error");
        } catch (const dd::io::ModelFileError& e) {
            QVERIFY2(QString(e.what()).contains(problem), e.what());
        }
        QVERIFY_THROWS_EXCEPTION(dd::io::ModelFileError, ClipTokenizer::fromBundledVocab(file.string() + ".absent"));
    }

private:
    std::unique_ptr<ClipTokenizer> m_bundled;
    std::unique_ptr<ClipTokenizer> m_bundledZero;
};

QTEST_GUILESS_MAIN(TestClipTokenizer)
#include "test_clip_tokenizer.moc"
