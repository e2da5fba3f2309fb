#pragma once
// Colours A1111 prompt syntax as it is typed: (emphasis), [de-emphasis], (word:1.3) weights, BREAK and AND,
// \( escapes, brackets that close nothing, extra-network tags such as <lora:name:0.8>, and prompt editing
// ([from:to:when], [a|b]: its brackets, separators and switch step in one colour, not a weakening).
#include <QSyntaxHighlighter>

namespace dd::ui {

class PromptHighlighter : public QSyntaxHighlighter {
    Q_OBJECT
public:
    explicit PromptHighlighter(QTextDocument* document);

protected:
    void highlightBlock(const QString& text) override;
};

} // namespace dd::ui
