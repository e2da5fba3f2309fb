#include "ui/tokencounter.h"

#include "core/resources.h"
#include "core/text/prompt_parser.h"
#include "core/text/prompt_schedule.h"

#include <QObject>
#include <QStringList>

#include <memory>
#include <mutex>
#include <optional>
#include <set>

namespace dd::ui {
namespace {

// Steps enough for every switch of an edited prompt to show (A1111's slider ends at 150).
constexpr int kCountedSteps = 150;

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

TokenCount countTokens(const QString& prompt, const text::EmbeddingLibrary* embeddings) {
    TokenCount count;
    const auto* tokenizer = bundledTokenizer();
    if (!tokenizer) return count;
    count.available = true;
    try {
        // An edited prompt counts as its longest text over the steps, an AND prompt as its longest part (A1111's
        // counter does the same).
        std::optional<text::EmbeddingVocabulary> vocabulary;
        text::PromptOptions options;
        if (embeddings && !embeddings->files.empty()) options.embeddings = &vocabulary.emplace(*tokenizer, *embeddings, 0, 0);
        std::set<std::string> texts;
        for (const auto& part : text::splitAnd(prompt.toStdString()))
            for (const auto& stretch : text::promptSchedule(part.text, kCountedSteps)) texts.insert(stretch.text);
        for (const auto& t : texts) {
            const auto tokenized = text::tokenizePrompt(*tokenizer, t, options);
            for (const auto& name : tokenized.embeddingsUsed)
                if (!count.embeddings.contains(QString::fromStdString(name))) count.embeddings << QString::fromStdString(name);
            if (tokenized.tokenCount < count.total) continue;
            count.total = tokenized.tokenCount;
            count.target = text::targetTokenCount(tokenized.tokenCount);
            count.chunks.clear();
            for (const auto& c : tokenized.chunks) count.chunks << c.contentTokens;
        }
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
    if (!count.embeddings.isEmpty()) label += QStringLiteral(" · ") + count.embeddings.join(QStringLiteral(", "));
    return label;
}

} // namespace dd::ui
