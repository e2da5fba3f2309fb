// MainWindow: painting an inpainting mask on the canvas. "Paint mask" on the canvas bar makes the shown image the
// next run's starting image and opens a second bar: brush size and hardness, eraser, invert, clear, undo, redo,
// load a mask file. Every edit saves the mask (named by its content, in the cache folder) into the "Start from an
// image" section, where Generate takes it like a mask file; the result keeps a copy beside it.
// "Extend" on the same bar outpaints instead: the canvas frames the shown image, and dragging the frame's edges sets
// the section's pixels to add on each side. The two are exclusive, as the engine makes its own mask to outpaint.
#include "core/pipeline/masked_area.h"
#include "imaging/run_images.h"
#include "ui/dialoghooks.h"
#include "ui/engineworker.h"
#include "ui/imageinputpanel.h"
#include "ui/mainwindow.h"
#include "ui/masklayer.h"
#include "ui/previewview.h"

#include <QAction>
#include <QLabel>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QToolBar>

namespace dd::ui {

QToolBar* MainWindow::buildMaskBar(QWidget* canvas) {
    auto* bar = new QToolBar(canvas);
    bar->setObjectName("maskBar");
    bar->setFloatable(false);
    bar->setMovable(false);
    bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
    auto spin = [bar](const char* name, int lo, int hi, int value, const QString& suffix, const QString& tip) {
        auto* s = new QSpinBox(bar);
        s->setObjectName(name);
        s->setRange(lo, hi);
        s->setValue(value);
        s->setSuffix(suffix);
        s->setToolTip(tip);
        return s;
    };
    bar->addWidget(new QLabel(tr(" Brush "), bar));
    m_brushSize = spin("brushSize", 1, 1024, 48, tr(" px"), tr("Brush diameter in image pixels ([ and ] on the canvas)"));
    bar->addWidget(m_brushSize);
    m_brushHardness = spin("brushHardness", 0, 100, 70, tr(" %"), tr("Hardness: 100 % a hard edge, 0 % soft from the centre"));
    bar->addWidget(m_brushHardness);
    m_eraser = bar->addAction(tr("Eraser"));
    m_eraser->setObjectName("maskEraser");
    m_eraser->setCheckable(true);
    m_eraser->setToolTip(tr("Erase the mask (the right button always erases)"));
    const auto applyBrush = [this] {
        m_preview->setBrush(m_brushSize->value() / 2.0, m_brushHardness->value() / 100.0, m_eraser->isChecked());
    };
    connect(m_brushSize, &QSpinBox::valueChanged, this, applyBrush);
    connect(m_brushHardness, &QSpinBox::valueChanged, this, applyBrush);
    connect(m_eraser, &QAction::toggled, this, applyBrush);
    connect(m_preview, &PreviewView::brushRadiusChanged, this, [this](double r) { m_brushSize->setValue(int(std::lround(2 * r))); });
    applyBrush();
    auto edit = [this, bar](const char* name, const QString& text, const QString& tip, auto change) {
        QAction* a = bar->addAction(text, this, [this, change] {
            if (!m_maskLayer) return;
            change(*m_maskLayer);
            m_preview->maskChanged();
            saveMask();
        });
        a->setObjectName(name);
        a->setToolTip(tip);
        return a;
    };
    edit("maskInvert", tr("Invert"), tr("Repaint what is kept, keep what is repainted"), [](MaskLayer& m) { m.invert(); });
    edit("maskClear", tr("Clear"), QString(), [](MaskLayer& m) { m.clear(); });
    edit("maskUndo", tr("Undo"), tr("One stroke back"), [](MaskLayer& m) { m.undo(); });
    edit("maskRedo", tr("Redo"), QString(), [](MaskLayer& m) { m.redo(); });
    QAction* load = bar->addAction(tr("Load…"), this, [this] {
        const QString path = chooseOpenPath(this, tr("Mask image"), tr("Images (*.png *.jpg *.jpeg *.webp)"), false, "initImage");
        QImage image;
        if (path.isEmpty() || !m_maskLayer) return;
        if (!image.load(path)) {
            statusBar()->showMessage(tr("%1: cannot read as an image").arg(path), 8000);
            return;
        }
        m_maskLayer->setImage(image);
        m_preview->maskChanged();
        saveMask();
    });
    load->setObjectName("maskLoad");
    load->setToolTip(tr("A mask from a file (white repaints), scaled to the image"));
    connect(m_preview, &PreviewView::maskEdited, this, &MainWindow::saveMask);
    connect(m_imageInput, &ImageInputPanel::changed, this, &MainWindow::updateMaskedArea);
    connect(m_preview, &PreviewView::extensionEdited, m_imageInput, &ImageInputPanel::setOutpaint);
    connect(m_imageInput, &ImageInputPanel::changed, this, [this] { m_preview->setExtension(m_imageInput->outpaint()); });
    auto* hint = new QLabel(tr("  red repaints · right button erases · middle button pans"), bar);
    hint->setEnabled(false);  // greyed: a reminder, not a control
    bar->addWidget(hint);
    bar->hide();
    return bar;
}

// The shown image as the next run's starting image, for a canvas tool; false (and `tool` unchecked) when there
// is no single saved image on the canvas.
bool MainWindow::takeShownImageAsInit(QAction* tool) {
    const QString file = shownImageFile();
    if (file.isEmpty() || !m_preview->isFinal() || m_preview->currentIndex() < 0) {
        tool->setChecked(false);
        statusBar()->showMessage(tr("Open one saved image on the canvas to %1 it").arg(tool->text().toLower()), 5000);
        return false;
    }
    if (m_imageInput->initImage() != file) m_imageInput->useImage(file);
    m_imageInput->setChecked(true);
    return true;
}

// On: the shown image becomes the starting image (its mask kept when it already was) and the canvas paints.
void MainWindow::setPaintingMask(bool on) {
    if (on && !takeShownImageAsInit(m_paintMask)) return;
    if (on) {
        m_extendCanvas->setChecked(false);
        m_imageInput->setOutpaint({});
        const QString file = shownImageFile();
        const QSize size = m_preview->image().size();
        if (!m_maskLayer || m_maskFor != file || m_maskLayer->size() != size) {
            m_maskLayer = std::make_unique<MaskLayer>(size);
            m_maskFor = file;
        }
        saveMask();  // a mask painted before, set aside by Extend, comes back
    }
    m_preview->setMaskLayer(on ? m_maskLayer.get() : nullptr);
    m_maskBar->setVisible(on);
    updateMaskedArea();
    if (on) m_preview->setFocus();
}

// On: the canvas shows the outpainting's frame around the shown image; its edges set the section's pixels.
void MainWindow::setExtendingCanvas(bool on) {
    if (on && !takeShownImageAsInit(m_extendCanvas)) return;
    if (on) {
        m_paintMask->setChecked(false);
        m_imageInput->setMask({});
        m_preview->setExtension(m_imageInput->outpaint());
        statusBar()->showMessage(tr("Drag an edge of the picture outwards to add pixels there, then Generate"), 8000);
    }
    m_preview->setExtending(on);
    if (on) m_preview->setFocus();
}

// The box is the engine's own (the mask prepared as a run prepares it, then pipeline::maskedCropRegion), so what
// the canvas shows is what the run will repaint.
void MainWindow::updateMaskedArea() {
    // Only while painting: every edit of the image section comes here, and the window's settings are not free.
    const bool painting = m_maskLayer && m_preview->maskLayer() && !m_maskLayer->isEmpty();
    const api::GenerationSettings s = painting ? currentSettings() : api::GenerationSettings{};
    QRect box;
    if (s.inpaint.onlyMasked) {
        const api::Image mask = toApiImage(m_maskLayer->image());
        try {
            const auto prepared = imaging::prepareMask(mask, mask.width, mask.height, s.inpaint, "mask");
            const auto b = pipeline::maskedCropRegion(prepared, s.width, s.height, s.inpaint.maskedPadding);
            box = QRect(b.x0, b.y0, b.width(), b.height());
        } catch (const std::exception&) {
            // an empty mask (all erased or inverted away): no box, and Generate says why
        }
    }
    m_preview->setMaskedArea(box);
}

void MainWindow::saveMask() {
    if (!m_maskLayer) return;
    if (m_maskLayer->isEmpty()) {
        m_imageInput->setMask({});
        updateMaskedArea();
        return;
    }
    QString error;
    const QString path = m_maskLayer->save(QStandardPaths::writableLocation(QStandardPaths::CacheLocation) + "/masks", &error);
    if (path.isEmpty()) statusBar()->showMessage(tr("The mask cannot be saved: %1").arg(error), 8000);
    else m_imageInput->setMask(path);
    updateMaskedArea();
}

} // namespace dd::ui
