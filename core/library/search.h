#pragma once
// The library's search box: words of the prompt, plus filters typed as `key:value` (quotes for values with
// spaces), as in a mail client or a photo library:
//
//   cat seed:42 size:512x768 sampler:"DPM++ 2M" model:dreamshaper date:2026-12-01 after:2026-11-01
//   before:2026-12-31 rating:3 is:favourite sort:oldest
//
// A filter that cannot be read is not applied and is named in `problems` ("seed:abc: not a number"); the rest of
// the search still runs. Pure.
#include "core/library/library.h"

#include <string>
#include <string_view>
#include <vector>

namespace dd::library {

struct ParsedSearch {
    Query query;                        // text: the words that are not filters, in order
    std::vector<std::string> problems;  // one per filter not applied
};

ParsedSearch parseSearch(std::string_view typed);

// The filters parseSearch knows, one line each: the search box's tooltip.
std::string searchHelp();

} // namespace dd::library
