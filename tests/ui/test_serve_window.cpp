// Serve API in the window (offscreen, the demo model): A1111 requests run on the window's own queue, are saved
// to its library folder like the artist's runs, and answer their client; interrupt stops only the API's job.
#include "ui/mainwindow.h"
#include "ui/modelpicker.h"
#include "ui/dialoghooks.h"
#include "ui/runcontroller.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <QAction>
#include <QDialog>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include "tests/ui/window_test.h"

#include <QtTest>

#include <algorithm>
#include <atomic>
#include <thread>

using dd::ui::MainWindow;
using nlohmann::json;

namespace {

struct Answer {
    std::atomic<bool> done{false};
    int status = 0;
    json body;
};

// A POST on a thread of its own: the window's event loop must keep running for the request to be answered.
std::thread post(int port, const std::string& path, json body, Answer& answer) {
    return std::thread([port, path, body = std::move(body), &answer] {
        httplib::Client client("127.0.0.1", port);
        client.set_read_timeout(300);
        if (auto r = client.Post(("/sdapi/v1/" + path).c_str(), body.dump(), "application/json")) {
            answer.status = r->status;
            answer.body = json::parse(r->body, nullptr, false);
        }
        answer.done = true;
    });
}

json get(int port, const std::string& path) {
    httplib::Client client("127.0.0.1", port);
    auto r = client.Get(("/sdapi/v1/" + path).c_str());
    return r ? json::parse(r->body, nullptr, false) : json();
}

} // namespace

class TestServeWindow : public QObject {
    Q_OBJECT
    QTemporaryDir m_config;

private slots:
    void initTestCase() {
        dd::test::isolateWindowTests(m_config, "test_serve_window");
        qputenv("DD_API_PORT", "0");  // any free port
    }
    void init() {
        QSettings().clear();
        QFile::remove(MainWindow::queueFile());
        QSettings().setValue("saving/outputFolder", m_config.filePath("output"));
    }

    void requestsRunOnTheWindowsQueue() {
        MainWindow w({});
        w.show();
        QTRY_COMPARE(w.modelPicker()->loadedModel(), QString("demo:tiny-sd1"));
        auto* serve = w.findChild<QAction*>("serveApi");
        QVERIFY(serve);
        serve->setChecked(true);
        const int port = w.apiPort();
        QVERIFY(port > 0);
        QVERIFY(w.findChild<QLabel*>("apiLabel")->text().contains(QString::number(port)));
        QVERIFY(get(port, "sd-models").dump().find("demo:tiny-sd1") != std::string::npos);

        Answer answer;
        auto client = post(port, "txt2img", {{"prompt", "from a client"}, {"seed", 42}, {"steps", 2}, {"width", 64},
                                             {"height", 64}, {"n_iter", 2}}, answer);
        QTRY_VERIFY_WITH_TIMEOUT(answer.done, 120000);
        client.join();
        QCOMPARE(answer.status, 200);
        QCOMPARE(int(answer.body["images"].size()), 2);
        const json info = json::parse(answer.body["info"].get<std::string>());
        QCOMPARE(info["all_seeds"], json({42, 43}));
        QVERIFY(info["infotexts"][0].get<std::string>().find("Seed: 42") != std::string::npos);
        // In the window: two queue jobs done, two images in this session, saved in the output folder. The queue's
        // snapshot comes from its service thread, so it may reach the window just after the answer reaches the client.
        const auto apiJobsDone = [&] {
            int n = 0;
            for (const auto& j : w.jobs()) n += j.specJson.contains("api_task") && j.state == "done";
            return n;
        };
        QTRY_COMPARE(apiJobsDone(), 2);
        QCOMPARE(int(w.runController()->session().size()), 2);
        QTRY_COMPARE(QDir(m_config.filePath("output")).entryList({"*.png"}, QDir::Files).size() +
                         [&] {
                             qsizetype n = 0;
                             for (const auto& day : QDir(m_config.filePath("output")).entryList(QDir::Dirs | QDir::NoDotAndDotDot))
                                 if (day != "api-inputs") n += QDir(m_config.filePath("output/" + day)).entryList({"*.png"}, QDir::Files).size();
                             return n;
                         }(),
                     qsizetype(2));

        // Interrupt: the API's long job ends as cancelled, the request is answered, the window is idle again.
        Answer slow;
        auto slowClient = post(port, "txt2img", {{"prompt", "long"}, {"steps", 400}, {"width", 64}, {"height", 64}}, slow);
        QTRY_VERIFY_WITH_TIMEOUT(get(port, "progress")["state"]["sampling_step"].get<int>() >= 2, 60000);
        httplib::Client("127.0.0.1", port).Post("/sdapi/v1/interrupt");
        QTRY_VERIFY_WITH_TIMEOUT(slow.done, 60000);
        slowClient.join();
        QCOMPARE(slow.status, 200);
        QVERIFY(json::parse(slow.body["info"].get<std::string>())["interrupted"].get<bool>());
        QTRY_VERIFY(!w.isRunning());
        QTRY_VERIFY(std::any_of(w.jobs().begin(), w.jobs().end(),
                                [](const auto& j) { return j.specJson.contains("\"long\"") && j.state == "cancelled"; }));

        // The artist's Cancel stops the queue: a request whose jobs still wait there is answered, not left hanging.
        Answer stranded;
        auto third = post(port, "txt2img", {{"prompt", "three"}, {"steps", 300}, {"width", 64}, {"height", 64}, {"n_iter", 3}}, stranded);
        QTRY_VERIFY_WITH_TIMEOUT(w.isRunning(), 60000);
        QTest::mouseClick(w.findChild<QPushButton*>("cancel"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(stranded.done, 60000);
        third.join();
        QCOMPARE(stranded.status, 200);
        QVERIFY(json::parse(stranded.body["info"].get<std::string>())["interrupted"].get<bool>());

        serve->setChecked(false);
        QCOMPARE(w.apiPort(), 0);
        QVERIFY(!httplib::Client("127.0.0.1", port).Get("/sdapi/v1/sd-models"));
    }
};

QTEST_MAIN(TestServeWindow)
#include "test_serve_window.moc"
