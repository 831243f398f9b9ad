// Chi-square goodness of fit for the sampler's statistical tests: the statistic and its
// survival function, from the regularized upper incomplete gamma function.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>

namespace kite::testing {

// P(a, x) by its power series; converges quickly for x < a + 1.
//   P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))
inline double gamma_p_series(double a, double x) {
    double term = 1, sum = 1;
    for (int n = 1; n < 10000 && term > sum * 1e-16; ++n) {
        term *= x / (a + n);
        sum += term;
    }
    return std::exp(a * std::log(x) - x - std::lgamma(a + 1)) * sum;
}

// Q(a, x) by its continued fraction (modified Lentz); converges quickly for x >= a + 1.
//   Q(a, x) = x^a e^-x / Gamma(a) * 1 / (x + 1 - a - 1(1 - a) / (x + 3 - a - 2(2 - a) / ...))
inline double gamma_q_fraction(double a, double x) {
    const double tiny = 1e-300;
    double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
    for (int i = 1; i < 10000; ++i) {
        const double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        if (std::fabs(d) < tiny) d = tiny;
        c = b + an / c;
        if (std::fabs(c) < tiny) c = tiny;
        d = 1 / d;
        h *= d * c;
        if (std::fabs(d * c - 1) < 1e-16) break;
    }
    return std::exp(a * std::log(x) - x - std::lgamma(a)) * h;
}

// Regularized upper incomplete gamma Q(a, x) = Gamma(a, x) / Gamma(a).
inline double gamma_q(double a, double x) {
    if (x <= 0) return 1;
    return x < a + 1 ? 1 - gamma_p_series(a, x) : gamma_q_fraction(a, x);
}

// P(X >= chi2) for X ~ chi-square with df degrees of freedom.
inline double chi_square_p_value(double chi2, int df) {
    return gamma_q(df / 2.0, chi2 / 2.0);
}

struct ChiSquare {
    double statistic = 0;
    int df = 0;
    double p_value = 0;
};

// Pearson's statistic of observed counts against probabilities, over the bins where the
// probability is positive (the caller checks separately that the others are never seen).
inline ChiSquare chi_square(std::span<const int64_t> observed, std::span<const double> probs,
                            int64_t draws) {
    ChiSquare r;
    int bins = 0;
    for (size_t i = 0; i < probs.size(); ++i) {
        if (probs[i] <= 0) continue;
        const double expected = probs[i] * static_cast<double>(draws);
        const double diff = static_cast<double>(observed[i]) - expected;
        r.statistic += diff * diff / expected;
        ++bins;
    }
    r.df = bins - 1;
    r.p_value = chi_square_p_value(r.statistic, r.df);
    return r;
}

}  // namespace kite::testing
