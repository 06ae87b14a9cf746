// CPU kernels: the signal ops (DFT, STFT, window functions, MelWeightMatrix).
// Arithmetic is done in double and rounded once on store; work is split only over independent
// outputs (transform lines, window and matrix rows), so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "runner/cpu/double_access.h"
#include "runner/cpu/kernels.h"

namespace onnxtool::runner::cpu {

namespace {

constexpr double kPi = 3.14159265358979323846;

/// The single value of a one-element float tensor.
double read_float_scalar(const KernelContext& ctx, const Tensor& t, const char* what) {
  require_float(ctx, t, what);
  if (t.size() != 1) ctx.fail(std::string(what) + " must hold one element, has shape " + shape_string(t.shape()));
  return read_doubles(ctx, t)[0];
}

/// The element type named by an `output_datatype` attribute (numeric types only).
DataType output_datatype(const KernelContext& ctx) {
  const int64_t code = ctx.attr_int("output_datatype", 1);
  static const DataType allowed[] = {DataType::kUInt8,  DataType::kUInt16,  DataType::kUInt32, DataType::kUInt64,
                                     DataType::kInt8,   DataType::kInt16,   DataType::kInt32,  DataType::kInt64,
                                     DataType::kFloat16, DataType::kFloat,  DataType::kDouble, DataType::kBFloat16};
  for (DataType t : allowed)
    if (static_cast<int64_t>(t) == code) return t;
  ctx.fail("output_datatype " + std::to_string(code) + " is not a numeric element type");
}

// ---------------------------------------------------------------- Fourier transforms

using Complex = std::complex<double>;

/// Transform lengths beyond this are rejected (they would not fit in memory anyway).
constexpr int64_t kMaxDftLength = int64_t{1} << 26;

/// The n roots of unity exp(sign * 2 pi i k / n), k < n.
std::vector<Complex> roots_of_unity(int64_t n, double sign) {
  std::vector<Complex> r(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    const double a = sign * 2 * kPi * static_cast<double>(k) / static_cast<double>(n);
    r[static_cast<size_t>(k)] = Complex(std::cos(a), std::sin(a));
  }
  return r;
}

/// In-place radix-2 FFT of a power-of-two length with its roots_of_unity table.
void fft_pow2(std::vector<Complex>& a, const std::vector<Complex>& roots) {
  const size_t n = a.size();
  for (size_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (size_t len = 2; len <= n; len <<= 1) {
    const size_t step = n / len;
    for (size_t i = 0; i < n; i += len)
      for (size_t j = 0; j < len / 2; ++j) {
        const Complex u = a[i + j], v = a[i + j + len / 2] * roots[j * step];
        a[i + j] = u + v;
        a[i + j + len / 2] = u - v;
      }
  }
}

/// A DFT of one length n: radix-2 FFT when n is a power of two, the direct sum for short
/// lengths, else Bluestein's chirp-z transform (a convolution done with power-of-two FFTs).
/// `inverse` flips the exponent's sign (no 1/n scaling).
class Dft {
 public:
  Dft(int64_t n, bool inverse) : n_(n) {
    const double sign = inverse ? 1.0 : -1.0;
    pow2_ = n > 0 && (n & (n - 1)) == 0;
    roots_ = roots_of_unity(n, sign);
    if (pow2_ || n <= kDirectMax) return;
    // X[k] = a[k] sum_j (x[j] a[j]) conj(a[k - j]) with the chirp a[m] = exp(sign pi i m^2 / n).
    m_ = 1;
    while (m_ < 2 * n - 1) m_ <<= 1;
    chirp_.resize(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      const int64_t k2 = k * k % (2 * n);  // exact: n <= kMaxDftLength keeps k^2 within int64
      const double a = sign * kPi * static_cast<double>(k2) / static_cast<double>(n);
      chirp_[static_cast<size_t>(k)] = Complex(std::cos(a), std::sin(a));
    }
    fwd_ = roots_of_unity(m_, -1.0);
    inv_ = roots_of_unity(m_, 1.0);
    kernel_.assign(static_cast<size_t>(m_), Complex(0, 0));
    kernel_[0] = std::conj(chirp_[0]);
    for (int64_t k = 1; k < n; ++k)
      kernel_[static_cast<size_t>(k)] = kernel_[static_cast<size_t>(m_ - k)] = std::conj(chirp_[static_cast<size_t>(k)]);
    fft_pow2(kernel_, fwd_);
  }

  /// out[k] = sum_j in[j] * root^(j k), for k < out.size() (out.size() <= n = in.size()).
  void run(const std::vector<Complex>& in, std::vector<Complex>& out) const {
    const size_t n = static_cast<size_t>(n_);
    if (pow2_) {
      std::vector<Complex> a(in.begin(), in.end());
      fft_pow2(a, roots_);
      std::copy(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(out.size()), out.begin());
      return;
    }
    if (m_ == 0) {
      for (size_t k = 0; k < out.size(); ++k) {
        Complex acc(0, 0);
        size_t idx = 0;
        for (size_t j = 0; j < n; ++j) {
          acc += in[j] * roots_[idx];
          idx += k;
          if (idx >= n) idx -= n;
        }
        out[k] = acc;
      }
      return;
    }
    std::vector<Complex> u(static_cast<size_t>(m_), Complex(0, 0));
    for (size_t j = 0; j < n; ++j) u[j] = in[j] * chirp_[j];
    fft_pow2(u, fwd_);
    for (size_t i = 0; i < u.size(); ++i) u[i] *= kernel_[i];
    fft_pow2(u, inv_);
    const double scale = 1.0 / static_cast<double>(m_);
    for (size_t k = 0; k < out.size(); ++k) out[k] = u[k] * chirp_[k] * scale;
  }

 private:
  static constexpr int64_t kDirectMax = 64;
  int64_t n_;
  bool pow2_ = false;
  std::vector<Complex> roots_;
  int64_t m_ = 0;  // Bluestein FFT length, 0 when unused
  std::vector<Complex> chirp_, fwd_, inv_, kernel_;
};

void dft(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  require_float(ctx, x, "input");
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (rank < 2 || (x.dim(rank - 1) != 1 && x.dim(rank - 1) != 2))
    ctx.fail("input must end in a dim of 1 (real) or 2 (complex), has shape " + shape_string(x.shape()));
  int64_t axis = ctx.opset() >= 20 ? -2 : ctx.attr_int("axis", 1);
  if (ctx.opset() >= 20 && ctx.has_input(2)) axis = read_int_scalar(ctx, ctx.input(2), "axis");
  if (axis < -rank || axis > rank - 2 || axis == -1)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank) + " (the last dim holds complex parts)");
  if (axis < 0) axis += rank;
  const bool inverse = ctx.attr_int("inverse", 0) != 0;
  const bool onesided = ctx.attr_int("onesided", 0) != 0;
  const bool complex_in = x.dim(rank - 1) == 2;
  const int64_t len = x.dim(static_cast<size_t>(axis));
  int64_t n = inverse && onesided ? 2 * (len - 1) : len;
  if (ctx.has_input(1)) n = read_int_scalar(ctx, ctx.input(1), "dft_length");
  if (n < 1 || n > kMaxDftLength) ctx.fail("dft_length must be in [1, 2^26], is " + std::to_string(n));
  // Output along the axis: the full n, or n/2+1 bins for a forward one-sided transform.
  const int64_t out_len = !inverse && onesided ? n / 2 + 1 : n;
  const bool real_out = inverse && onesided;
  std::vector<int64_t> out_shape = x.shape();
  out_shape[static_cast<size_t>(axis)] = out_len;
  out_shape.back() = real_out ? 1 : 2;
  Tensor& y = ctx.output(0, x.dtype(), out_shape);
  if (y.size() == 0) return;
  const int64_t outer = dims_product(x.shape(), 0, static_cast<size_t>(axis));
  const int64_t inner = dims_product(x.shape(), static_cast<size_t>(axis) + 1, x.rank() - 1);
  const int64_t in_parts = complex_in ? 2 : 1, out_parts = real_out ? 1 : 2;
  const std::vector<double> xv = read_doubles(ctx, x);
  std::vector<double> out(static_cast<size_t>(y.size()));
  const Dft plan(n, inverse);
  const double norm = inverse ? 1.0 / static_cast<double>(n) : 1.0;
  parallel_ranges(outer * inner, std::max<int64_t>(1, 4096 / n), [&](int64_t b, int64_t e) {
    std::vector<Complex> in(static_cast<size_t>(n)), res(static_cast<size_t>(out_len));
    for (int64_t line = b; line < e; ++line) {
      const int64_t o = line / inner, i = line % inner;
      auto at = [&](int64_t j) {
        const double* p = xv.data() + ((o * len + j) * inner + i) * in_parts;
        return Complex(p[0], complex_in ? p[1] : 0.0);
      };
      if (real_out) {
        // Rebuild the Hermitian spectrum from its first n/2+1 bins; the DC and Nyquist bins
        // are taken as real.
        const int64_t half = n / 2;
        for (int64_t k = 0; k <= half; ++k) in[static_cast<size_t>(k)] = k < len ? at(k) : Complex(0, 0);
        in[0] = Complex(in[0].real(), 0);
        if (n % 2 == 0) in[static_cast<size_t>(half)] = Complex(in[static_cast<size_t>(half)].real(), 0);
        for (int64_t k = half + 1; k < n; ++k) in[static_cast<size_t>(k)] = std::conj(in[static_cast<size_t>(n - k)]);
      } else {
        for (int64_t j = 0; j < n; ++j) in[static_cast<size_t>(j)] = j < len ? at(j) : Complex(0, 0);
      }
      plan.run(in, res);
      for (int64_t k = 0; k < out_len; ++k) {
        double* q = out.data() + ((o * out_len + k) * inner + i) * out_parts;
        q[0] = res[static_cast<size_t>(k)].real() * norm;
        if (!real_out) q[1] = res[static_cast<size_t>(k)].imag() * norm;
      }
    }
  });
  write_doubles(ctx, y, out);
}

void stft(KernelContext& ctx) {
  const Tensor& signal = ctx.input(0);
  require_float(ctx, signal, "signal");
  if (signal.rank() != 3 || (signal.dim(2) != 1 && signal.dim(2) != 2))
    ctx.fail("signal must have shape [batch, length, 1 or 2], has " + shape_string(signal.shape()));
  const int64_t step = read_int_scalar(ctx, ctx.input(1), "frame_step");
  if (step < 1) ctx.fail("frame_step must be positive, is " + std::to_string(step));
  const int64_t batch = signal.dim(0), length = signal.dim(1);
  const bool complex_in = signal.dim(2) == 2;
  std::vector<double> window;
  if (ctx.has_input(2)) {
    const Tensor& w = ctx.input(2);
    require_float(ctx, w, "window");
    if (w.rank() != 1) ctx.fail("window must be 1-D, has shape " + shape_string(w.shape()));
    window = read_doubles(ctx, w);
  }
  int64_t frame_length = ctx.has_input(2) ? static_cast<int64_t>(window.size()) : length;
  if (ctx.has_input(3)) frame_length = read_int_scalar(ctx, ctx.input(3), "frame_length");
  if (frame_length < 1 || frame_length > kMaxDftLength)
    ctx.fail("frame_length must be in [1, 2^26], is " + std::to_string(frame_length));
  if (frame_length > length)
    ctx.fail("frame_length " + std::to_string(frame_length) + " exceeds the signal length " + std::to_string(length));
  if (!ctx.has_input(2)) window.assign(static_cast<size_t>(frame_length), 1.0);
  const int64_t window_size = static_cast<int64_t>(window.size());
  const bool onesided = ctx.attr_int("onesided", 1) != 0;
  const int64_t frames = 1 + (length - frame_length) / step;
  const int64_t bins = onesided ? frame_length / 2 + 1 : frame_length;
  Tensor& y = ctx.output(0, signal.dtype(), {batch, frames, bins, 2});
  if (y.size() == 0) return;
  const std::vector<double> sv = read_doubles(ctx, signal);
  std::vector<double> out(static_cast<size_t>(y.size()));
  const Dft plan(frame_length, false);
  const int64_t parts = complex_in ? 2 : 1;
  parallel_ranges(batch * frames, 1, [&](int64_t b0, int64_t b1) {
    std::vector<Complex> in(static_cast<size_t>(frame_length)), res(static_cast<size_t>(bins));
    for (int64_t line = b0; line < b1; ++line) {
      const int64_t b = line / frames, f = line % frames;
      // The windowed frame of window_size samples (zeros past the signal's end), cut or padded
      // to the DFT length.
      for (int64_t j = 0; j < frame_length; ++j) {
        const int64_t t = f * step + j;
        Complex v(0, 0);
        if (j < window_size && t < length) {
          const double* p = sv.data() + (b * length + t) * parts;
          v = Complex(p[0], complex_in ? p[1] : 0.0) * window[static_cast<size_t>(j)];
        }
        in[static_cast<size_t>(j)] = v;
      }
      plan.run(in, res);
      double* q = out.data() + line * bins * 2;
      for (int64_t k = 0; k < bins; ++k) {
        q[2 * k] = res[static_cast<size_t>(k)].real();
        q[2 * k + 1] = res[static_cast<size_t>(k)].imag();
      }
    }
  });
  write_doubles(ctx, y, out);
}

// ---------------------------------------------------------------- windows and mel weights

enum class Window { kHann, kHamming, kBlackman };

template <Window W>
void window_fn(KernelContext& ctx) {
  const int64_t size = read_int_scalar(ctx, ctx.input(0), "size");
  if (size < 0) ctx.fail("size must be >= 0, is " + std::to_string(size));
  const DataType type = output_datatype(ctx);
  const bool periodic = ctx.attr_int("periodic", 1) != 0;
  // A periodic window is the symmetric window of size + 1 without its last point.
  const double denom = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> v(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    const double a = denom > 0 ? 2 * kPi * static_cast<double>(i) / denom : 0.0;
    double w;
    if constexpr (W == Window::kHann) {
      w = 0.5 - 0.5 * std::cos(a);
    } else if constexpr (W == Window::kHamming) {
      constexpr double alpha = 25.0 / 46.0;
      w = alpha - (1 - alpha) * std::cos(a);
    } else {
      w = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
    }
    v[static_cast<size_t>(i)] = denom > 0 ? w : 1.0;
  }
  Tensor& y = ctx.output(0, type, {size});
  write_doubles(ctx, y, v);
}

void mel_weight_matrix(KernelContext& ctx) {
  const int64_t mel_bins = read_int_scalar(ctx, ctx.input(0), "num_mel_bins");
  const int64_t dft_length = read_int_scalar(ctx, ctx.input(1), "dft_length");
  const int64_t sample_rate = read_int_scalar(ctx, ctx.input(2), "sample_rate");
  const double lower = read_float_scalar(ctx, ctx.input(3), "lower_edge_hertz");
  const double upper = read_float_scalar(ctx, ctx.input(4), "upper_edge_hertz");
  if (mel_bins < 1 || dft_length < 1 || sample_rate < 1)
    ctx.fail("num_mel_bins, dft_length and sample_rate must be positive");
  if (!(lower >= 0) || !(upper >= lower)) ctx.fail("the edges must satisfy 0 <= lower_edge_hertz <= upper_edge_hertz");
  const DataType type = output_datatype(ctx);
  const int64_t spec_bins = dft_length / 2 + 1;
  // mel(f) = 2595 log10(1 + f / 700); mel_bins + 2 points evenly spaced in mel (a step of
  // range / (mel_bins + 2), as onnxruntime and the reference implementation define it), mapped
  // back to hertz and then to spectrogram bins.
  const double low_mel = 2595 * std::log10(1 + lower / 700), high_mel = 2595 * std::log10(1 + upper / 700);
  const double mel_step = (high_mel - low_mel) / static_cast<double>(mel_bins + 2);
  std::vector<int64_t> points(static_cast<size_t>(mel_bins + 2));
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    const double hz = 700 * (std::pow(10.0, (static_cast<double>(i) * mel_step + low_mel) / 2595) - 1);
    const double bin = std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate));
    points[static_cast<size_t>(i)] = static_cast<int64_t>(std::min(bin, 9e15));
  }
  std::vector<double> out(static_cast<size_t>(spec_bins * mel_bins), 0.0);
  auto set = [&](int64_t j, int64_t i, double v) {
    if (j >= 0 && j < spec_bins) out[static_cast<size_t>(j * mel_bins + i)] = v;
  };
  for (int64_t i = 0; i < mel_bins; ++i) {
    const int64_t left = points[static_cast<size_t>(i)], center = points[static_cast<size_t>(i + 1)],
                  right = points[static_cast<size_t>(i + 2)];
    if (center == left) set(center, i, 1.0);
    else
      for (int64_t j = std::max<int64_t>(left, 0); j <= std::min(center, spec_bins - 1); ++j)
        set(j, i, static_cast<double>(j - left) / static_cast<double>(center - left));
    if (right > center)
      for (int64_t j = std::max<int64_t>(center, 0); j < std::min(right, spec_bins); ++j)
        set(j, i, static_cast<double>(right - j) / static_cast<double>(right - center));
  }
  Tensor& y = ctx.output(0, type, {spec_bins, mel_bins});
  write_doubles(ctx, y, out);
}

}  // namespace

void register_signal_kernels(KernelRegistry& registry) {
  registry.add("DFT", dft);
  registry.add("STFT", stft);
  registry.add("HannWindow", window_fn<Window::kHann>);
  registry.add("HammingWindow", window_fn<Window::kHamming>);
  registry.add("BlackmanWindow", window_fn<Window::kBlackman>);
  registry.add("MelWeightMatrix", mel_weight_matrix);
}

}  // namespace onnxtool::runner::cpu
