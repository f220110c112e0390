// kiln's one exception type. Every failure a user can cause (bad model, bad input, unsupported
// op) is reported as a kiln::Error whose message names the node, op and reason.
#pragma once
#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Thrown when a model uses an op (or op form) kiln does not implement; the conformance
// runner counts these as "skipped" rather than "failed".
class UnsupportedError : public Error {
 public:
  explicit UnsupportedError(const std::string& what) : Error(what) {}
};

}  // namespace kiln
