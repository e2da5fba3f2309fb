#include "ui/pricing.h"

#include <QSettings>

#include <algorithm>
#include <cmath>

namespace dd::ui {

double PriceProfile::usdPerSecond() const {
    if (!enabled) return 0;
    if (mode == Mode::Cloud) return usdPerHour / 3600.0;
    return watts / 1000.0 * usdPerKwh / 3600.0;
}

QString PriceProfile::describe() const {
    if (mode == Mode::Cloud) return QObject::tr("cloud %1 USD/h").arg(usdPerHour, 0, 'f', 2);
    return QObject::tr("local %1 W × %2 USD/kWh").arg(watts, 0, 'f', 0).arg(usdPerKwh, 0, 'f', 2);
}

PriceProfile PriceProfile::load() {
    QSettings s;
    PriceProfile p;
    p.enabled = s.value("price/enabled", false).toBool();
    p.mode = s.value("price/mode", "cloud").toString() == QLatin1String("local") ? Mode::Local : Mode::Cloud;
    p.usdPerHour = s.value("price/usdPerHour", p.usdPerHour).toDouble();
    p.watts = s.value("price/watts", p.watts).toDouble();
    p.usdPerKwh = s.value("price/usdPerKwh", p.usdPerKwh).toDouble();
    return p;
}

void PriceProfile::save() const {
    QSettings s;
    s.setValue("price/enabled", enabled);
    s.setValue("price/mode", mode == Mode::Local ? "local" : "cloud");
    s.setValue("price/usdPerHour", usdPerHour);
    s.setValue("price/watts", watts);
    s.setValue("price/usdPerKwh", usdPerKwh);
}

// Two significant digits, however small: a cent fraction is still worth reading.
QString formatUsd(double usd) {
    if (usd <= 0) return QStringLiteral("0 USD");
    const int decimals = std::clamp(int(std::ceil(-std::log10(usd))) + 1, 2, 8);
    return QString::number(usd, 'f', decimals) + QStringLiteral(" USD");
}

} // namespace dd::ui
