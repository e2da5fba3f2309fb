#include "ui/compareview.h"

#include "ui/engineworker.h"  // toQImage
#include "ui/viewtransform.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QSlider>
#include <QSplitter>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <functional>

namespace dd::ui {

// Paints A and B (or the heatmap) with one shared view transform: side by side each pane maps the same image
// point to its centre, so zoom and pan are synchronised by construction. Blink and swipe draw into one pane.
class CompareCanvas : public QWidget {
public:
    explicit CompareCanvas(QWidget* parent) : QWidget(parent) {
        setObjectName("compareCanvas");
        setMinimumSize(200, 150);
        setFocusPolicy(Qt::StrongFocus);
        setMouseTracking(false);
    }

    QImage a, b, heat;
    QString labelA = "A", labelB = "B";
    CompareView::Mode mode = CompareView::Mode::SideBySide;
    bool heatmap = false, blinkB = false;
    double swipe = 0.5;
    ViewTransform view;  // one for every pane: zoom and pan stay in step
    std::function<void()> onToggle;  // blink: click / space

    const QImage& second() const { return heatmap && !heat.isNull() ? heat : b; }
    QString secondLabel() const { return heatmap ? QStringLiteral("difference") : labelB; }

    QSize imageSize() const { return a.size().expandedTo(b.size()); }
    QList<QRect> panes() const {
        if (mode != CompareView::Mode::SideBySide) return {rect()};
        const int half = width() / 2;
        return {QRect(0, 0, half - 1, height()), QRect(half + 1, 0, width() - half - 1, height())};
    }
    void fit() {
        const QSize s = imageSize();
        if (s.isEmpty()) return;
        view.fit(s, panes().front().size());
        update();
    }

protected:
    void paintEvent(QPaintEvent*) override {
        QPainter painter(this);
        painter.fillRect(rect(), palette().color(QPalette::Dark));
        // Enlarged: nearest neighbour, so single pixels are seen as they are.
        painter.setRenderHint(QPainter::SmoothPixmapTransform, view.zoom < 1.0);
        const auto panesNow = panes();
        if (mode == CompareView::Mode::SideBySide) {
            drawImage(painter, panesNow[0], a, labelA);
            drawImage(painter, panesNow[1], second(), secondLabel());
        } else if (mode == CompareView::Mode::Blink) {
            drawImage(painter, panesNow[0], blinkB ? second() : a, blinkB ? secondLabel() : labelA);
        } else {
            const QRect pane = panesNow[0];
            const int x = pane.left() + int(std::lround(swipe * pane.width()));
            painter.save();
            painter.setClipRect(QRect(pane.left(), pane.top(), x - pane.left(), pane.height()));
            drawImage(painter, pane, a, QString());
            painter.setClipRect(QRect(x, pane.top(), pane.right() - x + 1, pane.height()));
            drawImage(painter, pane, second(), QString());
            painter.restore();
            painter.setPen(QPen(Qt::white, 1));
            painter.drawLine(x, pane.top(), x, pane.bottom());
            drawLabel(painter, pane.topLeft() + QPoint(6, 6), labelA);
            drawLabel(painter, QPoint(pane.right() - 6 - fontMetrics().horizontalAdvance(secondLabel()) - 8, pane.top() + 6),
                      secondLabel());
        }
    }
    void wheelEvent(QWheelEvent* e) override {
        // Zoom about the point under the cursor: it stays where it is.
        view.zoomAbout(paneAt(e->position().toPoint()), e->position(), ViewTransform::wheelFactor(e->angleDelta().y()));
        update();
        e->accept();
    }
    void mousePressEvent(QMouseEvent* e) override {
        m_dragFrom = e->position();
        m_moved = false;
    }
    void mouseMoveEvent(QMouseEvent* e) override {
        if (!(e->buttons() & Qt::LeftButton)) return;
        const QPointF delta = e->position() - m_dragFrom;
        if (delta.manhattanLength() > 2) m_moved = true;
        view.panBy(delta);
        m_dragFrom = e->position();
        update();
    }
    void mouseReleaseEvent(QMouseEvent*) override {
        if (!m_moved && mode == CompareView::Mode::Blink && onToggle) onToggle();
    }
    void keyPressEvent(QKeyEvent* e) override {
        if (e->key() == Qt::Key_Space && mode == CompareView::Mode::Blink && onToggle) onToggle();
        else QWidget::keyPressEvent(e);
    }
    void resizeEvent(QResizeEvent*) override {
        if (!m_userZoomed) fit();
    }

public:
    bool m_userZoomed = false;

private:
    QRect paneAt(QPoint p) const {
        for (const QRect& r : panes())
            if (r.contains(p)) return r;
        return panes().front();
    }
    void drawImage(QPainter& painter, const QRect& pane, const QImage& img, const QString& label) {
        if (img.isNull()) return;
        painter.save();
        painter.setClipRect(pane, Qt::IntersectClip);
        painter.drawImage(view.imageRect(pane, img.size()), img);
        painter.restore();
        if (!label.isEmpty()) drawLabel(painter, pane.topLeft() + QPoint(6, 6), label);
    }
    void drawLabel(QPainter& painter, QPoint at, const QString& text) {
        const QRect box(at, QSize(fontMetrics().horizontalAdvance(text) + 8, fontMetrics().height() + 4));
        painter.fillRect(box, QColor(0, 0, 0, 160));
        painter.setPen(Qt::white);
        painter.drawText(box, Qt::AlignCenter, text);
    }

