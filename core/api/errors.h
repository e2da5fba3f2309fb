#pragma once
// The errors a run ends with that callers tell apart, and the one wording a person reads for any failure (the
// window, the CLI and the batch journal all show failureMessage).
#include <exception>
#include <stdexcept>
#include <string>

namespace dd::api {

// The run stopped because its CancelToken was set.
struct Cancelled : std::exception {
    const char* what() const noexcept override { return "generation cancelled"; }
};

// The run needed more memory than there was, after every fallback its plan allows (the message says what was
// tried and what the stage needs).
class OutOfMemory : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// What to tell a person: the error's own message (a model file's names the file), with advice for memory.
std::string failureMessage(const std::exception& e);

} // namespace dd::api
