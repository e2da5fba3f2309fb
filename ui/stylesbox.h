#pragma once
// Prompt styles in the prompt panel (docs/explore.md): A1111's styles.csv in the app's data folder, shared with the
// CLI's --style. Apply writes the chosen style into the prompt boxes, Remove takes it out again (A1111's buttons);
// the styles applied go into the run's settings. Import merges a styles.csv, Export writes one, and the prompts
// as they are can be saved as a style.
#include "core/settings/styles.h"

#include <QString>
#include <QWidget>

#include <string>
#include <vector>

class QComboBox;
class QPlainTextEdit;

namespace dd::ui {

class StylesBox : public QWidget {
    Q_OBJECT
public:
    StylesBox(QPlainTextEdit* prompt, QPlainTextEdit* negative, QWidget* parent = nullptr);
    // The library's file ("" until set: none). Reads it; a file that cannot be read is a notice, not a failure.
    void setFile(const QString& path);
    const std::vector<std::string>& applied() const { return m_applied; }
    void setApplied(std::vector<std::string> names);
    void apply(const QString& name);
    void remove(const QString& name);
    bool importFrom(const QString& path);
    bool exportTo(const QString& path);
    bool saveCurrentAs(const QString& name);
    QStringList names() const;

signals:
    void appliedChanged();
    void notice(const QString& message);

private:
    void reload();
    bool store();

    QPlainTextEdit *m_prompt, *m_negative;
    QComboBox* m_choice;
    QString m_file;
    std::vector<settings::PromptStyle> m_styles;
    std::vector<std::string> m_applied;
};

} // namespace dd::ui
