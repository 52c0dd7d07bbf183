#pragma once

// Eigen as the kernels include it. GCC 12 reports '__Y' may be used uninitialized inside its own
// AVX-512 intrinsics (avx512fintrin.h, whose _mm512_undefined_* are uninitialized on purpose)
// wherever Eigen's AVX-512 code is inlined: GCC bug 105593, fixed in GCC 13. The suppression
// covers only these headers, where the intrinsics are first included.

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic pop
#endif
