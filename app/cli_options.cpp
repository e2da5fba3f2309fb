#include "app/cli_options.h"

#include <stdexcept>

namespace dd::cli {
namespace {

constexpr std::size_t kHelpColumn = 30, kWidth = 110;

std::string joined(const std::vector<std::string>& words, const char* separator) {
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : separator) + w;
    return out;
}

// "  --flag VALUE    help", the help wrapped at word boundaries to kWidth and indented to kHelpColumn.
std::string line(const std::string& left, const std::string& help) {
    std::string out = "  " + left;
    out += out.size() + 2 > kHelpColumn ? "\n" + std::string(kHelpColumn, ' ') : std::string(kHelpColumn - out.size(), ' ');
    std::size_t column = kHelpColumn;
    std::size_t at = 0;
    while (at < help.size()) {
        std::size_t end = help.find(' ', at);
        if (end == std::string::npos) end = help.size();
        const std::string word = help.substr(at, end - at);
        if (column > kHelpColumn && column + 1 + word.size() > kWidth) {
            out += "\n" + std::string(kHelpColumn, ' ');
            column = kHelpColumn;
        } else if (column > kHelpColumn) {
            out += ' ';
            ++column;
        }
        out += word;
        column += word.size();
        at = end + 1;
    }
    return out + "\n";
}

} // namespace

OptionTable::OptionTable(std::string command, std::string synopsis, std::string summary)
    : m_command(std::move(command)), m_synopsis(std::move(synopsis)), m_summary(std::move(summary)) {}

OptionTable& OptionTable::section(std::string heading) {
    m_section = std::move(heading);
    return *this;
}

OptionTable& OptionTable::flag(std::string flag, std::string help, std::function<void()> apply) {
    m_options.push_back({std::move(flag), {}, std::move(help), {}, Complete::Nothing,
                         [apply = std::move(apply)](const std::string&) { apply(); }, false, false, m_section});
    return *this;
}

OptionTable& OptionTable::value(std::string flag, std::string value, std::string help,
                                std::function<void(const std::string&)> apply, Complete complete) {
    m_options.push_back({std::move(flag), std::move(value), std::move(help), {}, complete, std::move(apply), false, false, m_section});
    return *this;
}

OptionTable& OptionTable::choice(std::string flag, std::vector<std::string> choices, std::string help,
                                 std::function<void(const std::string&)> apply) {
    std::string value = joined(choices, "|");
    if (value.size() > 26) {  // a long list goes on the help line, not into the option column
        help += " (" + joined(choices, ", ") + ")";
        value = "NAME";
    }
    m_options.push_back({std::move(flag), std::move(value), std::move(help), std::move(choices), Complete::Nothing,
                         std::move(apply), false, false, m_section});
    return *this;
}

OptionTable& OptionTable::positional(std::string name, std::string help, std::function<void(const std::string&)> apply,
                                     Complete complete) {
    m_options.push_back({std::move(name), {}, std::move(help), {}, complete, std::move(apply), true, false, ""});
    return *this;
}

OptionTable& OptionTable::hidden(std::string flag, std::function<void(const std::string&)> apply) {
    m_options.push_back({std::move(flag), "VALUE", {}, {}, Complete::Nothing, std::move(apply), false, true, ""});
    return *this;
}

const Option* OptionTable::find(const std::string& flag) const {
    for (const auto& o : m_options)
        if (!o.positional && o.flag == flag) return &o;
    return nullptr;
}

Parsed OptionTable::parse(const std::vector<std::string>& args) const {
    std::vector<const Option*> positionals;
    for (const auto& o : m_options)
        if (o.positional) positionals.push_back(&o);
    std::size_t nextPositional = 0;
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--help" || arg == "-h") return Parsed::Help;
        if (arg == "--version") return Parsed::Version;
        if (arg.rfind("--", 0) != 0) {
            if (nextPositional == positionals.size())
                throw std::invalid_argument(positionals.empty() ? m_command + " takes no argument '" + arg + "'"
                                                                : m_command + " takes one " + positionals.back()->flag +
                                                                      " (got another: '" + arg + "')");
            positionals[nextPositional++]->apply(arg);
            continue;
        }
        const Option* o = find(arg);
        if (!o) throw std::invalid_argument("unknown option '" + arg + "' for " + m_command);
        if (o->value.empty()) {
            o->apply({});
            continue;
        }
        if (i + 1 >= args.size()) throw std::invalid_argument(arg + " needs a value (" + o->value + ")");
        o->apply(args[++i]);
    }
    if (nextPositional < positionals.size())
        throw std::invalid_argument(m_command + " needs " + positionals[nextPositional]->flag + " (" +
                                    positionals[nextPositional]->help + ")");
    return Parsed::Run;
}

std::string OptionTable::usage() const {
    std::string out = "usage: diffusiondesk-cli " + m_command + (m_synopsis.empty() ? "" : " " + m_synopsis) + "\n" +
                      m_summary + "\n";
    bool anyPositional = false;
    for (const auto& o : m_options)
        if (o.positional) {
            if (!anyPositional) out += "\narguments:\n";
            anyPositional = true;
            out += line(o.flag, o.help);
        }
    std::string section = "\001";  // no heading printed yet
    for (const auto& o : m_options) {
        if (o.positional || o.hidden) continue;
        if (o.section != section) {
            section = o.section;
            out += "\n" + (section.empty() ? std::string("options") : section) + ":\n";
        }
        out += line(o.flag + (o.value.empty() ? "" : " " + o.value), o.help);
    }
    out += line("--help, -h", "this text") + line("--version", "the program's version");
    return out;
}

double toNumber(const std::string& flag, const std::string& text) {
    try {
        std::size_t used = 0;
        const double d = std::stod(text, &used);
        if (used == text.size()) return d;
    } catch (const std::exception&) {
    }
    throw std::invalid_argument(flag + " expects a number, got '" + text + "'");
}

int toInt(const std::string& flag, const std::string& text) {
    try {
        std::size_t used = 0;
        const int n = std::stoi(text, &used);
        if (used == text.size()) return n;
    } catch (const std::exception&) {
    }
    throw std::invalid_argument(flag + " expects a whole number, got '" + text + "'");
}

int toPositiveInt(const std::string& flag, const std::string& text) {
    const int n = toInt(flag, text);
    if (n <= 0) throw std::invalid_argument(flag + " expects a positive number, got '" + text + "'");
    return n;
}

} // namespace dd::cli
