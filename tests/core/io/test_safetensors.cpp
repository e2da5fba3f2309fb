// The safetensors reader: one hand-made malformed file per rejected case, each with its own message,
// and a writer→reader round trip for every dtype.
#include "core/io/model_error.h"
#include "core/io/safetensors.h"
#include "tests/common/test_program.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace test_safetensors {  // the test program is a unity build: each file keeps its names

using namespace dd::io;

namespace {

// Pages of `t`'s bytes mapped into this process now (/proc/self/pagemap bit 63: present).
int64_t residentPages(const torch::Tensor& t) {
    const auto page = uintptr_t(sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(t.data_ptr()) / page,
               end = (reinterpret_cast<uintptr_t>(t.data_ptr()) + uintptr_t(t.nbytes()) + page - 1) / page;
    std::vector<uint64_t> entries(end - begin);
    const int fd = ::open("/proc/self/pagemap", O_RDONLY);
    const auto bytes = ssize_t(entries.size() * sizeof(uint64_t));
    const bool read = fd >= 0 && ::pread(fd, entries.data(), size_t(bytes), off_t(begin * sizeof(uint64_t))) == bytes;
    if (fd >= 0) ::close(fd);
    if (!read) return -1;
    int64_t present = 0;
    for (const uint64_t entry : entries) present += (entry >> 63) & 1;
    return present;
}

} // namespace

namespace {

std::string le64(uint64_t n) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[i] = char(uint8_t(n >> (8 * i)));
    return s;
}

// A file whose header is `json` (length prefix computed unless overridden) followed by `dataBytes` zero bytes.
std::string makeFile(const std::string& json, std::size_t dataBytes, std::optional<uint64_t> lengthOverride = {}) {
    return le64(lengthOverride.value_or(json.size())) + json + std::string(dataBytes, '\0');
}

} // namespace

class TestSafetensors : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    std::string writeBytes(const QString& name, const std::string& bytes) {
        const std::string path = m_dir.filePath(name).toStdString();
        std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
        return path;
    }