    QPointF m_dragFrom;
    bool m_moved = false;
};

namespace {

QString number(double v, int decimals) { return QString::number(v, 'f', decimals); }

} // namespace

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
    m_canvas = new CompareCanvas(this);
    m_canvas->onToggle = [this] { toggleBlink(); };

    auto* modeBar = new QHBoxLayout;
    m_modes = new QButtonGroup(this);
    const std::pair<Mode, const char*> modes[] = {{Mode::SideBySide, "Side by side"}, {Mode::Blink, "Blink"}, {Mode::Swipe, "Swipe"}};
    for (const auto& [mode, text] : modes) {
        auto* b = new QPushButton(tr(text), this);
        b->setCheckable(true);
        b->setObjectName(QString("mode") + QString(text).remove(' '));
        m_modes->addButton(b, int(mode));
        modeBar->addWidget(b);
    }
    m_modes->button(int(Mode::SideBySide))->setChecked(true);
    connect(m_modes, &QButtonGroup::idClicked, this, [this](int id) { setMode(Mode(id)); });
    m_heatmapBox = new QCheckBox(tr("Difference heatmap"), this);
    m_heatmapBox->setToolTip(tr("Show where A and B differ in B's place (black: equal; brightest: the largest "
                                "difference in this pair)"));
    connect(m_heatmapBox, &QCheckBox::toggled, this, &CompareView::setHeatmap);
    modeBar->addWidget(m_heatmapBox);
    auto* fit = new QPushButton(tr("Fit"), this);
    connect(fit, &QPushButton::clicked, this, &CompareView::fitToView);
    auto* actual = new QPushButton(tr("100%"), this);
    connect(actual, &QPushButton::clicked, this, [this] { setZoom(1.0); });
    modeBar->addWidget(fit);
    modeBar->addWidget(actual);
    modeBar->addStretch();

    m_swipeSlider = new QSlider(Qt::Horizontal, this);
    m_swipeSlider->setRange(0, 1000);
    m_swipeSlider->setValue(500);
    m_swipeSlider->setVisible(false);
    m_swipeSlider->setToolTip(tr("Swipe: A to the left of the line, B to the right"));
    connect(m_swipeSlider, &QSlider::valueChanged, this, [this](int v) {
        m_canvas->swipe = v / 1000.0;
        m_canvas->update();
    });

