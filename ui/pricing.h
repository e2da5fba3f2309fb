#pragma once
// What an image costs: a cloud GPU's hourly price, or a local GPU's watts at an electricity price.
// Defaults are seed 000's examples (A100 at 2 USD/hour; RTX 4070 at 200 W and 0.20 USD/kWh).
#include <QString>

namespace dd::ui {

struct PriceProfile {
    enum class Mode { Cloud, Local };
    bool enabled = false;      // opt-in: off, no cost is shown or written into sidecars
    Mode mode = Mode::Cloud;
    double usdPerHour = 2.0;   // cloud: the instance's price
    double watts = 200;        // local: the GPU's draw while generating
    double usdPerKwh = 0.20;   // local: electricity

    double usdPerSecond() const;  // 0 when not enabled
    double costUsd(double seconds) const { return seconds * usdPerSecond(); }
    QString describe() const;  // "cloud 2.00 USD/h", "local 200 W × 0.20 USD/kWh"

    static PriceProfile load();  // QSettings "price/*"
    void save() const;
};

QString formatUsd(double usd);  // "0.0044 USD", "0.000012 USD"

} // namespace dd::ui