private slots:
    void rejectsMalformed_data() {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("expected");
        auto row = [](const char* name, const std::string& bytes, const char* expected) {
            QTest::newRow(name) << QByteArray(bytes.data(), qsizetype(bytes.size())) << QString(expected);
        };
        const std::string okEntry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
        row("shorter than 8 bytes", "\x05\0\0", "too short to be safetensors");
        row("header length over 100 MB", makeFile("{}", 0, 200'000'000), "exceeds the 100,000,000-byte limit");
        row("header beyond the file", makeFile("{}", 0, 1000), "runs past the end of the file");
        row("header not UTF-8", makeFile("{\"a\xff\":{}}", 0), "not valid UTF-8 (byte 11)");
        row("header not starting with {", makeFile("[1, 2]", 0), "does not start with '{'");
        row("header not JSON", makeFile("{\"a\": ", 0), "not valid JSON");
        row("header number too large", makeFile(R"({"a":{"dtype":"U8","shape":[2e2222],"data_offsets":[0,1]}})", 1),
            "header cannot be read");
        row("header not an object of tensors", makeFile("{\"a\": 3}", 0), "header entry is not an object");
        row("duplicate tensor names", makeFile("{" + okEntry + "," + okEntry + "}", 8), "tensor 'a' appears twice");
        row("unknown dtype", makeFile(R"({"a":{"dtype":"F7","shape":[1],"data_offsets":[0,1]}})", 1), "unknown dtype \"F7\"");
        row("negative dimension", makeFile(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", 1),
            "negative dimension -1");
        row("non-integer dimension", makeFile(R"({"a":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}})", 1),
            "is not a non-negative integer");
        row("shape product overflow",
            makeFile(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4), "overflows");
        row("byte size not numel x dtype size", makeFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4),
            "needs 8 bytes but its data offsets span 4");
        row("offsets out of order", makeFile(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[8,0]}})", 8),
            "data offsets out of order");
        row("offsets overlapping",
            makeFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12),
            "overlaps tensor 'a'");
        row("offsets out of bounds",
            makeFile(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[1000,1004]}})", 4),
            "tensor 'b' starts at byte 1,121, out of bounds: the file has 125 bytes");
        row("offsets leaving a hole",
            makeFile(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 12),
            "hole of 4 unused bytes before tensor 'b'");
        row("trailing bytes after the last tensor", makeFile("{" + okEntry + "}", 12), "hole of 4 unused bytes at the end");
        row("truncated data", makeFile("{" + okEntry + "}", 5), "truncated: tensor 'a' ends at byte 70 but the file has 67 bytes");
        row("git lfs pointer",
            "version https://git-lfs.github.com/spec/v1\noid sha256:4a5b\nsize 4265168059\n", "Git LFS pointer");
        row("metadata not strings", makeFile(R"({"__metadata__":{"format":1}})", 0), "\"__metadata__\" value for 'format'");
    }

    void rejectsMalformed() {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, expected);
        const std::string path = writeBytes("bad.safetensors", bytes.toStdString());
        try {
            SafetensorsFile::open(path);
            QFAIL("the malformed file was accepted");
        } catch (const ModelFileError& e) {
            const QString message = QString::fromUtf8(e.what());
            QVERIFY2(message.startsWith(QString::fromStdString(path) + ": "), qPrintable(message));
            QVERIFY2(message.contains(expected), qPrintable(message));
        }
    }

    void acceptsZeroSizeAndScalarTensors() {
        const std::string path = writeBytes(
            "edge.safetensors",
            makeFile(R"({"empty":{"dtype":"F16","shape":[3,0],"data_offsets":[0,0]},"scalar":{"dtype":"I32","shape":[],"data_offsets":[0,4]}})", 4));
        auto file = SafetensorsFile::open(path);
        QCOMPARE(file->tensor("empty").sizes().vec(), (std::vector<int64_t>{3, 0}));
        QCOMPARE(file->tensor("scalar").dim(), 0);
        QCOMPARE(file->tensor("scalar").item<int32_t>(), 0);
    }

    void roundTripsEveryDtype() {
        TensorMap in;
        const auto base = torch::arange(-6, 6, torch::kFloat64).reshape({3, 4});
        for (auto type : {torch::kFloat64, torch::kFloat32, torch::kFloat16, torch::kBFloat16, torch::kFloat8_e4m3fn,
                          torch::kFloat8_e5m2, torch::kInt64, torch::kInt32, torch::kInt16, torch::kInt8, torch::kUInt8, torch::kBool})
            in["t." + std::string(c10::toString(type))] = (type == torch::kUInt8 ? base + 6 : base).to(type);
        in["zero"] = torch::empty({0, 5});
        const std::string path = m_dir.filePath("round.safetensors").toStdString();
        writeSafetensors(path, in, {{"format", "pt"}});

        auto file = SafetensorsFile::open(path);
        QCOMPARE(file->metadata().at("format"), std::string("pt"));
        QCOMPARE(file->header().headerLength % 8, uint64_t(0));
        const TensorMap out = file->all();
        QCOMPARE(out.size(), in.size());
        for (const auto& [name, t] : in) {
            const auto& back = out.at(name);
            QCOMPARE(back.scalar_type(), t.scalar_type());
            QCOMPARE(back.sizes().vec(), t.sizes().vec());
            // Compare bytes: float8 has no equality kernel on every build.
            QVERIFY2(torch::equal(back.view(torch::kUInt8), t.contiguous().view(torch::kUInt8)), name.c_str());
        }
    }

    void tensorsAreZeroCopyViewsWhenAligned() {
        const std::string path = m_dir.filePath("view.safetensors").toStdString();
        writeSafetensors(path, {{"w", torch::ones({16, 16})}});
        auto file = SafetensorsFile::open(path);
        const auto t = file->tensor("w");
        QCOMPARE(t.data_ptr(), static_cast<const void*>(file->data(file->tensors().front())));
        file.reset();  // the view keeps the mapping alive
        QCOMPARE(t.sum().item<float>(), 256.0f);
        t.mul_(2);  // copy-on-write: never touches the file
        QCOMPARE(SafetensorsFile::open(path)->tensor("w").sum().item<float>(), 256.0f);
    }

    // Giving a view's pages back (what the loader does after converting a tensor, and the engine after a
    // network's stage): clean pages leave the process and come back from the file on the next read; a page
    // written through the view (the private mapping's own copy) is never given back, so no write is lost.
    void releasedPagesComeBackButWrittenPagesStay() {
        const std::string path = m_dir.filePath("pages.safetensors").toStdString();
        const int64_t n = 1 << 20;  // 4 MiB of fp32: whole pages inside each tensor
        writeSafetensors(path, {{"clean", torch::arange(n, torch::kFloat32)}, {"written", torch::ones({n})}});
        auto file = SafetensorsFile::open(path);
        const auto clean = file->tensor("clean"), written = file->tensor("written");
        const double sum = clean.sum().item<double>();  // every page read: present
        QVERIFY(residentPages(clean) > 250);
        releaseMappedPages(clean);
        const int64_t left = residentPages(clean);
        QVERIFY2(left >= 0 && left <= 2, qPrintable(QString::number(left)));  // the two end pages, shared with the header and the next tensor
        QCOMPARE(clean.sum().item<double>(), sum);  // read again from the file

        written.mul_(3);  // copy-on-write: the process's own pages now
        releaseMappedPages(written);
        QVERIFY(residentPages(written) > 250);
        QCOMPARE(written.sum().item<double>(), 3.0 * double(n));

        const auto heap = torch::ones({n});  // not a file view: left alone
        releaseMappedPages(heap);
        QCOMPARE(heap.sum().item<double>(), double(n));
    }

    void writerLeavesNoPartialFile() {
        const std::string path = m_dir.filePath("missing-dir/out.safetensors").toStdString();
        QVERIFY_THROWS_EXCEPTION(ModelFileError, writeSafetensors(path, {{"w", torch::ones({2})}}));
        QVERIFY(!QFile::exists(QString::fromStdString(path)));
        QVERIFY(!QFile::exists(QString::fromStdString(path + ".partial")));
    }
};

DD_REGISTER_TEST(TestSafetensors)

} // namespace test_safetensors
#include "test_safetensors.moc"
