#pragma once
// The one error type for problems a user can cause with a model file: the message names the file
// and says what is wrong in words a person can act on.
#include <stdexcept>
#include <string>

namespace dd::io {

class ModelFileError : public std::runtime_error {
public:
    ModelFileError(const std::string& path, const std::string& problem)
        : std::runtime_error(path.empty() ? problem : path + ": " + problem), m_path(path), m_problem(problem) {}
    const std::string& path() const { return m_path; }
    const std::string& problem() const { return m_problem; }

private:
    std::string m_path;
    std::string m_problem;
};

} // namespace dd::io
