#pragma once
// A1111's token counter for a prompt: tokens per 75-token chunk, with the bundled CLIP vocabulary.
#include <QString>
#include <QStringList>
#include <QVector>

namespace dd::text {
struct EmbeddingLibrary;
}

namespace dd::ui {

struct TokenCount {
    bool available = false;  // the vocabulary was found
    QString error;           // the prompt does not parse (A1111 rejects it too)
    int total = 0;           // A1111's count
    int target = 75;         // A1111's denominator: 75 per chunk
    QVector<int> chunks;     // content tokens per chunk
    QStringList embeddings;  // textual inversions named (their vectors are counted as tokens)
};

// Thread-safe; the tokenizer is read once, on first use. `embeddings`: the names a prompt may use, each counted as
// its vectors (the model is not known here: every one is taken to fit).
TokenCount countTokens(const QString& prompt, const text::EmbeddingLibrary* embeddings = nullptr);
// "12/75", "80/150 (75 + 5)", "20/75 · easynegative", or the reason there is no count.
QString tokenCountLabel(const TokenCount& count);

} // namespace dd::ui
