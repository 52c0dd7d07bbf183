#pragma once

#include <string>

#include "diagnostics.hpp"
#include "node.hpp"
#include "release.hpp"
#include "run_spec.hpp"

namespace csrun::config {

// A file is written for one release: its layout (TensorFlow: 1.6; trainer: 2.4 and later; every
// release reads the legacy one) and the keys that only some releases read say which. A key that
// only releases the rest of the file points away from read is a warning naming its releases: it
// likely comes from another file, or the file is older or newer than it looks. `written` is the
// file as written (before any conversion).
void check_release_consistency(const Node& written, ParamsFormat format, bool tensorflow_layout,
                               Diagnostics& diagnostics);

// The releases most of the file's evidence (its layout, its release-specific keys) agrees on;
// every release when nothing tells.
ReleaseRange likely_releases(const Node& written, ParamsFormat format, bool tensorflow_layout);

}  // namespace csrun::config
