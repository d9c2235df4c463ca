// Where the Fashion-MNIST tasks' files are, one rule for the worker, which reads them
// (fmnist_dataset.cpp), and the monitor, which checks they are there before any rank starts
// (local_start_check.h): <dir>/<split>-images-idx3-ubyte.gz and -labels-idx1-ubyte.gz, the
// directory DDPDESK_FMNIST_DIR or Debian's dataset-fashion-mnist's. Plain C++17.
#pragma once

#include <string>

#include "run_spec.h"

namespace ddpdesk {

// Where Debian's dataset-fashion-mnist puts the files (the worker's DDPDESK_FMNIST_DIR, read
// once into WorkerSettings, points elsewhere).
constexpr const char* kSystemFmnistDir = "/usr/share/datasets/fashion-mnist";

// Whether the spec's task trains on Fashion-MNIST.
bool uses_fmnist(const RunSpec& spec);
// `dir` (empty: kSystemFmnistDir) joined with a split's ("train", "t10k") file, `kind` "images"
// or "labels".
std::string fmnist_file(const std::string& dir, const std::string& split, const std::string& kind);
// The one line for a file that is not there.
std::string fmnist_not_found(const std::string& path);
// fmnist_not_found() of the first of the four files under `dir` that is not there; empty when
// all are (whether they hold what they should is the worker's to find).
std::string fmnist_missing(const std::string& dir);

}  // namespace ddpdesk
