#include "ui/stylesbox.h"

#include "ui/dialoghooks.h"

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLineEdit>
#include <QMenu>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QToolButton>

#include <algorithm>

namespace dd::ui {

StylesBox::StylesBox(QPlainTextEdit* prompt, QPlainTextEdit* negative, QWidget* parent)
    : QWidget(parent), m_prompt(prompt), m_negative(negative) {
    setObjectName("stylesBox");
    m_choice = new QComboBox(this);
    m_choice->setObjectName("styleChoice");
    m_choice->setToolTip(tr("The styles of styles.csv (A1111's format)"));
    auto* applyButton = new QPushButton(tr("Apply"), this);
    applyButton->setObjectName("applyStyle");
    applyButton->setToolTip(tr("Write the style into the prompt and the negative prompt"));
    auto* removeButton = new QPushButton(tr("Remove"), this);
    removeButton->setObjectName("removeStyle");
    removeButton->setToolTip(tr("Take the style's text out of the prompts again"));
    auto* more = new QToolButton(this);
    more->setObjectName("stylesMenu");
    more->setText(QStringLiteral("⋯"));
    more->setPopupMode(QToolButton::InstantPopup);
    auto* menu = new QMenu(more);
    menu->addAction(tr("Save the prompts as a style…"), this, [this] {
        bool ok = false;
        const QString name = QInputDialog::getText(this, tr("New style"), tr("Name"), QLineEdit::Normal, {}, &ok);
        if (ok) saveCurrentAs(name.trimmed());
    })->setObjectName("saveStyle");
    menu->addAction(tr("Import styles.csv…"), this, [this] {
        const QString path = chooseOpenPath(this, tr("Import styles"), tr("Styles (*.csv)"), false, "styles");
        if (!path.isEmpty()) importFrom(path);
    })->setObjectName("importStyles");
    menu->addAction(tr("Export styles.csv…"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export styles"), QStringLiteral("styles.csv"), tr("Styles (*.csv)"));
        if (!path.isEmpty()) exportTo(path);
    })->setObjectName("exportStyles");
    more->setMenu(menu);
    connect(applyButton, &QPushButton::clicked, this, [this] { apply(m_choice->currentText()); });
    connect(removeButton, &QPushButton::clicked, this, [this] { remove(m_choice->currentText()); });
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(m_choice, 1);
    row->addWidget(applyButton);
    row->addWidget(removeButton);
    row->addWidget(more);
}

void StylesBox::setFile(const QString& path) {
    m_file = path;
    reload();
}

void StylesBox::reload() {
    m_styles.clear();
    try {
        if (!m_file.isEmpty()) m_styles = settings::readStylesFile(m_file.toStdString());
    } catch (const std::exception& e) {
        emit notice(QString::fromStdString(e.what()));
    }
    const QString current = m_choice->currentText();
    m_choice->clear();
    m_choice->addItems(names());
    m_choice->setCurrentText(current);
    m_choice->setPlaceholderText(m_styles.empty() ? tr("no styles yet: ⋯ imports or saves one") : QString());
}

QStringList StylesBox::names() const {
    QStringList out;
    for (const auto& s : m_styles) out << QString::fromStdString(s.name);
    return out;
}

void StylesBox::setApplied(std::vector<std::string> names) {
    m_applied = std::move(names);
    emit appliedChanged();
}

void StylesBox::apply(const QString& name) {
    const auto style = std::find_if(m_styles.begin(), m_styles.end(), [&](const auto& s) { return s.name == name.toStdString(); });
    if (style == m_styles.end()) return;
    m_prompt->setPlainText(QString::fromStdString(settings::applyStyleText(style->prompt, m_prompt->toPlainText().toStdString())));
    m_negative->setPlainText(
        QString::fromStdString(settings::applyStyleText(style->negativePrompt, m_negative->toPlainText().toStdString())));
    if (std::find(m_applied.begin(), m_applied.end(), style->name) == m_applied.end()) m_applied.push_back(style->name);
    emit appliedChanged();
}

// What the prompts no longer carry is no longer applied; a style whose text was edited away says so.
void StylesBox::remove(const QString& name) {
    const auto style = std::find_if(m_styles.begin(), m_styles.end(), [&](const auto& s) { return s.name == name.toStdString(); });
    if (style == m_styles.end()) return;
    const auto prompt = settings::removeStyleText(style->prompt, m_prompt->toPlainText().toStdString());
    const auto negative = settings::removeStyleText(style->negativePrompt, m_negative->toPlainText().toStdString());
    if (prompt) m_prompt->setPlainText(QString::fromStdString(*prompt));
    if (negative) m_negative->setPlainText(QString::fromStdString(*negative));
    if (!prompt && !negative && !(style->prompt.empty() && style->negativePrompt.empty()))
        emit notice(tr("The prompts do not carry the style %1 as it was applied: nothing removed").arg(name));
    m_applied.erase(std::remove(m_applied.begin(), m_applied.end(), style->name), m_applied.end());
    emit appliedChanged();
}

bool StylesBox::store() {
    try {
        settings::writeStylesFile(m_file.toStdString(), m_styles);
    } catch (const std::exception& e) {
        emit notice(tr("The styles cannot be saved: %1").arg(QString::fromStdString(e.what())));
        return false;
    }
    reload();
    return true;
}

bool StylesBox::importFrom(const QString& path) {
    try {
        const auto incoming = settings::readStylesFile(path.toStdString());
        m_styles = settings::mergeStyles(m_styles, incoming);
        if (!store()) return false;
        emit notice(tr("Styles imported from %1: %2").arg(path).arg(incoming.size()));
        return true;
    } catch (const std::exception& e) {
        emit notice(QString::fromStdString(e.what()));  // names the file and the line; the library is unchanged
        return false;
    }
}

bool StylesBox::exportTo(const QString& path) {
    try {
        settings::writeStylesFile(path.toStdString(), m_styles);
        emit notice(tr("Styles exported to %1: %2").arg(path).arg(m_styles.size()));
        return true;
    } catch (const std::exception& e) {
        emit notice(QString::fromStdString(e.what()));
        return false;
    }
}

bool StylesBox::saveCurrentAs(const QString& name) {
    if (name.isEmpty()) return false;
    m_styles = settings::mergeStyles(m_styles, {{name.toStdString(), m_prompt->toPlainText().toStdString(),
                                                 m_negative->toPlainText().toStdString()}});
    if (!store()) return false;
    m_choice->setCurrentText(name);
    return true;
}

} // namespace dd::ui
