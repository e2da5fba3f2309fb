// diffusiondesk-cli completion bash: the bash completion script, written from the commands' option tables
// (the package installs it; docs/cli.md). Values with spaces ("Euler a") are offered escaped.
#include "app/cli_commands.h"

#include "core/io/atomic_file.h"

#include <iostream>
#include <sstream>

namespace dd::cli {
namespace {

// A bash $'...' string holding the words one per line.
std::string wordList(const std::vector<std::string>& words) {
    std::string out = "$'";
    for (std::size_t i = 0; i < words.size(); ++i) {
        if (i) out += "\\n";
        for (char c : words[i]) out += c == '\'' || c == '\\' ? std::string("\\") + c : std::string(1, c);
    }
    return out + "'";
}

std::string caseLabel(const std::vector<std::string>& flags) {
    std::string out;
    for (const auto& f : flags) out += (out.empty() ? "" : "|") + f;
    return out;
}

constexpr const char* kFiles = "COMPREPLY=($(compgen -f -- \"$cur\")); compopt -o filenames 2>/dev/null";
constexpr const char* kFolders = "COMPREPLY=($(compgen -d -- \"$cur\")); compopt -o filenames 2>/dev/null";

// The `case "$prev"` and the fallback of one command.
void writeCommand(std::ostream& out, const OptionTable& t) {
    std::vector<std::string> files, folders, plain, flags;
    Complete positional = Complete::Nothing;
    bool hasPositional = false;
    for (const auto& o : t.options()) {
        if (o.hidden) continue;
        if (o.positional) {
            if (!hasPositional) positional = o.complete;
            hasPositional = true;
            continue;
        }
        flags.push_back(o.flag);
        if (o.value.empty()) continue;
        if (!o.choices.empty()) continue;  // below, one case each
        (o.complete == Complete::File ? files : o.complete == Complete::Folder ? folders : plain).push_back(o.flag);
    }
    flags.push_back("--help");
    flags.push_back("--version");
    out << "    " << t.command() << ")\n        case \"$prev\" in\n";
    if (!files.empty()) out << "        " << caseLabel(files) << ") " << kFiles << "; return ;;\n";
    if (!folders.empty()) out << "        " << caseLabel(folders) << ") " << kFolders << "; return ;;\n";
    if (!plain.empty()) out << "        " << caseLabel(plain) << ") return ;;  # a value to type\n";
    for (const auto& o : t.options())
        if (!o.hidden && !o.positional && !o.choices.empty())
            out << "        " << o.flag << ") _diffusiondesk_cli_offer " << wordList(o.choices) << "; return ;;\n";
    out << "        esac\n";
    const char* positionalReply = positional == Complete::File ? kFiles : positional == Complete::Folder ? kFolders : nullptr;
    if (hasPositional && positionalReply)
        out << "        if [[ \"$cur\" == -* ]]; then _diffusiondesk_cli_offer " << wordList(flags) << "; else " << positionalReply
            << "; fi\n";
    else
        out << "        _diffusiondesk_cli_offer " << wordList(flags) << "\n";
    out << "        ;;\n";
}

std::string bashScript() {
    std::ostringstream out;
    std::vector<std::string> names;
    for (const auto& c : commands()) names.push_back(c.name);
    names.push_back("--help");
    names.push_back("--version");
    out << "# bash completion for diffusiondesk-cli, written by `diffusiondesk-cli completion bash` from its option tables.\n"
           "_diffusiondesk_cli_offer() {  # the words of $1 (one per line) that start with the word being typed\n"
           "    local IFS=$'\\n' word typed=\"${cur//\\\\/}\"\n"
           "    COMPREPLY=()\n"
           "    for word in $1; do [[ \"$word\" == \"$typed\"* ]] && COMPREPLY+=(\"$(printf '%q' \"$word\")\"); done\n"
           "}\n"
           "_diffusiondesk_cli() {\n"
           "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
           "    COMPREPLY=()\n"
           "    if [ \"$COMP_CWORD\" -eq 1 ]; then _diffusiondesk_cli_offer "
        << wordList(names)
        << "; return; fi\n"
           "    case \"${COMP_WORDS[1]}\" in\n";
    for (const auto& c : commands()) writeCommand(out, c.make()->options());
    out << "    esac\n}\ncomplete -F _diffusiondesk_cli diffusiondesk-cli\n";
    return out.str();
}

class Completion : public Command {
public:
    OptionTable options() override {
        return OptionTable("completion", "bash [--out FILE]",
                           "The shell completion script for diffusiondesk-cli (the package installs it).\n"
                           "Try it: source <(diffusiondesk-cli completion bash)")
            .positional("SHELL", "bash (the one supported)", [this](const std::string& v) { m_shell = v; }, Complete::Nothing)
            .value("--out", "FILE", "write the script there instead of to standard output",
                   [this](const std::string& v) { m_out = v; }, Complete::File);
    }

    int run() override {
        if (m_shell != "bash") throw std::invalid_argument("completion: '" + m_shell + "' is not supported (bash is)");
        const std::string script = bashScript();
        if (m_out.empty()) std::cout << script;
        else io::writeFileAtomically(m_out, [&](std::ostream& f) { f << script; });
        return 0;
    }

private:
    std::string m_shell, m_out;
};

} // namespace

std::unique_ptr<Command> makeCompletionCommand() { return std::make_unique<Completion>(); }

} // namespace dd::cli
