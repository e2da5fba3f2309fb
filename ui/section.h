#pragma once
// A part of the settings column that folds away (Refiner, ControlNet): a header — ▸ or ▾, the title and, when
// folded, a summary of what is set ("off", "sd_xl_refiner at 0.80") — over its content. What every run needs
// stays in the open; what few runs need costs one line until it is wanted.
#include <QString>
#include <QWidget>

class QToolButton;

namespace dd::ui {

class Section : public QWidget {
    Q_OBJECT
public:
    Section(const QString& title, QWidget* content, QWidget* parent = nullptr);
    bool isExpanded() const;
    void setExpanded(bool expanded);
    void setSummary(const QString& summary);  // shown after the title while folded
    QWidget* content() const { return m_content; }

signals:
    void expandedChanged(bool expanded);

private:
    void updateHeader();

    QString m_title, m_summary;
    QToolButton* m_header;
    QWidget* m_content;
};

} // namespace dd::ui
