#pragma once
// One table per CLI command names its options once: it parses the command line, prints the command's --help and
// feeds the bash completion, so usage text, parser and completion cannot drift apart.
#include <functional>
#include <string>
#include <vector>

namespace dd::cli {

enum class Complete { Nothing, File, Folder };  // what the shell offers for a value

struct Option {
    std::string flag;                   // "--steps"; for a positional argument its name ("JOBS.jsonl")
    std::string value;                  // "N", "WxH"; empty for a switch that takes no value
    std::string help;                   // one line; --help wraps nothing, so keep it short
    std::vector<std::string> choices;   // offered by the shell and listed by --help (the parser still validates)
    Complete complete = Complete::Nothing;
    std::function<void(const std::string&)> apply;  // called in command-line order, so later flags win
    bool positional = false;
    bool hidden = false;                // internal (a child process' mode): parsed, neither listed nor completed
    std::string section;                // --help heading it is listed under ("" = none)
};

// What parse() found besides the options it applied.
enum class Parsed { Run, Help, Version };

class OptionTable {
public:
    OptionTable(std::string command, std::string synopsis, std::string summary);

    // Options added after a section() are listed under its heading.
    OptionTable& section(std::string heading);
    OptionTable& flag(std::string flag, std::string help, std::function<void()> apply);
    OptionTable& value(std::string flag, std::string value, std::string help, std::function<void(const std::string&)> apply,
                       Complete complete = Complete::Nothing);
    OptionTable& choice(std::string flag, std::vector<std::string> choices, std::string help,
                        std::function<void(const std::string&)> apply);
    // Arguments that do not start with "--" go to the positionals in order; the last one may repeat if `many`.
    OptionTable& positional(std::string name, std::string help, std::function<void(const std::string&)> apply,
                            Complete complete = Complete::File);
    OptionTable& hidden(std::string flag, std::function<void(const std::string&)> apply);

    // args[0] is the command. --help / -h and --version stop parsing and are returned; every other problem throws
    // std::invalid_argument naming the option.
    Parsed parse(const std::vector<std::string>& args) const;
    std::string usage() const;

    const std::string& command() const { return m_command; }
    const std::string& summary() const { return m_summary; }
    const std::vector<Option>& options() const { return m_options; }

private:
    const Option* find(const std::string& flag) const;

    std::string m_command, m_synopsis, m_summary, m_section;
    std::vector<Option> m_options;
};

// Numbers on the command line: the whole text must be the number ("8x" is an error, not 8).
double toNumber(const std::string& flag, const std::string& text);
int toInt(const std::string& flag, const std::string& text);
int toPositiveInt(const std::string& flag, const std::string& text);

// A command: its table binds to the command's own fields, run() uses them after the table parsed the arguments.
class Command {
public:
    virtual ~Command() = default;
    virtual OptionTable options() = 0;
    virtual int run() = 0;
};

} // namespace dd::cli
