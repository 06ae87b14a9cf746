// Functions GLSL lacks, accurate to float32 rounding within what the runner's tests allow.

float sigmoid(float v) {
  // exp of a large positive argument overflows to inf, and 1/(1+inf) is the right 0.
  return 1.0 / (1.0 + exp(-v));
}

// erf: its Maclaurin series near 0 (where relative accuracy matters), and the
// Abramowitz-Stegun 7.1.26 form elsewhere (absolute error below 1.5e-7).
float erf_approx(float v) {
  float a = abs(v);
  if (a < 0.5) {
    float v2 = v * v;
    return v * (1.1283791670955126 + v2 * (-0.37612638903183752 + v2 * (0.11283791670955126 +
                v2 * (-0.026866170645131252 + v2 * 0.0052239776254421878))));
  }
  float t = 1.0 / (1.0 + 0.3275911 * a);
  float poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  float r = 1.0 - poly * exp(-a * a);
  return v < 0.0 ? -r : r;
}

// pow with the C library's answers where GLSL leaves them undefined: negative bases with
// integral exponents, and zero bases.
float pow_c(float x, float y) {
  if (y == 0.0 || x == 1.0) return 1.0;
  if (isnan(x) || isnan(y)) return x + y;
  float ax = abs(x);
  if (isinf(y)) {
    if (ax == 1.0) return 1.0;
    return (ax < 1.0) == (y > 0.0) ? 0.0 : 1.0 / 0.0;
  }
  bool integral = y == floor(y);
  bool odd = integral && mod(abs(y), 2.0) == 1.0;
  if (x < 0.0 && !integral && !isinf(x)) return 0.0 / 0.0;
  float r;
  if (ax == 0.0) r = y > 0.0 ? 0.0 : 1.0 / 0.0;
  else if (isinf(ax)) r = y > 0.0 ? 1.0 / 0.0 : 0.0;
  else r = pow(ax, y);
  // The sign of a negative (or negative-zero) base survives odd integral exponents.
  return (odd && (x < 0.0 || (x == 0.0 && 1.0 / x < 0.0))) ? -r : r;
}
