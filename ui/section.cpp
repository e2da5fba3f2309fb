#include "ui/section.h"

#include <QToolButton>
#include <QVBoxLayout>

namespace dd::ui {

Section::Section(const QString& title, QWidget* content, QWidget* parent)
    : QWidget(parent), m_title(title), m_header(new QToolButton(this)), m_content(content) {
    m_header->setObjectName(content->objectName() + QStringLiteral("Section"));
    m_header->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_header->setAutoRaise(true);
    m_header->setCheckable(true);
    m_header->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    connect(m_header, &QToolButton::toggled, this, &Section::setExpanded);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(m_header);
    layout->addWidget(m_content);
    m_content->setVisible(false);
    updateHeader();
}

bool Section::isExpanded() const { return m_header->isChecked(); }

void Section::setExpanded(bool expanded) {
    if (m_header->isChecked() != expanded) m_header->setChecked(expanded);  // toggled brings us back here
    if (m_content->isVisibleTo(this) == expanded) return;
    m_content->setVisible(expanded);
    updateHeader();
    emit expandedChanged(expanded);
}

void Section::setSummary(const QString& summary) {
    m_summary = summary;
    updateHeader();
}

void Section::updateHeader() {
    m_header->setArrowType(isExpanded() ? Qt::DownArrow : Qt::RightArrow);
    m_header->setText(isExpanded() || m_summary.isEmpty() ? m_title : QStringLiteral("%1 · %2").arg(m_title, m_summary));
}

} // namespace dd::ui
