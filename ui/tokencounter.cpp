#include "ui/tokencounter.h"

#include "core/resources.h"
#include "core/text/prompt_parser.h"

#include <QObject>
#include <QStringList>

#include <memory>
#include <mutex>

namespace dd::ui {
namespace {

const text::ClipTokenizer* bundledTokenizer() {
    static std::once_flag once;
    static std::unique_ptr<text::ClipTokenizer> tokenizer;
    std::call_once(once, [] {
        try {
            tokenizer = std::make_unique<text::ClipTokenizer>(bundledClipTokenizer());
        } catch (const std::exception&) {
            // No vocabulary next to the app: the counter says so instead of counting.
        }
    });
    return tokenizer.get();
}

} // namespace

TokenCount countTokens(const QString& prompt) {
    TokenCount count;
    const auto* tokenizer = bundledTokenizer();
    if (!tokenizer) return count;
    count.available = true;
    try {
        const auto tokenized = text::tokenizePrompt(*tokenizer, prompt.toStdString());
        count.total = tokenized.tokenCount;
        count.target = text::targetTokenCount(tokenized.tokenCount);
        for (const auto& c : tokenized.chunks) count.chunks << c.contentTokens;
    } catch (const std::exception& e) {
        count.error = QString::fromStdString(e.what());
    }
    return count;
}

QString tokenCountLabel(const TokenCount& count) {
    if (!count.available) return QObject::tr("token counter unavailable (CLIP vocabulary not found)");
    if (!count.error.isEmpty()) return count.error;
    QString label = QStringLiteral("%1/%2").arg(count.total).arg(count.target);
    if (count.chunks.size() > 1) {
        QStringList parts;
        for (int n : count.chunks) parts << QString::number(n);
        label += QStringLiteral(" (") + parts.join(QStringLiteral(" + ")) + ')';
    }
    return label;
}

} // namespace dd::ui
