// Statistics of repeated timings: percentiles (linear interpolation between order statistics, as
// numpy's default), median, spread, geometric mean. Header-only; tested in tests/unit.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace dgb {

// q in [0, 100]; NaN for an empty sample.
inline double percentile(std::vector<double> v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  q = std::min(100.0, std::max(0.0, q));
  const double pos = q / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return v[lo] + (v[hi] - v[lo]) * frac;
}

inline double median(const std::vector<double>& v) { return percentile(v, 50.0); }

struct Summary {
  int count = 0;
  double median = std::numeric_limits<double>::quiet_NaN();
  double p10 = median, p90 = median, min = median, max = median, mean = median, stddev = median;
  // (p90 - p10) / median: the relative spread reported beside each median.
  double spread() const { return count > 0 && median > 0 ? (p90 - p10) / median : std::numeric_limits<double>::quiet_NaN(); }
};

inline Summary summarize(const std::vector<double>& v) {
  Summary s;
  s.count = static_cast<int>(v.size());
  if (v.empty()) return s;
  s.median = percentile(v, 50.0);
  s.p10 = percentile(v, 10.0);
  s.p90 = percentile(v, 90.0);
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.stddev = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0;
  return s;
}

// Geometric mean of the positive, finite values; NaN when there are none.
inline double geomean(const std::vector<double>& v) {
  double log_sum = 0;
  int n = 0;
  for (double x : v) {
    if (!(x > 0) || !std::isfinite(x)) continue;
    log_sum += std::log(x);
    ++n;
  }
  return n ? std::exp(log_sum / n) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace dgb
