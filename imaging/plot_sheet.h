#pragma once
// An X/Y/Z plot's sheet (docs/explore.md): the cells' images in a grid, each column under its X value, each row
// beside its Y value, the Z value as the title; one sheet per Z value. Cells of other sizes are fitted into the
// largest one. Labels are drawn with OpenCV's Hershey font: ASCII (other characters show as '?'), shrunk or cut to fit.
#include "core/api/image.h"
#include "core/compare/xyz_plot.h"

#include <string>
#include <vector>

namespace dd::imaging {

struct SheetLayout {
    std::vector<std::string> columns;  // X labels ("steps: 20"); one column when empty
    std::vector<std::string> rows;     // Y labels; one row when empty
    std::string title;                 // Z label, or "" for none
};

// `cells` row by row (y, then x): columns × rows images. Throws std::invalid_argument when the count does not fit.
api::Image composeSheet(const std::vector<api::Image>& cells, const SheetLayout& layout);

// A plot's sheets, one per Z value, from its cells' images in plot order (x fastest, then y, then z), labelled
// "field: value": xyz-NNNN.png in `folder`, each at the first free number (never over a file), with `parameters`
// (the first cell's A1111 text) and the axes as JSON ("xyz_plot"). Returns the files written; throws
// std::runtime_error naming one that cannot be written.
std::vector<std::string> writePlotSheets(const std::vector<compare::PlotAxis>& axes, const std::vector<api::Image>& cells,
                                         const std::string& parameters, const std::string& folder);

} // namespace dd::imaging
