#include "imaging/plot_sheet.h"

#include "imaging/png.h"

#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace dd::imaging {
namespace {

constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;

std::string ascii(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) out += c >= 0x20 ? char(c) : ' ';
        else if ((c & 0xC0) != 0x80) out += '?';  // one '?' per UTF-8 character
    }
    return out;
}

// `text` centred in `box`: the largest scale up to 1 that fits its width, else cut with "...".
void label(cv::Mat& sheet, const std::string& utf8, const cv::Rect& box) {
    std::string text = ascii(utf8);
    double scale = std::min(1.0, box.height / 40.0);
    int base = 0;
    cv::Size size = cv::getTextSize(text, kFont, scale, 1, &base);
    while (size.width > box.width - 8 && scale > 0.35) size = cv::getTextSize(text, kFont, scale *= 0.9, 1, &base);
    while (size.width > box.width - 8 && text.size() > 4) {
        text = text.substr(0, text.size() - 4) + "...";
        size = cv::getTextSize(text, kFont, scale, 1, &base);
    }
    const cv::Point at(box.x + (box.width - size.width) / 2, box.y + (box.height + size.height) / 2);
    cv::putText(sheet, text, at, kFont, scale, cv::Scalar(20, 20, 20), scale > 0.6 ? 2 : 1, cv::LINE_AA);
}

} // namespace

api::Image composeSheet(const std::vector<api::Image>& cells, const SheetLayout& layout) {
    const int cols = std::max<int>(1, int(layout.columns.size())), rows = std::max<int>(1, int(layout.rows.size()));
    if (int(cells.size()) != cols * rows)
        throw std::invalid_argument("a sheet of " + std::to_string(cols) + " x " + std::to_string(rows) + " needs as many images, not " +
                                    std::to_string(cells.size()));
    int cw = 1, ch = 1;
    for (const auto& c : cells) cw = std::max(cw, c.width), ch = std::max(ch, c.height);
    const int gap = std::max(4, cw / 64);
    const int top = (layout.columns.empty() ? 0 : std::max(28, ch / 8)) + (layout.title.empty() ? 0 : std::max(32, ch / 7));
    const int left = layout.rows.empty() ? 0 : std::max(120, cw / 2);
    cv::Mat sheet(top + rows * (ch + gap) + gap, left + cols * (cw + gap) + gap, CV_8UC3, cv::Scalar(255, 255, 255));
    if (!layout.title.empty()) label(sheet, layout.title, {0, 0, sheet.cols, std::max(32, ch / 7)});
    const int columnLabels = top - (layout.title.empty() ? 0 : std::max(32, ch / 7));
    for (int x = 0; x < int(layout.columns.size()); ++x)
        label(sheet, layout.columns[size_t(x)], {left + gap + x * (cw + gap), top - columnLabels, cw, columnLabels});
    for (int y = 0; y < int(layout.rows.size()); ++y) label(sheet, layout.rows[size_t(y)], {0, top + gap + y * (ch + gap), left, ch});
    for (int y = 0; y < rows; ++y)
        for (int x = 0; x < cols; ++x) {
            const api::Image& c = cells[size_t(y * cols + x)];
            if (c.width <= 0 || c.height <= 0) continue;  // a cell that failed stays blank
            cv::Mat rgb(c.height, c.width, CV_8UC3, const_cast<uint8_t*>(c.rgb.data()));
            const double k = std::min(double(cw) / c.width, double(ch) / c.height);
            const cv::Size fitted(std::max(1, int(c.width * k)), std::max(1, int(c.height * k)));
            cv::Mat scaled;
            cv::resize(rgb, scaled, fitted, 0, 0, k < 1 ? cv::INTER_AREA : cv::INTER_NEAREST);
            const cv::Rect at(left + gap + x * (cw + gap) + (cw - fitted.width) / 2, top + gap + y * (ch + gap) + (ch - fitted.height) / 2,
                              fitted.width, fitted.height);
            scaled.copyTo(sheet(at));
        }
    api::Image out{sheet.cols, sheet.rows, std::vector<uint8_t>(size_t(sheet.total()) * 3)};
    std::copy(sheet.data, sheet.data + out.rgb.size(), out.rgb.begin());
    return out;
}

std::vector<std::string> writePlotSheets(const std::vector<compare::PlotAxis>& axes, const std::vector<api::Image>& cells,
                                         const std::string& parameters, const std::string& folder) {
    const auto labels = [&](size_t a) {
        std::vector<std::string> out;
        if (a < axes.size())
            for (const auto& v : axes[a].values) out.push_back(axes[a].field + ": " + v);
        return out;
    };
    SheetLayout layout{labels(0), labels(1), {}};
    const size_t perSheet = std::max<size_t>(1, layout.columns.size()) * std::max<size_t>(1, layout.rows.size());
    const auto zs = labels(2);
    const std::string plot = nlohmann::json(axes).dump();
    std::vector<std::string> written;
    for (size_t z = 0; z * perSheet < cells.size(); ++z) {
        layout.title = z < zs.size() ? zs[z] : std::string();
        const auto first = cells.begin() + long(z * perSheet);
        const std::vector<api::Image> sheetCells(first, first + long(std::min(perSheet, cells.size() - z * perSheet)));
        std::filesystem::path sheet;
        for (int n = 1; sheet.empty() || std::filesystem::exists(sheet); ++n) {
            char name[32];
            std::snprintf(name, sizeof name, "xyz-%04d.png", n);
            sheet = std::filesystem::path(folder) / name;
        }
        writePng(sheet.string(), composeSheet(sheetCells, layout), {{"parameters", parameters}, {"xyz_plot", plot}});
        written.push_back(sheet.string());
    }
    return written;
}

} // namespace dd::imaging
