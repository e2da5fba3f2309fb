#pragma once
// Other programs that want the CPU: `count` shell loops that spin until the object goes (the tests of how the
// engine and the window behave on a busy computer).
#include <QProcess>

#include <memory>
#include <vector>

namespace dd::test {

class BusyProcesses {
public:
    explicit BusyProcesses(int count) {
        for (int i = 0; i < count; ++i) {
            m_loops.push_back(std::make_unique<QProcess>());
            m_loops.back()->start("sh", {"-c", "while :; do :; done"});
            m_loops.back()->waitForStarted();
        }
    }
    ~BusyProcesses() {
        for (auto& p : m_loops) {
            p->kill();
            p->waitForFinished();
        }
    }
    BusyProcesses(const BusyProcesses&) = delete;
    BusyProcesses& operator=(const BusyProcesses&) = delete;

    bool running() const {
        for (const auto& p : m_loops)
            if (p->state() != QProcess::Running) return false;
        return true;
    }

private:
    std::vector<std::unique_ptr<QProcess>> m_loops;
};

} // namespace dd::test
