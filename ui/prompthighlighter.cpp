#include "ui/prompthighlighter.h"

#include <QRegularExpression>

#include <algorithm>

namespace dd::ui {
namespace {

// Block state packs the bracket depths open at the end of a line, so emphasis may span lines.
int packState(int round, int square) { return (std::min(round, 255) << 8) | std::min(square, 255); }

// The positions of the square brackets that edit the prompt ([from:to:when], [a|b]) rather than weaken it: their
// content has a ':' or '|' outside any inner bracket. Within this line.
QVector<bool> editBrackets(const QString& text) {
    QVector<bool> edit(text.size(), false);
    QVector<int> open;         // the '[' still open
    QVector<bool> separated;   // whether each has a ':' or '|' at its own level
    int round = 0;
    for (int i = 0; i < text.size(); ++i) {
        const QChar c = text[i];
        if (c == '\\') {
            ++i;
        } else if (c == '[') {
            open << i, separated << false;
        } else if (c == '(') {
            ++round;
        } else if (c == ')') {
            round = std::max(0, round - 1);
        } else if ((c == ':' || c == '|') && !open.isEmpty() && round == 0) {
            separated.last() = true;
        } else if (c == ']' && !open.isEmpty()) {
            if (separated.last()) edit[open.last()] = edit[i] = true;
            open.removeLast(), separated.removeLast();
        }
    }
    return edit;
}

QColor emphasisColour(int round, int square) {
    const int level = round - square;
    if (level > 0) return QColor::fromHsv(20, std::min(90 + 50 * level, 255), 200);   // warmer = stronger
    if (level < 0) return QColor::fromHsv(210, std::min(90 - 50 * level, 255), 200);  // cooler = weaker
    return {};
}

} // namespace

PromptHighlighter::PromptHighlighter(QTextDocument* document) : QSyntaxHighlighter(document) {}

void PromptHighlighter::highlightBlock(const QString& text) {
    const int prev = previousBlockState();
    int round = prev > 0 ? prev >> 8 : 0, square = prev > 0 ? prev & 0xff : 0;

    QTextCharFormat bracket;
    bracket.setFontWeight(QFont::Bold);
    QTextCharFormat weight;
    weight.setForeground(QColor(0x2a, 0x7a, 0x2a));
    weight.setFontWeight(QFont::Bold);
    QTextCharFormat escape;
    escape.setForeground(Qt::gray);
    QTextCharFormat unmatched;
    unmatched.setUnderlineStyle(QTextCharFormat::WaveUnderline);
    unmatched.setUnderlineColor(Qt::red);
    unmatched.setForeground(Qt::red);
    QTextCharFormat breakFormat;
    breakFormat.setFontWeight(QFont::Bold);
    breakFormat.setForeground(QColor(0x80, 0x30, 0xa0));

    static const QRegularExpression weightRe(QStringLiteral(R"(:\s*[+-]?(\d+\.?\d*|\.\d+)\s*(?=\)))"));
    static const QRegularExpression breakRe(QStringLiteral(R"(\b(BREAK|AND)\b)"));  // a chunk break; composable parts
    // A1111 extra networks (re_extra_net): <lora:name:0.8> is cut out of the text and applies a LoRA.
    static const QRegularExpression networkRe(QStringLiteral(R"(<(\w+):([^>]+)>)"));
    QTextCharFormat network;
    network.setForeground(QColor(0x00, 0x70, 0x80));
    network.setFontItalic(true);

    // Prompt editing: its brackets, separators and switch step in one colour, its brackets not a weakening.
    QTextCharFormat editing;
    editing.setFontWeight(QFont::Bold);
    editing.setForeground(QColor(0xb0, 0x60, 0x00));
    static const QRegularExpression whenRe(QStringLiteral(R"(:\s*[+-]?(\d+\.?\d*|\.\d+)\s*(?=\]))"));
    const QVector<bool> edit = editBrackets(text);
    QVector<int> openEdits;  // the square depth at each open edit, so only its own separators are coloured
    for (int i = 0; i < text.size(); ++i) {
        const QChar c = text[i];
        if (edit[i]) {
            setFormat(i, 1, editing);
            if (c == '[') openEdits << square;
            else if (!openEdits.isEmpty()) openEdits.removeLast();
            continue;
        }
        if ((c == ':' || c == '|') && !openEdits.isEmpty() && openEdits.last() == square && round == 0) {
            const auto m = whenRe.match(text, i, QRegularExpression::NormalMatch, QRegularExpression::AnchorAtOffsetMatchOption);
            const int length = c == ':' && m.hasMatch() ? int(m.capturedLength()) : 1;
            setFormat(i, length, editing);
            i += length - 1;
            continue;
        }
        if (c == '\\' && i + 1 < text.size()) {
            setFormat(i, 2, escape);
            ++i;
            continue;
        }
        const QColor tint = emphasisColour(round, square);
        if (c == '(' || c == '[') {
            (c == '(' ? round : square)++;
            QTextCharFormat f = bracket;
            f.setForeground(emphasisColour(round, square));
            setFormat(i, 1, f);
        } else if (c == ')' || c == ']') {
            int& depth = c == ')' ? round : square;
            if (depth == 0) {
                setFormat(i, 1, unmatched);
            } else {
                QTextCharFormat f = bracket;
                f.setForeground(tint);
                setFormat(i, 1, f);
                --depth;
            }
        } else if (c == ':' && round > 0) {
            const auto m = weightRe.match(text, i, QRegularExpression::NormalMatch, QRegularExpression::AnchorAtOffsetMatchOption);
            if (m.hasMatch()) {
                setFormat(i, int(m.capturedLength()), weight);
                i += int(m.capturedLength()) - 1;
            }
        } else if (tint.isValid()) {
            QTextCharFormat f;
            f.setForeground(tint);
            setFormat(i, 1, f);
        }
    }
    for (auto it = breakRe.globalMatch(text); it.hasNext();) {
        const auto m = it.next();
        setFormat(int(m.capturedStart()), int(m.capturedLength()), breakFormat);
    }
    for (auto it = networkRe.globalMatch(text); it.hasNext();) {
        const auto m = it.next();
        setFormat(int(m.capturedStart()), int(m.capturedLength()), network);
    }
    setCurrentBlockState(packState(round, square));
}

} // namespace dd::ui
