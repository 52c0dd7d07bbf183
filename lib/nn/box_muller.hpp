#pragma once

#include <array>
#include <span>

namespace csrun::nn {

// Two independent standard normal values from two uniforms by the Box-Muller transform:
// sqrt(-2 ln u1) times the cosine and the sine of 2 pi u2, for u1 in (0, 1] and u2 in [0, 1)
// (outside them the result is unspecified). The logarithm, sine and cosine are polynomials
// evaluated with IEEE-754 additions, multiplications, divisions and square roots only (the
// file is built without contraction into fused multiply-adds), so a seed gives the same initial
// weights on every machine, build and C library; within an ulp or two of the exact values.
std::array<double, 2> box_muller(double u1, double u2);

// The same for many pairs at once, in a loop the compiler vectorizes: pair i's two values go
// to normals[2i] (the cosine's) and normals[2i + 1]. The spans hold n, n and 2n values.
void box_muller(std::span<const double> u1, std::span<const double> u2, std::span<double> normals);

}  // namespace csrun::nn
