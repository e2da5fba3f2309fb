#pragma once
// Reading numbers out of JSON that came from a file. nlohmann's get<int>() static_casts whatever number the
// document holds: 8e22 into a long is undefined behaviour (UBSan stops the fuzzers on it) and 4294967808
// silently becomes 512. Every whole number read from a file goes through jsonAs instead, which refuses both
// with the json exceptions callers already catch (type_error 302, out_of_range 406).
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace dd::api {

namespace detail {
template <typename T> struct IsVector : std::false_type {};
template <typename T, typename A> struct IsVector<std::vector<T, A>> : std::true_type {};

template <typename Int>
Int wholeNumber(const nlohmann::json& v) {
    using Lim = std::numeric_limits<Int>;
    const auto outOfRange = [&] {
        return nlohmann::json::out_of_range::create(406, "number " + v.dump() + " is out of range", nullptr);
    };
    if (v.is_number_unsigned()) {
        const uint64_t u = v.get<uint64_t>();
        if (u > static_cast<uint64_t>(Lim::max())) throw outOfRange();
        return static_cast<Int>(u);
    }
    if (v.is_number_integer()) {
        const int64_t i = v.get<int64_t>();
        if constexpr (Lim::is_signed) {
            if (i < static_cast<int64_t>(Lim::min()) || i > static_cast<int64_t>(Lim::max())) throw outOfRange();
        } else {
            if (i < 0 || static_cast<uint64_t>(i) > static_cast<uint64_t>(Lim::max())) throw outOfRange();
        }
        return static_cast<Int>(i);
    }
    if (v.is_number_float()) {
        const double d = v.get<double>();
        if (!std::isfinite(d) || d != std::trunc(d))
            throw nlohmann::json::type_error::create(302, "number " + v.dump() + " is not a whole number", nullptr);
        // Both bounds are powers of two (or zero), exact in a double, so the comparison itself is exact.
        if (d < static_cast<double>(Lim::min()) || d >= std::ldexp(1.0, Lim::digits)) throw outOfRange();
        return static_cast<Int>(d);
    }
    return v.get<Int>(); // not a number: nlohmann's own type_error names the type
}
} // namespace detail

// v as T: whole numbers range-checked, lists element by element, everything else as nlohmann reads it.
template <typename T>
T jsonAs(const nlohmann::json& v) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        return detail::wholeNumber<T>(v);
    } else if constexpr (detail::IsVector<T>::value) {
        if (!v.is_array())
            throw nlohmann::json::type_error::create(302, std::string("type must be array, but is ") + v.type_name(), nullptr);
        T out;
        out.reserve(v.size());
        for (const auto& e : v) out.push_back(jsonAs<typename T::value_type>(e));
        return out;
    } else {
        return v.get<T>();
    }
}

// An exception's message without nlohmann's "[json.exception.type_error.302] " prefix.
inline std::string jsonReason(const nlohmann::json::exception& e) {
    const std::string w = e.what();
    const auto end = w.find("] ");
    return w.rfind("[json.exception.", 0) == 0 && end != std::string::npos ? w.substr(end + 2) : w;
}

// Reads v into field; a struct is read in place (nlohmann's get_to), so keys it lacks keep their values.
template <typename T>
void readJsonInto(const nlohmann::json& v, T& field) {
    if constexpr ((std::is_integral_v<T> && !std::is_same_v<T, bool>) || detail::IsVector<T>::value)
        field = jsonAs<T>(v);
    else
        v.get_to(field);
}

} // namespace dd::api
