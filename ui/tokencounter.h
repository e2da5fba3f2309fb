#pragma once
// A1111's token counter for a prompt: tokens per 75-token chunk, with the bundled CLIP vocabulary.
#include <QString>
#include <QVector>

namespace dd::ui {

struct TokenCount {
    bool available = false;  // the vocabulary was found
    QString error;           // the prompt does not parse (A1111 rejects it too)
    int total = 0;           // A1111's count
    int target = 75;         // A1111's denominator: 75 per chunk
    QVector<int> chunks;     // content tokens per chunk
};

// Thread-safe; the tokenizer is read once, on first use.
TokenCount countTokens(const QString& prompt);
// "12/75", "80/150 (75 + 5)", or the reason there is no count.
QString tokenCountLabel(const TokenCount& count);

} // namespace dd::ui
