// MainWindow: Serve API (Generate menu). AUTOMATIC1111's web API on 127.0.0.1 ($DD_API_PORT, else 7860) whose
// requests run on the window's queue (ApiBridge): they appear in the queue, on the canvas and in the library like
// the artist's own runs. Models: the one chosen, the built-in one and Preferences' model folders (docs/api.md).
#include "ui/apibridge.h"
#include "ui/mainwindow.h"
#include "ui/modelpicker.h"
#include "ui/queueservice.h"
#include "ui/runcontroller.h"
#include "ui/servicethread.h"
#include "ui/stringlists.h"
#include "ui/engineworker.h"

#include "server/api_server.h"

#include <QAction>
#include <QDir>
#include <QLabel>
#include <QStatusBar>

#include <thread>

namespace dd::ui {

struct MainWindow::ApiHost {
    server::ModelCatalog catalog;
    ApiBridge* bridge;
    server::ApiServer server;
    std::thread thread;
    int port = 0;

    ApiHost(std::vector<server::CatalogModel> fixed, std::vector<std::string> folders, ApiBridge* b, server::ServerOptions o)
        : catalog(std::move(fixed), std::move(folders)), bridge(b), server(std::move(o), *b, catalog) {}
    ~ApiHost() {
        bridge->close();  // the requests waiting for images are answered before the server's threads stop
        server.stop();
        if (thread.joinable()) thread.join();
        delete bridge;
    }
};

void MainWindow::ApiHostDeleter::operator()(ApiHost* host) const { delete host; }

int MainWindow::apiPort() const { return m_api ? m_api->port : 0; }

void MainWindow::setServingApi(bool on) {
    if (!on) {
        m_api.reset();
        m_apiLabel->hide();
        statusBar()->showMessage(tr("The A1111 API is off"), 4000);
        return;
    }
    if (m_api) return;
    const auto fixed = server::startModels(m_picker->currentModel().toStdString());
    server::ServerOptions o;
    o.port = qEnvironmentVariableIsSet("DD_API_PORT") ? qEnvironmentVariableIntValue("DD_API_PORT") : 7860;
    o.inputFolder = QDir(m_prefs.outputFolder).filePath("api-inputs").toStdString();
    o.startModel = fixed.empty() ? std::string() : fixed.front().title;
    o.loraFolders = toStdStrings(m_prefs.loraFolders);
    o.upscalerFolders = toStdStrings(m_prefs.upscalerFolders);
    o.embeddingFolders = toStdStrings(m_prefs.embeddingFolders);
    o.version = "DiffusionDesk " DD_VERSION;
    auto* bridge = new ApiBridge(m_run);
    connect(m_queue->service(), &QueueService::changed, bridge, &ApiBridge::onJobsChanged);
    connect(worker(), &EngineWorker::progress, bridge, &ApiBridge::onProgress);
    try {
        auto host = std::make_unique<ApiHost>(fixed, toStdStrings(m_prefs.modelFolders), bridge, o);
        host->port = host->server.bind();
        host->thread = std::thread([h = host.get()] { h->server.serve(); });
        m_api.reset(host.release());
    } catch (const std::exception& e) {
        m_serveApi->setChecked(false);
        statusBar()->showMessage(tr("Serve API: %1").arg(QString::fromStdString(e.what())));
        return;
    }
    const QString url = QStringLiteral("http://127.0.0.1:%1/sdapi/v1").arg(m_api->port);
    m_apiLabel->setText(tr("API on %1").arg(url));
    m_apiLabel->show();
    statusBar()->showMessage(tr("Serving the A1111 API on %1: its jobs appear in the queue and the library").arg(url), 8000);
}

} // namespace dd::ui