    m_numbers = new QLabel(this);
    m_numbers->setObjectName("compareNumbers");
    m_numbers->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_differences = new QTreeWidget(this);
    m_differences->setObjectName("compareDifferences");
    m_differences->setColumnCount(3);
    m_differences->setHeaderLabels({tr("Differs"), tr("A"), tr("B")});
    m_differences->setRootIsDecorated(false);
    m_differences->header()->setSectionResizeMode(QHeaderView::ResizeToContents);

    m_blinkTimer = new QTimer(this);
    m_blinkTimer->setInterval(600);
    connect(m_blinkTimer, &QTimer::timeout, this, &CompareView::toggleBlink);

    auto* imageSide = new QWidget(this);
    auto* imageLayout = new QVBoxLayout(imageSide);
    imageLayout->setContentsMargins(0, 0, 0, 0);
    imageLayout->addLayout(modeBar);
    imageLayout->addWidget(m_canvas, 1);
    imageLayout->addWidget(m_swipeSlider);
    imageLayout->addWidget(m_numbers);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(imageSide);
    split->addWidget(m_differences);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(split);
    updateMetricsLabel();
    updateDifferences();
}

void CompareView::setImages(const api::Image& a, const api::Image& b, const QString& labelA, const QString& labelB) {
    m_canvas->a = toQImage(a);
    m_canvas->b = toQImage(b);
    m_canvas->labelA = labelA;
    m_canvas->labelB = labelB;
    m_metrics = imaging::compareImages(a, b);
    m_canvas->heat = m_metrics->pixels.sameSize ? toQImage(imaging::differenceHeatmap(a, b)) : QImage();
    m_heatmapBox->setEnabled(m_metrics->pixels.sameSize);
    m_haveSettings = m_haveEnvironment = false;
    m_settingsDiff.clear();
    m_environmentDiff.clear();
    m_canvas->m_userZoomed = false;
    m_canvas->fit();
    updateMetricsLabel();
    updateDifferences();
}

void CompareView::setSettings(const api::GenerationSettings& a, const api::GenerationSettings& b) {
    m_settingsDiff = compare::diffSettings(a, b);
    m_haveSettings = true;
    updateDifferences();
}

void CompareView::setEnvironments(const api::Environment& a, const api::Environment& b) {
    m_environmentDiff = compare::diffEnvironment(a, b);
    m_haveEnvironment = true;
    updateDifferences();
}

void CompareView::setResults(const api::GenerationResult& a, int indexA, const api::GenerationResult& b, int indexB) {
    const auto image = [](const api::GenerationResult& r, int i) {
        return i >= 0 && size_t(i) < r.images.size() ? r.images[size_t(i)] : api::Image{};
    };
    const auto label = [](const api::GenerationResult& r, int i, const char* name) {
        return QString("%1 \u00b7 seed %2").arg(name).arg(api::imageSeeds(r.settings, i).seed);
    };
    setImages(image(a, indexA), image(b, indexB), label(a, indexA, "A"), label(b, indexB, "B"));
    // The seed each image was made with, not the batch's first one.
    setSettings(api::fromImage(a.settings, std::max(0, indexA)), api::fromImage(b.settings, std::max(0, indexB)));
    setEnvironments(a.environment, b.environment);
}

void CompareView::setMode(Mode mode) {
    m_mode = mode;
    m_canvas->mode = mode;
    if (auto* b = m_modes->button(int(mode))) b->setChecked(true);
    m_swipeSlider->setVisible(mode == Mode::Swipe);
    if (mode == Mode::Blink) m_blinkTimer->start();
    else m_blinkTimer->stop();
    m_canvas->blinkB = false;
    if (!m_canvas->m_userZoomed) m_canvas->fit();
    m_canvas->update();
    emit modeChanged(mode);
}

void CompareView::setHeatmap(bool on) {
    m_heatmap = on && !m_canvas->heat.isNull();
    m_canvas->heatmap = m_heatmap;
    if (m_heatmapBox->isChecked() != m_heatmap) m_heatmapBox->setChecked(m_heatmap);
    m_canvas->update();
}

double CompareView::zoom() const { return m_canvas->view.zoom; }
QPointF CompareView::pan() const { return m_canvas->view.center; }

