// What the code generation tests share: a shell, a scratch folder, and emitting a model folder
// as a C++ project built with warnings as errors.
#pragma once
#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace kiln::codegen {

namespace fs = std::filesystem;

struct Result {
  int status = -1;
  std::string out;
};

inline Result sh(const std::string& cmd) {
  Result r;
  std::FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kiln-codegen-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Emits dir/model.onnx into dir/project and builds it with warnings as errors.
inline Result emit_and_build(const fs::path& dir, const std::string& flags = "") {
  Result r = sh(std::string(KILN_BINARY) + " compile " + (dir / "model.onnx").string() + " --target cpp -o " +
                (dir / "project").string() + " " + flags);
  if (r.status != 0) return r;
  r = sh("cmake -S " + (dir / "project").string() + " -B " + (dir / "project" / "build").string() +
         " -DCMAKE_CXX_FLAGS='-Wall -Wextra -Werror' && cmake --build " + (dir / "project" / "build").string());
  return r;
}

}  // namespace kiln::codegen