void CompareView::setZoom(double zoom) {
    m_canvas->view.zoom = std::clamp(zoom, ViewTransform::kMinZoom, ViewTransform::kMaxZoom);
    m_canvas->m_userZoomed = true;
    m_canvas->update();
}

void CompareView::setPan(QPointF imagePoint) {
    m_canvas->view.center = imagePoint;
    m_canvas->m_userZoomed = true;
    m_canvas->update();
}

void CompareView::fitToView() {
    m_canvas->m_userZoomed = false;
    m_canvas->fit();
}

double CompareView::swipePosition() const { return m_canvas->swipe; }
void CompareView::setSwipePosition(double position) { m_swipeSlider->setValue(int(std::lround(std::clamp(position, 0.0, 1.0) * 1000))); }
bool CompareView::blinkShowsB() const { return m_canvas->blinkB; }

void CompareView::setBlinkInterval(int ms) {
    if (ms <= 0) {
        m_blinkTimer->stop();
        m_blinkTimer->setInterval(0);
        return;
    }
    m_blinkTimer->setInterval(ms);
    if (m_mode == Mode::Blink) m_blinkTimer->start();
}

void CompareView::toggleBlink() {
    if (m_mode != Mode::Blink) return;
    m_canvas->blinkB = !m_canvas->blinkB;
    m_canvas->update();
}

QString CompareView::metricsText() const { return m_numbers->text(); }

void CompareView::updateMetricsLabel() {
    if (!m_metrics) {
        m_numbers->setText(tr("No images to compare"));
        return;
    }
    const auto& p = m_metrics->pixels;
    if (!p.sameSize) {
        m_numbers->setText(tr("Sizes differ (%1×%2 vs %3×%4): no pixel metrics")
                               .arg(m_canvas->a.width()).arg(m_canvas->a.height()).arg(m_canvas->b.width()).arg(m_canvas->b.height()));
        return;
    }
    if (p.maxAbs == 0) {
        m_numbers->setText(tr("Identical pixels (max |diff| 0, PSNR ∞, SSIM 1)"));
        return;
    }
    const QString ssim = std::isnan(m_metrics->ssim) ? tr("n/a (smaller than 11×11)") : number(m_metrics->ssim, 4);
    m_numbers->setText(tr("max |diff| %1 · mean |diff| %2 · PSNR %3 dB · SSIM %4 · %5 of %6 pixels differ")
                           .arg(p.maxAbs)
                           .arg(number(p.meanAbs, 2))
                           .arg(number(p.psnr, 2))
                           .arg(ssim)
                           .arg(p.differingPixels)
                           .arg(p.totalPixels));
}

QStringList CompareView::differenceLines() const {
    QStringList lines;
    for (const auto& d : m_settingsDiff)
        lines << QString::fromStdString(d.field + ": " + d.a + " \u2192 " + d.b);
    for (const auto& d : m_environmentDiff)
        lines << QString::fromStdString("environment " + d.field + ": " + d.a + " \u2192 " + d.b);
    return lines;
}

void CompareView::updateDifferences() {
    m_differences->clear();
    const auto add = [this](const QString& field, const QString& a, const QString& b) {
        auto* item = new QTreeWidgetItem(m_differences, {field, a, b});
        item->setToolTip(1, a);
        item->setToolTip(2, b);
    };
    if (!m_haveSettings) add(tr("(settings unknown)"), QString(), QString());
    else if (m_settingsDiff.empty()) add(tr("(same settings)"), QString(), QString());
    for (const auto& d : m_settingsDiff)
        add(QString::fromStdString(d.field), QString::fromStdString(d.a), QString::fromStdString(d.b));
    for (const auto& d : m_environmentDiff)
        add(tr("environment: %1").arg(QString::fromStdString(d.field)), QString::fromStdString(d.a), QString::fromStdString(d.b));
    if (m_haveEnvironment && m_environmentDiff.empty()) add(tr("(same environment)"), QString(), QString());
}

} // namespace dd::ui
